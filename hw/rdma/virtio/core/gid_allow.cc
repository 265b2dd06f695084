/*
 * virtio-rdma core: a device's GID allow-list (see gid_allow.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "gid_allow.h"

#include <arpa/inet.h>

#include <cstdio>
#include <cstring>

namespace vrdma {

namespace {

constexpr uint8_t kV4Mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
/* The longest entry worth parsing: an IPv6 address with a /128. */
constexpr size_t kEntryMax = INET6_ADDRSTRLEN + 4;

bool is_sep(char ch)
{
    return ch == ';' || ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

/* Whether @p's bits from @len on are all zero. */
bool host_bits_clear(const uint8_t p[16], unsigned len)
{
    for (unsigned bit = len; bit < 128; bit++) {
        if (p[bit / 8] & (0x80u >> (bit % 8))) {
            return false;
        }
    }
    return true;
}

/* One entry into @out; false with @why set. */
bool parse_entry(std::string_view e, VrdmaGidPrefix &out, std::string &why)
{
    const std::string quoted = "'" + std::string(e.substr(0, kEntryMax)) +
                               (e.size() > kEntryMax ? "...'" : "'");
    if (e.size() > kEntryMax) {
        why = "entry " + quoted + " is too long";
        return false;
    }
    std::string addr(e.substr(0, e.find('/')));
    const bool v4 = addr.find(':') == std::string::npos;
    const unsigned max = v4 ? 32 : 128;
    unsigned len = max;
    if (const size_t slash = e.find('/'); slash != std::string_view::npos) {
        const std::string_view n = e.substr(slash + 1);
        if (n.empty() || n.size() > 3 ||
            n.find_first_not_of("0123456789") != std::string_view::npos) {
            why = "entry " + quoted + ": the prefix length is not a number";
            return false;
        }
        len = 0;
        for (char ch : n) {
            len = len * 10 + static_cast<unsigned>(ch - '0');
        }
        if (len > max) {
            why = "entry " + quoted + ": prefix length " +
                  std::to_string(len) + " is more than " +
                  std::to_string(max);
            return false;
        }
    }
    VrdmaGidPrefix p{};
    if (v4) {
        in_addr a{};
        if (inet_pton(AF_INET, addr.c_str(), &a) != 1) {
            why = "entry " + quoted + " is not an IPv4 or IPv6 address";
            return false;
        }
        std::memcpy(p.gid, kV4Mapped, sizeof(kV4Mapped));
        std::memcpy(p.gid + 12, &a, 4);
        len += 96;
    } else if (inet_pton(AF_INET6, addr.c_str(), p.gid) != 1) {
        why = "entry " + quoted + " is not an IPv4 or IPv6 address";
        return false;
    }
    if (!host_bits_clear(p.gid, len)) {
        why = "entry " + quoted + " has bits set past its prefix length";
        return false;
    }
    p.len = static_cast<uint8_t>(len);
    out = p;
    return true;
}

} // namespace

bool parse_gid_allow(std::string_view text, VrdmaGidAllow &out,
                     std::string &why)
{
    VrdmaGidAllow list{};
    size_t i = 0;
    while (i < text.size()) {
        if (is_sep(text[i])) {
            i++;
            continue;
        }
        size_t end = i;
        while (end < text.size() && !is_sep(text[end])) {
            end++;
        }
        const std::string_view e = text.substr(i, end - i);
        if (list.n == VRDMA_GID_ALLOW_MAX) {
            why = "more than " + std::to_string(VRDMA_GID_ALLOW_MAX) +
                  " entries (from '" + std::string(e.substr(0, kEntryMax)) +
                  "' on)";
            return false;
        }
        if (!parse_entry(e, list.prefix[list.n], why)) {
            return false;
        }
        list.n++;
        i = end;
    }
    if (list.n == 0) {
        why = "no entry (addresses or prefixes separated by ';')";
        return false;
    }
    out = list;
    return true;
}

bool gid_allowed(const VrdmaGidAllow &allow, const uint8_t gid[16])
{
    for (uint32_t i = 0; i < allow.n && i < VRDMA_GID_ALLOW_MAX; i++) {
        const VrdmaGidPrefix &p = allow.prefix[i];
        const unsigned bytes = p.len / 8, bits = p.len % 8;
        if (p.len > 128 || std::memcmp(p.gid, gid, bytes) != 0) {
            continue;
        }
        const uint8_t mask = static_cast<uint8_t>(0xff00u >> bits);
        if (bits == 0 || ((p.gid[bytes] ^ gid[bytes]) & mask) == 0) {
            return true;
        }
    }
    return false;
}

bool gid_allow_valid(const VrdmaGidAllow &allow)
{
    if (allow.n > VRDMA_GID_ALLOW_MAX) {
        return false;
    }
    for (uint32_t i = 0; i < allow.n; i++) {
        const VrdmaGidPrefix &p = allow.prefix[i];
        if (p.len > 128 || !host_bits_clear(p.gid, p.len)) {
            return false;
        }
    }
    return true;
}

std::string gid_text(const uint8_t gid[16])
{
    char buf[INET6_ADDRSTRLEN] = "?";
    if (std::memcmp(gid, kV4Mapped, sizeof(kV4Mapped)) == 0) {
        inet_ntop(AF_INET, gid + 12, buf, sizeof(buf));
    } else {
        inet_ntop(AF_INET6, gid, buf, sizeof(buf));
    }
    return buf;
}

} // namespace vrdma

extern "C" bool vrdma_gid_allow_parse(const char *text, VrdmaGidAllow *out,
                                      char *why, size_t why_len)
{
    std::string w;
    if (text && out && vrdma::parse_gid_allow(text, *out, w)) {
        return true;
    }
    if (why && why_len) {
        std::snprintf(why, why_len, "%s", text && out ? w.c_str() : "no text");
    }
    return false;
}

extern "C" bool vrdma_gid_allowed(const VrdmaGidAllow *allow,
                                  const uint8_t gid[16])
{
    return vrdma::gid_allowed(*allow, gid);
}

/*
 * rdmacm-mux: the state file of claims and reservations (claim_state.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "claim_state.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "hw/rdma/rdmacm-mux-proto.h"

namespace rdmacm_mux {

namespace {

constexpr std::string_view kHeader = "rdmacm-mux claims 1\n";
constexpr char kHex[] = "0123456789abcdef";
/* 39 characters: 8 groups of 4 hex digits and 7 colons. */
constexpr size_t kGidTextLen = 39;
/* Unix seconds up to the year 2286: in ns still a uint64_t. */
constexpr uint64_t kMaxUntilS = 9999999999ull;

int hex_value(char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    return -1;
}

bool parse_gid(std::string_view s, Gid *out)
{
    if (s.size() != kGidTextLen) {
        return false;
    }
    for (size_t i = 0, b = 0; b < out->size(); b++) {
        if (b && !(b % 2)) {
            if (s[i++] != ':') {
                return false;
            }
        }
        int hi = hex_value(s[i++]);
        int lo = hex_value(s[i++]);
        if (hi < 0 || lo < 0) {
            return false;
        }
        (*out)[b] = static_cast<uint8_t>(hi << 4 | lo);
    }
    return true;
}

bool parse_seconds(std::string_view s, uint64_t *out)
{
    if (s.empty() || s.size() > 10 || (s.size() > 1 && s[0] == '0')) {
        return false;
    }
    uint64_t v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') {
            return false;
        }
        v = v * 10 + static_cast<uint64_t>(c - '0');
    }
    if (v > kMaxUntilS) {
        return false;
    }
    *out = v;
    return true;
}

} // namespace

bool valid_owner(std::string_view s)
{
    if (s.empty() || s.size() >= RDMACM_MUX_OWNER_LEN) {
        return false;
    }
    for (char c : s) {
        if (c <= ' ' || c > '~') {
            return false;
        }
    }
    return true;
}

std::string gid_text(const Gid &g)
{
    std::string s;
    for (size_t i = 0; i < g.size(); i++) {
        if (i && !(i % 2)) {
            s += ':';
        }
        s += kHex[g[i] >> 4];
        s += kHex[g[i] & 15];
    }
    return s;
}

std::string format_claims(const SavedClaims &claims)
{
    std::string s(kHeader);
    for (const auto &[gid, c] : claims) {
        s += gid_text(gid);
        s += ' ';
        s += c.held ? std::string("held") : std::to_string(c.until_s);
        s += ' ';
        s += c.owner;
        s += '\n';
    }
    return s;
}

bool parse_claims(std::string_view text, SavedClaims *out, std::string *err)
{
    out->clear();
    if (text.substr(0, kHeader.size()) != kHeader) {
        *err = "not a claims file of format 1 (first line)";
        return false;
    }
    text.remove_prefix(kHeader.size());
    size_t line = 1;
    while (!text.empty()) {
        line++;
        auto bad = [&](const char *what) {
            *err = "line " + std::to_string(line) + ": " + what;
            out->clear();
            return false;
        };
        if (line > kClaimStateMaxLines) {
            return bad("too many lines");
        }
        size_t eol = text.find('\n');
        if (eol == std::string_view::npos) {
            return bad("no newline at its end");
        }
        std::string_view l = text.substr(0, eol);
        text.remove_prefix(eol + 1);
        size_t sp1 = l.find(' ');
        size_t sp2 = sp1 == std::string_view::npos ? sp1 : l.find(' ', sp1 + 1);
        if (sp2 == std::string_view::npos) {
            return bad("not three fields");
        }
        Gid gid;
        if (!parse_gid(l.substr(0, sp1), &gid)) {
            return bad("not a GID");
        }
        SavedClaim c;
        std::string_view when = l.substr(sp1 + 1, sp2 - sp1 - 1);
        c.held = when == "held";
        if (!c.held && !parse_seconds(when, &c.until_s)) {
            return bad("neither \"held\" nor a time");
        }
        std::string_view owner = l.substr(sp2 + 1);
        if (!valid_owner(owner)) {
            return bad("not an owner");
        }
        c.owner = owner;
        if (!out->emplace(gid, std::move(c)).second) {
            return bad("a GID listed twice");
        }
    }
    return true;
}

bool read_claims_file(const std::string &path, std::string *text,
                      bool *missing, std::string *err)
{
    *missing = false;
    /* O_NOFOLLOW: a symlink is refused, not followed; O_NONBLOCK: a FIFO
     * put there does not hang the start (and fails the check below). */
    int fd = open(path.c_str(),
                  O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        *missing = errno == ENOENT;
        *err = std::string("open: ") + std::strerror(errno);
        return false;
    }
    struct stat st;
    bool ok = false;
    if (fstat(fd, &st)) {
        *err = std::string("fstat: ") + std::strerror(errno);
    } else if (!S_ISREG(st.st_mode)) {
        *err = "not a regular file";
    } else if (st.st_uid != geteuid()) {
        *err = "owned by uid " + std::to_string(st.st_uid) + ", not by the mux";
    } else if (static_cast<uint64_t>(st.st_size) > kClaimStateMaxBytes) {
        *err = std::to_string(st.st_size) + " bytes, more than " +
               std::to_string(kClaimStateMaxBytes);
    } else {
        ok = true;
    }
    text->clear();
    char buf[65536];
    while (ok) {
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            *err = std::string("read: ") + std::strerror(errno);
            ok = false;
        } else if (n == 0) {
            break;
        } else if (text->size() + static_cast<size_t>(n) >
                   kClaimStateMaxBytes) {
            *err = "grew past " + std::to_string(kClaimStateMaxBytes) +
                   " bytes while read";
            ok = false;
        } else {
            text->append(buf, static_cast<size_t>(n));
        }
    }
    close(fd);
    return ok;
}

bool write_claims_file(const std::string &path, const std::string &text,
                       std::string *err)
{
    std::string tmp = path + ".new";
    /* A leftover of a crashed write (or anything else by that name) goes;
     * O_EXCL then creates ours afresh, never through a symlink. */
    if (unlink(tmp.c_str()) && errno != ENOENT) {
        *err = "unlink " + tmp + ": " + std::strerror(errno);
        return false;
    }
    int fd = open(tmp.c_str(),
                  O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        *err = "create " + tmp + ": " + std::strerror(errno);
        return false;
    }
    size_t off = 0;
    while (off < text.size()) {
        ssize_t n = write(fd, text.data() + off, text.size() - off);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            *err = "write " + tmp + ": " +
                   std::strerror(n < 0 ? errno : ENOSPC);
            close(fd);
            unlink(tmp.c_str());
            return false;
        }
        off += static_cast<size_t>(n);
    }
    /* The data before the name: after a host crash the file is the old
     * version or the new one, never an empty new one. */
    int synced = fsync(fd) ? errno : 0;
    if (close(fd) && !synced) {
        synced = errno;
    }
    if (synced) {
        *err = "fsync " + tmp + ": " + std::strerror(synced);
        unlink(tmp.c_str());
        return false;
    }
    if (rename(tmp.c_str(), path.c_str())) {
        *err = "rename " + tmp + ": " + std::strerror(errno);
        unlink(tmp.c_str());
        return false;
    }
    return true;
}

} // namespace rdmacm_mux

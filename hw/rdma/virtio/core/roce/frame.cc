/*
 * virtio-rdma soft-RoCE: building and parsing whole RoCEv2 frames (see
 * frame.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "frame.h"

#include <bit>
#include <cstring>

#include "icrc.h"

namespace vrdma::roce {

namespace {

constexpr uint16_t kIpv4Df = 0x4000;
constexpr uint16_t kIpv4FragMask = 0x3FFF; /* MF + fragment offset */
constexpr size_t kIpMaxLen = 0xFFFF;

/*
 * RFC 1071 checksum of an IPv4 header (checksum field included).  Summed
 * in 32-bit words of host order and folded: the one's complement sum does
 * not depend on byte order (RFC 1071 2.B), so one swap at the end gives it
 * in network order.
 */
uint16_t ipv4_sum(const uint8_t *h)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < kIpv4Bytes; i += 4) {
        uint32_t w;
        std::memcpy(&w, h + i, 4);
        sum += w;
    }
    while (sum >> 16) {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    return be(static_cast<uint16_t>(sum));
}

void write_ipv4(uint8_t *h, const FrameAddr &a, size_t tot_len)
{
    h[0] = 0x45;
    h[1] = a.tclass;
    store_be16(h + 2, static_cast<uint16_t>(tot_len));
    store_be16(h + 4, a.ip_id);
    store_be16(h + 6, kIpv4Df);
    h[8] = a.hop_limit;
    h[9] = kIpProtoUdp;
    store_be16(h + 10, 0);
    std::memcpy(h + 12, a.sgid.data() + 12, 4);
    std::memcpy(h + 16, a.dgid.data() + 12, 4);
    store_be16(h + 10, static_cast<uint16_t>(~ipv4_sum(h)));
}

void write_ipv6(uint8_t *h, const FrameAddr &a, size_t payload_len)
{
    const uint32_t fl = a.flow_label & 0xFFFFF;
    store_be32(h, 6u << 28 | uint32_t{a.tclass} << 20 | fl);
    store_be16(h + 4, static_cast<uint16_t>(payload_len));
    h[6] = kIpProtoUdp;
    h[7] = a.hop_limit;
    std::memcpy(h + 8, a.sgid.data(), 16);
    std::memcpy(h + 24, a.dgid.data(), 16);
}

void v4mapped(Gid &g, const uint8_t *addr)
{
    g.fill(0);
    g[10] = g[11] = 0xFF;
    std::memcpy(g.data() + 12, addr, 4);
}

/* Sizes of one packet; 0 in .total if it cannot be built. */
struct Layout {
    BuildError err = BuildError::kNone;
    const OpcodeInfo *info = nullptr;
    bool ipv6 = false;
    size_t l3_off = 0;
    size_t udp_len = 0;
    size_t total = 0;
    uint8_t pad = 0;
};

Layout layout(const FrameAddr &a, uint8_t opcode, size_t payload_len)
{
    Layout l;
    l.info = opcode_info(opcode);
    if (!l.info) {
        l.err = BuildError::kOpcode;
        return l;
    }
    if (payload_len && !l.info->has(kMaskPayload)) {
        l.err = BuildError::kPayload;
        return l;
    }
    const bool v4s = gid_is_v4mapped(a.sgid);
    if (v4s != gid_is_v4mapped(a.dgid)) {
        l.err = BuildError::kAddrFamily;
        return l;
    }
    l.ipv6 = !v4s;
    if (payload_len > kIpMaxLen) {
        l.err = BuildError::kTooLong;
        return l;
    }
    l.pad = static_cast<uint8_t>(-payload_len & 3);
    l.udp_len = kUdpBytes + l.info->length + payload_len + l.pad + kIcrcBytes;
    /* IPv4 total length counts its header, IPv6 payload length does not. */
    const size_t ip_len = l.ipv6 ? l.udp_len : kIpv4Bytes + l.udp_len;
    if (ip_len > kIpMaxLen) {
        l.err = BuildError::kTooLong;
        return l;
    }
    l.l3_off = kEthBytes + (a.vlan ? kVlanBytes : 0);
    l.total = l.l3_off + (l.ipv6 ? kIpv6Bytes : 0) + ip_len;
    return l;
}

} // namespace

const char *build_error_name(BuildError e) noexcept
{
    switch (e) {
    case BuildError::kNone: return "none";
    case BuildError::kOpcode: return "opcode";
    case BuildError::kPayload: return "payload";
    case BuildError::kAddrFamily: return "addr_family";
    case BuildError::kTooLong: return "too_long";
    case BuildError::kBufferTooSmall: return "buffer_too_small";
    case BuildError::kCount: break;
    }
    return "?";
}

size_t frame_len(const FrameAddr &a, uint8_t opcode,
                 size_t payload_len) noexcept
{
    const Layout l = layout(a, opcode, payload_len);
    return l.err == BuildError::kNone ? l.total : 0;
}

BuildError frame_begin(std::span<uint8_t> buf, const FrameAddr &a,
                       uint8_t opcode, size_t payload_len,
                       TxFrame *out) noexcept
{
    const Layout l = layout(a, opcode, payload_len);
    if (l.err != BuildError::kNone) {
        return l.err;
    }
    if (buf.size() < l.total) {
        return BuildError::kBufferTooSmall;
    }
    uint8_t *p = buf.data();

    std::memcpy(p, a.dmac.data(), 6);
    std::memcpy(p + 6, a.smac.data(), 6);
    if (a.vlan) {
        store_be16(p + 12, kEtherTypeVlan);
        store_be16(p + 14, a.vlan_tci);
    }
    store_be16(p + l.l3_off - 2, l.ipv6 ? kEtherTypeIpv6 : kEtherTypeIpv4);

    size_t off = l.l3_off;
    if (l.ipv6) {
        write_ipv6(p + off, a, l.udp_len);
        off += kIpv6Bytes;
    } else {
        write_ipv4(p + off, a, kIpv4Bytes + l.udp_len);
        off += kIpv4Bytes;
    }

    store_be16(p + off, a.sport);
    store_be16(p + off + 2, kRoceUdpPort);
    store_be16(p + off + 4, static_cast<uint16_t>(l.udp_len));
    store_be16(p + off + 6, 0); /* rxe: no UDP checksum, IPv6 too */
    off += kUdpBytes;

    const size_t bth_off = off;
    /*
     * The transport headers start zeroed.  In a frame long enough, a fixed
     * 64 bytes (every header stack is shorter; what follows it is payload,
     * written later): a few vector stores, not a memset call.
     */
    static_assert(kMaxHdrBytes <= 64);
    if (l.total - bth_off >= 64) {
        std::memset(p + bth_off, 0, 64);
    } else {
        std::memset(p + bth_off, 0, l.info->length);
    }
    MutBth bth = hdr_at<MutBth>(buf, bth_off);
    bth.set_opcode(opcode);
    bth.set_pad(l.pad);
    bth.set_tver(kBthTver);
    bth.set_pkey(kDefaultPkey);

    /* Pad and ICRC. */
    const size_t pad_off = bth_off + l.info->length + payload_len;
    if (l.total - bth_off >= l.info->length + size_t{8}) {
        /* The frame's last 8 bytes: pad, ICRC and payload written later. */
        std::memset(p + l.total - 8, 0, 8);
    } else {
        std::memset(p + pad_off, 0, l.pad + kIcrcBytes);
    }

    out->frame = buf.first(l.total);
    out->info = l.info;
    out->ipv6 = l.ipv6;
    out->l3_off = static_cast<uint16_t>(l.l3_off);
    out->bth_off = static_cast<uint16_t>(bth_off);
    out->payload_len = static_cast<uint32_t>(payload_len);
    out->pad = l.pad;
    return BuildError::kNone;
}

void frame_finish(const TxFrame &f) noexcept
{
    const size_t icrc_off = f.frame.size() - kIcrcBytes;
    const uint32_t icrc = icrc_compute(
        f.frame.subspan(f.l3_off, icrc_off - f.l3_off), f.ipv6);
    uint8_t *p = f.frame.data() + icrc_off;
    p[0] = static_cast<uint8_t>(icrc);
    p[1] = static_cast<uint8_t>(icrc >> 8);
    p[2] = static_cast<uint8_t>(icrc >> 16);
    p[3] = static_cast<uint8_t>(icrc >> 24);
}

const char *parse_error_name(ParseError e) noexcept
{
    switch (e) {
#define VRDMA_PARSE_ERROR_NAME_(up, camel, low, why)                        \
    case ParseError::k##camel: return #low;
    VRDMA_DROPS_FRAME(VRDMA_PARSE_ERROR_NAME_)
#undef VRDMA_PARSE_ERROR_NAME_
    case ParseError::kCount: break;
    }
    return "?";
}

ParseError parse_frame(std::span<const uint8_t> frame, Packet *out) noexcept
{
    const uint8_t *p = frame.data();
    const size_t len = frame.size();
    /*
     * Fields are kept in locals and written to @out once every check
     * passed, one by one: a copy of a whole Packet built on the stack costs
     * a rep movs per packet.
     */
    bool vlan = false;
    bool ipv6 = false;

    /* Ethernet, at most one 802.1Q tag. */
    if (len < kEthBytes) {
        return ParseError::kTruncatedEth;
    }
    size_t l3 = kEthBytes;
    uint16_t etype = load_be16(p + 12);
    if (etype == kEtherTypeVlan) {
        if (len < kEthBytes + kVlanBytes) {
            return ParseError::kTruncatedEth;
        }
        vlan = true;
        etype = load_be16(p + 16);
        l3 += kVlanBytes;
    }

    /* IP: [l3, l3 + ip_len) is the datagram, UDP at l4. */
    const uint8_t *ip = p + l3;
    size_t l4;
    size_t ip_payload;
    if (etype == kEtherTypeIpv4) {
        if (len - l3 < kIpv4Bytes) {
            return ParseError::kTruncatedIp;
        }
        if (ip[0] >> 4 != 4) {
            return ParseError::kIpVersion;
        }
        if ((ip[0] & 0x0F) != kIpv4Bytes / 4) {
            return ParseError::kIpv4Ihl;
        }
        const size_t tot_len = load_be16(ip + 2);
        if (tot_len < kIpv4Bytes || tot_len > len - l3) {
            return ParseError::kIpLength;
        }
        if (ipv4_sum(ip) != 0xFFFF) {
            return ParseError::kIpv4Checksum;
        }
        if (load_be16(ip + 6) & kIpv4FragMask) {
            return ParseError::kIpv4Fragment;
        }
        if (ip[9] != kIpProtoUdp) {
            return ParseError::kIpProtocol;
        }
        l4 = l3 + kIpv4Bytes;
        ip_payload = tot_len - kIpv4Bytes;
    } else if (etype == kEtherTypeIpv6) {
        if (len - l3 < kIpv6Bytes) {
            return ParseError::kTruncatedIp;
        }
        if (ip[0] >> 4 != 6) {
            return ParseError::kIpVersion;
        }
        const size_t payload_len = load_be16(ip + 4);
        if (payload_len > len - l3 - kIpv6Bytes) {
            return ParseError::kIpLength;
        }
        if (ip[6] != kIpProtoUdp) {
            return ParseError::kIpProtocol;
        }
        ipv6 = true;
        l4 = l3 + kIpv6Bytes;
        ip_payload = payload_len;
    } else {
        return ParseError::kEtherType;
    }

    /* UDP. */
    if (ip_payload < kUdpBytes) {
        return ParseError::kTruncatedUdp;
    }
    const uint8_t *udp = p + l4;
    const size_t udp_len = load_be16(udp + 4);
    if (udp_len != ip_payload) {
        return ParseError::kUdpLength;
    }
    if (load_be16(udp + 2) != kRoceUdpPort) {
        return ParseError::kUdpPort;
    }

    /* BTH, then the rest of the headers as the opcode table says. */
    const size_t bth_off = l4 + kUdpBytes;
    const size_t ib_len = udp_len - kUdpBytes; /* BTH .. ICRC */
    if (ib_len < kBthBytes) {
        return ParseError::kTruncatedBth;
    }
    const Bth bth = hdr_at<Bth>(frame, bth_off);
    if (bth.tver() != kBthTver) {
        return ParseError::kBthVersion;
    }
    const OpcodeInfo *info = opcode_info(bth.opcode());
    if (!info) {
        return ParseError::kOpcode;
    }
    if (ib_len < info->length) {
        return ParseError::kTruncatedExt;
    }
    if (ib_len < info->length + kIcrcBytes) {
        return ParseError::kTruncatedIcrc;
    }
    const size_t data_len = ib_len - info->length - kIcrcBytes;
    const uint8_t pad = bth.pad();
    if (pad > data_len) {
        return ParseError::kPad;
    }
    if (data_len && !info->has(kMaskPayload)) {
        return ParseError::kPayload;
    }

    const size_t icrc_off = bth_off + ib_len - kIcrcBytes;
    const uint8_t *ic = p + icrc_off;
    const uint32_t icrc = uint32_t{ic[0]} | uint32_t{ic[1]} << 8 |
                          uint32_t{ic[2]} << 16 | uint32_t{ic[3]} << 24;
    if (icrc_compute(frame.subspan(l3, icrc_off - l3), ipv6) != icrc) {
        return ParseError::kIcrc;
    }

    Packet &pk = *out;
    pk.frame = frame;
    std::memcpy(pk.dmac.data(), p, 6);
    std::memcpy(pk.smac.data(), p + 6, 6);
    pk.vlan = vlan;
    pk.vlan_tci = vlan ? load_be16(p + 14) : 0;
    pk.ipv6 = ipv6;
    if (ipv6) {
        const uint32_t w0 = load_be32(ip);
        pk.tclass = static_cast<uint8_t>(w0 >> 20);
        pk.flow_label = w0 & 0xFFFFF;
        pk.hop_limit = ip[7];
        std::memcpy(pk.sgid.data(), ip + 8, 16);
        std::memcpy(pk.dgid.data(), ip + 24, 16);
    } else {
        pk.tclass = ip[1];
        pk.flow_label = 0;
        pk.hop_limit = ip[8];
        v4mapped(pk.sgid, ip + 12);
        v4mapped(pk.dgid, ip + 16);
    }
    pk.sport = load_be16(udp);
    pk.dport = kRoceUdpPort;
    pk.info = info;
    pk.opcode = info->opcode;
    pk.pad = pad;
    pk.l3_off = static_cast<uint16_t>(l3);
    pk.bth_off = static_cast<uint16_t>(bth_off);
    pk.payload = frame.subspan(bth_off + info->length, data_len - pad);
    pk.icrc = icrc;
    return ParseError::kNone;
}

void grh_area(const Packet &p, std::span<uint8_t, kGrhBytes> out) noexcept
{
    const std::span<const uint8_t> ip = p.l3_header();
    const size_t zeros = kGrhBytes - ip.size();
    std::memset(out.data(), 0, zeros);
    std::memcpy(out.data() + zeros, ip.data(), ip.size());
}

void grh_area(const FrameAddr &a, size_t udp_payload,
              std::span<uint8_t, kGrhBytes> out) noexcept
{
    std::memset(out.data(), 0, kGrhBytes);
    if (gid_is_v4mapped(a.sgid)) {
        write_ipv4(out.data() + kGrhBytes - kIpv4Bytes, a,
                   kIpv4Bytes + kUdpBytes + udp_payload);
    } else {
        write_ipv6(out.data(), a, kUdpBytes + udp_payload);
    }
}

} // namespace vrdma::roce

/*
 * virtio-rdma soft-RoCE: whole RoCEv2 frames as Linux rxe puts them on the
 * wire — Ethernet (optionally one 802.1Q tag), IPv4 (no options, DF) or
 * IPv6 (no extension headers), UDP to port 4791 with checksum 0, BTH,
 * extension headers, payload, pad, ICRC.
 *
 * Transmit: frame_begin() lays out every header of one packet in a
 * caller-provided buffer from the opcode table and returns a TxFrame whose
 * views the caller fills (BTH QPN/PSN/flags, RETH, ...) and whose payload
 * span it copies into; frame_finish() then writes the ICRC.
 *
 * Receive: parse_frame() checks every length against the frame and the
 * opcode table before reading the field behind it, then the ICRC, and on
 * success fills a Packet: a view into the frame, valid as long as it is.
 * Each refusal has its own ParseError, for counting.
 *
 * Neither allocates, throws or makes a virtual call.  Policy (our GID?
 * P_Key? QP state? MTU?) is the caller's: this layer only says whether the
 * bytes are a well-formed RoCEv2 packet.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_VIRTIO_CORE_ROCE_FRAME_H
#define HW_RDMA_VIRTIO_CORE_ROCE_FRAME_H

#include <array>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "headers.h"
#include "hw/rdma/virtio-rdma-names.h"
#include "opcode.h"

namespace vrdma::roce {

inline constexpr uint16_t kRoceUdpPort = 4791;
inline constexpr uint16_t kEtherTypeIpv4 = 0x0800;
inline constexpr uint16_t kEtherTypeIpv6 = 0x86DD;
inline constexpr uint16_t kEtherTypeVlan = 0x8100;
inline constexpr size_t kEthBytes = 14;
inline constexpr size_t kVlanBytes = 4;
inline constexpr size_t kIpv4Bytes = 20;
inline constexpr size_t kIpv6Bytes = 40;
inline constexpr size_t kUdpBytes = 8;
inline constexpr uint8_t kIpProtoUdp = 17;

using Mac = std::array<uint8_t, 6>;
/* A GID; an IPv4 address is its IPv4-mapped form ::ffff:a.b.c.d. */
using Gid = std::array<uint8_t, 16>;

/*
 * @returns whether @g is IPv4-mapped (::ffff:0:0/96), i.e. RoCEv2 over IPv4.
 * Per packet: inline, one 8-byte and one 4-byte compare.
 */
inline bool gid_is_v4mapped(const Gid &g) noexcept
{
    static constexpr uint8_t prefix[12] = {0, 0, 0, 0, 0, 0,
                                           0, 0, 0, 0, 0xFF, 0xFF};
    return std::memcmp(g.data(), prefix, sizeof(prefix)) == 0;
}

/* Everything below the BTH that one packet needs. */
struct FrameAddr {
    Mac dmac{};
    Mac smac{};
    bool vlan = false;
    uint16_t vlan_tci = 0;       /* PCP, DEI, VID */
    Gid sgid{};                  /* both IPv4-mapped: IPv4, neither: IPv6 */
    Gid dgid{};
    uint8_t tclass = 0;          /* IPv4 TOS / IPv6 traffic class */
    uint8_t hop_limit = 64;      /* IPv4 TTL / IPv6 hop limit */
    uint32_t flow_label = 0;     /* IPv6 only; rxe sends 0 */
    uint16_t ip_id = 0;          /* IPv4 identification (DF is always set) */
    uint16_t sport = 0xC000;     /* udp_sport.h */
};

enum class BuildError : uint8_t {
    kNone = 0,
    kOpcode,        /* not in the opcode table */
    kPayload,       /* payload for an opcode that carries none */
    kAddrFamily,    /* sgid and dgid not both IPv4-mapped or both IPv6 */
    kTooLong,       /* IP length above 65535 */
    kBufferTooSmall,
    kCount
};

const char *build_error_name(BuildError e) noexcept;

/*
 * One packet being built: the views of its headers in the caller's buffer.
 * The header accessors require the opcode to have that header (asserted).
 */
struct TxFrame {
    std::span<uint8_t> frame;    /* the whole frame, exactly */
    const OpcodeInfo *info = nullptr;
    bool ipv6 = false;
    uint16_t l3_off = 0;         /* IP header */
    uint16_t bth_off = 0;
    uint32_t payload_len = 0;
    uint8_t pad = 0;

    std::span<uint8_t> hdrs() const
    {
        return frame.subspan(bth_off, info->length);
    }
    std::span<uint8_t> payload() const
    {
        return frame.subspan(bth_off + info->length, payload_len);
    }

    MutBth bth() const { return hdr_at<MutBth>(hdrs(), 0); }
    MutDeth deth() const { return ext<MutDeth>(Hdr::kDeth); }
    MutFeth feth() const { return ext<MutFeth>(Hdr::kFeth); }
    MutReth reth() const { return ext<MutReth>(Hdr::kReth); }
    MutAtomicEth atomic_eth() const { return ext<MutAtomicEth>(Hdr::kAtomicEth); }
    MutAeth aeth() const { return ext<MutAeth>(Hdr::kAeth); }
    MutAtomicAckEth atomic_ack_eth() const
    {
        return ext<MutAtomicAckEth>(Hdr::kAtomicAckEth);
    }
    MutImmDt immdt() const { return ext<MutImmDt>(Hdr::kImmDt); }
    MutIeth ieth() const { return ext<MutIeth>(Hdr::kIeth); }

private:
    template <typename V>
    V ext(Hdr h) const
    {
        assert(info->has(h));
        return hdr_at<V>(hdrs(), info->offset[static_cast<size_t>(h)]);
    }
};

/* @returns the frame length of @opcode with @payload_len bytes, or 0. */
size_t frame_len(const FrameAddr &a, uint8_t opcode,
                 size_t payload_len) noexcept;

/*
 * Lays out a packet of @opcode with @payload_len bytes of payload at the
 * start of @buf: Ethernet, IP (lengths and header checksum final), UDP
 * (length, checksum 0), BTH with opcode, pad count, P_Key 0xFFFF and TVer 0
 * set and every other field 0, extension headers, pad and ICRC zeroed.
 * The payload bytes are left as they are.  On success fills @out; on
 * failure @buf and @out are untouched.
 */
BuildError frame_begin(std::span<uint8_t> buf, const FrameAddr &a,
                       uint8_t opcode, size_t payload_len,
                       TxFrame *out) noexcept;

/* Writes the ICRC: call once every header field and the payload are set. */
void frame_finish(const TxFrame &f) noexcept;

/*
 * Why parse_frame() refused a frame: VRDMA_DROPS_FRAME, in the order of the
 * checks, each explained there.  The values are VrdmaDrop's 0..20.
 */
enum class ParseError : uint8_t {
#define VRDMA_PARSE_ERROR_(up, camel, low, why) k##camel,
    VRDMA_DROPS_FRAME(VRDMA_PARSE_ERROR_)
#undef VRDMA_PARSE_ERROR_
    kCount
};
inline constexpr size_t kParseErrorCount = static_cast<size_t>(ParseError::kCount);

/* A short name for counters and trace points ("truncated_bth", ...). */
const char *parse_error_name(ParseError e) noexcept;

/*
 * A received packet that passed parse_frame(): a view into the frame plus
 * the L2/L3/L4 fields decoded.  The header accessors require the opcode to
 * have that header (asserted); which it has is info->mask.
 */
struct Packet {
    std::span<const uint8_t> frame; /* as given, any Ethernet trailer too */
    Mac dmac{};
    Mac smac{};
    bool vlan = false;
    uint16_t vlan_tci = 0;
    bool ipv6 = false;
    Gid sgid{};                  /* IPv4: ::ffff:a.b.c.d */
    Gid dgid{};
    uint8_t tclass = 0;
    uint8_t hop_limit = 0;
    uint32_t flow_label = 0;     /* 0 for IPv4 */
    uint16_t sport = 0;
    uint16_t dport = 0;
    const OpcodeInfo *info = nullptr;
    uint8_t opcode = 0;
    uint8_t pad = 0;
    uint16_t l3_off = 0;
    uint16_t bth_off = 0;
    std::span<const uint8_t> payload; /* without pad */
    uint32_t icrc = 0;

    std::span<const uint8_t> l3_header() const
    {
        return frame.subspan(l3_off, ipv6 ? kIpv6Bytes : kIpv4Bytes);
    }
    std::span<const uint8_t> hdrs() const
    {
        return frame.subspan(bth_off, info->length);
    }

    Bth bth() const { return hdr_at<Bth>(hdrs(), 0); }
    Deth deth() const { return ext<Deth>(Hdr::kDeth); }
    Feth feth() const { return ext<Feth>(Hdr::kFeth); }
    Reth reth() const { return ext<Reth>(Hdr::kReth); }
    AtomicEth atomic_eth() const { return ext<AtomicEth>(Hdr::kAtomicEth); }
    Aeth aeth() const { return ext<Aeth>(Hdr::kAeth); }
    AtomicAckEth atomic_ack_eth() const
    {
        return ext<AtomicAckEth>(Hdr::kAtomicAckEth);
    }
    ImmDt immdt() const { return ext<ImmDt>(Hdr::kImmDt); }
    Ieth ieth() const { return ext<Ieth>(Hdr::kIeth); }

private:
    template <typename V>
    V ext(Hdr h) const
    {
        assert(info->has(h));
        return hdr_at<V>(hdrs(), info->offset[static_cast<size_t>(h)]);
    }
};

/*
 * Checks @frame and fills @out.  The checks, in order, each with its
 * ParseError: Ethernet length, EtherType; IP header length, version, IHL,
 * total length within the frame (bytes past it are an Ethernet trailer and
 * ignored), header checksum, fragment, protocol; UDP header length, UDP
 * length == IP payload length, port 4791 (the source port and the UDP
 * checksum are not checked: the ICRC covers the datagram); BTH length,
 * TVer, opcode known; extension headers and ICRC within the datagram; pad
 * count; no payload on an opcode without one; ICRC.  @out is written only
 * on success.
 */
ParseError parse_frame(std::span<const uint8_t> frame, Packet *out) noexcept;

/*
 * The 40 bytes a UD receive buffer starts with (rxe): for IPv6 the IPv6
 * header, for IPv4 20 zero bytes then the IPv4 header.
 */
void grh_area(const Packet &p, std::span<uint8_t, kGrhBytes> out) noexcept;
/*
 * The same 40 bytes for a datagram that came without its IP header (a MAD
 * through rdmacm-mux): the header a RoCEv2 packet from @a.sgid to @a.dgid
 * with @udp_payload bytes after the UDP header would have carried, IPv4
 * header checksum included (the guest's CM parses it to tell IPv4 from IPv6).
 */
void grh_area(const FrameAddr &a, size_t udp_payload,
              std::span<uint8_t, kGrhBytes> out) noexcept;

} // namespace vrdma::roce

#endif

/*
 * Helpers of the soft-RoCE wire tests: a reference ICRC written from the
 * definition (bitwise CRC-32, masks applied by hand, independent of
 * roce/icrc.cc), frame builders that fill every header field with a
 * distinct value, and fix-ups that keep a deliberately damaged frame
 * consistent everywhere but in the one field under test.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef TESTS_UNIT_TEST_ROCE_UTIL_H
#define TESTS_UNIT_TEST_ROCE_UTIL_H

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "roce/frame.h"
#include "roce/headers.h"
#include "roce/opcode.h"

namespace vrdma_test {

namespace roce = vrdma::roce;
using Bytes = std::vector<uint8_t>;

inline Bytes from_hex(const std::string &s)
{
    Bytes b;
    for (size_t i = 0; i + 1 < s.size(); i += 2) {
        b.push_back(static_cast<uint8_t>(std::stoul(s.substr(i, 2), nullptr, 16)));
    }
    return b;
}

/* zlib-convention CRC-32 (reflected 0xEDB88320), one bit at a time. */
inline uint32_t ref_crc32(uint32_t crc, const uint8_t *p, size_t n)
{
    crc = ~crc;
    for (size_t i = 0; i < n; i++) {
        crc ^= p[i];
        for (int k = 0; k < 8; k++) {
            crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1)));
        }
    }
    return ~crc;
}

/*
 * ICRC of @frame (ICRC excluded) whose IP header is at @l3: the annex A17
 * definition written out, 8 bytes of FF in front of the masked copy.
 */
inline uint32_t ref_icrc(const Bytes &frame, size_t l3, bool ipv6)
{
    /* Sized once, then filled: GCC 12 -O2 misreads insert() here
     * (-Warray-bounds on the memmove it inlines). */
    Bytes m(8 + (frame.size() - 4 - l3), 0xFF);
    std::copy(frame.begin() + l3, frame.end() - 4, m.begin() + 8);
    uint8_t *ip = m.data() + 8;
    size_t udp;
    if (ipv6) {
        ip[0] |= 0x0F;
        ip[1] = ip[2] = ip[3] = 0xFF;
        ip[7] = 0xFF;
        udp = 40;
    } else {
        ip[1] = ip[8] = ip[10] = ip[11] = 0xFF;
        udp = 20;
    }
    ip[udp + 6] = ip[udp + 7] = 0xFF;
    ip[udp + 8 + 4] = 0xFF;
    return ref_crc32(0, m.data(), m.size());
}

inline size_t l3_of(const Bytes &f)
{
    return f[12] == 0x81 && f[13] == 0x00 ? 18 : 14;
}

inline bool is_v6(const Bytes &f)
{
    const size_t l3 = l3_of(f);
    return f[l3 - 2] == 0x86 && f[l3 - 1] == 0xDD;
}

inline size_t l4_of(const Bytes &f) { return l3_of(f) + (is_v6(f) ? 40 : 20); }
inline size_t bth_of(const Bytes &f) { return l4_of(f) + 8; }

/* Recomputes the IPv4 header checksum (no-op for IPv6). */
inline void fix_ipv4_csum(Bytes &f)
{
    if (is_v6(f)) {
        return;
    }
    uint8_t *ip = f.data() + l3_of(f);
    ip[10] = ip[11] = 0;
    uint32_t sum = 0;
    for (int i = 0; i < 20; i += 2) {
        sum += uint32_t{ip[i]} << 8 | ip[i + 1];
    }
    while (sum >> 16) {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    ip[10] = static_cast<uint8_t>(~sum >> 8);
    ip[11] = static_cast<uint8_t>(~sum);
}

/* Rewrites the last 4 bytes with the reference ICRC. */
inline void fix_icrc(Bytes &f)
{
    const uint32_t c = ref_icrc(f, l3_of(f), is_v6(f));
    const size_t o = f.size() - 4;
    f[o] = static_cast<uint8_t>(c);
    f[o + 1] = static_cast<uint8_t>(c >> 8);
    f[o + 2] = static_cast<uint8_t>(c >> 16);
    f[o + 3] = static_cast<uint8_t>(c >> 24);
}

/* Sets the IP and UDP lengths from the frame size, then checksum, ICRC. */
inline void fix_all(Bytes &f)
{
    const size_t l3 = l3_of(f);
    const size_t l4 = l4_of(f);
    const size_t udp_len = f.size() - l4;
    if (is_v6(f)) {
        f[l3 + 4] = static_cast<uint8_t>(udp_len >> 8);
        f[l3 + 5] = static_cast<uint8_t>(udp_len);
    } else {
        const size_t tot = f.size() - l3;
        f[l3 + 2] = static_cast<uint8_t>(tot >> 8);
        f[l3 + 3] = static_cast<uint8_t>(tot);
    }
    f[l4 + 4] = static_cast<uint8_t>(udp_len >> 8);
    f[l4 + 5] = static_cast<uint8_t>(udp_len);
    fix_ipv4_csum(f);
    if (f.size() >= bth_of(f) + 12 + 4) {
        fix_icrc(f);
    }
}

inline roce::Gid v4gid(uint8_t a, uint8_t b, uint8_t c, uint8_t d)
{
    return {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, a, b, c, d};
}

inline roce::Gid v6gid(uint8_t last)
{
    return {0xFE, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0x11, 0x22, 0xFF,
            0xFE, 0x33, 0x44, last};
}

inline roce::FrameAddr test_addr(bool ipv6, bool vlan = false)
{
    roce::FrameAddr a;
    a.dmac = {0x52, 0x54, 0x00, 0x12, 0x34, 0x56};
    a.smac = {0x52, 0x54, 0x00, 0xAB, 0xCD, 0xEF};
    a.vlan = vlan;
    a.vlan_tci = 0x6123;
    a.sgid = ipv6 ? v6gid(1) : v4gid(192, 168, 1, 1);
    a.dgid = ipv6 ? v6gid(2) : v4gid(192, 168, 1, 2);
    a.tclass = 0x28;
    a.hop_limit = 17;
    a.flow_label = ipv6 ? 0x5A5A5 : 0;
    a.ip_id = 0x1234;
    a.sport = 0xD872;
    return a;
}

/* The values every present header gets; the round-trip test expects them. */
struct HdrValues {
    uint32_t qpn = 0xABCDEF;
    uint32_t psn = 0x123456;
    bool se = true;
    bool mig_req = true;
    bool ack_req = true;
    uint16_t pkey = 0x8001;
    uint32_t qkey = 0x80010002;
    uint32_t sqp = 0x00FEDC;
    uint8_t plt = 0x5;
    uint8_t sel = 0x2;
    uint64_t va = 0x0102030405060708ull;
    uint32_t rkey = 0xCAFEF00D;
    uint32_t dma_len = 0x00100000;
    uint64_t swap_add = 0x1111222233334444ull;
    uint64_t compare = 0x5555666677778888ull;
    uint8_t syndrome = 0x1F;
    uint32_t msn = 0x00A0B0C0 & 0xFFFFFF;
    uint64_t orig = 0x99AA99AA99AA99AAull;
    uint32_t imm = 0xDEADBEEF;
    uint32_t inv_rkey = 0x76543210;
};

inline void fill_headers(const roce::TxFrame &t, const HdrValues &v)
{
    const roce::OpcodeInfo &i = *t.info;
    t.bth().set_qpn(v.qpn);
    t.bth().set_psn(v.psn);
    t.bth().set_se(v.se);
    t.bth().set_mig_req(v.mig_req);
    t.bth().set_ack_req(v.ack_req);
    t.bth().set_pkey(v.pkey);
    if (i.has(roce::Hdr::kDeth)) {
        t.deth().set_qkey(v.qkey);
        t.deth().set_sqp(v.sqp);
    }
    if (i.has(roce::Hdr::kFeth)) {
        t.feth().set_plt(v.plt);
        t.feth().set_sel(v.sel);
    }
    if (i.has(roce::Hdr::kReth)) {
        t.reth().set_va(v.va);
        t.reth().set_rkey(v.rkey);
        t.reth().set_dma_len(v.dma_len);
    }
    if (i.has(roce::Hdr::kAtomicEth)) {
        t.atomic_eth().set_va(v.va);
        t.atomic_eth().set_rkey(v.rkey);
        t.atomic_eth().set_swap_add(v.swap_add);
        t.atomic_eth().set_compare(v.compare);
    }
    if (i.has(roce::Hdr::kAeth)) {
        t.aeth().set_syndrome(v.syndrome);
        t.aeth().set_msn(v.msn);
    }
    if (i.has(roce::Hdr::kAtomicAckEth)) {
        t.atomic_ack_eth().set_orig(v.orig);
    }
    if (i.has(roce::Hdr::kImmDt)) {
        t.immdt().set_imm(v.imm);
    }
    if (i.has(roce::Hdr::kIeth)) {
        t.ieth().set_rkey(v.inv_rkey);
    }
}

/* Payload byte k of a test packet. */
inline uint8_t payload_byte(size_t k) { return static_cast<uint8_t>(k * 7 + 3); }

/*
 * A complete frame of @opcode with @payload_len bytes (payload_byte()) and
 * every header field from @v.  Fails the test if the builder refuses.
 */
inline Bytes build(uint8_t opcode, size_t payload_len,
                   const roce::FrameAddr &a, const HdrValues &v = {})
{
    Bytes buf(roce::frame_len(a, opcode, payload_len) + 16, 0xEE);
    roce::TxFrame t;
    const roce::BuildError e =
        roce::frame_begin(buf, a, opcode, payload_len, &t);
    EXPECT_EQ(e, roce::BuildError::kNone) << roce::build_error_name(e);
    if (e != roce::BuildError::kNone) {
        return {};
    }
    fill_headers(t, v);
    for (size_t k = 0; k < payload_len; k++) {
        t.payload()[k] = payload_byte(k);
    }
    roce::frame_finish(t);
    buf.resize(t.frame.size());
    return buf;
}

inline roce::ParseError parse(const Bytes &f, roce::Packet *p = nullptr)
{
    roce::Packet tmp;
    return roce::parse_frame(f, p ? p : &tmp);
}

/* Every opcode of the table. */
inline std::vector<uint8_t> known_opcodes()
{
    std::vector<uint8_t> ops;
    for (unsigned op = 0; op < 256; op++) {
        if (roce::opcode_info(static_cast<uint8_t>(op))) {
            ops.push_back(static_cast<uint8_t>(op));
        }
    }
    return ops;
}

} // namespace vrdma_test

// GoogleTest prints a ParseError by name.
namespace vrdma::roce {
inline void PrintTo(ParseError e, std::ostream *os)
{
    *os << parse_error_name(e);
}
inline void PrintTo(BuildError e, std::ostream *os)
{
    *os << build_error_name(e);
}
} // namespace vrdma::roce

#endif

/*
 * Whole RoCEv2 frames: the builder reproduces rxe's bytes exactly, every
 * opcode survives encode -> parse over IPv4 and IPv6, and every class of
 * malformed frame is refused with its own reason before any field behind
 * the fault is read (the sanitizer build checks the "before").
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <algorithm>
#include <cstring>
#include <string>
#include <tuple>

#include "roce/udp_sport.h"
#include "test_roce_util.h"

namespace vrdma_test {
namespace {

using roce::ParseError;
using PE = ParseError;

/* The rxe test vector of roce-wire-notes.md (IPv4 header .. ICRC). */
const char kVector[] =
    "45000038000040004011b761c0a80101c0a80102c12312b700240000"
    "0420ffff000000118000000168656c6c6f2072646d610000e5476a48";

const char kHello[] = "hello rdma";

roce::FrameAddr vector_addr()
{
    roce::FrameAddr a;
    a.dmac = {0x02, 0, 0, 0, 0, 2};
    a.smac = {0x02, 0, 0, 0, 0, 1};
    a.sgid = v4gid(192, 168, 1, 1);
    a.dgid = v4gid(192, 168, 1, 2);
    a.tclass = 0;
    a.hop_limit = 64;
    a.ip_id = 0;
    a.sport = 0xC123;
    return a;
}

Bytes eth_header(const roce::FrameAddr &a, uint16_t etype)
{
    Bytes b(a.dmac.begin(), a.dmac.end());
    b.insert(b.end(), a.smac.begin(), a.smac.end());
    b.push_back(static_cast<uint8_t>(etype >> 8));
    b.push_back(static_cast<uint8_t>(etype));
    return b;
}

/* ---- rxe's bytes ---- */

TEST(RoceFrame, BuildReproducesRxeVector)
{
    const roce::FrameAddr a = vector_addr();
    Bytes buf(128, 0xEE);
    roce::TxFrame t;
    ASSERT_EQ(roce::frame_begin(buf, a, roce::kRcSendOnly, 10, &t),
              roce::BuildError::kNone);
    t.bth().set_qpn(0x11);
    t.bth().set_psn(1);
    t.bth().set_ack_req(true);
    std::memcpy(t.payload().data(), kHello, 10);
    roce::frame_finish(t);

    Bytes want = eth_header(a, 0x0800);
    const Bytes v = from_hex(kVector);
    want.insert(want.end(), v.begin(), v.end());
    EXPECT_EQ(Bytes(t.frame.begin(), t.frame.end()), want);
    EXPECT_EQ(t.frame.size(), 14u + 56u);
    EXPECT_EQ(t.frame.data(), buf.data());
    EXPECT_EQ(buf[70], 0xEE) << "wrote past the frame";
}

TEST(RoceFrame, ParseRxeVector)
{
    Bytes f = eth_header(vector_addr(), 0x0800);
    const Bytes v = from_hex(kVector);
    f.insert(f.end(), v.begin(), v.end());

    roce::Packet p;
    ASSERT_EQ(parse(f, &p), PE::kNone);
    EXPECT_FALSE(p.ipv6);
    EXPECT_FALSE(p.vlan);
    EXPECT_EQ(p.sgid, v4gid(192, 168, 1, 1));
    EXPECT_EQ(p.dgid, v4gid(192, 168, 1, 2));
    EXPECT_EQ(p.hop_limit, 64);
    EXPECT_EQ(p.tclass, 0);
    EXPECT_EQ(p.sport, 0xC123);
    EXPECT_EQ(p.dport, 4791);
    EXPECT_EQ(p.opcode, roce::kRcSendOnly);
    EXPECT_STREQ(p.info->name, "RC_SEND_ONLY");
    EXPECT_EQ(p.bth().qpn(), 0x11u);
    EXPECT_EQ(p.bth().psn(), 1u);
    EXPECT_TRUE(p.bth().ack_req());
    EXPECT_EQ(p.bth().pkey(), 0xFFFF);
    EXPECT_EQ(p.pad, 2);
    EXPECT_EQ(std::string(p.payload.begin(), p.payload.end()), kHello);
    EXPECT_EQ(p.icrc, 0x486a47e5u);
}

/*
 * An IPv6 UD SEND_ONLY_WITH_IMMEDIATE written out field by field as rxe
 * would send it (flow label 0, UDP checksum 0, sport of QP 0x11 at create),
 * ICRC from the reference: the builder must produce the same bytes.
 */
TEST(RoceFrame, BuildMatchesHandBuiltIpv6UdFrame)
{
    roce::FrameAddr a;
    a.dmac = {0x02, 0, 0, 0, 0, 2};
    a.smac = {0x02, 0, 0, 0, 0, 1};
    a.sgid = v6gid(1);
    a.dgid = v6gid(2);
    a.tclass = 0xA5;
    a.hop_limit = 255;
    a.sport = roce::udp_sport_for_qpn(0x11);
    ASSERT_EQ(a.sport, 0xDF94);

    Bytes want = eth_header(a, 0x86DD);
    const Bytes ip = from_hex(
        "6a500000"                         /* v6, tclass a5, flow 0 */
        "0028" "11" "ff"                   /* payload 40, UDP, hop 255 */
        "fe800000000000000211" "22fffe334401"
        "fe800000000000000211" "22fffe334402");
    want.insert(want.end(), ip.begin(), ip.end());
    const Bytes rest = from_hex(
        "df9412b700280000"                 /* UDP */
        "6510ffff00000001" "00000005"      /* BTH: UD imm, pad 1, QP1, psn 5 */
        "80010000" "00000011"              /* DETH: Q_Key, src QP 0x11 */
        "01020304"                         /* ImmDt */
        "616263" "00"                      /* "abc", pad */
        "00000000");                       /* ICRC, below */
    want.insert(want.end(), rest.begin(), rest.end());
    fix_icrc(want);

    Bytes buf(want.size());
    roce::TxFrame t;
    ASSERT_EQ(roce::frame_begin(buf, a, roce::kUdSendOnlyImm, 3, &t),
              roce::BuildError::kNone);
    t.bth().set_qpn(1);
    t.bth().set_psn(5);
    t.deth().set_qkey(0x80010000);
    t.deth().set_sqp(0x11);
    t.immdt().set_imm(0x01020304);
    std::memcpy(t.payload().data(), "abc", 3);
    roce::frame_finish(t);
    EXPECT_EQ(buf, want);

    roce::Packet p;
    ASSERT_EQ(parse(buf, &p), PE::kNone);
    EXPECT_TRUE(p.ipv6);
    EXPECT_EQ(p.tclass, 0xA5);
    EXPECT_EQ(p.flow_label, 0u);
    EXPECT_EQ(p.deth().qkey(), 0x80010000u);
    EXPECT_EQ(p.deth().sqp(), 0x11u);
    EXPECT_EQ(p.immdt().imm(), 0x01020304u);
}

/* ---- round trips: every opcode, both IP versions, with and without VLAN,
 * payload lengths covering every pad count ---- */

void expect_round_trip(uint8_t op, size_t len, bool v6, bool vlan)
{
    SCOPED_TRACE(std::string(roce::opcode_info(op)->name) + " len " +
                 std::to_string(len) + (v6 ? " v6" : " v4") +
                 (vlan ? " vlan" : ""));
    const roce::FrameAddr a = test_addr(v6, vlan);
    const HdrValues v;
    const Bytes f = build(op, len, a, v);
    ASSERT_FALSE(f.empty());
    ASSERT_EQ(f.size(), roce::frame_len(a, op, len));

    roce::Packet p;
    ASSERT_EQ(parse(f, &p), PE::kNone);
    const roce::OpcodeInfo *info = roce::opcode_info(op);
    const size_t l3 = vlan ? 18 : 14;
    const size_t bth = l3 + (v6 ? 40 : 20) + 8;

    EXPECT_EQ(p.frame.data(), f.data());
    EXPECT_EQ(p.dmac, a.dmac);
    EXPECT_EQ(p.smac, a.smac);
    EXPECT_EQ(p.vlan, vlan);
    EXPECT_EQ(p.vlan_tci, vlan ? a.vlan_tci : 0);
    EXPECT_EQ(p.ipv6, v6);
    EXPECT_EQ(p.sgid, a.sgid);
    EXPECT_EQ(p.dgid, a.dgid);
    EXPECT_EQ(p.tclass, a.tclass);
    EXPECT_EQ(p.hop_limit, a.hop_limit);
    EXPECT_EQ(p.flow_label, v6 ? a.flow_label : 0);
    EXPECT_EQ(p.sport, a.sport);
    EXPECT_EQ(p.dport, roce::kRoceUdpPort);
    EXPECT_EQ(p.l3_off, l3);
    EXPECT_EQ(p.bth_off, bth);
    EXPECT_EQ(p.l3_header().data(), f.data() + l3);
    EXPECT_EQ(p.info, info);
    EXPECT_EQ(p.opcode, op);

    /* Payload, pad (zeros), ICRC. */
    const size_t pad = (4 - len % 4) % 4;
    EXPECT_EQ(p.pad, pad);
    EXPECT_EQ(p.bth().pad(), pad);
    ASSERT_EQ(p.payload.size(), len);
    EXPECT_EQ(p.payload.data(), f.data() + bth + info->length);
    for (size_t k = 0; k < len; k++) {
        ASSERT_EQ(p.payload[k], payload_byte(k)) << "payload byte " << k;
    }
    for (size_t k = 0; k < pad; k++) {
        EXPECT_EQ(f[bth + info->length + len + k], 0) << "pad byte " << k;
    }
    EXPECT_EQ(f.size(), bth + info->length + len + pad + 4);
    EXPECT_EQ(p.icrc, ref_icrc(f, l3, v6));

    /* Fixed fields rxe always sends. */
    EXPECT_EQ(f[bth - 2], 0);  /* UDP checksum */
    EXPECT_EQ(f[bth - 1], 0);
    if (!v6) {
        EXPECT_EQ(f[l3], 0x45);
        EXPECT_EQ(f[l3 + 6] & 0xE0, 0x40) << "DF";
        EXPECT_EQ(roce::load_be16(&f[l3 + 4]), a.ip_id);
    }

    /* Every header field. */
    const roce::Bth b = p.bth();
    EXPECT_EQ(b.opcode(), op);
    EXPECT_EQ(b.tver(), 0);
    EXPECT_EQ(b.qpn(), v.qpn);
    EXPECT_EQ(b.psn(), v.psn);
    EXPECT_EQ(b.se(), v.se);
    EXPECT_EQ(b.mig_req(), v.mig_req); /* M=1 (ConnectX-3 Pro) tolerated */
    EXPECT_EQ(b.ack_req(), v.ack_req);
    EXPECT_EQ(b.pkey(), v.pkey);
    EXPECT_FALSE(b.fecn());
    EXPECT_FALSE(b.becn());
    if (info->has(roce::Hdr::kDeth)) {
        EXPECT_EQ(p.deth().qkey(), v.qkey);
        EXPECT_EQ(p.deth().sqp(), v.sqp);
    }
    if (info->has(roce::Hdr::kFeth)) {
        EXPECT_EQ(p.feth().plt(), v.plt);
        EXPECT_EQ(p.feth().sel(), v.sel);
    }
    if (info->has(roce::Hdr::kReth)) {
        EXPECT_EQ(p.reth().va(), v.va);
        EXPECT_EQ(p.reth().rkey(), v.rkey);
        EXPECT_EQ(p.reth().dma_len(), v.dma_len);
    }
    if (info->has(roce::Hdr::kAtomicEth)) {
        EXPECT_EQ(p.atomic_eth().va(), v.va);
        EXPECT_EQ(p.atomic_eth().rkey(), v.rkey);
        EXPECT_EQ(p.atomic_eth().swap_add(), v.swap_add);
        EXPECT_EQ(p.atomic_eth().compare(), v.compare);
    }
    if (info->has(roce::Hdr::kAeth)) {
        EXPECT_EQ(p.aeth().syndrome(), v.syndrome);
        EXPECT_EQ(p.aeth().msn(), v.msn);
    }
    if (info->has(roce::Hdr::kAtomicAckEth)) {
        EXPECT_EQ(p.atomic_ack_eth().orig(), v.orig);
    }
    if (info->has(roce::Hdr::kImmDt)) {
        EXPECT_EQ(p.immdt().imm(), v.imm);
    }
    if (info->has(roce::Hdr::kIeth)) {
        EXPECT_EQ(p.ieth().rkey(), v.inv_rkey);
    }
}

using OpFamily = std::tuple<uint8_t, bool>; /* opcode, IPv6 */

class RoceRoundTrip : public ::testing::TestWithParam<OpFamily> {};

TEST_P(RoceRoundTrip, EncodeParse)
{
    const auto [op, v6] = GetParam();
    const bool payload = roce::opcode_info(op)->has(roce::kMaskPayload);
    const size_t lens[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 255, 1024, 4096};
    for (size_t len : lens) {
        if (len && !payload) {
            break;
        }
        for (bool vlan : {false, true}) {
            expect_round_trip(op, len, v6, vlan);
        }
    }
}

std::string op_family_name(const ::testing::TestParamInfo<OpFamily> &i)
{
    return std::string(roce::opcode_info(std::get<0>(i.param))->name) +
           (std::get<1>(i.param) ? "_IPv6" : "_IPv4");
}

INSTANTIATE_TEST_SUITE_P(AllOpcodes, RoceRoundTrip,
                         ::testing::Combine(::testing::ValuesIn(known_opcodes()),
                                            ::testing::Bool()),
                         op_family_name);

/* ---- the builder's refusals ---- */

TEST(RoceFrame, BuildRefusals)
{
    const roce::FrameAddr a = test_addr(false);
    Bytes buf(9000, 0xEE);
    const Bytes before = buf;
    roce::TxFrame t;
    EXPECT_EQ(roce::frame_begin(buf, a, 0x15, 0, &t), roce::BuildError::kOpcode);
    EXPECT_EQ(roce::frame_begin(buf, a, 0x40, 0, &t), roce::BuildError::kOpcode);
    EXPECT_EQ(roce::frame_begin(buf, a, roce::kRcAcknowledge, 1, &t),
              roce::BuildError::kPayload);
    EXPECT_EQ(roce::frame_begin(buf, a, roce::kRcReadRequest, 4, &t),
              roce::BuildError::kPayload);

    roce::FrameAddr mixed = a;
    mixed.dgid = v6gid(2);
    EXPECT_EQ(roce::frame_begin(buf, mixed, roce::kRcSendOnly, 0, &t),
              roce::BuildError::kAddrFamily);

    Bytes big(70000);
    /* IPv4: 20 + 8 + 12 + payload + pad + 4 <= 65535, payload + pad a
     * multiple of 4. */
    EXPECT_EQ(roce::frame_begin(big, a, roce::kRcSendOnly, 65488, &t),
              roce::BuildError::kNone);
    EXPECT_EQ(roce::load_be16(&big[14 + 2]), 65532);
    EXPECT_EQ(roce::frame_begin(big, a, roce::kRcSendOnly, 65489, &t),
              roce::BuildError::kTooLong); /* + pad 3 */
    EXPECT_EQ(roce::frame_begin(big, a, roce::kRcSendOnly, size_t{1} << 40, &t),
              roce::BuildError::kTooLong);
    /* IPv6: the payload length does not count the 40-byte header. */
    EXPECT_EQ(roce::frame_begin(big, test_addr(true), roce::kRcSendOnly,
                                65508, &t),
              roce::BuildError::kNone);
    EXPECT_EQ(roce::load_be16(&big[14 + 4]), 65532);
    EXPECT_EQ(roce::frame_begin(big, test_addr(true), roce::kRcSendOnly,
                                65509, &t),
              roce::BuildError::kTooLong);

    const size_t need = roce::frame_len(a, roce::kRcWriteOnly, 100);
    ASSERT_EQ(need, 14u + 20 + 8 + 28 + 100 + 4);
    EXPECT_EQ(roce::frame_begin(std::span(buf).first(need - 1), a,
                                roce::kRcWriteOnly, 100, &t),
              roce::BuildError::kBufferTooSmall);
    EXPECT_EQ(buf, before) << "a refused build wrote to the buffer";
    EXPECT_EQ(roce::frame_begin(std::span(buf).first(need), a,
                                roce::kRcWriteOnly, 100, &t),
              roce::BuildError::kNone);
    EXPECT_EQ(t.frame.size(), need);

    EXPECT_EQ(roce::frame_len(a, 0x15, 0), 0u);
    EXPECT_EQ(roce::frame_len(mixed, roce::kRcSendOnly, 0), 0u);
}

/* ---- malformed frames, over IPv4 and IPv6 ---- */

/* The frame the malformed-frame tests damage, and where its headers are. */
template <typename Base>
class WithBaseFrame : public Base {
protected:
    virtual bool v6() const = 0;
    /* RDMA WRITE ONLY with immediate, 5 bytes: RETH, ImmDt, pad 3. */
    Bytes base() const
    {
        return build(roce::kRcWriteOnlyImm, 5, test_addr(v6()));
    }
    size_t l3() const { return 14; }
    size_t l4() const { return v6() ? 54 : 34; }
    size_t bth() const { return l4() + 8; }
};

/* Over IPv4 and IPv6. */
class RoceParse : public WithBaseFrame<::testing::TestWithParam<bool>> {
protected:
    bool v6() const override { return GetParam(); }
};

/* IPv4 header checks. */
class RoceParseIpv4 : public WithBaseFrame<::testing::Test> {
protected:
    bool v6() const override { return false; }
};

INSTANTIATE_TEST_SUITE_P(Ip, RoceParse, ::testing::Bool(),
                         [](const auto &i) {
                             return std::string(i.param ? "IPv6" : "IPv4");
                         });

TEST_P(RoceParse, BaseFrameIsAccepted)
{
    EXPECT_EQ(parse(base()), PE::kNone);
}

TEST_P(RoceParse, TruncatedFrameAtEveryLength)
{
    const Bytes f = base();
    const size_t ip_hdr = v6() ? 40 : 20;
    for (size_t cut = 0; cut < f.size(); cut++) {
        const Bytes g(f.begin(), f.begin() + cut);
        const PE want = cut < 14            ? PE::kTruncatedEth
                        : cut < 14 + ip_hdr ? PE::kTruncatedIp
                                            : PE::kIpLength;
        EXPECT_EQ(parse(g), want) << "cut at " << cut;
    }
}

TEST_P(RoceParse, TruncatedVlanHeader)
{
    const Bytes f = build(roce::kRcSendOnly, 0, test_addr(v6(), true));
    ASSERT_EQ(parse(f), PE::kNone);
    for (size_t cut = 14; cut < 18; cut++) {
        EXPECT_EQ(parse(Bytes(f.begin(), f.begin() + cut)), PE::kTruncatedEth);
    }
    EXPECT_EQ(parse(Bytes(f.begin(), f.begin() + 18)), PE::kTruncatedIp);
}

/* IP says the datagram is shorter than a UDP header. */
TEST_P(RoceParse, TruncatedUdp)
{
    for (size_t k = 0; k < 8; k++) {
        Bytes g = base();
        g.resize(l4() + k);
        if (v6()) {
            g[l3() + 4] = 0;
            g[l3() + 5] = static_cast<uint8_t>(k);
        } else {
            g[l3() + 2] = 0;
            g[l3() + 3] = static_cast<uint8_t>(20 + k);
            fix_ipv4_csum(g);
        }
        EXPECT_EQ(parse(g), PE::kTruncatedUdp) << k << " bytes of UDP";
    }
}

/*
 * IP and UDP lengths consistent, but the datagram ends inside the BTH,
 * inside (or right after) each extension header, or inside the ICRC —
 * for every opcode.
 */
TEST_P(RoceParse, TruncatedAtEveryHeaderBoundary)
{
    for (uint8_t op : known_opcodes()) {
        const roce::OpcodeInfo *info = roce::opcode_info(op);
        const Bytes f = build(op, 0, test_addr(v6()));
        for (size_t b = 0; b < info->length + 4u; b++) {
            Bytes g(f.begin(), f.begin() + bth() + b);
            fix_all(g);
            const PE want = b < 12             ? PE::kTruncatedBth
                            : b < info->length ? PE::kTruncatedExt
                                               : PE::kTruncatedIcrc;
            EXPECT_EQ(parse(g), want) << info->name << " cut " << b
                                      << " bytes after the UDP header";
        }
        EXPECT_EQ(parse(f), PE::kNone) << info->name;
    }
}

TEST_P(RoceParse, WrongEtherType)
{
    for (uint16_t et : {0x0806, 0x88A8, 0x88CC, 0x0000, 0x8915}) {
        Bytes g = base();
        g[12] = static_cast<uint8_t>(et >> 8);
        g[13] = static_cast<uint8_t>(et);
        EXPECT_EQ(parse(g), PE::kEtherType) << std::hex << et;
    }
    /* The other IP version's EtherType: the version field disagrees. */
    Bytes g = base();
    g[12] = v6() ? 0x08 : 0x86;
    g[13] = v6() ? 0x00 : 0xDD;
    EXPECT_EQ(parse(g), PE::kIpVersion);
    /* Inside a VLAN tag too. */
    Bytes t = build(roce::kRcSendOnly, 0, test_addr(v6(), true));
    t[16] = 0x08;
    t[17] = 0x06;
    EXPECT_EQ(parse(t), PE::kEtherType);
}

TEST_P(RoceParse, BadIpVersion)
{
    for (uint8_t ver : {0, 4, 5, 6, 15}) {
        if (ver == (v6() ? 6 : 4)) {
            continue;
        }
        Bytes g = base();
        g[l3()] = static_cast<uint8_t>(ver << 4 | (g[l3()] & 0x0F));
        fix_ipv4_csum(g);
        EXPECT_EQ(parse(g), PE::kIpVersion) << int(ver);
    }
}

TEST_F(RoceParseIpv4, BadIhl)
{
    for (uint8_t ihl : {0, 4, 6, 15}) {
        Bytes g = base();
        g[l3()] = static_cast<uint8_t>(0x40 | ihl);
        EXPECT_EQ(parse(g), PE::kIpv4Ihl) << int(ihl);
    }
}

TEST_F(RoceParseIpv4, Ipv4Fragments)
{
    /* MF, a fragment offset, both; DF does not matter. */
    for (uint16_t frag : {0x6000, 0x2000, 0x4001, 0x0001, 0x1FFF, 0x3000}) {
        Bytes g = base();
        g[l3() + 6] = static_cast<uint8_t>(frag >> 8);
        g[l3() + 7] = static_cast<uint8_t>(frag);
        fix_all(g);
        EXPECT_EQ(parse(g), PE::kIpv4Fragment) << std::hex << frag;
    }
    Bytes g = base();
    g[l3() + 6] = 0; /* DF clear: still a whole datagram */
    fix_all(g);
    EXPECT_EQ(parse(g), PE::kNone);
}

TEST_F(RoceParseIpv4, Ipv4HeaderChecksum)
{
    for (size_t off = 0; off < 20; off++) {
        if (off == 0 || off == 2 || off == 3) {
            continue; /* version/IHL and total length fail earlier */
        }
        Bytes g = base();
        g[l3() + off] ^= 0x01;
        EXPECT_EQ(parse(g), PE::kIpv4Checksum) << "byte " << off;
    }
}

TEST_P(RoceParse, IpLengthVsFrameLength)
{
    const size_t len_off = v6() ? l3() + 4 : l3() + 2;
    const Bytes f = base();
    const uint16_t ip_len = roce::load_be16(&f[len_off]);

    /* Longer than the frame. */
    for (uint16_t d : {1, 4, 1000}) {
        Bytes g = f;
        roce::store_be16(&g[len_off], static_cast<uint16_t>(ip_len + d));
        fix_ipv4_csum(g);
        EXPECT_EQ(parse(g), PE::kIpLength) << "+" << d;
    }
    if (!v6()) {
        /* Shorter than its own header. */
        for (uint16_t tot : {0, 1, 19}) {
            Bytes g = f;
            roce::store_be16(&g[len_off], tot);
            fix_ipv4_csum(g);
            EXPECT_EQ(parse(g), PE::kIpLength) << tot;
        }
    }
    /* Shorter than the frame: the rest is an Ethernet trailer, so the UDP
     * length no longer matches. */
    Bytes g = f;
    roce::store_be16(&g[len_off], static_cast<uint16_t>(ip_len - 1));
    fix_ipv4_csum(g);
    EXPECT_EQ(parse(g), PE::kUdpLength);
}

TEST_P(RoceParse, EthernetTrailerIsIgnored)
{
    const Bytes f = base();
    Bytes g = f;
    g.resize(f.size() + 23, 0xA5);
    roce::Packet p;
    ASSERT_EQ(parse(g, &p), PE::kNone);
    EXPECT_EQ(p.payload.size(), 5u);
    EXPECT_EQ(p.payload.data(), g.data() + bth() + 32);
    EXPECT_EQ(p.frame.size(), g.size());

    /* The shortest RoceV2 frame (SEND ONLY, no payload, IPv4: 58 bytes)
     * padded to the 60-byte Ethernet minimum. */
    Bytes s = build(roce::kRcSendOnly, 0, test_addr(v6()));
    EXPECT_EQ(s.size(), v6() ? 78u : 58u);
    s.resize(std::max<size_t>(s.size(), 60), 0);
    ASSERT_EQ(parse(s, &p), PE::kNone);
    EXPECT_TRUE(p.payload.empty());
}

TEST_P(RoceParse, NotUdp)
{
    for (uint8_t proto : {0, 6, 43, 44, 50, 58, 132}) {
        Bytes g = base();
        g[v6() ? l3() + 6 : l3() + 9] = proto;
        fix_ipv4_csum(g);
        EXPECT_EQ(parse(g), PE::kIpProtocol) << int(proto);
    }
}

TEST_P(RoceParse, UdpLengthMismatch)
{
    const Bytes f = base();
    const uint16_t ulen = roce::load_be16(&f[l4() + 4]);
    for (int d : {-1, 1, -4, 4}) {
        Bytes g = f;
        roce::store_be16(&g[l4() + 4], static_cast<uint16_t>(ulen + d));
        EXPECT_EQ(parse(g), PE::kUdpLength) << d;
    }
    for (uint16_t bad : {0, 7, 8, 0xFFFF}) {
        Bytes g = f;
        roce::store_be16(&g[l4() + 4], bad);
        EXPECT_EQ(parse(g), PE::kUdpLength) << bad;
    }
}

TEST_P(RoceParse, WrongUdpPort)
{
    for (uint16_t port : {0, 4790, 4792, 0xB712, 0xC123}) {
        Bytes g = base();
        roce::store_be16(&g[l4() + 2], port);
        fix_icrc(g);
        EXPECT_EQ(parse(g), PE::kUdpPort) << port;
    }
    /* Any source port is fine (the receiver never checks it). */
    for (uint16_t port : {0, 4791, 0xC000, 0xFFFF}) {
        Bytes g = base();
        roce::store_be16(&g[l4()], port);
        fix_icrc(g);
        roce::Packet p;
        EXPECT_EQ(parse(g, &p), PE::kNone) << port;
        EXPECT_EQ(p.sport, port);
    }
}

TEST_P(RoceParse, UnknownOpcodes)
{
    int unknown = 0;
    for (unsigned op = 0; op < 256; op++) {
        if (roce::opcode_info(static_cast<uint8_t>(op))) {
            continue;
        }
        unknown++;
        Bytes g = base();
        g[bth()] = static_cast<uint8_t>(op);
        fix_icrc(g);
        EXPECT_EQ(parse(g), PE::kOpcode) << "0x" << std::hex << op;
    }
    EXPECT_EQ(unknown, 256 - 39);
}

TEST_P(RoceParse, TransportVersionNotZero)
{
    for (uint8_t tver = 1; tver < 16; tver++) {
        Bytes g = base();
        g[bth() + 1] = static_cast<uint8_t>((g[bth() + 1] & 0xF0) | tver);
        fix_icrc(g);
        EXPECT_EQ(parse(g), PE::kBthVersion) << int(tver);
    }
}

TEST_P(RoceParse, PadLargerThanPayload)
{
    const roce::FrameAddr a = test_addr(v6());
    /* SEND ONLY with no payload claiming 1..3 pad bytes. */
    for (uint8_t pad = 1; pad < 4; pad++) {
        Bytes g = build(roce::kRcSendOnly, 0, a);
        g[bth() + 1] = static_cast<uint8_t>((g[bth() + 1] & 0xCF) | pad << 4);
        fix_icrc(g);
        EXPECT_EQ(parse(g), PE::kPad) << int(pad);
    }
    /* 2 bytes of data after the headers, pad 3. */
    Bytes g = build(roce::kRcSendOnly, 2, a);
    g.resize(g.size() - 2); /* headers, 2 bytes, a new ICRC below */
    g[bth() + 1] = static_cast<uint8_t>((g[bth() + 1] & 0xCF) | 3 << 4);
    fix_all(g);
    EXPECT_EQ(parse(g), PE::kPad);
    /* An ACK (no payload) with a pad count. */
    Bytes k = build(roce::kRcAcknowledge, 0, a);
    k[bth() + 1] |= 1 << 4;
    fix_icrc(k);
    EXPECT_EQ(parse(k), PE::kPad);
}

TEST_P(RoceParse, PadCountIsAllThatIsChecked)
{
    /* Like rxe, payload + pad need not be a multiple of 4: 4 bytes after
     * the headers with pad 3 is 1 byte of payload. */
    Bytes g = build(roce::kRcSendOnly, 4, test_addr(v6()));
    g[bth() + 1] = static_cast<uint8_t>((g[bth() + 1] & 0xCF) | 3 << 4);
    fix_icrc(g);
    roce::Packet p;
    ASSERT_EQ(parse(g, &p), PE::kNone);
    EXPECT_EQ(p.payload.size(), 1u);
    EXPECT_EQ(p.pad, 3);
}

TEST_P(RoceParse, PayloadOnOpcodeWithoutOne)
{
    const roce::FrameAddr a = test_addr(v6());
    for (uint8_t op : known_opcodes()) {
        const roce::OpcodeInfo *info = roce::opcode_info(op);
        if (info->has(roce::kMaskPayload)) {
            continue;
        }
        for (size_t extra : {1, 4, 64}) {
            Bytes g = build(op, 0, a);
            g.insert(g.end() - 4, extra, 0x5A);
            fix_all(g);
            EXPECT_EQ(parse(g), PE::kPayload) << info->name << " +" << extra;
        }
    }
}

/* ---- the ICRC: every invariant bit is covered, the masked ones are not ---- */

struct Field {
    size_t off;      /* from the IP header */
    uint8_t bits;    /* the bits that are masked */
};

std::vector<Field> masked_fields(bool v6)
{
    if (v6) {
        /* traffic class + flow label, hop limit, UDP csum, BTH byte 4 */
        return {{0, 0x0F}, {1, 0xFF}, {2, 0xFF}, {3, 0xFF}, {7, 0xFF},
                {46, 0xFF}, {47, 0xFF}, {52, 0xFF}};
    }
    /* TOS, TTL, header checksum, UDP csum, BTH byte 4 */
    return {{1, 0xFF}, {8, 0xFF}, {10, 0xFF}, {11, 0xFF},
            {26, 0xFF}, {27, 0xFF}, {32, 0xFF}};
}

TEST_P(RoceParse, EveryInvariantBitFlipIsRejected)
{
    const Bytes f = base();
    const std::vector<Field> masked = masked_fields(v6());
    /* Bytes where nothing but the ICRC can notice a flip. */
    auto icrc_only = [&](size_t off) {
        const size_t ip = off - l3();
        if (v6()) {
            if (ip >= 8 && ip < 40) {
                return true; /* addresses */
            }
        } else if ((ip >= 12 && ip < 20) || ip == 4 || ip == 5) {
            return true; /* addresses, identification */
        }
        if (off == l4() || off == l4() + 1) {
            return true; /* source port */
        }
        const size_t b = off - bth();
        return off >= bth() && b != 0 && b != 1; /* not opcode, pad/tver */
    };
    for (size_t off = l3(); off < f.size(); off++) {
        for (int bit = 0; bit < 8; bit++) {
            const uint8_t m = static_cast<uint8_t>(1 << bit);
            const bool is_masked = std::any_of(
                masked.begin(), masked.end(), [&](const Field &x) {
                    return x.off == off - l3() && (x.bits & m);
                });
            if (!v6() && (off - l3() == 10 || off - l3() == 11)) {
                continue; /* the IP checksum: fixed up below anyway */
            }
            Bytes g = f;
            g[off] ^= m;
            fix_ipv4_csum(g); /* a router would; the ICRC must still see it */
            roce::Packet p;
            const PE e = parse(g, &p);
            if (is_masked) {
                EXPECT_EQ(e, PE::kNone) << "masked byte " << off - l3()
                                        << " bit " << bit;
            } else if (icrc_only(off)) {
                EXPECT_EQ(e, PE::kIcrc) << "byte " << off - l3() << " bit "
                                        << bit;
            } else {
                EXPECT_NE(e, PE::kNone) << "byte " << off - l3() << " bit "
                                        << bit;
            }
        }
    }
}

TEST_P(RoceParse, MaskedFieldsAreReportedAndAccepted)
{
    Bytes g = base();
    if (v6()) {
        /* Traffic class 0xC3, flow label 0xABCDE, hop limit 1. */
        roce::store_be32(&g[l3()], 6u << 28 | 0xC3u << 20 | 0xABCDE);
        g[l3() + 7] = 1;
    } else {
        g[l3() + 1] = 0xC3; /* TOS: DSCP 48, ECN CE */
        g[l3() + 8] = 1;    /* TTL after some routers */
        fix_ipv4_csum(g);
    }
    g[bth() + 4] = 0xC0;    /* FECN, BECN */
    g[l4() + 6] = 0x12;     /* a UDP checksum (not verified: ICRC covers) */
    g[l4() + 7] = 0x34;
    roce::Packet p;
    ASSERT_EQ(parse(g, &p), PE::kNone);
    EXPECT_EQ(p.tclass, 0xC3);
    EXPECT_EQ(p.hop_limit, 1);
    EXPECT_EQ(p.flow_label, v6() ? 0xABCDEu : 0u);
    EXPECT_TRUE(p.bth().fecn());
    EXPECT_TRUE(p.bth().becn());
}

TEST_P(RoceParse, Layer2IsNotCovered)
{
    Bytes g = base();
    g[0] ^= 0xFF; /* destination MAC: the caller's policy, not ICRC's */
    g[11] ^= 0x01;
    EXPECT_EQ(parse(g), PE::kNone);
}

TEST_P(RoceParse, RefusedParseLeavesPacketAlone)
{
    Bytes g = base();
    g.back() ^= 1;
    roce::Packet p;
    p.opcode = 0x77;
    p.sport = 0x1234;
    EXPECT_EQ(parse(g, &p), PE::kIcrc);
    EXPECT_EQ(p.opcode, 0x77);
    EXPECT_EQ(p.sport, 0x1234);
    EXPECT_EQ(p.info, nullptr);
}

/* ---- the UD GRH area ---- */

TEST_P(RoceParse, GrhArea)
{
    const Bytes f = build(roce::kUdSendOnly, 8, test_addr(v6()));
    roce::Packet p;
    ASSERT_EQ(parse(f, &p), PE::kNone);
    std::array<uint8_t, 40> grh;
    grh.fill(0xEE);
    roce::grh_area(p, grh);
    if (v6()) {
        EXPECT_TRUE(std::equal(grh.begin(), grh.end(), f.begin() + 14));
    } else {
        EXPECT_TRUE(std::all_of(grh.begin(), grh.begin() + 20,
                                [](uint8_t b) { return b == 0; }));
        EXPECT_TRUE(std::equal(grh.begin() + 20, grh.end(), f.begin() + 14));
    }
}

TEST(RoceFrame, ErrorNamesAreDistinct)
{
    std::vector<std::string> names;
    for (size_t e = 0; e < roce::kParseErrorCount; e++) {
        names.push_back(roce::parse_error_name(static_cast<PE>(e)));
        EXPECT_NE(names.back(), "?");
    }
    std::sort(names.begin(), names.end());
    EXPECT_EQ(std::unique(names.begin(), names.end()), names.end());
    EXPECT_STREQ(roce::parse_error_name(PE::kCount), "?");
}

TEST(RoceFrame, GidFamily)
{
    EXPECT_TRUE(roce::gid_is_v4mapped(v4gid(10, 0, 0, 1)));
    EXPECT_FALSE(roce::gid_is_v4mapped(v6gid(1)));
    roce::Gid g{};
    EXPECT_FALSE(roce::gid_is_v4mapped(g)); /* :: */
    g[10] = 0xFF;
    EXPECT_FALSE(roce::gid_is_v4mapped(g));
    g[11] = 0xFF;
    EXPECT_TRUE(roce::gid_is_v4mapped(g));
}

} // namespace
} // namespace vrdma_test

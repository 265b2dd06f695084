/*
 * Data path, frames in: what is ours (and what goes back to virtio-net
 * untouched), malformed frames of every header kind dropped and counted by
 * reason, the policy checks after parsing (P_Key, QP, transport, state,
 * addresses), internal loopback between two QPs of one device, bounded
 * work per run(), the single host timer, and the statistics.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "dp_harness.h"
#include "test_roce_util.h"

namespace vrdma_test {
namespace {

constexpr uint32_t kQkey = 0x11223344;
constexpr uint32_t kSignaled = VIRTIO_RDMA_SEND_SIGNALED;

class DpRecv : public DpTest {
protected:
    void SetUp() override
    {
        DpTest::SetUp();
        qa = a->create_qp(pd_a, VIRTIO_RDMA_QPT_UD, cq_a, cq_a);
        qb = b->create_qp(pd_b, VIRTIO_RDMA_QPT_UD, cq_b, cq_b);
        a->ud_up(qa, kQkey);
        b->ud_up(qb, kQkey);
        dst = buffer(*b, pd_b, 8192);
        for (int i = 0; i < 8; i++) {
            b->post_recv(qb, i, {{dst.addr, 1024, dst.lkey}});
        }
    }

    /* A frame from a's UD QP to b's, as a peer would send it. */
    Bytes frame(uint8_t opcode = roce::kUdSendOnly, size_t payload = 64,
                uint32_t qpn = 0, uint16_t pkey = 0xFFFF)
    {
        roce::FrameAddr fa;
        fa.dmac = b->mac;
        fa.smac = a->mac;
        fa.sgid = a->gid;
        fa.dgid = b->gid;
        HdrValues v;
        v.qpn = qpn ? qpn : b->wire_qpn(qb);
        v.psn = 0;
        v.pkey = pkey;
        v.qkey = kQkey;
        v.sqp = a->wire_qpn(qa);
        v.se = false;
        v.mig_req = false;
        return build(opcode, payload, fa, v);
    }

    uint32_t qa = 0, qb = 0;
    MrInfo dst;
};

/* ---- not ours: back to virtio-net, nothing counted ---- */

struct Foreign {
    const char *name;
    std::function<void(Bytes &)> change;
};

class DpNotOurs : public DpRecv, public ::testing::WithParamInterface<Foreign> {
};

TEST_P(DpNotOurs, GoesBackUntouched)
{
    Bytes f = frame();
    GetParam().change(f);
    const Bytes copy = f;
    EXPECT_FALSE(b->receive(f));
    EXPECT_EQ(f, copy);
    const VrdmaDpStats s = b->stats();
    EXPECT_EQ(s.rx_packets, 0u);
    EXPECT_EQ(s.drops, 0u);
    EXPECT_TRUE(b->drop_log.empty());
    EXPECT_EQ(b->cq_size(cq_b), 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, DpNotOurs,
    ::testing::Values(
        Foreign{"arp", [](Bytes &f) { f[12] = 0x08, f[13] = 0x06; }},
        Foreign{"short_ethernet", [](Bytes &f) { f.resize(10); }},
        Foreign{"short_ip", [](Bytes &f) { f.resize(14 + 12); }},
        Foreign{"ipv4_type_v6_header", [](Bytes &f) { f[14] = 0x65; }},
        Foreign{"tcp",
                [](Bytes &f) {
                    f[14 + 9] = 6;
                    fix_ipv4_csum(f);
                }},
        Foreign{"udp_other_port",
                [](Bytes &f) {
                    f[14 + 20 + 3] ^= 1;
                    fix_icrc(f);
                }},
        Foreign{"udp_4791_to_another_ip",
                [](Bytes &f) {
                    f[14 + 19] ^= 0x40;
                    fix_ipv4_csum(f);
                    fix_icrc(f);
                }},
        Foreign{"later_fragment",
                [](Bytes &f) {
                    f[14 + 7] = 0x10;
                    fix_ipv4_csum(f);
                }},
        /* All fragments go to the NIC, the first one too (classify.cc). */
        Foreign{"first_fragment",
                [](Bytes &f) {
                    f[14 + 6] |= 0x20;
                    fix_ipv4_csum(f);
                }},
        Foreign{"empty", [](Bytes &f) { f.clear(); }}),
    [](const auto &info) { return info.param.name; });

TEST_F(DpRecv, AnotherOfOurGidsIsOursIpv6Too)
{
    b->add_gid(3, gid_v6(9));
    roce::FrameAddr fa;
    fa.dmac = b->mac;
    fa.smac = a->mac;
    fa.sgid = gid_v6(1);
    fa.dgid = gid_v6(9);
    HdrValues v;
    v.qpn = b->wire_qpn(qb);
    v.pkey = 0xFFFF;
    v.qkey = kQkey;
    v.sqp = a->wire_qpn(qa);
    v.se = false;
    v.mig_req = false;
    EXPECT_TRUE(b->receive(build(roce::kUdSendOnly, 10, fa, v)));
    EXPECT_EQ(b->pop_cqe(cq_b).byte_len, 50u);
    fa.dgid = gid_v6(10);
    EXPECT_FALSE(b->receive(build(roce::kUdSendOnly, 10, fa, v)));
}

/* ---- ours but malformed: dropped, counted by reason, reported ---- */

struct Damage {
    const char *name;
    VrdmaDrop why;
    std::function<void(Bytes &)> change;
    uint8_t opcode = roce::kUdSendOnly;
    size_t payload = 64;
};

class DpMalformed : public DpRecv, public ::testing::WithParamInterface<Damage> {
};

TEST_P(DpMalformed, IsDroppedAndCounted)
{
    const Damage &d = GetParam();
    Bytes f = frame(d.opcode, d.payload);
    d.change(f);
    EXPECT_TRUE(b->receive(f)) << "ours: virtio-net must not see it";
    const VrdmaDpStats s = b->stats();
    EXPECT_EQ(s.drop[d.why], 1u) << vrdma_drop_name(d.why);
    EXPECT_EQ(s.drops, 1u);
    EXPECT_EQ(s.rx_packets, 1u);
    ASSERT_EQ(b->drop_log.size(), 1u);
    EXPECT_EQ(b->drop_log[0].first, vrdma_drop_name(d.why));
    EXPECT_EQ(b->cq_size(cq_b), 0u);

    /* The QP is unharmed: a good frame still goes through. */
    EXPECT_TRUE(b->receive(frame()));
    EXPECT_EQ(b->cq_size(cq_b), 1u);
}

void set_ip_len(Bytes &f, size_t v)
{
    f[14 + 2] = static_cast<uint8_t>(v >> 8);
    f[14 + 3] = static_cast<uint8_t>(v);
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, DpMalformed,
    ::testing::Values(
        Damage{"ipv4_options", VRDMA_DROP_IPV4_IHL,
               [](Bytes &f) {
                   f.insert(f.begin() + 14 + 20, {1, 1, 1, 0});
                   f[14] = 0x46;
                   set_ip_len(f, f.size() - 14);
                   fix_ipv4_csum(f);
               }},
        Damage{"ip_length_past_frame", VRDMA_DROP_IP_LENGTH,
               [](Bytes &f) {
                   set_ip_len(f, f.size() - 14 + 1);
                   fix_ipv4_csum(f);
               }},
        Damage{"ipv4_checksum", VRDMA_DROP_IPV4_CHECKSUM,
               [](Bytes &f) { f[14 + 10] ^= 1; }},
        Damage{"truncated_udp", VRDMA_DROP_TRUNCATED_UDP,
               [](Bytes &f) {
                   set_ip_len(f, 20 + 4);
                   fix_ipv4_csum(f);
               }},
        Damage{"udp_length", VRDMA_DROP_UDP_LENGTH,
               [](Bytes &f) { f[14 + 20 + 5] -= 4; }},
        Damage{"truncated_bth", VRDMA_DROP_TRUNCATED_BTH,
               [](Bytes &f) {
                   f.resize(14 + 20 + 8 + 8);
                   fix_all(f);
               }},
        Damage{"bth_version", VRDMA_DROP_BTH_VERSION,
               [](Bytes &f) {
                   f[bth_of(f) + 1] |= 1;
                   fix_icrc(f);
               }},
        Damage{"unknown_opcode", VRDMA_DROP_OPCODE,
               [](Bytes &f) {
                   f[bth_of(f)] = 0x1A;
                   fix_icrc(f);
               }},
        Damage{"truncated_ext", VRDMA_DROP_TRUNCATED_EXT,
               [](Bytes &f) {
                   f[bth_of(f)] = roce::kRcCompareSwap; /* 28-byte AtomicETH */
                   fix_icrc(f);
               },
               roce::kUdSendOnly, 0},
        Damage{"truncated_icrc", VRDMA_DROP_TRUNCATED_ICRC,
               [](Bytes &f) {
                   f[bth_of(f)] = roce::kUdSendOnlyImm; /* 4 more bytes */
                   fix_icrc(f);
               },
               roce::kUdSendOnly, 0},
        Damage{"pad", VRDMA_DROP_PAD,
               [](Bytes &f) {
                   f[bth_of(f) + 1] |= 0x30;
                   fix_icrc(f);
               },
               roce::kUdSendOnly, 0},
        Damage{"payload_on_ack", VRDMA_DROP_PAYLOAD,
               [](Bytes &f) {
                   f[bth_of(f)] = roce::kRcAcknowledge;
                   fix_icrc(f);
               }},
        Damage{"icrc", VRDMA_DROP_ICRC, [](Bytes &f) { f.back() ^= 0x80; }},
        Damage{"payload_bit_flip", VRDMA_DROP_ICRC,
               [](Bytes &f) { f[f.size() - 20] ^= 0x01; }},
        Damage{"pkey", VRDMA_DROP_PKEY,
               [](Bytes &f) {
                   f[bth_of(f) + 2] = 0x12;
                   fix_icrc(f);
               }},
        Damage{"no_such_qp", VRDMA_DROP_NO_QP,
               [](Bytes &f) {
                   f[bth_of(f) + 5] = f[bth_of(f) + 6] = 0;
                   f[bth_of(f) + 7] = 13;
                   fix_icrc(f);
               }},
        Damage{"qp_zero", VRDMA_DROP_NO_QP,
               [](Bytes &f) {
                   f[bth_of(f) + 5] = f[bth_of(f) + 6] = 0;
                   f[bth_of(f) + 7] = 0;
                   fix_icrc(f);
               }},
        Damage{"rc_opcode_to_ud_qp", VRDMA_DROP_QP_TYPE,
               [](Bytes &f) {
                   f[bth_of(f)] = roce::kRcSendOnly; /* DETH becomes data */
                   fix_icrc(f);
               }},
        Damage{"qkey", VRDMA_DROP_QKEY,
               [](Bytes &f) {
                   f[bth_of(f) + 12] ^= 1;
                   fix_icrc(f);
               }}),
    [](const auto &info) { return info.param.name; });

/* A limited-membership key matches our full-membership one (IBA 10.9.3). */
TEST_F(DpRecv, LimitedMemberPkeyMatches)
{
    EXPECT_TRUE(b->receive(frame(roce::kUdSendOnly, 8, 0, 0x7FFF)));
    EXPECT_EQ(b->cq_size(cq_b), 1u);
    EXPECT_TRUE(b->receive(frame(roce::kUdSendOnly, 8, 0, 0x8001)));
    EXPECT_EQ(b->drops(VRDMA_DROP_PKEY), 1u);
}

TEST_F(DpRecv, QpStateAndAddressChecks)
{
    /* A UD QP still in INIT takes nothing. */
    const uint32_t q = b->create_qp(pd_b, VIRTIO_RDMA_QPT_UD, cq_b, cq_b);
    virtio_rdma_qp_attr at{};
    at.qp_state = VIRTIO_RDMA_QPS_INIT;
    at.qkey = kQkey;
    at.port_num = 1;
    ASSERT_EQ(b->modify(q, VIRTIO_RDMA_QP_STATE | VIRTIO_RDMA_QP_PKEY_INDEX |
                               VIRTIO_RDMA_QP_QKEY | VIRTIO_RDMA_QP_PORT,
                        at),
              VIRTIO_RDMA_OK);
    EXPECT_TRUE(b->receive(frame(roce::kUdSendOnly, 8, b->wire_qpn(q))));
    EXPECT_EQ(b->drops(VRDMA_DROP_QP_STATE), 1u);

    /* RC: only from the peer's address to ours. */
    auto [ra, rb] = connect();
    roce::FrameAddr fa;
    fa.dmac = b->mac;
    fa.smac = a->mac;
    fa.sgid = gid_v4(10, 0, 0, 99); /* not the QP's peer */
    fa.dgid = b->gid;
    HdrValues v;
    v.qpn = b->wire_qpn(rb);
    v.psn = Conn{}.psn_a;
    v.pkey = 0xFFFF;
    v.se = false;
    v.mig_req = false;
    EXPECT_TRUE(b->receive(build(roce::kRcSendOnly, 8, fa, v)));
    EXPECT_EQ(b->drops(VRDMA_DROP_ADDR), 1u);
    (void)ra;
}

TEST_F(DpRecv, ResponseToAnRtrQpIsDropped)
{
    const uint32_t r = b->create_qp(pd_b, VIRTIO_RDMA_QPT_RC, cq_b, cq_b);
    virtio_rdma_qp_attr at{};
    at.qp_state = VIRTIO_RDMA_QPS_INIT;
    at.port_num = 1;
    ASSERT_EQ(b->modify(r, VIRTIO_RDMA_QP_STATE | VIRTIO_RDMA_QP_PKEY_INDEX |
                               VIRTIO_RDMA_QP_PORT |
                               VIRTIO_RDMA_QP_ACCESS_FLAGS,
                        at),
              VIRTIO_RDMA_OK);
    at.qp_state = VIRTIO_RDMA_QPS_RTR;
    at.path_mtu = VIRTIO_RDMA_MTU_1024;
    at.dest_qp_num = 2;
    at.ah_attr.ah_flags = VIRTIO_RDMA_AH_GRH;
    at.ah_attr.port_num = 1;
    std::memcpy(at.ah_attr.grh.dgid, a->gid.data(), 16);
    ASSERT_EQ(b->modify(r, VIRTIO_RDMA_QP_STATE | VIRTIO_RDMA_QP_AV |
                               VIRTIO_RDMA_QP_PATH_MTU |
                               VIRTIO_RDMA_QP_DEST_QPN | VIRTIO_RDMA_QP_RQ_PSN |
                               VIRTIO_RDMA_QP_MAX_DEST_RD_ATOMIC |
                               VIRTIO_RDMA_QP_MIN_RNR_TIMER,
                        at),
              VIRTIO_RDMA_OK);
    roce::FrameAddr fa;
    fa.dmac = b->mac;
    fa.smac = a->mac;
    fa.sgid = a->gid;
    fa.dgid = b->gid;
    HdrValues v;
    v.qpn = b->wire_qpn(r);
    v.pkey = 0xFFFF;
    v.syndrome = 0x1F;
    v.se = false;
    v.mig_req = false;
    EXPECT_TRUE(b->receive(build(roce::kRcAcknowledge, 0, fa, v)));
    EXPECT_EQ(b->drops(VRDMA_DROP_QP_STATE), 1u);
}

TEST_F(DpRecv, StaleResponseIsCountedNotFatal)
{
    auto [ra, rb] = connect();
    roce::FrameAddr fa;
    fa.dmac = a->mac;
    fa.smac = b->mac;
    fa.sgid = b->gid;
    fa.dgid = a->gid;
    HdrValues v;
    v.qpn = a->wire_qpn(ra);
    v.psn = 5;
    v.pkey = 0xFFFF;
    v.syndrome = 0x1F;
    v.se = false;
    v.mig_req = false;
    EXPECT_TRUE(a->receive(build(roce::kRcAcknowledge, 0, fa, v)));
    EXPECT_EQ(a->drops(VRDMA_DROP_RESPONSE), 1u);
    EXPECT_EQ(a->qp_state(ra), VIRTIO_RDMA_QPS_RTS);
    (void)rb;
}

/*
 * An ACK for PSNs already acknowledged, while a later request waits for
 * its own: dropped under its own reason (response_old), the QP untouched.
 */
TEST_F(DpRecv, OldResponseIsCountedApart)
{
    auto [ra, rb] = connect();
    const MrInfo src = buffer(*a, pd_a, 4096);
    const MrInfo buf = buffer(*b, pd_b, 4096);
    b->post_recv(rb, 1, {{buf.addr, 4096, buf.lkey}});
    b->post_recv(rb, 2, {{buf.addr, 4096, buf.lkey}});
    wire.capture = true;
    a->post_send(ra, SendWr()
                         .op(VIRTIO_RDMA_WR_SEND)
                         .id(1)
                         .flags(VIRTIO_RDMA_SEND_SIGNALED)
                         .sge(src.addr, 100, src.lkey));
    ASSERT_TRUE(wire.pump());
    Bytes ack;
    for (const Wire::Frame &f : wire.captured) {
        if (f.src == 1) {
            ack = f.data; /* b's ACK of the first SEND */
        }
    }
    ASSERT_FALSE(ack.empty());
    wire.tap = [](Wire::Frame &f) { return f.src != 1; }; /* b's ACKs lost */
    a->post_send(ra, SendWr()
                         .op(VIRTIO_RDMA_WR_SEND)
                         .id(2)
                         .flags(VIRTIO_RDMA_SEND_SIGNALED)
                         .sge(src.addr, 100, src.lkey));
    ASSERT_TRUE(wire.pump_until([&] { return b->cq_size(cq_b) >= 2; }));
    EXPECT_TRUE(a->receive(ack));
    EXPECT_EQ(a->drops(VRDMA_DROP_RESPONSE_OLD), 1u);
    EXPECT_EQ(a->drops(VRDMA_DROP_RESPONSE), 0u);
    EXPECT_EQ(a->qp_state(ra), VIRTIO_RDMA_QPS_RTS);
}

/* ---- loopback: two QPs of one device ---- */

class DpLoop : public ::testing::Test {
protected:
    void SetUp() override
    {
        n = std::make_unique<Node>(&wire, 0);
        n->add_gid(0, n->gid);
        pd = n->create_pd();
        cq = n->create_cq();
        buf = n->reg_mr(pd, n->alloc(1 << 20), 1 << 20,
                        VIRTIO_RDMA_ACCESS_LOCAL_WRITE |
                            VIRTIO_RDMA_ACCESS_REMOTE_WRITE |
                            VIRTIO_RDMA_ACCESS_REMOTE_READ |
                            VIRTIO_RDMA_ACCESS_REMOTE_ATOMIC);
    }
    void TearDown() override { n.reset(); }

    Wire wire{7};
    std::unique_ptr<Node> n;
    uint32_t pd = 0, cq = 0;
    MrInfo buf;
};

TEST_F(DpLoop, RcBetweenTwoQpsOfOneDeviceNeverTouchesTheWire)
{
    const uint32_t q1 = n->create_qp(pd, VIRTIO_RDMA_QPT_RC, cq, cq);
    const uint32_t q2 = n->create_qp(pd, VIRTIO_RDMA_QPT_RC, cq, cq);
    Conn c;
    c.mtu = VIRTIO_RDMA_MTU_1024;
    DpTest::connect_pair(*n, q1, *n, q2, VIRTIO_RDMA_QPT_RC, c, true);
    DpTest::connect_pair(*n, q2, *n, q1, VIRTIO_RDMA_QPT_RC, c, false);
    const uint64_t s = buf.addr, d = buf.addr + (512 << 10);
    n->fill(s, 300000, 61);
    n->fill(d + 400000, 50000, 62);
    n->post_recv(q2, 1, {{d, 300000, buf.lkey}});
    n->post_send(q1, SendWr()
                         .op(VIRTIO_RDMA_WR_SEND)
                         .id(2)
                         .flags(kSignaled)
                         .sge(s, 300000, buf.lkey));
    n->post_send(q1, SendWr()
                         .op(VIRTIO_RDMA_WR_RDMA_READ)
                         .id(3)
                         .flags(kSignaled)
                         .sge(s + 400000, 50000, buf.lkey)
                         .rdma(d + 400000, buf.rkey));
    ASSERT_TRUE(wire.pump());
    EXPECT_EQ(wire.frames, 0u) << "nothing on the wire";
    std::map<uint64_t, uint32_t> status;
    while (n->cq_size(cq)) {
        const virtio_rdma_cq_req c2 = n->pop_cqe(cq);
        status[c2.wr_id] = c2.status;
    }
    EXPECT_EQ(status.size(), 3u);
    for (auto [id, st] : status) {
        EXPECT_EQ(st, VIRTIO_RDMA_WC_SUCCESS) << id;
    }
    EXPECT_TRUE(n->check(d, 300000, 61));
    EXPECT_TRUE(n->check(s + 400000, 50000, 62));
    const VrdmaDpStats st = n->stats();
    EXPECT_GT(st.loopback_packets, 300u);
    EXPECT_EQ(st.tx_packets, st.loopback_packets);
    EXPECT_EQ(st.rx_packets, st.loopback_packets);
    EXPECT_EQ(st.drops, 0u);
    EXPECT_TRUE(n->not_ours.empty());
}

TEST_F(DpLoop, UdToAnotherQpOfTheSameDevice)
{
    const uint32_t q1 = n->create_qp(pd, VIRTIO_RDMA_QPT_UD, cq, cq);
    const uint32_t q2 = n->create_qp(pd, VIRTIO_RDMA_QPT_UD, cq, cq);
    n->ud_up(q1, kQkey);
    n->ud_up(q2, kQkey);
    n->fill(buf.addr, 100, 63);
    n->post_recv(q2, 1, {{buf.addr + 4096, 200, buf.lkey}});
    n->post_send(q1, SendWr()
                         .op(VIRTIO_RDMA_WR_SEND)
                         .id(2)
                         .sge(buf.addr, 100, buf.lkey)
                         .ud(n->wire_qpn(q2), kQkey, n->gid, n->mac));
    ASSERT_TRUE(wire.pump());
    EXPECT_EQ(wire.frames, 0u);
    const virtio_rdma_cq_req r = n->pop_cqe(cq);
    EXPECT_EQ(r.wr_id, 1u);
    EXPECT_EQ(r.src_qp, n->wire_qpn(q1));
    EXPECT_TRUE(n->check(buf.addr + 4096 + 40, 100, 63));
}

/* Delivered by run(), not from inside the send: no recursion. */
TEST_F(DpLoop, LoopedBackFramesWaitForRun)
{
    const uint32_t q1 = n->create_qp(pd, VIRTIO_RDMA_QPT_UD, cq, cq);
    const uint32_t q2 = n->create_qp(pd, VIRTIO_RDMA_QPT_UD, cq, cq);
    n->ud_up(q1, kQkey);
    n->ud_up(q2, kQkey);
    n->post_recv(q2, 1, {{buf.addr + 4096, 200, buf.lkey}});
    n->post_send(q1, SendWr()
                         .op(VIRTIO_RDMA_WR_SEND)
                         .id(2)
                         .sge(buf.addr, 10, buf.lkey)
                         .ud(n->wire_qpn(q2), kQkey, n->gid, n->mac));
    EXPECT_TRUE(n->kicked);
    n->kicked = false;
    EXPECT_TRUE(vrdma_core_run(n->core)) << "the frame is queued, not delivered";
    EXPECT_EQ(n->cq_size(cq), 0u);
    EXPECT_FALSE(n->kicked) << "no kick from inside run()";
    EXPECT_FALSE(vrdma_core_run(n->core));
    EXPECT_EQ(n->cq_size(cq), 1u);
}

/*
 * Many QPs of one device reading from each other at once overflow the
 * loopback queue; the drops are counted and RC repairs them.
 */
TEST_F(DpLoop, LoopbackOverflowIsRepaired)
{
    Conn c;
    c.mtu = VIRTIO_RDMA_MTU_256;
    c.timeout = 8;
    std::vector<std::pair<uint32_t, uint32_t>> pairs;
    for (int i = 0; i < 7; i++) {
        const uint32_t q1 = n->create_qp(pd, VIRTIO_RDMA_QPT_RC, cq, cq);
        const uint32_t q2 = n->create_qp(pd, VIRTIO_RDMA_QPT_RC, cq, cq);
        DpTest::connect_pair(*n, q1, *n, q2, VIRTIO_RDMA_QPT_RC, c, true);
        DpTest::connect_pair(*n, q2, *n, q1, VIRTIO_RDMA_QPT_RC, c, false);
        pairs.emplace_back(q1, q2);
    }
    n->fill(buf.addr + (512 << 10), 16 * 4096, 64);
    for (const auto &[q1, q2] : pairs) {
        (void)q2;
        for (int k = 0; k < 16; k++) {
            n->post_send(q1, SendWr()
                                 .op(VIRTIO_RDMA_WR_RDMA_READ)
                                 .id(q1 * 100 + k)
                                 .flags(kSignaled)
                                 .sge(buf.addr + 4096 * k +
                                          (q1 / 2 - 1) * 65536,
                                      4096, buf.lkey)
                                 .rdma(buf.addr + (512 << 10) + 4096 * k,
                                       buf.rkey));
        }
    }
    ASSERT_TRUE(wire.pump());
    EXPECT_EQ(n->cq_size(cq), 7u * 16);
    while (n->cq_size(cq)) {
        EXPECT_EQ(n->pop_cqe(cq).status, VIRTIO_RDMA_WC_SUCCESS);
    }
    for (const auto &[q1, q2] : pairs) {
        (void)q2;
        EXPECT_EQ(0, std::memcmp(n->mem(buf.addr + (q1 / 2 - 1) * 65536),
                                 n->mem(buf.addr + (512 << 10)), 16 * 4096));
    }
    EXPECT_GT(n->drops(VRDMA_DROP_LOOPBACK_FULL), 0u);
    EXPECT_EQ(wire.frames, 0u);
}

/* ---- bounded work, the single timer ---- */

TEST_F(DpRecv, RunDoesABoundedAmountOfWork)
{
    auto [ua, ub] = connect(VIRTIO_RDMA_QPT_UC);
    const MrInfo big = buffer(*a, pd_a, 1 << 20);
    b->post_recv(ub, 1, {{dst.addr, 0, dst.lkey}});
    a->post_send(ua, SendWr()
                         .op(VIRTIO_RDMA_WR_SEND)
                         .id(1)
                         .sge(big.addr, 1 << 20, big.lkey));
    ASSERT_TRUE(a->kicked);
    a->kicked = false;
    const uint64_t kicks = a->kicks;
    EXPECT_TRUE(vrdma_core_run(a->core)) << "more to do";
    EXPECT_EQ(wire.frames, 256u) << "one run, one budget";
    EXPECT_EQ(a->kicks, kicks) << "the return value says it, no kick";
    while (vrdma_core_run(a->core)) {
    }
    EXPECT_EQ(wire.frames, 1024u);
    (void)ub;
}

TEST_F(DpRecv, OneHostTimerForTheEarliestDeadline)
{
    Conn slow, fast;
    slow.timeout = 16;
    fast.timeout = 12;
    wire.tap = [](Wire::Frame &) { return false; };
    const MrInfo s = buffer(*a, pd_a, 4096);
    const uint32_t q1 = a->create_qp(pd_a, VIRTIO_RDMA_QPT_RC, cq_a, cq_a);
    const uint32_t q2 = a->create_qp(pd_a, VIRTIO_RDMA_QPT_RC, cq_a, cq_a);
    const uint32_t p1 = b->create_qp(pd_b, VIRTIO_RDMA_QPT_RC, cq_b, cq_b);
    const uint32_t p2 = b->create_qp(pd_b, VIRTIO_RDMA_QPT_RC, cq_b, cq_b);
    DpTest::connect_pair(*a, q1, *b, p1, VIRTIO_RDMA_QPT_RC, slow, true);
    DpTest::connect_pair(*a, q2, *b, p2, VIRTIO_RDMA_QPT_RC, fast, true);
    const uint64_t t0 = wire.now;
    a->post_send(q1, SendWr().op(VIRTIO_RDMA_WR_SEND).id(1).sge(s.addr, 8, s.lkey));
    ASSERT_TRUE(wire.pump_until([&] { return wire.frames == 1; }));
    EXPECT_EQ(a->deadline, t0 + (4096ull << 16));
    a->post_send(q2, SendWr().op(VIRTIO_RDMA_WR_SEND).id(2).sge(s.addr, 8, s.lkey));
    ASSERT_TRUE(wire.pump_until([&] { return wire.frames == 2; }));
    EXPECT_EQ(a->deadline, t0 + (4096ull << 12)) << "re-armed earlier";
    /* It fires, q2 retransmits, and the timer is armed for what is next. */
    ASSERT_TRUE(wire.pump_until([&] { return wire.frames == 3; }));
    EXPECT_EQ(wire.now, t0 + (4096ull << 12));
    EXPECT_EQ(a->deadline, t0 + 2 * (4096ull << 12));
}

TEST_F(DpRecv, StatisticsAddUp)
{
    auto [ra, rb] = connect();
    const MrInfo s = buffer(*a, pd_a, 65536);
    b->post_recv(rb, 1, {{dst.addr, 8192, dst.lkey}});
    a->post_send(ra, SendWr()
                         .op(VIRTIO_RDMA_WR_SEND)
                         .id(1)
                         .flags(kSignaled)
                         .sge(s.addr, 5000, s.lkey));
    wire.capture = true;
    ASSERT_TRUE(wire.pump());
    uint64_t bytes_a = 0, frames_a = 0, bytes_b = 0, frames_b = 0;
    for (const Wire::Frame &f : wire.captured) {
        (f.src == 0 ? bytes_a : bytes_b) += f.data.size();
        (f.src == 0 ? frames_a : frames_b)++;
    }
    const VrdmaDpStats sa = a->stats(), sb = b->stats();
    EXPECT_EQ(sa.tx_packets, frames_a);
    EXPECT_EQ(sa.tx_bytes, bytes_a);
    EXPECT_EQ(sb.rx_packets, frames_a);
    EXPECT_EQ(sb.rx_bytes, bytes_a);
    EXPECT_EQ(sb.tx_packets, frames_b);
    EXPECT_EQ(sa.rx_packets, frames_b);
    EXPECT_EQ(sa.completions, 1u);
    EXPECT_EQ(sb.completions, 1u);
    /* Stats survive a reset, like the command counters. */
    a->reset();
    EXPECT_EQ(a->stats().tx_packets, frames_a);
    EXPECT_STREQ(vrdma_drop_name(VRDMA_DROP_ICRC), "icrc");
    EXPECT_STREQ(vrdma_drop_name(VRDMA_DROP__COUNT), "?");
    for (int i = 0; i < VRDMA_DROP__COUNT; i++) {
        EXPECT_STRNE(vrdma_drop_name(static_cast<VrdmaDrop>(i)), "?") << i;
    }
}

} // namespace
} // namespace vrdma_test

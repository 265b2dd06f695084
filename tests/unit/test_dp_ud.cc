/*
 * Data path, UD and GSI: frames as rxe builds them (addresses, UDP source
 * port, DETH), the 40-byte GRH area in front of the receive buffer (IPv4
 * and IPv6), completions (src_qp, GRH, immediate), Q_Key rules, messages
 * above the MTU, missing or short receive buffers.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "dp_harness.h"
#include "roce/frame.h"
#include "roce/udp_sport.h"
#include "test_roce_util.h"

namespace vrdma_test {
namespace {

namespace roce = vrdma::roce;

constexpr uint32_t kQkey = 0x11223344;
constexpr uint32_t kSignaled = VIRTIO_RDMA_SEND_SIGNALED;

class DpUd : public DpTest {
protected:
    void SetUp() override
    {
        DpTest::SetUp();
        qa = a->create_qp(pd_a, VIRTIO_RDMA_QPT_UD, cq_a, cq_a);
        qb = b->create_qp(pd_b, VIRTIO_RDMA_QPT_UD, cq_b, cq_b);
        a->ud_up(qa, kQkey, 0x10);
        b->ud_up(qb, kQkey, 0x20);
        src = buffer(*a, pd_a, 16384);
        dst = buffer(*b, pd_b, 16384);
        wire.capture = true;
    }

    SendWr ud_send(uint64_t id, uint32_t len, uint32_t qkey = kQkey) const
    {
        return SendWr()
            .op(VIRTIO_RDMA_WR_SEND)
            .id(id)
            .flags(kSignaled)
            .sge(src.addr, len, src.lkey)
            .ud(b->wire_qpn(qb), qkey, b->gid, b->mac);
    }

    uint32_t qa = 0, qb = 0;
    MrInfo src, dst;
};

TEST_F(DpUd, SendLandsAfterTheGrhAreaIpv4)
{
    a->fill(src.addr, 1000, 1);
    std::memset(b->mem(dst.addr), 0xEE, 1100);
    b->post_recv(qb, 7, {{dst.addr, 2000, dst.lkey}});
    a->post_send(qa, ud_send(8, 1000));
    ASSERT_TRUE(wire.pump());

    const virtio_rdma_cq_req s = a->pop_cqe(cq_a);
    EXPECT_EQ(s.wr_id, 8u);
    EXPECT_EQ(s.status, VIRTIO_RDMA_WC_SUCCESS);
    EXPECT_EQ(s.opcode, VIRTIO_RDMA_WC_SEND);
    EXPECT_EQ(s.byte_len, 1000u);

    const virtio_rdma_cq_req r = b->pop_cqe(cq_b);
    EXPECT_EQ(r.wr_id, 7u);
    EXPECT_EQ(r.status, VIRTIO_RDMA_WC_SUCCESS);
    EXPECT_EQ(r.opcode, VIRTIO_RDMA_WC_RECV);
    EXPECT_EQ(r.byte_len, 1040u) << "payload + the 40-byte GRH area";
    EXPECT_EQ(r.src_qp, a->wire_qpn(qa));
    EXPECT_EQ(r.qp_num, b->wire_qpn(qb));
    EXPECT_EQ(r.wc_flags, VIRTIO_RDMA_WC_GRH);
    EXPECT_EQ(r.port_num, 1u);
    EXPECT_EQ(r.sl, VIRTIO_RDMA_CQE_SL_IPV4) << "the L3 type (UCX reads it)";

    /* 20 zero bytes, then the IPv4 header as it was on the wire. */
    const uint8_t *grh = b->mem(dst.addr, 40);
    for (int i = 0; i < 20; i++) {
        EXPECT_EQ(grh[i], 0) << i;
    }
    ASSERT_EQ(wire.captured.size(), 1u);
    const Bytes &f = wire.captured[0].data;
    EXPECT_EQ(std::memcmp(grh + 20, f.data() + 14, 20), 0);
    EXPECT_EQ(grh[20], 0x45);
    EXPECT_EQ(std::memcmp(grh + 32, a->gid.data() + 12, 4), 0) << "source";
    EXPECT_EQ(std::memcmp(grh + 36, b->gid.data() + 12, 4), 0) << "dest";
    EXPECT_TRUE(b->check(dst.addr + 40, 1000, 1));
    EXPECT_EQ(b->mem(dst.addr)[1040], 0xEE) << "nothing past the message";
}

TEST_F(DpUd, FrameIsWhatRxeSends)
{
    a->post_send(qa, ud_send(1, 33));
    b->post_recv(qb, 2, {{dst.addr, 2000, dst.lkey}});
    ASSERT_TRUE(wire.pump());
    ASSERT_EQ(wire.captured.size(), 1u);
    const Bytes &f = wire.captured[0].data;
    roce::Packet p;
    ASSERT_EQ(roce::parse_frame(f, &p), roce::ParseError::kNone);
    EXPECT_EQ(p.dmac, b->mac);
    EXPECT_EQ(p.smac, a->mac) << "the NIC's MAC (limits.mac)";
    EXPECT_EQ(p.sgid, a->gid);
    EXPECT_EQ(p.dgid, b->gid);
    EXPECT_FALSE(p.ipv6);
    EXPECT_EQ(p.hop_limit, 64);
    EXPECT_EQ(p.sport, roce::udp_sport_for_qpn(a->wire_qpn(qa)));
    EXPECT_EQ(p.opcode, roce::kUdSendOnly);
    EXPECT_EQ(p.bth().qpn(), b->wire_qpn(qb));
    EXPECT_EQ(p.bth().psn(), 0x10u);
    EXPECT_EQ(p.bth().pkey(), 0xFFFF);
    EXPECT_TRUE(p.bth().ack_req()) << "rxe: AckReq on every last packet";
    EXPECT_EQ(p.deth().qkey(), kQkey);
    EXPECT_EQ(p.deth().sqp(), a->wire_qpn(qa));
    EXPECT_EQ(p.payload.size(), 33u);
    EXPECT_EQ(p.pad, 3);
    /* IPv4 DF set. */
    EXPECT_EQ(f[14 + 6] & 0x40, 0x40);

    /* The next one takes the next PSN. */
    a->post_send(qa, ud_send(3, 10));
    ASSERT_TRUE(wire.pump());
    ASSERT_EQ(roce::parse_frame(wire.captured[1].data, &p),
              roce::ParseError::kNone);
    EXPECT_EQ(p.bth().psn(), 0x11u);
}

TEST_F(DpUd, SendWithImmediateAndScatter)
{
    a->fill(src.addr, 3000, 9);
    b->post_recv(qb, 1,
                 {{dst.addr, 40, dst.lkey},
                  {dst.addr + 100, 1000, dst.lkey},
                  {dst.addr + 2000, 2000, dst.lkey}});
    a->post_send(qa, ud_send(2, 3000)
                         .op(VIRTIO_RDMA_WR_SEND_WITH_IMM)
                         .imm(0xA1B2C3D4)
                         .flags(kSignaled | VIRTIO_RDMA_SEND_SOLICITED));
    b->arm_cq(cq_b, VIRTIO_RDMA_NOTIFY_SOLICITED);
    ASSERT_TRUE(wire.pump());
    const virtio_rdma_cq_req r = b->pop_cqe(cq_b);
    EXPECT_EQ(r.status, VIRTIO_RDMA_WC_SUCCESS);
    EXPECT_EQ(r.byte_len, 3040u);
    EXPECT_EQ(r.wc_flags, VIRTIO_RDMA_WC_GRH | VIRTIO_RDMA_WC_WITH_IMM);
    const uint8_t be[4] = {0xA1, 0xB2, 0xC3, 0xD4};
    EXPECT_EQ(std::memcmp(&r.ex, be, 4), 0) << "imm_data as on the wire";
    EXPECT_EQ(b->notifies[cq_b], 1u) << "solicited";
    /* 1000 bytes in the second SGE, the rest in the third. */
    Bytes got(b->mem(dst.addr + 100), b->mem(dst.addr + 100) + 1000);
    got.insert(got.end(), b->mem(dst.addr + 2000), b->mem(dst.addr + 4000));
    b->fill(dst.addr + 8192, 3000, 9);
    EXPECT_EQ(0, std::memcmp(got.data(), b->mem(dst.addr + 8192), 2000));
    EXPECT_EQ(0, std::memcmp(got.data() + 1000, b->mem(dst.addr + 8192 + 1000),
                             2000));
}

TEST_F(DpUd, Ipv6GrhAreaIsTheIpv6Header)
{
    a->add_gid(1, gid_v6(1));
    b->add_gid(1, gid_v6(2));
    a->fill(src.addr, 500, 4);
    b->post_recv(qb, 1, {{dst.addr, 1000, dst.lkey}});
    SendWr wr = ud_send(2, 500);
    wr.ud(b->wire_qpn(qb), kQkey, gid_v6(2), b->mac, 1);
    wr.hdr.wr.ud.av.sl_tclass_flowlabel = (0x28u << 20) | 0x12345;
    a->post_send(qa, wr);
    ASSERT_TRUE(wire.pump());
    const virtio_rdma_cq_req r = b->pop_cqe(cq_b);
    EXPECT_EQ(r.status, VIRTIO_RDMA_WC_SUCCESS);
    EXPECT_EQ(r.byte_len, 540u);
    EXPECT_EQ(r.sl, VIRTIO_RDMA_CQE_SL_IPV6);
    const uint8_t *grh = b->mem(dst.addr, 40);
    ASSERT_EQ(wire.captured.size(), 1u);
    const Bytes &f = wire.captured[0].data;
    EXPECT_EQ(std::memcmp(grh, f.data() + 14, 40), 0);
    EXPECT_EQ(grh[0] >> 4, 6);
    EXPECT_EQ(((grh[0] & 0x0F) << 4) | (grh[1] >> 4), 0x28) << "tclass";
    EXPECT_EQ(grh[1] & 0x0F, 0);
    EXPECT_EQ(grh[2] | grh[3], 0) << "rxe sends flow label 0";
    EXPECT_EQ(std::memcmp(grh + 8, gid_v6(1).data(), 16), 0);
    EXPECT_EQ(std::memcmp(grh + 24, gid_v6(2).data(), 16), 0);
    EXPECT_TRUE(b->check(dst.addr + 40, 500, 4));
}

TEST_F(DpUd, QkeyMismatchIsDroppedAndCounted)
{
    b->post_recv(qb, 1, {{dst.addr, 1000, dst.lkey}});
    a->post_send(qa, ud_send(2, 10, kQkey + 1));
    ASSERT_TRUE(wire.pump());
    EXPECT_EQ(a->pop_cqe(cq_a).status, VIRTIO_RDMA_WC_SUCCESS)
        << "UD: the sender cannot know";
    EXPECT_EQ(b->cq_size(cq_b), 0u);
    EXPECT_EQ(b->drops(VRDMA_DROP_QKEY), 1u);
    ASSERT_EQ(b->drop_log.size(), 1u);
    EXPECT_EQ(b->drop_log[0].first, "qkey");
    EXPECT_EQ(b->drop_log[0].second, b->wire_qpn(qb)) << "as the frame named it";

    /* The receive WQE is still there for the next (right) one. */
    a->post_send(qa, ud_send(3, 10));
    ASSERT_TRUE(wire.pump());
    EXPECT_EQ(b->pop_cqe(cq_b).wr_id, 1u);
}

/*
 * C10-15: a WQE Q_Key with the high bit set means "use the QP's" (rxe sends
 * it as it is): QP1's Q_Key in a UD QP's request goes out as that QP's.
 */
TEST_F(DpUd, QkeyHighBitUsesTheQpQkey)
{
    for (uint32_t qkey : {0x80000000u, 0x80010000u}) {
        b->post_recv(qb, qkey, {{dst.addr, 1000, dst.lkey}});
        a->post_send(qa, ud_send(2, 10, qkey));
        ASSERT_TRUE(wire.pump());
        EXPECT_EQ(a->pop_cqe(cq_a).status, VIRTIO_RDMA_WC_SUCCESS);
        EXPECT_EQ(b->pop_cqe(cq_b).status, VIRTIO_RDMA_WC_SUCCESS);
        roce::Packet p;
        ASSERT_EQ(roce::parse_frame(wire.captured.back().data, &p),
                  roce::ParseError::kNone);
        EXPECT_EQ(p.deth().qkey(), kQkey) << std::hex << qkey;
    }
}

/*
 * QP1 is reached only from the GSI QP (on backend=ibverbs, only through
 * rdmacm-mux): a UD QP's send to QPN 1 is an error of that QP's, reported
 * through guest_error, and nothing goes on the wire.
 */
TEST_F(DpUd, SendToQp1FromAUdQpIsRefused)
{
    const uint32_t gb = b->create_qp(pd_b, VIRTIO_RDMA_QPT_GSI, cq_b, cq_b);
    b->ud_up(gb, 0x80010000);
    b->post_recv(gb, 1, {{dst.addr, 1000, dst.lkey}});
    a->post_send(qa, ud_send(2, 10, 0x80010000)
                         .ud(1, 0x80010000, b->gid, b->mac));
    ASSERT_TRUE(wire.pump());
    const virtio_rdma_cq_req c = a->pop_cqe(cq_a);
    EXPECT_EQ(c.wr_id, 2u);
    EXPECT_EQ(c.status, VIRTIO_RDMA_WC_LOC_QP_OP_ERR);
    EXPECT_EQ(c.opcode, VIRTIO_RDMA_WC_SEND);
    EXPECT_EQ(c.qp_num, a->wire_qpn(qa));
    EXPECT_EQ(a->qp_state(qa), VIRTIO_RDMA_QPS_ERR);
    EXPECT_TRUE(wire.captured.empty()) << "nothing sent";
    EXPECT_EQ(b->cq_size(cq_b), 0u);
    ASSERT_EQ(a->errors.size(), 1u);
    EXPECT_EQ(a->errors[0].err, VRDMA_ERR_BAD_ARG);
    EXPECT_EQ(a->errors[0].field, "wr.ud.remote_qpn");
    EXPECT_EQ(a->errors[0].a, 1u);
    EXPECT_EQ(a->errors[0].b, qa) << "the QP that sent it";

    /* Only the low 24 bits are the QPN: 0xFF000001 is QP1 too. */
    const uint32_t q2 = a->create_qp(pd_a, VIRTIO_RDMA_QPT_UD, cq_a, cq_a);
    a->ud_up(q2, kQkey, 0x30);
    a->post_send(q2, ud_send(3, 10).ud(0xFF000001, kQkey, b->gid, b->mac));
    ASSERT_TRUE(wire.pump());
    EXPECT_EQ(a->pop_cqe(cq_a).status, VIRTIO_RDMA_WC_LOC_QP_OP_ERR);
    EXPECT_TRUE(wire.captured.empty()) << "nothing sent";
    EXPECT_EQ(b->cq_size(cq_b), 0u);
}

TEST_F(DpUd, LongerThanTheMtuCompletesWithoutAPacket)
{
    a->post_send(qa, ud_send(1, 4097));
    a->post_send(qa, ud_send(2, 4096));
    b->post_recv(qb, 3, {{dst.addr, 8192, dst.lkey}});
    ASSERT_TRUE(wire.pump());
    EXPECT_EQ(a->pop_cqe(cq_a).status, VIRTIO_RDMA_WC_SUCCESS);
    EXPECT_EQ(a->pop_cqe(cq_a).status, VIRTIO_RDMA_WC_SUCCESS);
    EXPECT_EQ(wire.captured.size(), 1u) << "only the one that fits";
    const virtio_rdma_cq_req r = b->pop_cqe(cq_b);
    EXPECT_EQ(r.byte_len, 4096u + 40);
    roce::Packet p;
    ASSERT_EQ(roce::parse_frame(wire.captured[0].data, &p),
              roce::ParseError::kNone);
    EXPECT_EQ(p.bth().psn(), 0x11u) << "the skipped one used PSN 0x10";
}

/* A small datagram goes with its GRH area in one pass: scatter across it. */
TEST_F(DpUd, SmallSendScattersAcrossTheGrhArea)
{
    a->fill(src.addr, 64, 5);
    b->post_recv(qb, 1,
                 {{dst.addr, 30, dst.lkey},
                  {dst.addr + 100, 20, dst.lkey},
                  {dst.addr + 200, 54, dst.lkey}});
    a->post_send(qa, ud_send(2, 64).flags(kSignaled));
    ASSERT_TRUE(wire.pump());
    const virtio_rdma_cq_req r = b->pop_cqe(cq_b);
    EXPECT_EQ(r.status, VIRTIO_RDMA_WC_SUCCESS);
    EXPECT_EQ(r.byte_len, 104u);
    /* GRH area: 30 bytes in the first SGE, 10 in the second. */
    EXPECT_EQ(b->mem(dst.addr + 20)[0], 0x45) << "IPv4 header at byte 20";
    b->fill(dst.addr + 4096, 64, 5);
    const uint8_t *want = b->mem(dst.addr + 4096);
    EXPECT_EQ(0, std::memcmp(b->mem(dst.addr + 110), want, 10));
    EXPECT_EQ(0, std::memcmp(b->mem(dst.addr + 200), want + 10, 54));
}

TEST_F(DpUd, NoReceiveWqeDrops)
{
    a->post_send(qa, ud_send(1, 10));
    ASSERT_TRUE(wire.pump());
    EXPECT_EQ(b->drops(VRDMA_DROP_NO_RECV_WQE), 1u);
    EXPECT_EQ(b->cq_size(cq_b), 0u);
}

TEST_F(DpUd, ReceiveBufferTooSmallDropsAndKeepsTheWqe)
{
    b->post_recv(qb, 1, {{dst.addr, 100, dst.lkey}});
    a->post_send(qa, ud_send(2, 61)); /* 101 with the GRH area */
    ASSERT_TRUE(wire.pump());
    EXPECT_EQ(b->drops(VRDMA_DROP_LENGTH), 1u);
    EXPECT_EQ(b->cq_size(cq_b), 0u);
    a->post_send(qa, ud_send(3, 60));
    ASSERT_TRUE(wire.pump());
    const virtio_rdma_cq_req r = b->pop_cqe(cq_b);
    EXPECT_EQ(r.wr_id, 1u);
    EXPECT_EQ(r.byte_len, 100u);
    EXPECT_EQ(b->qp_state(qb), VIRTIO_RDMA_QPS_RTS);
}

TEST_F(DpUd, BadReceiveSgeCompletesWithLocProtErr)
{
    b->post_recv(qb, 1, {{dst.addr, 100, dst.lkey ^ 0x40}});
    a->post_send(qa, ud_send(2, 10));
    ASSERT_TRUE(wire.pump());
    const virtio_rdma_cq_req r = b->pop_cqe(cq_b);
    EXPECT_EQ(r.wr_id, 1u);
    EXPECT_EQ(r.status, VIRTIO_RDMA_WC_LOC_PROT_ERR);
    EXPECT_EQ(b->qp_state(qb), VIRTIO_RDMA_QPS_ERR);
}

TEST_F(DpUd, GsiAlwaysUsesTheGsiQkey)
{
    const uint32_t ga = a->create_qp(pd_a, VIRTIO_RDMA_QPT_GSI, cq_a, cq_a);
    const uint32_t gb = b->create_qp(pd_b, VIRTIO_RDMA_QPT_GSI, cq_b, cq_b);
    ASSERT_EQ(ga, 1u);
    ASSERT_EQ(gb, 1u);
    a->ud_up(ga, 0x80010000); /* what the guest's MAD layer sets */
    b->ud_up(gb, 0x5678);
    a->fill(src.addr, 256, 3);
    /* QP1's Q_Key as the MAD layer posts it, or any other. */
    for (uint32_t qkey : {0x80010000u, 0x9999u}) {
        b->post_recv(gb, 1, {{dst.addr, 1000, dst.lkey}});
        a->post_send(ga, SendWr()
                             .op(VIRTIO_RDMA_WR_SEND)
                             .id(2)
                             .flags(kSignaled)
                             .sge(src.addr, 256, src.lkey)
                             .ud(1, qkey, b->gid, b->mac));
        ASSERT_TRUE(wire.pump());
        EXPECT_EQ(a->pop_cqe(cq_a).status, VIRTIO_RDMA_WC_SUCCESS);
        roce::Packet p;
        ASSERT_EQ(roce::parse_frame(wire.captured.back().data, &p),
                  roce::ParseError::kNone);
        EXPECT_EQ(p.bth().qpn(), 1u);
        EXPECT_EQ(p.deth().qkey(), 0x80010000u);
        EXPECT_EQ(p.deth().sqp(), 1u);
        const virtio_rdma_cq_req r = b->pop_cqe(cq_b);
        EXPECT_EQ(r.status, VIRTIO_RDMA_WC_SUCCESS);
        EXPECT_EQ(r.src_qp, 1u);
        EXPECT_EQ(r.qp_num, 1u);
        EXPECT_TRUE(b->check(dst.addr + 40, 256, 3));
    }

    /* A GSI packet with another Q_Key (as a peer may send it) is dropped. */
    Bytes f = wire.captured.back().data;
    f[bth_of(f) + 12] ^= 1; /* the DETH's Q_Key */
    fix_icrc(f);
    b->post_recv(gb, 4, {{dst.addr, 1000, dst.lkey}});
    EXPECT_TRUE(b->receive(f));
    EXPECT_EQ(b->drops(VRDMA_DROP_QKEY), 1u);
    EXPECT_EQ(b->cq_size(cq_b), 0u);
}

TEST_F(DpUd, MissingSourceGidFailsTheWqe)
{
    a->post_send(qa, ud_send(1, 10).ud(b->wire_qpn(qb), kQkey, b->gid, b->mac, 3));
    ASSERT_TRUE(wire.pump());
    const virtio_rdma_cq_req c = a->pop_cqe(cq_a);
    EXPECT_EQ(c.status, VIRTIO_RDMA_WC_LOC_QP_OP_ERR);
    EXPECT_EQ(a->qp_state(qa), VIRTIO_RDMA_QPS_ERR);
    EXPECT_TRUE(wire.captured.empty());
}

TEST_F(DpUd, ManySendsInOrder)
{
    for (uint64_t i = 0; i < 200; i++) {
        b->post_recv(qb, i, {{dst.addr + 64 * (i % 32), 64, dst.lkey}});
    }
    for (uint64_t i = 0; i < 200; i++) {
        a->post_send(qa, ud_send(i, 24).flags(0));
    }
    ASSERT_TRUE(wire.pump());
    ASSERT_EQ(b->cq_size(cq_b), 200u);
    for (uint64_t i = 0; i < 200; i++) {
        EXPECT_EQ(b->pop_cqe(cq_b).wr_id, i);
    }
    EXPECT_EQ(a->cq_size(cq_a), 0u) << "unsignaled";
}

} // namespace
} // namespace vrdma_test

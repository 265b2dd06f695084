/*
 * Admission of work requests (core/admit.h) at its boundaries: what
 * completes at once (a flush, a queue that does not take it or has no
 * room, a malformed receive), what goes to the backend with a status (a
 * malformed send, to complete in order), and what the parsed request
 * holds.  Then the core's one move of a QP to ERR (qp_enter_error).
 *
 * admit_send / admit_recv are called on a node's core directly, as the
 * ring turn calls them; the in-order cases go through the rings.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "admit.h"
#include "backend.h"
#include "core.h"
#include "ring_driver.h"

namespace vrdma_test {
namespace {

constexpr uint32_t kSignaled = VIRTIO_RDMA_SEND_SIGNALED;

void set32(Bytes &b, size_t off, uint32_t v)
{
    std::memcpy(b.data() + off, &v, 4);
}

class Admit : public DpTest {
protected:
    void SetUp() override
    {
        DpTest::SetUp();
        src = buffer(*a, pd_a, 64 * 1024);
        dst = buffer(*b, pd_b, 64 * 1024);
    }

    vrdma::Qp &qp(Node &n, uint32_t qpn) { return *n.core->qps.at(qpn); }

    SendWr send(uint64_t id, uint32_t len = 100) const
    {
        return SendWr()
            .op(VIRTIO_RDMA_WR_SEND)
            .id(id)
            .flags(kSignaled)
            .sge(src.addr, len, src.lkey);
    }

    /* admit_send on @n's QP @qpn, as the ring turn calls it. */
    bool admit(Node &n, uint32_t qpn, const Bytes &b, vrdma::SendReq &r)
    {
        return vrdma::admit_send(*n.core, qp(n, qpn), b.data(), b.size(), r);
    }
    bool admit(Node &n, uint32_t qpn, const Bytes &b, vrdma::RecvReq &r)
    {
        return vrdma::admit_recv(*n.core, qp(n, qpn), b.data(), b.size(), r);
    }

    void expect_cqe(Node &n, uint32_t cqn, uint64_t wr_id, uint32_t status,
                    uint32_t opcode)
    {
        ASSERT_GT(n.cq_size(cqn), 0u) << "wr_id " << wr_id;
        const virtio_rdma_cq_req c = n.pop_cqe(cqn);
        EXPECT_EQ(c.wr_id, wr_id);
        EXPECT_EQ(c.status, status) << "wr_id " << wr_id;
        EXPECT_EQ(c.opcode, opcode) << "wr_id " << wr_id;
    }

    MrInfo src, dst;
};

/* ERR flushes both queues' requests at once, unsignaled ones too. */
TEST_F(Admit, ErrFlushesAtOnce)
{
    auto [qa, qb] = connect();
    ASSERT_EQ(a->to_state(qa, VIRTIO_RDMA_QPS_ERR), VIRTIO_RDMA_OK);
    vrdma::SendReq s;
    vrdma::RecvReq r;
    EXPECT_FALSE(admit(*a, qa, send(1).flags(0).bytes(), s));
    EXPECT_FALSE(admit(*a, qa, recv_bytes(2, {{src.addr, 64, src.lkey}}), r));
    expect_cqe(*a, cq_a, 1, VIRTIO_RDMA_WC_WR_FLUSH_ERR, VIRTIO_RDMA_WC_SEND);
    expect_cqe(*a, cq_a, 2, VIRTIO_RDMA_WC_WR_FLUSH_ERR, VIRTIO_RDMA_WC_RECV);
    /* Even a malformed one: the state decides first. */
    Bytes bad = send(3).bytes();
    set32(bad, 8, 0x55); /* unknown opcode */
    EXPECT_FALSE(admit(*a, qa, bad, s));
    expect_cqe(*a, cq_a, 3, VIRTIO_RDMA_WC_WR_FLUSH_ERR, vrdma::kWcOpcodeNone);
    EXPECT_EQ(a->cq_size(cq_a), 0u);
    (void)qb;
}

/*
 * A send before RTS and anything in RESET: LOC_QP_OP_ERR at once, the
 * state unchanged; a receive in INIT is taken.
 */
TEST_F(Admit, NotAdmittedIsAnImmediateError)
{
    const uint32_t q = a->create_qp(pd_a, VIRTIO_RDMA_QPT_RC, cq_a, cq_a);
    vrdma::SendReq s;
    vrdma::RecvReq r;
    EXPECT_FALSE(admit(*a, q, send(1).bytes(), s));
    EXPECT_FALSE(admit(*a, q, recv_bytes(2, {{src.addr, 64, src.lkey}}), r));
    expect_cqe(*a, cq_a, 1, VIRTIO_RDMA_WC_LOC_QP_OP_ERR, VIRTIO_RDMA_WC_SEND);
    expect_cqe(*a, cq_a, 2, VIRTIO_RDMA_WC_LOC_QP_OP_ERR, VIRTIO_RDMA_WC_RECV);
    EXPECT_EQ(a->qp_state(q), VIRTIO_RDMA_QPS_RESET);

    virtio_rdma_qp_attr at{};
    at.qp_state = VIRTIO_RDMA_QPS_INIT;
    at.port_num = 1;
    ASSERT_EQ(a->modify(q, VIRTIO_RDMA_QP_STATE | VIRTIO_RDMA_QP_PKEY_INDEX |
                               VIRTIO_RDMA_QP_PORT |
                               VIRTIO_RDMA_QP_ACCESS_FLAGS,
                        at),
              VIRTIO_RDMA_OK);
    EXPECT_FALSE(admit(*a, q, send(3).bytes(), s));
    expect_cqe(*a, cq_a, 3, VIRTIO_RDMA_WC_LOC_QP_OP_ERR, VIRTIO_RDMA_WC_SEND);
    ASSERT_TRUE(admit(*a, q, recv_bytes(4, {{src.addr, 64, src.lkey}}), r));
    EXPECT_EQ(r.wr_id, 4u);
    EXPECT_EQ(r.num_sge, 1u);
    EXPECT_EQ(r.length, 64u);
    EXPECT_EQ(r.sge.s[0].addr, src.addr);
    EXPECT_EQ(r.sge.s[0].lkey, src.lkey);
    EXPECT_EQ(a->cq_size(cq_a), 0u);
    EXPECT_EQ(a->qp_state(q), VIRTIO_RDMA_QPS_INIT);
}

/* The backend's window full (wq_room 0): LOC_QP_OP_ERR at once. */
TEST_F(Admit, NoRoomIsAnImmediateError)
{
    auto [qa, qb] = connect();
    VrdmaCore &c = *a->core;
    vrdma::Qp &q = qp(*a, qa);
    const auto room = [&](bool is_rq) {
        return vrdma::backend::with(
            c, [&](const auto &be) { return be.wq_room(q, is_rq); });
    };
    /* Nothing runs between the posts: the requests stay queued. */
    const uint32_t sq = room(false);
    ASSERT_GT(sq, 0u);
    for (uint32_t i = 0; i < sq; i++) {
        vrdma::SendReq s;
        ASSERT_TRUE(admit(*a, qa, send(i).flags(0).bytes(), s));
        vrdma::backend::with(c, [&](auto &be) { be.post_send(c, q, s); });
    }
    EXPECT_EQ(room(false), 0u);
    vrdma::SendReq s;
    EXPECT_FALSE(admit(*a, qa, send(1000).bytes(), s));
    expect_cqe(*a, cq_a, 1000, VIRTIO_RDMA_WC_LOC_QP_OP_ERR,
               VIRTIO_RDMA_WC_SEND);

    const uint32_t rq = room(true);
    for (uint32_t i = 0; i < rq; i++) {
        vrdma::RecvReq r;
        ASSERT_TRUE(admit(*a, qa, recv_bytes(i, {{src.addr, 64, src.lkey}}), r));
        vrdma::backend::with(c, [&](auto &be) { be.post_recv(c, q, r); });
    }
    vrdma::RecvReq r;
    EXPECT_FALSE(admit(*a, qa, recv_bytes(2000, {{src.addr, 64, src.lkey}}), r));
    expect_cqe(*a, cq_a, 2000, VIRTIO_RDMA_WC_LOC_QP_OP_ERR,
               VIRTIO_RDMA_WC_RECV);
    EXPECT_EQ(a->cq_size(cq_a), 0u);
    EXPECT_EQ(a->qp_state(qa), VIRTIO_RDMA_QPS_RTS);
    (void)qb;
}

/*
 * A send the queue takes but that fails a check goes to the backend with
 * its status and no SGEs (it completes in its place).
 */
TEST_F(Admit, BadSgeCountIsQueuedWithItsStatus)
{
    auto [qa, qb] = connect();
    vrdma::SendReq s;
    Bytes above = send(1).bytes();
    set32(above, 0, 5); /* the QP's cap is 4 */
    above.resize(88 + 5 * 16);
    ASSERT_TRUE(admit(*a, qa, above, s));
    EXPECT_EQ(s.status, VIRTIO_RDMA_WC_LOC_QP_OP_ERR);
    EXPECT_EQ(s.wr_id, 1u);
    EXPECT_EQ(s.num_sge, 0u);
    EXPECT_EQ(s.length, 0u);

    Bytes short_of = send(2).bytes();
    set32(short_of, 0, 2); /* names two SGEs, holds one */
    ASSERT_TRUE(admit(*a, qa, short_of, s));
    EXPECT_EQ(s.status, VIRTIO_RDMA_WC_LOC_QP_OP_ERR);
    EXPECT_EQ(s.num_sge, 0u);
    EXPECT_EQ(a->cq_size(cq_a), 0u); /* nothing completed here */
    (void)qb;
}

/* SGE lengths adding up to more than 2^31: LOC_LEN_ERR. */
TEST_F(Admit, MessageAbove2GIsALengthError)
{
    auto [qa, qb] = connect();
    vrdma::SendReq s;
    ASSERT_TRUE(admit(*a, qa,
                      send(1, 0x80000000u).sge(src.addr, 1, src.lkey).bytes(),
                      s));
    EXPECT_EQ(s.status, VIRTIO_RDMA_WC_LOC_LEN_ERR);
    EXPECT_EQ(s.num_sge, 0u);
    EXPECT_EQ(s.length, 0u);
    /* Exactly 2^31 is the largest message. */
    ASSERT_TRUE(admit(*a, qa, send(2, 0x80000000u).bytes(), s));
    EXPECT_EQ(s.status, VIRTIO_RDMA_WC_SUCCESS);
    EXPECT_EQ(s.length, 0x80000000u);
    EXPECT_EQ(s.num_sge, 1u);
    (void)qb;
}

/*
 * An atomic's local buffer is one 64-bit word: any other length is
 * LOC_LEN_ERR, with the length and the atomic's arguments as read.
 */
TEST_F(Admit, AtomicLengthIsEightBytes)
{
    auto [qa, qb] = connect();
    vrdma::SendReq s;
    const auto atomic = [&](uint64_t id, uint32_t len) {
        return SendWr()
            .op(VIRTIO_RDMA_WR_ATOMIC_CMP_AND_SWP)
            .id(id)
            .flags(kSignaled)
            .sge(src.addr, len, src.lkey)
            .atomic(0x1000, 0x77, 5, 6)
            .bytes();
    };
    ASSERT_TRUE(admit(*a, qa, atomic(1, 16), s));
    EXPECT_EQ(s.status, VIRTIO_RDMA_WC_LOC_LEN_ERR);
    EXPECT_EQ(s.length, 16u);
    EXPECT_EQ(s.num_sge, 0u);
    EXPECT_EQ(s.remote_addr, 0x1000u);

    ASSERT_TRUE(admit(*a, qa, atomic(2, 8), s));
    EXPECT_EQ(s.status, VIRTIO_RDMA_WC_SUCCESS);
    EXPECT_EQ(s.length, 8u);
    EXPECT_EQ(s.num_sge, 1u);
    EXPECT_EQ(s.remote_addr, 0x1000u);
    EXPECT_EQ(s.rkey, 0x77u);
    EXPECT_EQ(s.compare_add, 5u);
    EXPECT_EQ(s.swap, 6u);
    (void)qb;
}

/*
 * A UD send's address vector is decoded for the backend; a source GID
 * index past the table is LOC_QP_OP_ERR.
 */
TEST_F(Admit, UdAddressVector)
{
    const uint32_t q = a->create_qp(pd_a, VIRTIO_RDMA_QPT_UD, cq_a, cq_a);
    a->ud_up(q, 0x1234);
    SendWr wr = send(1).ud(0xAB000007u, 0x80000000u, b->gid, b->mac);
    /* sl 3, traffic class 0x5A, flow label 0x12345 */
    wr.hdr.wr.ud.av.sl_tclass_flowlabel = (3u << 28) | (0x5Au << 20) | 0x12345;
    vrdma::SendReq s;
    ASSERT_TRUE(admit(*a, q, wr.bytes(), s));
    EXPECT_EQ(s.status, VIRTIO_RDMA_WC_SUCCESS);
    EXPECT_EQ(s.remote_qpn, 7u); /* 24 bits */
    EXPECT_EQ(s.remote_qkey, 0x80000000u); /* as posted: ud_send_qkey later */
    EXPECT_EQ(s.av.sl, 3u);
    EXPECT_EQ(s.av.tclass, 0x5Au);
    EXPECT_EQ(s.av.flow_label, 0x12345u);
    EXPECT_EQ(s.av.hop_limit, 64u);
    EXPECT_EQ(std::memcmp(s.av.dgid, b->gid.data(), 16), 0);
    EXPECT_EQ(std::memcmp(s.av.dmac, b->mac.data(), 6), 0);

    wr.hdr.wr.ud.av.gid_index = VRDMA_GID_TABLE_LEN - 1;
    ASSERT_TRUE(admit(*a, q, wr.bytes(), s));
    EXPECT_EQ(s.status, VIRTIO_RDMA_WC_SUCCESS);
    wr.hdr.wr.ud.av.gid_index = VRDMA_GID_TABLE_LEN;
    ASSERT_TRUE(admit(*a, q, wr.bytes(), s));
    EXPECT_EQ(s.status, VIRTIO_RDMA_WC_LOC_QP_OP_ERR);
    EXPECT_EQ(s.num_sge, 0u);
    EXPECT_EQ(a->cq_size(cq_a), 0u);
}

/* The parsed request: host order, the union member its opcode names. */
TEST_F(Admit, WriteWithImmIsParsed)
{
    auto [qa, qb] = connect();
    const Bytes wr = SendWr()
                         .op(VIRTIO_RDMA_WR_RDMA_WRITE_WITH_IMM)
                         .id(0x1122334455667788ull)
                         .flags(kSignaled | VIRTIO_RDMA_SEND_FENCE)
                         .sge(src.addr, 10, src.lkey)
                         .sge(src.addr + 100, 20, src.lkey)
                         .rdma(dst.addr, dst.rkey)
                         .imm(0xCAFE)
                         .bytes();
    vrdma::SendReq s;
    ASSERT_TRUE(admit(*a, qa, wr, s));
    EXPECT_EQ(s.status, VIRTIO_RDMA_WC_SUCCESS);
    EXPECT_EQ(s.wr_id, 0x1122334455667788ull);
    EXPECT_EQ(s.opcode, uint32_t{VIRTIO_RDMA_WR_RDMA_WRITE_WITH_IMM});
    EXPECT_EQ(s.op->wc_opcode, uint32_t{VIRTIO_RDMA_WC_RDMA_WRITE});
    EXPECT_EQ(s.flags, kSignaled | VIRTIO_RDMA_SEND_FENCE);
    virtio_rdma_sq_req h;
    std::memcpy(&h, wr.data(), sizeof(h));
    EXPECT_EQ(s.ex, h.ex); /* as in memory */
    EXPECT_EQ(s.remote_addr, dst.addr);
    EXPECT_EQ(s.rkey, dst.rkey);
    ASSERT_EQ(s.num_sge, 2u);
    EXPECT_EQ(s.length, 30u);
    EXPECT_EQ(s.sge.s[1].addr, src.addr + 100);
    EXPECT_EQ(s.sge.s[1].length, 20u);
    EXPECT_EQ(s.sge.s[1].lkey, src.lkey);
    (void)qb;
}

/*
 * A malformed receive completes at once (it is not queued): LOC_QP_OP_ERR
 * for the header's checks, LOC_LEN_ERR for the SGEs' sum.
 */
TEST_F(Admit, MalformedReceiveCompletesHere)
{
    auto [qa, qb] = connect();
    vrdma::RecvReq r;
    Bytes above = recv_bytes(1, {{dst.addr, 64, dst.lkey}});
    set32(above, 0, 5);
    EXPECT_FALSE(admit(*b, qb, above, r));
    EXPECT_FALSE(admit(*b, qb,
                       recv_bytes(2, {{dst.addr, 0x80000000u, dst.lkey},
                                      {dst.addr, 1, dst.lkey}}),
                       r));
    expect_cqe(*b, cq_b, 1, VIRTIO_RDMA_WC_LOC_QP_OP_ERR, VIRTIO_RDMA_WC_RECV);
    expect_cqe(*b, cq_b, 2, VIRTIO_RDMA_WC_LOC_LEN_ERR, VIRTIO_RDMA_WC_RECV);
    EXPECT_EQ(b->qp_state(qb), VIRTIO_RDMA_QPS_RTS);
    (void)qa;
}

/* read_recv, the SRQ's parse: the same checks, the SRQ's SGE limit. */
TEST_F(Admit, ReadRecv)
{
    vrdma::RecvReq r;
    const Bytes ok = recv_bytes(5, {{0x1000, 8, 1}, {0x2000, 8, 2}});
    EXPECT_EQ(vrdma::read_recv(ok.data(), ok.size(), 2, r),
              VIRTIO_RDMA_WC_SUCCESS);
    EXPECT_EQ(r.wr_id, 5u);
    EXPECT_EQ(r.length, 16u);
    EXPECT_EQ(r.sge.s[1].lkey, 2u);
    EXPECT_EQ(vrdma::read_recv(ok.data(), ok.size(), 1, r),
              VIRTIO_RDMA_WC_LOC_QP_OP_ERR);
    EXPECT_EQ(r.num_sge, 2u); /* for the SRQ's trace */
    EXPECT_EQ(vrdma::read_recv(ok.data(), ok.size() - 1, 2, r),
              VIRTIO_RDMA_WC_LOC_QP_OP_ERR);
    const Bytes big = recv_bytes(6, {{0x1000, 0x80000000u, 1}, {0x2000, 1, 2}});
    EXPECT_EQ(vrdma::read_recv(big.data(), big.size(), 2, r),
              VIRTIO_RDMA_WC_LOC_LEN_ERR);
}

/*
 * Through the rings: the good requests before a malformed one complete
 * first, then it does with its status, then the QP is in ERR and the one
 * after it is flushed.
 */
TEST_F(Admit, CheckFailureCompletesInOrder)
{
    auto [qa, qb] = connect();
    for (uint64_t i = 0; i < 3; i++) {
        b->post_recv(qb, 10 + i, {{dst.addr, 4096, dst.lkey}});
    }
    a->post_send(qa, send(1));
    a->post_send(qa, send(2).flags(0)); /* unsignaled: no CQE */
    a->post_send(qa, send(3));
    a->post_send(qa, SendWr()
                         .op(VIRTIO_RDMA_WR_ATOMIC_FETCH_AND_ADD)
                         .id(4)
                         .flags(0) /* an error completes all the same */
                         .sge(src.addr, 4, src.lkey)
                         .atomic(dst.addr, dst.rkey, 1, 0));
    a->post_send(qa, send(5));
    ASSERT_TRUE(wire.pump());
    expect_cqe(*a, cq_a, 1, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_SEND);
    expect_cqe(*a, cq_a, 3, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_SEND);
    expect_cqe(*a, cq_a, 4, VIRTIO_RDMA_WC_LOC_LEN_ERR,
               VIRTIO_RDMA_WC_FETCH_ADD);
    expect_cqe(*a, cq_a, 5, VIRTIO_RDMA_WC_WR_FLUSH_ERR, VIRTIO_RDMA_WC_SEND);
    EXPECT_EQ(a->cq_size(cq_a), 0u);
    EXPECT_EQ(a->qp_state(qa), VIRTIO_RDMA_QPS_ERR);
    /* The peer took the three sends before it. */
    for (uint64_t i = 0; i < 3; i++) {
        expect_cqe(*b, cq_b, 10 + i, VIRTIO_RDMA_WC_SUCCESS,
                   VIRTIO_RDMA_WC_RECV);
    }
}

/*
 * qp_enter_error: the QP to ERR and the backend's flush of what it holds,
 * once; a QP in ERR already is left alone.
 */
TEST_F(Admit, EnterErrorFlushesOnce)
{
    auto [qa, qb] = connect();
    a->post_recv(qa, 1, {{src.addr, 64, src.lkey}});
    a->post_recv(qa, 2, {{src.addr, 64, src.lkey}});
    EXPECT_EQ(a->cq_size(cq_a), 0u);
    vrdma::qp_enter_error(*a->core, qp(*a, qa));
    EXPECT_EQ(a->qp_state(qa), VIRTIO_RDMA_QPS_ERR);
    expect_cqe(*a, cq_a, 1, VIRTIO_RDMA_WC_WR_FLUSH_ERR, VIRTIO_RDMA_WC_RECV);
    expect_cqe(*a, cq_a, 2, VIRTIO_RDMA_WC_WR_FLUSH_ERR, VIRTIO_RDMA_WC_RECV);
    vrdma::qp_enter_error(*a->core, qp(*a, qa));
    EXPECT_EQ(a->cq_size(cq_a), 0u);
    EXPECT_EQ(a->qp_state(qa), VIRTIO_RDMA_QPS_ERR);
    (void)qb;
}

} // namespace
} // namespace vrdma_test

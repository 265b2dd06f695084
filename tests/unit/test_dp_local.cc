/*
 * Data path, local plumbing: work-request validation, posting in every QP
 * state, queue bounds, flushes on ERR and silent drops on RESET/destroy,
 * CQ arming and overrun, local memory checks, fast registration and
 * invalidation.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core.h"
#include "ring_driver.h"

namespace vrdma_test {
namespace {

constexpr uint32_t kSignaled = VIRTIO_RDMA_SEND_SIGNALED;

class DpLocal : public DpTest {
protected:
    void SetUp() override
    {
        DpTest::SetUp();
        src = buffer(*a, pd_a, 64 * 1024);
        dst = buffer(*b, pd_b, 64 * 1024);
    }

    SendWr send(uint64_t id, uint32_t len = 100) const
    {
        return SendWr()
            .op(VIRTIO_RDMA_WR_SEND)
            .id(id)
            .flags(kSignaled)
            .sge(src.addr, len, src.lkey);
    }

    void expect_cqe(Node &n, uint32_t cqn, uint64_t wr_id, uint32_t status,
                    uint32_t opcode)
    {
        const virtio_rdma_cq_req c = n.pop_cqe(cqn);
        EXPECT_EQ(c.wr_id, wr_id);
        EXPECT_EQ(c.status, status) << "wr_id " << wr_id;
        EXPECT_EQ(c.opcode, opcode) << "wr_id " << wr_id;
    }

    MrInfo src, dst;
};

/* A doorbell for a QP that does not exist is ignored and traced. */
TEST_F(DpLocal, RequestForAMissingQpIsAGuestError)
{
    EXPECT_FALSE(a->post_send(9, send(1)));
    EXPECT_FALSE(a->post_recv_raw(0, recv_bytes(2, {})));
    ASSERT_EQ(a->errors.size(), 2u);
    EXPECT_EQ(a->errors[0].cmd, 0u);
    EXPECT_EQ(a->errors[0].err, VRDMA_ERR_BAD_HANDLE);
    EXPECT_EQ(a->errors[0].a, VIRTIO_RDMA_DB(VIRTIO_RDMA_DB_SQ, 9, 1));
    EXPECT_EQ(a->errors[0].field, "doorbell.qpn");
    EXPECT_EQ(a->errors[1].a, VIRTIO_RDMA_DB(VIRTIO_RDMA_DB_RQ, 0, 1));
    EXPECT_EQ(a->errors[1].field, "doorbell.qpn");
    EXPECT_EQ(a->cq_size(cq_a), 0u);
}

/* IBA 10.3.1: sends before RTS and anything in RESET fail at once. */
TEST_F(DpLocal, PostingBeforeRtsFailsAtOnceAndChangesNothing)
{
    const uint32_t qp = a->create_qp(pd_a, VIRTIO_RDMA_QPT_RC, cq_a, cq_a);
    a->post_send(qp, send(1));
    a->post_recv(qp, 2, {{src.addr, 64, src.lkey}});
    expect_cqe(*a, cq_a, 1, VIRTIO_RDMA_WC_LOC_QP_OP_ERR, VIRTIO_RDMA_WC_SEND);
    expect_cqe(*a, cq_a, 2, VIRTIO_RDMA_WC_LOC_QP_OP_ERR, VIRTIO_RDMA_WC_RECV);
    EXPECT_EQ(a->qp_state(qp), VIRTIO_RDMA_QPS_RESET);

    virtio_rdma_qp_attr at{};
    at.qp_state = VIRTIO_RDMA_QPS_INIT;
    at.port_num = 1;
    ASSERT_EQ(a->modify(qp, VIRTIO_RDMA_QP_STATE | VIRTIO_RDMA_QP_PKEY_INDEX |
                                VIRTIO_RDMA_QP_PORT |
                                VIRTIO_RDMA_QP_ACCESS_FLAGS,
                        at),
              VIRTIO_RDMA_OK);
    a->post_send(qp, send(3));
    a->post_recv(qp, 4, {{src.addr, 64, src.lkey}}); /* fine in INIT */
    expect_cqe(*a, cq_a, 3, VIRTIO_RDMA_WC_LOC_QP_OP_ERR, VIRTIO_RDMA_WC_SEND);
    EXPECT_EQ(a->cq_size(cq_a), 0u);
    EXPECT_EQ(a->qp_state(qp), VIRTIO_RDMA_QPS_INIT);

    /* The receive posted in INIT is flushed when the QP goes to ERR. */
    ASSERT_EQ(a->to_state(qp, VIRTIO_RDMA_QPS_ERR), VIRTIO_RDMA_OK);
    expect_cqe(*a, cq_a, 4, VIRTIO_RDMA_WC_WR_FLUSH_ERR, VIRTIO_RDMA_WC_RECV);
}

TEST_F(DpLocal, PostingToErrFlushesAtOnce)
{
    auto [qa, qb] = connect();
    ASSERT_EQ(a->to_state(qa, VIRTIO_RDMA_QPS_ERR), VIRTIO_RDMA_OK);
    a->post_send(qa, send(1).flags(0)); /* unsignaled: flushed all the same */
    a->post_recv(qa, 2, {{src.addr, 64, src.lkey}});
    expect_cqe(*a, cq_a, 1, VIRTIO_RDMA_WC_WR_FLUSH_ERR, VIRTIO_RDMA_WC_SEND);
    expect_cqe(*a, cq_a, 2, VIRTIO_RDMA_WC_WR_FLUSH_ERR, VIRTIO_RDMA_WC_RECV);
    EXPECT_TRUE(wire.pump());
    EXPECT_EQ(wire.frames, 0u);
    (void)qb;
}

struct BadWqe {
    const char *name;
    uint8_t qp_type;
    uint32_t status;
    std::function<void(Bytes &)> damage;
};

Bytes with(Bytes b, const std::function<void(Bytes &)> &f)
{
    f(b);
    return b;
}

void set32(Bytes &b, size_t off, uint32_t v)
{
    std::memcpy(b.data() + off, &v, 4);
}

class DpBadWqe : public DpLocal, public ::testing::WithParamInterface<BadWqe> {
};

/*
 * A malformed WQE on a live QP completes in send-queue order with its
 * error (the ones before it complete normally), then the QP goes to ERR
 * and the ones after it are flushed.
 */
TEST_P(DpBadWqe, CompletesInOrderThenErr)
{
    const BadWqe &p = GetParam();
    uint32_t qa;
    if (p.qp_type == VIRTIO_RDMA_QPT_UD) {
        qa = a->create_qp(pd_a, VIRTIO_RDMA_QPT_UD, cq_a, cq_a);
        a->ud_up(qa, 0x1234);
    } else {
        uint32_t qb;
        std::tie(qa, qb) = connect(p.qp_type);
        b->post_recv(qb, 10, {{dst.addr, 4096, dst.lkey}});
    }
    SendWr good = send(1);
    if (p.qp_type == VIRTIO_RDMA_QPT_UD) {
        good.ud(3, 0x1234, b->gid, b->mac); /* no such QP: b drops it */
    }
    a->post_send(qa, good);
    a->post_send_raw(qa, with(good.id(2).bytes(), p.damage));
    a->post_send(qa, good.id(3).flags(0));
    ASSERT_TRUE(wire.pump());
    expect_cqe(*a, cq_a, 1, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_SEND);
    const virtio_rdma_cq_req c = a->pop_cqe(cq_a);
    EXPECT_EQ(c.wr_id, 2u);
    EXPECT_EQ(c.status, p.status);
    expect_cqe(*a, cq_a, 3, VIRTIO_RDMA_WC_WR_FLUSH_ERR, VIRTIO_RDMA_WC_SEND);
    EXPECT_EQ(a->qp_state(qa), VIRTIO_RDMA_QPS_ERR);
}

const BadWqe kBadWqes[] = {
    /* A 256-byte SQ entry (4 SGEs) holds 10 SGEs. */
    {"num_sge_past_the_entry", VIRTIO_RDMA_QPT_RC,
     VIRTIO_RDMA_WC_LOC_QP_OP_ERR, [](Bytes &b) { set32(b, 0, 11); }},
    {"num_sge_above_cap", VIRTIO_RDMA_QPT_RC, VIRTIO_RDMA_WC_LOC_QP_OP_ERR,
     [](Bytes &b) {
         set32(b, 0, 5);
         b.resize(88 + 5 * 16);
     }},
    {"unknown_flag", VIRTIO_RDMA_QPT_RC, VIRTIO_RDMA_WC_LOC_QP_OP_ERR,
     [](Bytes &b) { set32(b, 4, kSignaled | (1u << 7)); }},
    {"inline", VIRTIO_RDMA_QPT_RC, VIRTIO_RDMA_WC_LOC_QP_OP_ERR,
     [](Bytes &b) { set32(b, 4, kSignaled | VIRTIO_RDMA_SEND_INLINE); }},
    {"unknown_opcode", VIRTIO_RDMA_QPT_RC, VIRTIO_RDMA_WC_LOC_QP_OP_ERR,
     [](Bytes &b) { set32(b, 8, 0x55); }},
    {"read_with_inv", VIRTIO_RDMA_QPT_RC, VIRTIO_RDMA_WC_LOC_QP_OP_ERR,
     [](Bytes &b) { set32(b, 8, VIRTIO_RDMA_WR_RDMA_READ_WITH_INV); }},
    {"read_on_uc", VIRTIO_RDMA_QPT_UC, VIRTIO_RDMA_WC_LOC_QP_OP_ERR,
     [](Bytes &b) { set32(b, 8, VIRTIO_RDMA_WR_RDMA_READ); }},
    {"atomic_on_uc", VIRTIO_RDMA_QPT_UC, VIRTIO_RDMA_WC_LOC_QP_OP_ERR,
     [](Bytes &b) { set32(b, 8, VIRTIO_RDMA_WR_ATOMIC_FETCH_AND_ADD); }},
    {"write_on_ud", VIRTIO_RDMA_QPT_UD, VIRTIO_RDMA_WC_LOC_QP_OP_ERR,
     [](Bytes &b) { set32(b, 8, VIRTIO_RDMA_WR_RDMA_WRITE); }},
    {"reg_mr_on_ud", VIRTIO_RDMA_QPT_UD, VIRTIO_RDMA_WC_LOC_QP_OP_ERR,
     [](Bytes &b) { set32(b, 8, VIRTIO_RDMA_WR_REG_MR); }},
    {"ud_gid_index", VIRTIO_RDMA_QPT_UD, VIRTIO_RDMA_WC_LOC_QP_OP_ERR,
     [](Bytes &b) { b[40 + 28] = VRDMA_GID_TABLE_LEN; }},
    {"message_above_2g", VIRTIO_RDMA_QPT_RC, VIRTIO_RDMA_WC_LOC_LEN_ERR,
     [](Bytes &b) {
         set32(b, 0, 2);
         b.resize(88 + 32);
         set32(b, 88 + 8, 0x80000000u);
         std::memcpy(b.data() + 104, b.data() + 88, 16);
     }},
    {"atomic_not_8_bytes", VIRTIO_RDMA_QPT_RC, VIRTIO_RDMA_WC_LOC_LEN_ERR,
     [](Bytes &b) { set32(b, 8, VIRTIO_RDMA_WR_ATOMIC_CMP_AND_SWP); }},
};

INSTANTIATE_TEST_SUITE_P(Kinds, DpBadWqe, ::testing::ValuesIn(kBadWqes),
                         [](const auto &info) { return info.param.name; });

TEST_F(DpLocal, MalformedReceiveFailsAtOnce)
{
    auto [qa, qb] = connect();
    Bytes r = recv_bytes(7, {{dst.addr, 64, dst.lkey}});
    set32(r, 0, 5); /* above the QP's 4, in the 128-byte entry */
    b->post_recv_raw(qb, r);
    Bytes past = recv_bytes(9, {{dst.addr, 64, dst.lkey}});
    set32(past, 0, 8); /* the entry holds 7 */
    b->post_recv_raw(qb, past);
    expect_cqe(*b, cq_b, 7, VIRTIO_RDMA_WC_LOC_QP_OP_ERR, VIRTIO_RDMA_WC_RECV);
    expect_cqe(*b, cq_b, 9, VIRTIO_RDMA_WC_LOC_QP_OP_ERR, VIRTIO_RDMA_WC_RECV);
    EXPECT_EQ(b->qp_state(qb), VIRTIO_RDMA_QPS_RTS);
    (void)qa;
}

/*
 * A ring holds its depth of requests however few the device holds: it
 * takes a window of each queue, nothing completes early, and the rest
 * follows as the window moves.
 */
TEST_F(DpLocal, RingsHoldTheirDepthBeyondTheWindow)
{
    using vrdma::soft_roce::kRingWindow;
    auto [qa, qb] = connect();
    const uint32_t n = 1u << kNodeQpLogDepth;
    for (uint32_t i = 0; i < n; i++) {
        ASSERT_TRUE(a->post_send(qa, send(i).flags(0)));
        ASSERT_TRUE(b->post_recv(qb, i, {{dst.addr, 128, dst.lkey}}));
    }
    EXPECT_EQ(a->ring_qp(qa)->sq.trailer(*a)->device_idx, kRingWindow);
    EXPECT_EQ(b->ring_qp(qb)->rq.trailer(*b)->device_idx, kRingWindow);
    EXPECT_EQ(a->cq_size(cq_a), 0u);
    EXPECT_EQ(b->cq_size(cq_b), 0u);
    /* The queued ones all go through. */
    ASSERT_TRUE(wire.pump());
    ASSERT_EQ(b->cq_size(cq_b), n);
    for (uint32_t i = 0; i < n; i++) {
        expect_cqe(*b, cq_b, i, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_RECV);
    }
    EXPECT_EQ(a->cq_size(cq_a), 0u) << "unsignaled";
    EXPECT_EQ(a->ring_qp(qa)->sq.trailer(*a)->device_idx, n);
    EXPECT_EQ(a->qp_state(qa), VIRTIO_RDMA_QPS_RTS);
    EXPECT_TRUE(a->async_events.empty());
}

/*
 * Each queue's window is its QP's caps when they are below the ring
 * window (not the depth of its ring): the engine holds 5 sends of a cap
 * of 5, a sixth waits in the ring and goes when one completes, the QP
 * stays in RTS, and the engine's 8 slots behind the cap wrap.  A queue
 * with no requests has no ring: its doorbell is ignored.
 */
TEST_F(DpLocal, QueuesHoldTheQpsCaps)
{
    auto qp = [](Node &n, uint32_t pd, uint32_t cq, uint32_t send_wr,
                 uint32_t recv_wr) {
        virtio_rdma_cmd_create_qp r{};
        r.pdn = pd;
        r.qp_type = VIRTIO_RDMA_QPT_RC;
        r.max_send_wr = send_wr;
        r.max_send_sge = 1;
        r.send_cqn = cq;
        r.max_recv_wr = recv_wr;
        r.max_recv_sge = 1;
        r.recv_cqn = cq;
        return n.create_qp(r);
    };
    const uint32_t qa = qp(*a, pd_a, cq_a, 5, 0);
    const uint32_t qb = qp(*b, pd_b, cq_b, 1, 3);
    connect_pair(*a, qa, *b, qb, VIRTIO_RDMA_QPT_RC, Conn{}, true);
    connect_pair(*b, qb, *a, qa, VIRTIO_RDMA_QPT_RC, Conn{}, false);
    const auto &ea = std::get<vrdma::soft_roce::QpEngine>(a->core->qps.at(qa)->backend);
    const auto &eb = std::get<vrdma::soft_roce::QpEngine>(b->core->qps.at(qb)->backend);
    ASSERT_EQ(ea.sq.size(), 8u);
    ASSERT_EQ(eb.rq.size(), 4u);

    auto write = [&](uint64_t id) {
        a->post_send(qa, send(id).op(VIRTIO_RDMA_WR_RDMA_WRITE)
                             .rdma(dst.addr, dst.rkey));
    };
    for (uint64_t round = 0; round < 2; round++) {
        for (uint64_t i = 1; i <= 6; i++) {
            write(round * 10 + i);
        }
        EXPECT_EQ(a->ring_qp(qa)->sq.trailer(*a)->device_idx, round * 6 + 5)
            << "the sixth waits in the ring";
        EXPECT_EQ(a->cq_size(cq_a), 0u);
        ASSERT_TRUE(wire.pump());
        for (uint64_t i = 1; i <= 6; i++) {
            expect_cqe(*a, cq_a, round * 10 + i, VIRTIO_RDMA_WC_SUCCESS,
                       VIRTIO_RDMA_WC_RDMA_WRITE);
        }
        EXPECT_EQ(a->qp_state(qa), VIRTIO_RDMA_QPS_RTS);
    }

    for (uint64_t i = 1; i <= 4; i++) {
        b->post_recv(qb, 100 + i, {{dst.addr, 128, dst.lkey}});
    }
    EXPECT_EQ(b->ring_qp(qb)->rq.trailer(*b)->device_idx, 3u);
    /* a's QP has no receive queue at all. */
    const size_t errors = a->errors.size();
    EXPECT_FALSE(a->post_recv(qa, 200, {{src.addr, 128, src.lkey}}));
    ASSERT_EQ(a->errors.size(), errors + 1);
    EXPECT_EQ(a->errors.back().field, "doorbell.type");
    for (uint64_t i = 1; i <= 4; i++) {
        a->post_send(qa, send(300 + i));
    }
    ASSERT_TRUE(wire.pump());
    for (uint64_t i = 1; i <= 4; i++) {
        expect_cqe(*b, cq_b, 100 + i, VIRTIO_RDMA_WC_SUCCESS,
                   VIRTIO_RDMA_WC_RECV);
        expect_cqe(*a, cq_a, 300 + i, VIRTIO_RDMA_WC_SUCCESS,
                   VIRTIO_RDMA_WC_SEND);
    }
    EXPECT_EQ(b->qp_state(qb), VIRTIO_RDMA_QPS_RTS);
    EXPECT_EQ(a->cq_size(cq_a), 0u);
    EXPECT_EQ(b->cq_size(cq_b), 0u);
}

/* ->ERR flushes every outstanding WQE, signaled or not, in order. */
TEST_F(DpLocal, ErrFlushesEveryOutstandingRequest)
{
    auto [qa, qb] = connect();
    a->post_send(qa, send(1));
    a->post_send(qa, send(2).flags(0));
    a->post_send(qa, send(3));
    a->post_recv(qa, 4, {{src.addr, 64, src.lkey}});
    a->post_recv(qa, 5, {{src.addr, 64, src.lkey}});
    ASSERT_EQ(a->to_state(qa, VIRTIO_RDMA_QPS_ERR), VIRTIO_RDMA_OK);
    for (uint64_t id : {1, 2, 3}) {
        expect_cqe(*a, cq_a, id, VIRTIO_RDMA_WC_WR_FLUSH_ERR,
                   VIRTIO_RDMA_WC_SEND);
    }
    for (uint64_t id : {4, 5}) {
        expect_cqe(*a, cq_a, id, VIRTIO_RDMA_WC_WR_FLUSH_ERR,
                   VIRTIO_RDMA_WC_RECV);
    }
    EXPECT_EQ(a->cq_size(cq_a), 0u);
    EXPECT_TRUE(wire.pump());
    EXPECT_EQ(wire.frames, 0u) << "nothing is sent after the flush";
    EXPECT_EQ(a->stats().error_completions, 5u);
    (void)qb;
}

/* Sent but unacknowledged WQEs are flushed too. */
TEST_F(DpLocal, ErrFlushesSentRequests)
{
    auto [qa, qb] = connect();
    wire.tap = [](Wire::Frame &) { return false; }; /* nothing arrives */
    a->post_send(qa, send(1));
    a->post_send(qa, send(2).flags(0));
    ASSERT_TRUE(wire.pump_until([&] { return wire.frames == 2; }));
    ASSERT_EQ(a->to_state(qa, VIRTIO_RDMA_QPS_ERR), VIRTIO_RDMA_OK);
    expect_cqe(*a, cq_a, 1, VIRTIO_RDMA_WC_WR_FLUSH_ERR, VIRTIO_RDMA_WC_SEND);
    expect_cqe(*a, cq_a, 2, VIRTIO_RDMA_WC_WR_FLUSH_ERR, VIRTIO_RDMA_WC_SEND);
    EXPECT_TRUE(wire.pump());
    EXPECT_EQ(wire.frames, 2u) << "no retransmission from ERR";
    (void)qb;
}

TEST_F(DpLocal, ResetDropsEverythingSilently)
{
    auto [qa, qb] = connect();
    a->post_send(qa, send(1));
    a->post_recv(qa, 2, {{src.addr, 64, src.lkey}});
    ASSERT_EQ(a->to_state(qa, VIRTIO_RDMA_QPS_RESET), VIRTIO_RDMA_OK);
    EXPECT_TRUE(wire.pump());
    EXPECT_EQ(a->cq_size(cq_a), 0u);
    EXPECT_EQ(wire.frames, 0u);

    /* The QP starts over and works. */
    connect_pair(*a, qa, *b, qb, VIRTIO_RDMA_QPT_RC, Conn{}, true);
    ASSERT_EQ(b->to_state(qb, VIRTIO_RDMA_QPS_RESET), VIRTIO_RDMA_OK);
    connect_pair(*b, qb, *a, qa, VIRTIO_RDMA_QPT_RC, Conn{}, false);
    b->post_recv(qb, 3, {{dst.addr, 128, dst.lkey}});
    a->post_send(qa, send(4));
    ASSERT_TRUE(wire.pump());
    expect_cqe(*a, cq_a, 4, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_SEND);
    expect_cqe(*b, cq_b, 3, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_RECV);
}

TEST_F(DpLocal, DestroyDropsEverythingSilently)
{
    auto [qa, qb] = connect();
    a->post_send(qa, send(1));
    a->post_recv(qa, 2, {{src.addr, 64, src.lkey}});
    ASSERT_EQ(a->destroy_qp(qa), VIRTIO_RDMA_OK);
    EXPECT_TRUE(wire.pump());
    EXPECT_EQ(a->cq_size(cq_a), 0u);
    EXPECT_EQ(wire.frames, 0u);
    (void)qb;
}

TEST_F(DpLocal, CoreResetDropsWorkAndCancelsTheTimer)
{
    auto [qa, qb] = connect();
    wire.tap = [](Wire::Frame &) { return false; };
    a->post_send(qa, send(1));
    ASSERT_TRUE(wire.pump_until([&] { return wire.frames == 1; }));
    EXPECT_NE(a->deadline, UINT64_MAX) << "retransmit timer armed";
    a->reset();
    EXPECT_EQ(a->deadline, UINT64_MAX);
    EXPECT_TRUE(wire.pump());
    EXPECT_EQ(a->cq_size(cq_a), 0u);
    (void)qb;
}

/* ---- CQ arming and overrun ---- */

TEST_F(DpLocal, NextCompletionNotifiesOnceThenDisarms)
{
    auto [qa, qb] = connect();
    b->post_recv(qb, 10, {{dst.addr, 4096, dst.lkey}});
    b->post_recv(qb, 11, {{dst.addr, 4096, dst.lkey}});
    a->arm_cq(cq_a, VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION);
    a->post_send(qa, send(1));
    a->post_send(qa, send(2));
    ASSERT_TRUE(wire.pump());
    EXPECT_EQ(a->cq_size(cq_a), 2u);
    EXPECT_EQ(a->notifies[cq_a], 1u);
    EXPECT_EQ(vrdma_core_cq_armed(a->core, cq_a), 0u);
    EXPECT_EQ(b->notifies[cq_b], 0u) << "never armed";
}

TEST_F(DpLocal, SolicitedFiresForSolicitedReceivesAndErrorsOnly)
{
    auto [qa, qb] = connect();
    for (uint64_t i = 0; i < 3; i++) {
        b->post_recv(qb, 10 + i, {{dst.addr, 4096, dst.lkey}});
    }
    b->arm_cq(cq_b, VIRTIO_RDMA_NOTIFY_SOLICITED);
    a->arm_cq(cq_a, VIRTIO_RDMA_NOTIFY_SOLICITED);
    a->post_send(qa, send(1));
    ASSERT_TRUE(wire.pump());
    EXPECT_EQ(b->notifies[cq_b], 0u) << "not solicited";
    EXPECT_EQ(a->notifies[cq_a], 0u) << "a send completion is not";

    a->post_send(qa, send(2).flags(kSignaled | VIRTIO_RDMA_SEND_SOLICITED));
    ASSERT_TRUE(wire.pump());
    EXPECT_EQ(b->notifies[cq_b], 1u);
    EXPECT_EQ(vrdma_core_cq_armed(b->core, cq_b), 0u);

    /* An error completion notifies a CQ armed for solicited events. */
    a->post_send(qa, send(3).sge(0x7000, 1, 0xdead00)); /* bad lkey */
    ASSERT_TRUE(wire.pump());
    EXPECT_EQ(a->notifies[cq_a], 1u);
}

/*
 * b's QP completes on a CQ ring of one entry that the driver does not
 * consume: the first receive completion fills it, the second is lost and
 * counted, the QP goes to ERR (its last receive is flushed, and lost as
 * well) and the CQ gets a CQ_ERR event.
 */
TEST_F(DpLocal, CqOverrunIsCountedAndPutsTheQpInErr)
{
    const uint32_t full = b->create_cq(1);
    const uint32_t qa = a->create_qp(pd_a, VIRTIO_RDMA_QPT_RC, cq_a, cq_a);
    const uint32_t qb = b->create_qp(pd_b, VIRTIO_RDMA_QPT_RC, full, full);
    connect_pair(*a, qa, *b, qb, VIRTIO_RDMA_QPT_RC, Conn{}, true);
    connect_pair(*b, qb, *a, qa, VIRTIO_RDMA_QPT_RC, Conn{}, false);
    for (uint64_t id : {10, 11, 12}) {
        b->post_recv(qb, id, {{dst.addr, 4096, dst.lkey}});
    }
    b->hold_cq(full);
    a->post_send(qa, send(1));
    a->post_send(qa, send(2));
    ASSERT_TRUE(wire.pump());
    EXPECT_EQ(b->stats().cq_overruns, 2u) << "11, and 12's flush";
    EXPECT_EQ(b->stats().completions, 1u) << "a lost one is not written";
    EXPECT_EQ(b->stats().error_completions, 0u);
    EXPECT_EQ(b->qp_state(qb), VIRTIO_RDMA_QPS_ERR);
    ASSERT_FALSE(b->async_events.empty());
    EXPECT_EQ(b->async_events[0].type, VIRTIO_RDMA_EVENT_CQ_ERR);
    EXPECT_EQ(b->async_events[0].handle, full);
    b->hold_cq(full, false);
    expect_cqe(*b, full, 10, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_RECV);
    EXPECT_EQ(b->cq_size(full), 0u);
}

/* ---- local memory checks (requester side) ---- */

class DpBadSge : public DpLocal, public ::testing::WithParamInterface<int> {
};

/* Each way an SGE can be refused: LOC_PROT_ERR, then the QP is in ERR. */
TEST_P(DpBadSge, LocalProtectionError)
{
    auto [qa, qb] = connect();
    const uint32_t other_pd = a->create_pd();
    const MrInfo foreign = buffer(*a, other_pd, 4096);
    const MrInfo ro = buffer(*a, pd_a, 4096, VIRTIO_RDMA_ACCESS_REMOTE_READ);
    const MrInfo rkeyed = buffer(*b, pd_b, 4096);
    SendWr wr = SendWr().id(1).flags(kSignaled);
    switch (GetParam()) {
    case 0: /* no such key */
        wr.op(VIRTIO_RDMA_WR_SEND).sge(src.addr, 16, src.lkey ^ 0x80);
        break;
    case 1: /* another PD's MR */
        wr.op(VIRTIO_RDMA_WR_SEND).sge(foreign.addr, 16, foreign.lkey);
        break;
    case 2: /* past the end */
        wr.op(VIRTIO_RDMA_WR_SEND).sge(src.addr + src.len - 8, 16, src.lkey);
        break;
    case 3: /* before the start */
        wr.op(VIRTIO_RDMA_WR_SEND).sge(src.addr - 1, 16, src.lkey);
        break;
    case 4: /* READ into an MR without local write */
        wr.op(VIRTIO_RDMA_WR_RDMA_READ)
            .sge(ro.addr, 16, ro.lkey)
            .rdma(rkeyed.addr, rkeyed.rkey);
        break;
    case 5: /* address + length wraps */
        wr.op(VIRTIO_RDMA_WR_SEND).sge(~uint64_t{0} - 4, 16, src.lkey);
        break;
    }
    a->post_send(qa, wr);
    a->post_send(qa, send(2));
    ASSERT_TRUE(wire.pump());
    expect_cqe(*a, cq_a, 1, VIRTIO_RDMA_WC_LOC_PROT_ERR,
               GetParam() == 4 ? VIRTIO_RDMA_WC_RDMA_READ
                               : VIRTIO_RDMA_WC_SEND);
    expect_cqe(*a, cq_a, 2, VIRTIO_RDMA_WC_WR_FLUSH_ERR, VIRTIO_RDMA_WC_SEND);
    EXPECT_EQ(a->qp_state(qa), VIRTIO_RDMA_QPS_ERR);
    EXPECT_EQ(wire.frames, 0u) << "nothing of the message went out";
    (void)qb;
}

INSTANTIATE_TEST_SUITE_P(Kinds, DpBadSge, ::testing::Range(0, 6));

TEST_F(DpLocal, DmaMrMovesGuestPhysicalMemory)
{
    auto [qa, qb] = connect();
    const MrInfo da = a->dma_mr(pd_a, VIRTIO_RDMA_ACCESS_LOCAL_WRITE);
    const MrInfo db = b->dma_mr(pd_b, VIRTIO_RDMA_ACCESS_LOCAL_WRITE);
    const uint64_t from = a->alloc(3000), to = b->alloc(3000);
    a->fill(from, 3000, 5);
    b->post_recv(qb, 1, {{to, 3000, db.lkey}});
    a->post_send(qa, SendWr()
                         .op(VIRTIO_RDMA_WR_SEND)
                         .id(2)
                         .flags(kSignaled)
                         .sge(from, 3000, da.lkey));
    ASSERT_TRUE(wire.pump());
    expect_cqe(*a, cq_a, 2, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_SEND);
    expect_cqe(*b, cq_b, 1, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_RECV);
    EXPECT_TRUE(b->check(to, 3000, 5));
}

/* ---- fast registration and invalidation ---- */

class DpFastReg : public DpLocal {
protected:
    void SetUp() override
    {
        DpLocal::SetUp();
        std::tie(qa, qb) = connect();
        region = b->alloc(8192);
        fmr = b->fast_mr(pd_b, region + 100, 5000);
        key = (fmr.lkey & ~0xFFu) | ((fmr.lkey + 0x11) & 0xFF);
    }

    void reg(uint64_t id, uint32_t k, uint32_t access = kAllAccess,
             uint32_t mrn = 0)
    {
        b->post_send(qb, SendWr()
                             .op(VIRTIO_RDMA_WR_REG_MR)
                             .id(id)
                             .flags(kSignaled)
                             .reg(mrn ? mrn : fmr.mrn, k, access));
    }

    void write(uint64_t id, uint32_t rkey, uint32_t len = 64)
    {
        a->fill(src.addr, len, static_cast<uint32_t>(id));
        a->post_send(qa, SendWr()
                             .op(VIRTIO_RDMA_WR_RDMA_WRITE)
                             .id(id)
                             .flags(kSignaled)
                             .sge(src.addr, len, src.lkey)
                             .rdma(region + 100, rkey));
    }

    uint32_t qa = 0, qb = 0;
    uint64_t region = 0;
    MrInfo fmr;
    uint32_t key = 0;
};

TEST_F(DpFastReg, RegMrMakesTheKeyWorkAndLocalInvStopsIt)
{
    write(1, key); /* not registered yet */
    ASSERT_TRUE(wire.pump());
    expect_cqe(*a, cq_a, 1, VIRTIO_RDMA_WC_REM_ACCESS_ERR,
               VIRTIO_RDMA_WC_RDMA_WRITE);
    /* Start over with fresh QPs. */
    std::tie(qa, qb) = connect();

    const uint64_t frames = wire.frames;
    reg(2, key);
    ASSERT_TRUE(wire.pump());
    expect_cqe(*b, cq_b, 2, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_REG_MR);
    EXPECT_EQ(wire.frames, frames) << "a local operation";
    const vrdma::Mr *mr = b->core->mrs.lookup_lkey(key);
    ASSERT_NE(mr, nullptr);
    EXPECT_EQ(mr->rkey, key);
    EXPECT_EQ(mr->access, kAllAccess);

    write(3, key, 300);
    ASSERT_TRUE(wire.pump());
    expect_cqe(*a, cq_a, 3, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_RDMA_WRITE);
    EXPECT_TRUE(b->check(region + 100, 300, 3));

    b->post_send(qb, SendWr()
                         .op(VIRTIO_RDMA_WR_LOCAL_INV)
                         .id(4)
                         .flags(kSignaled)
                         .inv(key));
    ASSERT_TRUE(wire.pump());
    expect_cqe(*b, cq_b, 4, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_LOCAL_INV);
    write(5, key);
    ASSERT_TRUE(wire.pump());
    expect_cqe(*a, cq_a, 5, VIRTIO_RDMA_WC_REM_ACCESS_ERR,
               VIRTIO_RDMA_WC_RDMA_WRITE);
}

/*
 * As nvme-rdma does it: the REG_MR key is ib_inc_rkey() of the rkey that
 * CREATE_MR returned for an MR created with no rights (ib_alloc_mr()).  On
 * the code before the fix that rkey was 0 and the REG_MR completed with
 * LOC_QP_OP_ERR.
 */
TEST_F(DpFastReg, RegMrWithTheKernelsNextRkeyWorks)
{
    ASSERT_NE(fmr.rkey, 0u);
    const uint32_t next = (fmr.rkey & ~0xFFu) | ((fmr.rkey + 1) & 0xFF);
    reg(1, next);
    ASSERT_TRUE(wire.pump());
    expect_cqe(*b, cq_b, 1, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_REG_MR);
    write(2, next, 200);
    ASSERT_TRUE(wire.pump());
    expect_cqe(*a, cq_a, 2, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_RDMA_WRITE);
    EXPECT_TRUE(b->check(region + 100, 200, 2));
}

TEST_F(DpFastReg, SendWithInvalidateInvalidatesTheRkey)
{
    reg(1, key);
    ASSERT_TRUE(wire.pump());
    b->post_recv(qb, 2, {{dst.addr, 4096, dst.lkey}});
    a->post_send(qa, send(3).op(VIRTIO_RDMA_WR_SEND_WITH_INV).inv(key));
    ASSERT_TRUE(wire.pump());
    expect_cqe(*b, cq_b, 1, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_REG_MR);
    const virtio_rdma_cq_req c = b->pop_cqe(cq_b);
    EXPECT_EQ(c.status, VIRTIO_RDMA_WC_SUCCESS);
    EXPECT_EQ(c.wc_flags & VIRTIO_RDMA_WC_WITH_INVALIDATE,
              VIRTIO_RDMA_WC_WITH_INVALIDATE);
    EXPECT_EQ(c.ex, key);
    expect_cqe(*a, cq_a, 3, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_SEND);
    write(4, key);
    ASSERT_TRUE(wire.pump());
    expect_cqe(*a, cq_a, 4, VIRTIO_RDMA_WC_REM_ACCESS_ERR,
               VIRTIO_RDMA_WC_RDMA_WRITE);
}

/*
 * A key REG_MR set is not handed out again to the next MR in the slot: a
 * peer's stale rkey must not reach the new MR.  (The slot's counter did
 * not learn REG_MR's byte, so the next MR got fmr.lkey + 1 again.)
 */
TEST_F(DpFastReg, RegMrKeyIsNotReissuedAfterDereg)
{
    const uint32_t stale = (fmr.lkey & ~0xFFu) | ((fmr.lkey + 1) & 0xFF);
    reg(1, stale); /* ib_inc_rkey() */
    write(2, stale);
    ASSERT_TRUE(wire.pump());
    expect_cqe(*b, cq_b, 1, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_REG_MR);
    expect_cqe(*a, cq_a, 2, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_RDMA_WRITE);
    ASSERT_EQ(b->dereg_mr(fmr.mrn), VIRTIO_RDMA_OK);

    /* The slot's next MR, over the same memory, remote write allowed. */
    const MrInfo next = b->reg_mr(pd_b, region, 8192, kAllAccess);
    ASSERT_EQ(next.lkey >> 8, fmr.lkey >> 8) << "the same slot";
    EXPECT_NE(next.rkey, stale);
    EXPECT_NE(next.rkey, fmr.lkey);

    b->fill(region, 8192, 77);
    write(3, stale); /* the peer still holds the old key */
    ASSERT_TRUE(wire.pump());
    expect_cqe(*a, cq_a, 3, VIRTIO_RDMA_WC_REM_ACCESS_ERR,
               VIRTIO_RDMA_WC_RDMA_WRITE);
    EXPECT_TRUE(b->check(region, 8192, 77)) << "nothing written";
}

/*
 * ib_inc_rkey() steps the key byte through 0: on MR slot 0 that makes key
 * 0, which must work as any other REG_MR key (a slot's own keys never are
 * 0, so the core must not take rkey 0 for "no remote access" here).
 */
TEST_F(DpFastReg, KeyZeroOnSlotZeroIsARealKey)
{
    ASSERT_EQ(dst.lkey >> 8, 0u) << "dst holds slot 0";
    ASSERT_EQ(b->dereg_mr(dst.mrn), VIRTIO_RDMA_OK);
    const MrInfo zero = b->fast_mr(pd_b, region, 4096);
    ASSERT_EQ(zero.lkey >> 8, 0u) << "the freed slot 0";
    reg(1, 0, kAllAccess, zero.mrn);
    a->fill(src.addr, 64, 7);
    a->post_send(qa, SendWr()
                         .op(VIRTIO_RDMA_WR_RDMA_WRITE)
                         .id(2)
                         .flags(kSignaled)
                         .sge(src.addr, 64, src.lkey)
                         .rdma(region, 0));
    ASSERT_TRUE(wire.pump());
    expect_cqe(*b, cq_b, 1, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_REG_MR);
    expect_cqe(*a, cq_a, 2, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_RDMA_WRITE);
    EXPECT_TRUE(b->check(region, 64, 7));

    b->post_send(qb, SendWr()
                         .op(VIRTIO_RDMA_WR_LOCAL_INV)
                         .id(3)
                         .flags(kSignaled)
                         .inv(0));
    ASSERT_TRUE(wire.pump());
    expect_cqe(*b, cq_b, 3, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_LOCAL_INV);
    write(4, 0);
    ASSERT_TRUE(wire.pump());
    expect_cqe(*a, cq_a, 4, VIRTIO_RDMA_WC_REM_ACCESS_ERR,
               VIRTIO_RDMA_WC_RDMA_WRITE);
}

class DpBadReg : public DpFastReg, public ::testing::WithParamInterface<int> {
};

TEST_P(DpBadReg, FailsWithLocQpOpErr)
{
    switch (GetParam()) {
    case 0: /* key names another MR index */
        reg(1, key + 0x100);
        break;
    case 1: /* remote write without local write */
        reg(1, key, VIRTIO_RDMA_ACCESS_REMOTE_WRITE);
        break;
    case 2: { /* an MR of another PD */
        const uint32_t pd2 = b->create_pd();
        const MrInfo other = b->fast_mr(pd2, region, 4096);
        reg(1, other.lkey + 1, kAllAccess, other.mrn);
        break;
    }
    case 3: /* already valid: must be invalidated first */
        reg(9, key);
        reg(1, key + 1);
        break;
    case 4: /* not a fast-registration MR */
        reg(1, dst.lkey + 1, kAllAccess, dst.mrn);
        break;
    case 5: /* no such MR */
        reg(1, key, kAllAccess, 0x7777);
        break;
    }
    ASSERT_TRUE(wire.pump());
    if (GetParam() == 3) {
        expect_cqe(*b, cq_b, 9, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_REG_MR);
    }
    expect_cqe(*b, cq_b, 1, VIRTIO_RDMA_WC_LOC_QP_OP_ERR,
               VIRTIO_RDMA_WC_REG_MR);
    EXPECT_EQ(b->qp_state(qb), VIRTIO_RDMA_QPS_ERR);
}

INSTANTIATE_TEST_SUITE_P(Kinds, DpBadReg, ::testing::Range(0, 6));

TEST_F(DpFastReg, LocalInvOfAnUnknownKeyFails)
{
    b->post_send(qb, SendWr()
                         .op(VIRTIO_RDMA_WR_LOCAL_INV)
                         .id(1)
                         .flags(kSignaled)
                         .inv(dst.lkey)); /* a user MR: cannot be invalidated */
    ASSERT_TRUE(wire.pump());
    expect_cqe(*b, cq_b, 1, VIRTIO_RDMA_WC_LOC_QP_OP_ERR,
               VIRTIO_RDMA_WC_LOCAL_INV);
}

} // namespace
} // namespace vrdma_test

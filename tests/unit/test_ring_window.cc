/*
 * A ring QP's window: the soft-RoCE engine holds at most kRingWindow
 * requests of a queue, whatever its depth, and takes the rest from the
 * guest's ring as it has room -- sends as earlier ones complete, receives
 * when a message needs one, the rest of both rings when the QP goes to ERR.
 * CREATE_QP_RING's depth is max_ring_qp_wr, not queue_size.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core.h"
#include "ring_fixture.h"

namespace vrdma_test {
namespace {

using vrdma::soft_roce::kRingWindow;
using vrdma::soft_roce::QpEngine;

class RingWindow : public RingPair {
protected:
    const QpEngine &engine(Node &n, const RingQp &q)
    {
        return std::get<QpEngine>(n.core->qps.at(q.qpn)->backend);
    }

    /* Turns and the wire until @cq has @n completions more; @returns them. */
    std::vector<virtio_rdma_cq_req> collect(RingCq &cq, size_t n)
    {
        std::vector<virtio_rdma_cq_req> got;
        for (int round = 0; round < 400 && got.size() < n; round++) {
            rings_drain(*a);
            rings_drain(*b);
            EXPECT_TRUE(wire.pump());
            while (auto c = cq.poll()) {
                got.push_back(*c);
            }
        }
        return got;
    }
};

TEST_F(RingWindow, DeepQueuesMoveThroughTheWindow)
{
    up(11, 12); /* 2048-entry SQ and RQ, 4096-entry CQs */
    constexpr uint32_t kMsgs = 2000;
    for (uint32_t i = 0; i < kMsgs; i++) {
        qb->put_recv(i, {{dst.addr + (i % 64) * 512, 512, dst.lkey}});
    }
    ASSERT_TRUE(qb->ring_rq(qb->rq_pi));
    a->fill(src.addr, 64 * 512, 3);
    for (uint32_t i = 0; i < kMsgs; i++) {
        qa->put_send(SendWr{}.op(VIRTIO_RDMA_WR_SEND).id(i).flags(kSignaled)
                         .sge(src.addr + (i % 64) * 512, 512, src.lkey));
    }
    ASSERT_TRUE(qa->ring_sq(qa->sq_pi));

    /* One turn takes a window of each queue, not the 2000 rung. */
    rings_drain(*a);
    rings_drain(*b);
    EXPECT_EQ(qa->sq.trailer(*a)->device_idx, kRingWindow);
    EXPECT_EQ(qb->rq.trailer(*b)->device_idx, kRingWindow);

    const auto sends = collect(*ca, kMsgs);
    const auto recvs = collect(*cb, kMsgs);
    ASSERT_EQ(sends.size(), kMsgs);
    ASSERT_EQ(recvs.size(), kMsgs);
    for (uint32_t i = 0; i < kMsgs; i++) {
        EXPECT_EQ(sends[i].wr_id, i);
        EXPECT_EQ(sends[i].status, VIRTIO_RDMA_WC_SUCCESS) << i;
        EXPECT_EQ(recvs[i].wr_id, i);
        EXPECT_EQ(recvs[i].status, VIRTIO_RDMA_WC_SUCCESS) << i;
        EXPECT_EQ(recvs[i].byte_len, 512u);
    }
    EXPECT_TRUE(b->check(dst.addr, 64 * 512, 3));
    EXPECT_EQ(qa->sq.trailer(*a)->device_idx, kMsgs);
    EXPECT_EQ(qb->rq.trailer(*b)->device_idx, kMsgs);
    /* Receives were taken as messages came: never one RNR NAK. */
    EXPECT_EQ(b->stats().rnr_naks_sent, 0u);
    EXPECT_EQ(a->stats().rnr_naks_received, 0u);
    EXPECT_TRUE(a->async_events.empty());
    EXPECT_TRUE(b->async_events.empty());

    /* The engine's storage is the window's, not the queue's depth. */
    const QpEngine &e = engine(*a, *qa);
    EXPECT_EQ(e.sq.size(), kRingWindow);
    EXPECT_EQ(e.rq.size(), kRingWindow);
    EXPECT_EQ(e.sq_cap, kRingWindow);
}

TEST_F(RingWindow, HostMemoryPerQpDoesNotGrowWithDepth)
{
    ca = std::make_unique<RingCq>(*a, 0, 4, 2);
    const RingQp shallow(*a, 0, pd_a, VIRTIO_RDMA_QPT_RC, *ca, *ca, 6, 4);
    const RingQp deep(*a, 0, pd_a, VIRTIO_RDMA_QPT_RC, *ca, *ca, 14, 4);
    const QpEngine &s = engine(*a, shallow);
    const QpEngine &d = engine(*a, deep);
    EXPECT_EQ(d.ring_bytes(), s.ring_bytes()); /* 64 and 16384 WRs */
    /* window * (SendWqe + 4 SGEs) + window * (RecvWqe + 4 SGEs) */
    EXPECT_EQ(d.ring_bytes(),
              kRingWindow * (sizeof(vrdma::soft_roce::SendWqe) +
                             sizeof(vrdma::soft_roce::RecvWqe) +
                             8 * sizeof(vrdma::Sge)));
    /* A virtqueue QP of the same depth kept a slot per request. */
    EXPECT_LT(d.ring_bytes(), 20u << 10);
}

TEST_F(RingWindow, ReceiveTakenWhenAMessageNeedsIt)
{
    up(8, 9); /* 256-entry RQ */
    for (uint32_t i = 0; i < 200; i++) {
        qb->put_recv(i, {{dst.addr, 64, dst.lkey}});
    }
    ASSERT_TRUE(qb->ring_rq(qb->rq_pi));
    rings_drain(*b);
    ASSERT_EQ(qb->rq.trailer(*b)->device_idx, kRingWindow);
    /* No turn of b's from here on: only the responder takes receives. */
    for (uint32_t i = 0; i < 200; i++) {
        qa->put_send(SendWr{}.op(VIRTIO_RDMA_WR_SEND).id(i)
                         .flags(i == 199 ? kSignaled : 0)
                         .sge(src.addr, 8, src.lkey));
        if (i % 32 == 31 || i == 199) {
            ASSERT_TRUE(qa->ring_sq(qa->sq_pi));
            for (int r = 0; r < 40; r++) {
                rings_drain(*a);
                ASSERT_TRUE(wire.pump());
            }
        }
    }
    EXPECT_EQ(qb->rq.trailer(*b)->device_idx, 200u);
    uint32_t n = 0;
    while (auto c = cb->poll()) {
        EXPECT_EQ(c->wr_id, n);
        EXPECT_EQ(c->status, VIRTIO_RDMA_WC_SUCCESS);
        n++;
    }
    EXPECT_EQ(n, 200u);
    EXPECT_EQ(b->stats().rnr_naks_sent, 0u);
    const auto s = ca->poll();
    ASSERT_TRUE(s);
    EXPECT_EQ(s->wr_id, 199u);
    EXPECT_EQ(s->status, VIRTIO_RDMA_WC_SUCCESS);
}

TEST_F(RingWindow, ErrorFlushesWhatTheRingStillHolds)
{
    up(8, 9);
    for (uint32_t i = 0; i < 200; i++) {
        qb->put_recv(1000 + i, {{dst.addr, 64, dst.lkey}});
    }
    ASSERT_TRUE(qb->ring_rq(qb->rq_pi));
    rings_drain(*b);
    ASSERT_EQ(qb->rq.trailer(*b)->device_idx, kRingWindow);
    virtio_rdma_qp_attr err{};
    err.qp_state = VIRTIO_RDMA_QPS_ERR;
    ASSERT_EQ(b->modify(qb->qpn, VIRTIO_RDMA_QP_STATE, err), VIRTIO_RDMA_OK);
    ASSERT_TRUE(wire.pump());
    /* The 64 taken and the 136 still in the ring, in order, all flushed. */
    uint32_t n = 0;
    while (auto c = cb->poll()) {
        EXPECT_EQ(c->wr_id, 1000 + n);
        EXPECT_EQ(c->status, VIRTIO_RDMA_WC_WR_FLUSH_ERR);
        n++;
    }
    EXPECT_EQ(n, 200u);
    EXPECT_EQ(qb->rq.trailer(*b)->device_idx, 200u);
    EXPECT_TRUE(b->async_events.empty()); /* no ring broke */
}

TEST_F(RingWindow, DepthIsMaxRingQpWrNotQueueSize)
{
    virtio_rdma_config cfg{};
    vrdma_core_get_config(a->core, &cfg);
    const uint32_t max_wr = cfg.max_ring_qp_wr; /* packed: no reference */
    EXPECT_EQ(max_wr, VIRTIO_RDMA_RING_MAX_QP_WR);
    ca = std::make_unique<RingCq>(*a, 0, 4, 2);
    /* rxe's 16384 and the ABI's 32768 are taken. */
    const RingQp rxe_deep(*a, 0, pd_a, VIRTIO_RDMA_QPT_RC, *ca, *ca, 14, 1);
    EXPECT_NE(rxe_deep.qpn, UINT32_MAX);
    const RingQp deepest(*a, 0, pd_a, VIRTIO_RDMA_QPT_RC, *ca, *ca, 15, 1);
    EXPECT_NE(deepest.qpn, UINT32_MAX);

    /* One more is refused before any ring is looked at. */
    virtio_rdma_cmd_create_qp_ring r{};
    r.qp.pdn = pd_a;
    r.qp.qp_type = VIRTIO_RDMA_QPT_RC;
    r.qp.max_send_wr = VIRTIO_RDMA_RING_MAX_QP_WR + 1;
    r.qp.max_recv_wr = 1;
    r.qp.send_cqn = r.qp.recv_cqn = ca->cqn;
    virtio_rdma_rsp_create_qp_wire rsp{};
    EXPECT_EQ(a->ctrl(VIRTIO_RDMA_CMD_CREATE_QP_RING, r, &rsp),
              VIRTIO_RDMA_ERANGE);
    EXPECT_EQ(a->errors.back().field, "max_send_wr");

    /* A host's lower bound holds, and is what the config says. */
    VrdmaLimits lim = dp_limits();
    lim.max_ring_qp_wr = 100;
    Node c(nullptr, 2, lim);
    c.set_features(kRingFeatures);
    vrdma_core_get_config(c.core, &cfg);
    const uint32_t lowered = cfg.max_ring_qp_wr;
    EXPECT_EQ(lowered, 100u);
    RingCq cq(c, 0, 4, 2);
    r.qp.pdn = c.create_pd();
    r.qp.max_send_wr = 101;
    r.qp.send_cqn = r.qp.recv_cqn = cq.cqn;
    EXPECT_EQ(c.ctrl(VIRTIO_RDMA_CMD_CREATE_QP_RING, r, &rsp),
              VIRTIO_RDMA_ERANGE);
    EXPECT_EQ(c.errors.back().field, "max_send_wr");
}

} // namespace
} // namespace vrdma_test

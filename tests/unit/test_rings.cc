/*
 * The rings data path (VIRTIO_RDMA_F_RINGS) in the core: contexts, ring
 * creation checks, RC traffic through SQ/RQ/CQ rings that wrap, doorbells
 * (foreign context, destroyed queue, index beyond the ring), CQ full and
 * broken, memory going away under a ring, RESET, the turn's budget.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "ring_fixture.h"

namespace vrdma_test {
namespace {

class Rings : public RingPair {};

/* ---- traffic ---- */

TEST_F(Rings, SendRecvWrapsEveryRingByteExact)
{
    up(2, 2); /* 4-entry SQ, RQ and CQs: 10 messages wrap each twice */
    for (uint32_t m = 0; m < 10; m++) {
        a->fill(src.addr, 3000, 100 + m);
        qb->post_recv(500 + m, {{dst.addr, 4096, dst.lkey}});
        ASSERT_TRUE(qa->post_send(
            SendWr{}.op(VIRTIO_RDMA_WR_SEND).id(900 + m).flags(kSignaled)
                .sge(src.addr, 3000, src.lkey)));
        settle();
        const auto s = ca->poll();
        ASSERT_TRUE(s) << "message " << m;
        EXPECT_EQ(s->wr_id, 900 + m);
        EXPECT_EQ(s->status, VIRTIO_RDMA_WC_SUCCESS);
        EXPECT_EQ(s->opcode, VIRTIO_RDMA_WC_SEND);
        const auto r = cb->poll();
        ASSERT_TRUE(r) << "message " << m;
        EXPECT_EQ(r->wr_id, 500 + m);
        EXPECT_EQ(r->opcode, VIRTIO_RDMA_WC_RECV);
        EXPECT_EQ(r->byte_len, 3000u);
        EXPECT_EQ(r->qp_num, b->wire_qpn(qb->qpn));
        EXPECT_TRUE(b->check(dst.addr, 3000, 100 + m));
        EXPECT_FALSE(ca->poll());
        EXPECT_FALSE(cb->poll());
    }
    /* The device published what it took and what it wrote. */
    EXPECT_EQ(qa->sq.trailer(*a)->device_idx, 10u);
    EXPECT_EQ(qb->rq.trailer(*b)->device_idx, 10u);
    EXPECT_EQ(ca->mem.trailer(*a)->device_idx, 10u);
    /* The CQE's owner bit of the third pass (counter 8..11) is 1 again. */
    EXPECT_EQ(reinterpret_cast<virtio_rdma_cqe *>(ca->mem.slot(*a, 9))->owner,
              1u);
    EXPECT_TRUE(a->async_events.empty());
    EXPECT_TRUE(b->async_events.empty());
}

TEST_F(Rings, BatchOfWritesOneDoorbell)
{
    up(3, 3);
    a->fill(src.addr, 8 * 1000, 7);
    for (uint32_t i = 0; i < 8; i++) {
        qa->put_send(SendWr{}.op(VIRTIO_RDMA_WR_RDMA_WRITE).id(i)
                         .flags(i == 7 ? kSignaled : 0)
                         .sge(src.addr + i * 1000, 1000, src.lkey)
                         .rdma(dst.addr + i * 1000, dst.rkey));
    }
    ASSERT_TRUE(qa->ring_sq(qa->sq_pi));
    settle();
    const auto c = ca->poll();
    ASSERT_TRUE(c);
    EXPECT_EQ(c->wr_id, 7u); /* only the signaled one */
    EXPECT_EQ(c->status, VIRTIO_RDMA_WC_SUCCESS);
    EXPECT_FALSE(ca->poll());
    EXPECT_TRUE(b->check(dst.addr, 8 * 1000, 7));
}

TEST_F(Rings, EntryCopiedOnceAtTheTurn)
{
    up();
    a->fill(src.addr, 100, 1);
    qb->post_recv(1, {{dst.addr, 4096, dst.lkey}});
    qa->post_send(SendWr{}.op(VIRTIO_RDMA_WR_SEND).id(5).flags(kSignaled)
                      .sge(src.addr, 100, src.lkey));
    rings_drain(*a);
    /* The guest scribbles the slot after the device took it: no effect. */
    std::memset(qa->sq.slot(*a, 0), 0xff, 256);
    settle();
    const auto c = ca->poll();
    ASSERT_TRUE(c);
    EXPECT_EQ(c->wr_id, 5u);
    EXPECT_EQ(c->status, VIRTIO_RDMA_WC_SUCCESS);
}

TEST_F(Rings, SgesThatDoNotFitTheEntryFail)
{
    up();
    /* A 256-byte SQ entry holds 10 SGEs; the header claims 11. */
    virtio_rdma_sq_req h{};
    h.num_sge = 11;
    h.opcode = VIRTIO_RDMA_WR_SEND;
    h.wr_id = 77;
    std::memcpy(qa->sq.slot(*a, 0), &h, sizeof(h));
    qa->sq_pi = 1;
    qa->ring_sq(1);
    settle();
    const auto c = ca->poll();
    ASSERT_TRUE(c);
    EXPECT_EQ(c->wr_id, 77u);
    EXPECT_EQ(c->status, VIRTIO_RDMA_WC_LOC_QP_OP_ERR);
}

/* ---- doorbells ---- */

TEST_F(Rings, DoorbellBeyondTheRingBreaksOnlyThatQp)
{
    up();
    qb->post_recv(1, {{dst.addr, 4096, dst.lkey}});
    /* 4 entries, nothing taken: counter 5 claims what cannot be there. */
    EXPECT_FALSE(qa->ring_sq(5));
    ASSERT_EQ(a->async_events.size(), 1u);
    EXPECT_EQ(a->async_events[0].type, VIRTIO_RDMA_EVENT_QP_FATAL);
    EXPECT_EQ(a->async_events[0].handle, qa->qpn);
    EXPECT_EQ(a->qp_state(qa->qpn), VIRTIO_RDMA_QPS_ERR);
    /* Its rings are not read again until RESET. */
    EXPECT_FALSE(qa->ring_sq(1));
    EXPECT_EQ(qa->sq.trailer(*a)->device_idx, 0u);
    /* The peer's QP is untouched; a second QP of a works. */
    EXPECT_EQ(b->qp_state(qb->qpn), VIRTIO_RDMA_QPS_RTS);
    RingQp q2(*a, 0, pd_a, VIRTIO_RDMA_QPT_RC, *ca, *ca);
    EXPECT_EQ(a->qp_state(q2.qpn), VIRTIO_RDMA_QPS_RESET);
    /* RESET starts the counters again and reading resumes. */
    ASSERT_EQ(a->to_state(qa->qpn, VIRTIO_RDMA_QPS_RESET), VIRTIO_RDMA_OK);
    qa->sq_pi = 0;
    qa->put_send(SendWr{}.op(VIRTIO_RDMA_WR_SEND).id(3).flags(kSignaled));
    EXPECT_TRUE(qa->ring_sq(1));
    rings_drain(*a);
    EXPECT_EQ(qa->sq.trailer(*a)->device_idx, 1u);
    const auto c = ca->poll(); /* RESET: completes at once */
    ASSERT_TRUE(c);
    EXPECT_EQ(c->wr_id, 3u);
    EXPECT_EQ(c->status, VIRTIO_RDMA_WC_LOC_QP_OP_ERR);
}

TEST_F(Rings, DoorbellOfAnotherContextIsIgnored)
{
    const uint32_t ctx = alloc_context(*a);
    ASSERT_EQ(ctx, 1u);
    up();
    qa->put_send(SendWr{}.op(VIRTIO_RDMA_WR_SEND).id(1).flags(kSignaled));
    const size_t errors = a->errors.size();
    /* Context 1's page names the kernel's QP: nothing happens. */
    EXPECT_FALSE(vrdma_core_doorbell(
        a->core, ctx, VIRTIO_RDMA_DB(VIRTIO_RDMA_DB_SQ, qa->qpn, 1)));
    EXPECT_FALSE(vrdma_core_doorbell(
        a->core, ctx, VIRTIO_RDMA_DB(VIRTIO_RDMA_DB_CQ_ARM, ca->cqn, 2)));
    EXPECT_EQ(a->errors.size(), errors + 2);
    EXPECT_EQ(a->errors.back().field, "doorbell.cqn");
    rings_drain(*a);
    EXPECT_EQ(qa->sq.trailer(*a)->device_idx, 0u);
    EXPECT_EQ(vrdma_core_cq_armed(a->core, ca->cqn), 0u);
    EXPECT_TRUE(a->async_events.empty());
    /* Its own page works. */
    EXPECT_TRUE(qa->ring_sq(1));
}

TEST_F(Rings, DoorbellForNoQueueIsIgnored)
{
    up();
    const uint32_t gone = qa->qpn;
    ASSERT_EQ(a->destroy_qp(gone), VIRTIO_RDMA_OK);
    const uint64_t bad[] = {
        VIRTIO_RDMA_DB(VIRTIO_RDMA_DB_SQ, gone, 1),        /* destroyed */
        VIRTIO_RDMA_DB(VIRTIO_RDMA_DB_RQ, 0xffffff, 1),    /* none */
        VIRTIO_RDMA_DB(VIRTIO_RDMA_DB_CQ_ARM, 999, 2),     /* none */
        VIRTIO_RDMA_DB(VIRTIO_RDMA_DB_CQ_ARM, ca->cqn, 0), /* no flags */
        VIRTIO_RDMA_DB(VIRTIO_RDMA_DB_CQ_ARM, ca->cqn, 4), /* unknown flag */
        VIRTIO_RDMA_DB(2, qb->qpn, 1),                     /* SRQ: not yet */
        VIRTIO_RDMA_DB(0x7f, 0, 0),
    };
    for (uint64_t v : bad) {
        const size_t errors = a->errors.size();
        EXPECT_FALSE(vrdma_core_doorbell(a->core, 0, v)) << std::hex << v;
        EXPECT_EQ(a->errors.size(), errors + 1) << std::hex << v;
    }
    EXPECT_FALSE(vrdma_core_rings_turn(a->core));
    EXPECT_TRUE(a->async_events.empty());
}

TEST_F(Rings, DestroyWhileScheduledTakesNothingMore)
{
    up();
    qa->put_send(SendWr{}.op(VIRTIO_RDMA_WR_SEND).id(1));
    ASSERT_TRUE(qa->ring_sq(1));
    ASSERT_EQ(a->destroy_qp(qa->qpn), VIRTIO_RDMA_OK);
    EXPECT_FALSE(vrdma_core_rings_turn(a->core));
    EXPECT_EQ(qa->sq.trailer(*a)->device_idx, 0u);
}

TEST_F(Rings, TurnIsBoundedAndFair)
{
    /*
     * 14 QPs x 128 receives announced: 1792 > one turn's 1024.  The QPs
     * are in ERR, where a receive completes (flushed) as it is taken and
     * so never fills the window: each visit takes the quantum, 64.
     */
    ca = std::make_unique<RingCq>(*a, 0, 256, 13);
    std::vector<std::unique_ptr<RingQp>> qps;
    for (int i = 0; i < 14; i++) {
        qps.push_back(std::make_unique<RingQp>(*a, 0, pd_a, VIRTIO_RDMA_QPT_RC,
                                               *ca, *ca, 7));
        virtio_rdma_qp_attr err{};
        err.qp_state = VIRTIO_RDMA_QPS_ERR;
        ASSERT_EQ(a->modify(qps.back()->qpn, VIRTIO_RDMA_QP_STATE, err),
                  VIRTIO_RDMA_OK);
        RingQp &q = *qps.back();
        for (int j = 0; j < 128; j++) {
            q.put_recv(j, {});
        }
        EXPECT_TRUE(q.ring_rq(128));
    }
    EXPECT_TRUE(vrdma_core_rings_turn(a->core));
    /* 64 per visit, in the order they rang: all once, the first two twice. */
    for (size_t i = 0; i < qps.size(); i++) {
        EXPECT_EQ(qps[i]->rq.trailer(*a)->device_idx, i < 2 ? 128u : 64u) << i;
    }
    EXPECT_FALSE(vrdma_core_rings_turn(a->core)); /* the other 768 */
    for (auto &q : qps) {
        EXPECT_EQ(q->rq.trailer(*a)->device_idx, 128u);
    }
}

/* ---- CQ rings ---- */

TEST_F(Rings, FullCqIsAnOverrunAndCqError)
{
    up(2, 1); /* a 2-entry CQ on each side */
    for (uint32_t i = 0; i < 3; i++) {
        qa->put_send(SendWr{}.op(VIRTIO_RDMA_WR_RDMA_WRITE).id(i)
                         .flags(kSignaled).sge(src.addr, 8, src.lkey)
                         .rdma(dst.addr, dst.rkey));
    }
    qa->ring_sq(3);
    settle();
    /* Two fit; the third is lost, its QP in ERR, one CQ_ERR event. */
    EXPECT_EQ(a->stats().cq_overruns, 1u);
    ASSERT_FALSE(a->async_events.empty());
    EXPECT_EQ(a->async_events[0].type, VIRTIO_RDMA_EVENT_CQ_ERR);
    EXPECT_EQ(a->async_events[0].handle, ca->cqn);
    EXPECT_EQ(a->qp_state(qa->qpn), VIRTIO_RDMA_QPS_ERR);
    ASSERT_TRUE(ca->poll());
    ASSERT_TRUE(ca->poll());
    EXPECT_FALSE(ca->poll());
}

TEST_F(Rings, CqWithNonsenseDriverIndexBreaks)
{
    up();
    ca->mem.trailer(*a)->driver_idx = 1000; /* consumed what was never made */
    qa->post_send(SendWr{}.op(VIRTIO_RDMA_WR_RDMA_WRITE).id(1).flags(kSignaled)
                      .sge(src.addr, 8, src.lkey).rdma(dst.addr, dst.rkey));
    settle();
    EXPECT_FALSE(ca->poll());
    ASSERT_FALSE(a->async_events.empty());
    EXPECT_EQ(a->async_events[0].type, VIRTIO_RDMA_EVENT_CQ_ERR);
    EXPECT_EQ(a->errors.back().field, "ring.driver_idx");
    /* Broken for good: a sane index later does not bring it back. */
    ca->mem.trailer(*a)->driver_idx = 0;
    ASSERT_EQ(a->to_state(qa->qpn, VIRTIO_RDMA_QPS_RESET), VIRTIO_RDMA_OK);
    qa->sq_pi = 0;
    qa->post_send(SendWr{}.op(VIRTIO_RDMA_WR_SEND).id(2).flags(kSignaled));
    rings_drain(*a);
    EXPECT_FALSE(ca->poll());
    /* The peer keeps its CQ. */
    EXPECT_TRUE(b->async_events.empty());
}

TEST_F(Rings, ArmByDoorbellFiresOnce)
{
    up();
    ca->arm(VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION);
    EXPECT_EQ(vrdma_core_cq_armed(a->core, ca->cqn),
              VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION);
    for (uint32_t i = 0; i < 2; i++) {
        qa->post_send(SendWr{}.op(VIRTIO_RDMA_WR_RDMA_WRITE).id(i)
                          .flags(kSignaled).sge(src.addr, 8, src.lkey)
                          .rdma(dst.addr, dst.rkey));
        settle();
    }
    EXPECT_EQ(a->notifies[ca->cqn], 1u);
    EXPECT_EQ(vrdma_core_cq_armed(a->core, ca->cqn), 0u);
}

/* ---- memory going away ---- */

TEST_F(Rings, RingMemoryGoneBreaksItsQueueOnly)
{
    up();
    const uint8_t *host = qa->sq.slot(*a, 0);
    vrdma_core_invalidate_host_range(a->core, host, 4096);
    ASSERT_EQ(a->async_events.size(), 1u);
    EXPECT_EQ(a->async_events[0].type, VIRTIO_RDMA_EVENT_QP_FATAL);
    EXPECT_EQ(a->qp_state(qa->qpn), VIRTIO_RDMA_QPS_ERR);
    EXPECT_FALSE(qa->ring_sq(1)); /* nothing mapped, nothing read */

    const uint8_t *cq_host = cb->mem.slot(*b, 0);
    vrdma_core_invalidate_host_range(b->core, cq_host, 64);
    ASSERT_EQ(b->async_events.size(), 1u);
    EXPECT_EQ(b->async_events[0].type, VIRTIO_RDMA_EVENT_CQ_ERR);
    EXPECT_EQ(b->async_events[0].handle, cb->cqn);
}

/* ---- commands ---- */

TEST_F(Rings, CreateCqRingChecks)
{
    const uint64_t maps = a->guest.live_maps(); /* cq_a's ring */
    const RingMem m = RingMem::make(*a, 2, 6);
    auto req = [&](auto f) {
        virtio_rdma_cmd_create_cq_ring r{.ctx = 0, .cqe = 4, .ring = m.desc};
        f(r);
        return r;
    };
    struct Case {
        std::function<void(virtio_rdma_cmd_create_cq_ring &)> f;
        uint8_t status;
        const char *field;
    };
    const Case cases[] = {
        {[](auto &r) { r.ctx = 3; }, VIRTIO_RDMA_ENOENT, "ctx"},
        {[](auto &r) { r.cqe = 0; }, VIRTIO_RDMA_ERANGE, "cqe"},
        {[](auto &r) { r.cqe = 5; }, VIRTIO_RDMA_ERANGE, "ring.log_entries"},
        {[](auto &r) { r.ring.log_stride = 7; }, VIRTIO_RDMA_ERANGE,
         "ring.log_stride"},
        {[](auto &r) { r.ring.log_entries = 17; }, VIRTIO_RDMA_ERANGE,
         "ring.log_entries"},
        {[](auto &r) { r.ring.reserved = 1; }, VIRTIO_RDMA_EINVAL,
         "ring.reserved"},
        {[](auto &r) { r.ring.npages = 2; }, VIRTIO_RDMA_EINVAL,
         "ring.npages"},
        {[](auto &r) { r.ring.pages = 0x7000000000ull; }, VIRTIO_RDMA_EFAULT,
         "ring.pages"},
        {[](auto &r) { r.ring.pages += 8; }, VIRTIO_RDMA_EINVAL, "ring.pages"},
    };
    for (const Case &c : cases) {
        const size_t errors = a->errors.size();
        EXPECT_EQ(cq_ring_cmd(req(c.f)), c.status) << c.field;
        ASSERT_EQ(a->errors.size(), errors + 1) << c.field;
        EXPECT_EQ(a->errors.back().field, c.field);
    }
    EXPECT_EQ(a->guest.live_maps(), maps) << "a refusal left pages mapped";
    EXPECT_EQ(cq_ring_cmd(req([](auto &) {})), VIRTIO_RDMA_OK);
}

TEST_F(Rings, CqRingDepthIsTheRingsNotTheQueueSize)
{
    /* queue_size is 256 here; a CQ ring of 32767 is rxe's depth. */
    virtio_rdma_config cfg{};
    vrdma_core_get_config(a->core, &cfg);
    const uint32_t max_ring_cqe = cfg.max_ring_cqe; /* packed: no reference */
    EXPECT_EQ(max_ring_cqe, VIRTIO_RDMA_RING_MAX_CQE);
    RingCq deep(*a, 0, 32767, 15);
    EXPECT_NE(deep.cqn, UINT32_MAX);
    /* Refused before its ring is looked at. */
    const RingMem m = RingMem::make(*a, 2, 6);
    EXPECT_EQ(cq_ring_cmd({.ctx = 0, .cqe = 65536, .ring = m.desc}),
              VIRTIO_RDMA_ERANGE);
    EXPECT_EQ(a->errors.back().field, "cqe");
    /* A host's lower bound holds. */
    VrdmaLimits lim = dp_limits();
    lim.max_ring_cqe = 100;
    Node c(nullptr, 2, lim);
    c.set_features(kRingFeatures);
    const RingMem m2 = RingMem::make(c, 7, 6);
    virtio_rdma_rsp_create_cq rsp{};
    EXPECT_EQ(c.ctrl(VIRTIO_RDMA_CMD_CREATE_CQ_RING,
                     virtio_rdma_cmd_create_cq_ring{.ctx = 0, .cqe = 101,
                                                    .ring = m2.desc},
                     &rsp),
              VIRTIO_RDMA_ERANGE);
}

TEST_F(Rings, CreateQpRingChecks)
{
    const uint32_t ctx = alloc_context(*a);
    RingCq kernel_cq(*a, 0, 4, 2);
    RingCq user_cq(*a, ctx, 4, 2);
    const RingMem sq = RingMem::make(*a, 2, 8), rq = RingMem::make(*a, 2, 7);
    auto run = [&](auto f) {
        virtio_rdma_cmd_create_qp_ring r{};
        r.qp.pdn = pd_a;
        r.qp.qp_type = VIRTIO_RDMA_QPT_RC;
        r.qp.max_send_wr = r.qp.max_recv_wr = 4;
        r.qp.max_send_sge = r.qp.max_recv_sge = 4;
        r.qp.send_cqn = r.qp.recv_cqn = user_cq.cqn;
        r.ctx = ctx;
        r.sq = sq.desc;
        r.rq = rq.desc;
        f(r);
        virtio_rdma_rsp_create_qp_wire rsp{};
        return a->ctrl(VIRTIO_RDMA_CMD_CREATE_QP_RING, r, &rsp);
    };
    struct Case {
        std::function<void(virtio_rdma_cmd_create_qp_ring &)> f;
        uint8_t status;
        const char *field;
    };
    const Case cases[] = {
        {[](auto &r) { r.qp.max_inline_data = 1; }, VIRTIO_RDMA_ERANGE,
         "max_inline_data"},
        {[](auto &r) { r.ctx = 5; }, VIRTIO_RDMA_ENOENT, "ctx"},
        {[&](auto &r) { r.qp.send_cqn = kernel_cq.cqn; }, VIRTIO_RDMA_EINVAL,
         "qp.send_cqn"},
        {[&](auto &r) { r.qp.recv_cqn = cq_a; }, VIRTIO_RDMA_EINVAL,
         "qp.recv_cqn"}, /* the kernel's too */
        {[](auto &r) { r.srqn = 1; }, VIRTIO_RDMA_ENOENT, "srqn"}, /* none */
        {[](auto &r) { r.flags = 1; }, VIRTIO_RDMA_EOPNOTSUPP, "flags"},
        {[](auto &r) { r.qp.max_send_wr = 5; }, VIRTIO_RDMA_ERANGE,
         "sq.log_entries"},
        {[](auto &r) { r.sq.log_stride = 7; }, VIRTIO_RDMA_ERANGE,
         "sq.log_stride"}, /* 88 + 4 SGEs > 128 */
        {[](auto &r) { r.rq.log_stride = 6; }, VIRTIO_RDMA_ERANGE,
         "rq.log_stride"}, /* 16 + 4 SGEs > 64 */
        {[](auto &r) { r.qp.max_recv_wr = 0; }, VIRTIO_RDMA_EINVAL,
         "rq.npages"}, /* no receive queue: no ring */
        {[](auto &r) { r.rq.npages = 2; }, VIRTIO_RDMA_EINVAL, "rq.npages"},
        {[](auto &r) { r.sq.pages = 0x7000000000ull; }, VIRTIO_RDMA_EFAULT,
         "sq.pages"},
    };
    for (const Case &c : cases) {
        const size_t errors = a->errors.size();
        EXPECT_EQ(run(c.f), c.status) << c.field;
        ASSERT_EQ(a->errors.size(), errors + 1) << c.field;
        EXPECT_EQ(a->errors.back().field, c.field);
    }
    EXPECT_EQ(run([](auto &) {}), VIRTIO_RDMA_OK);
    EXPECT_EQ(run([](auto &r) {
                  r.qp.max_recv_wr = 0;
                  r.rq = virtio_rdma_ring{};
              }),
              VIRTIO_RDMA_OK);
}

TEST_F(Rings, ContextsAndTheirObjects)
{
    std::vector<uint32_t> got;
    for (uint32_t i = 0; i < 8; i++) { /* dp_limits: max_ctx 8 */
        got.push_back(alloc_context(*a));
        EXPECT_EQ(got.back(), i + 1);
    }
    uint8_t buf[VRDMA_CTRL_RSP_MAX];
    EXPECT_EQ(a->ctrl_raw(VIRTIO_RDMA_CMD_ALLOC_CONTEXT, buf, 0, buf,
                          sizeof(buf)),
              VIRTIO_RDMA_ENOMEM);
    RingCq cq(*a, 3, 4, 2);
    const auto free_ctx = [&](uint32_t ctx) {
        return a->ctrl(VIRTIO_RDMA_CMD_FREE_CONTEXT,
                       virtio_rdma_cmd_free_context{.ctx = ctx});
    };
    EXPECT_EQ(free_ctx(3), VIRTIO_RDMA_EBUSY);
    EXPECT_EQ(free_ctx(0), VIRTIO_RDMA_ENOENT); /* the kernel's */
    EXPECT_EQ(free_ctx(9), VIRTIO_RDMA_ENOENT);
    EXPECT_EQ(a->ctrl(VIRTIO_RDMA_CMD_DESTROY_CQ,
                      virtio_rdma_cmd_destroy_cq{.cqn = cq.cqn}),
              VIRTIO_RDMA_OK);
    EXPECT_EQ(free_ctx(3), VIRTIO_RDMA_OK);
    EXPECT_EQ(free_ctx(3), VIRTIO_RDMA_ENOENT);
    EXPECT_EQ(alloc_context(*a), 3u);
    /* Reset frees every user context. */
    a->reset();
    EXPECT_EQ(alloc_context(*a), 1u);
}

/*
 * Version 1's REQ_NOTIFY_CQ is refused (a CQ is armed by its doorbell);
 * before the features are negotiated, the ring commands and doorbells are
 * refused.
 */
TEST_F(Rings, RingsAndTheirCommandsNeedTheFeature)
{
    virtio_rdma_rsp_create_cq rsp{};
    const uint32_t req_notify[2] = {cq_a, 2}; /* cqn, flags */
    EXPECT_EQ(a->ctrl(VIRTIO_RDMA_CMD_REQ_NOTIFY_CQ, req_notify),
              VIRTIO_RDMA_EOPNOTSUPP);

    b->set_features(1ull << VIRTIO_RDMA_F_WIRE_QPN |
                    1ull << VIRTIO_RDMA_F_EVENT_QUEUE);
    const RingMem m = RingMem::make(*b, 2, 6);
    EXPECT_EQ(b->ctrl(VIRTIO_RDMA_CMD_CREATE_CQ_RING,
                      virtio_rdma_cmd_create_cq_ring{.ctx = 0, .cqe = 4,
                                                     .ring = m.desc},
                      &rsp),
              VIRTIO_RDMA_EOPNOTSUPP);
    uint8_t buf[VRDMA_CTRL_RSP_MAX];
    EXPECT_EQ(b->ctrl_raw(VIRTIO_RDMA_CMD_ALLOC_CONTEXT, buf, 0, buf,
                          sizeof(buf)),
              VIRTIO_RDMA_EOPNOTSUPP);
    EXPECT_FALSE(vrdma_core_doorbell(b->core, 0,
                                     VIRTIO_RDMA_DB(VIRTIO_RDMA_DB_SQ, 2, 1)));
}

} // namespace
} // namespace vrdma_test

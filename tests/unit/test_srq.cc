/*
 * Shared receive queues (VIRTIO_RDMA_F_RINGS): CREATE_SRQ_RING's checks,
 * MODIFY/QUERY/DESTROY_SRQ, QPs receiving from an SRQ, entries taken by
 * need in ring order, the limit event, and an SRQ broken by its doorbell
 * or a malformed entry without harm to anyone else.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <functional>

#include "core.h"
#include "ring_fixture.h"

namespace vrdma_test {
namespace {

class Srq : public RingPair {
protected:
    /*
     * Two RC QPs on b receiving from one SRQ of 2^@log_srq entries, each
     * connected to its own QP on a; CQs of 64.
     */
    void up_srq(uint8_t log_srq = 3, uint32_t limit = 0,
                const Conn &conn = Conn{}, uint32_t srq_pd = 0)
    {
        ca = std::make_unique<RingCq>(*a, 0, 64, 6);
        cb = std::make_unique<RingCq>(*b, 0, 64, 6);
        srq = std::make_unique<RingSrq>(*b, 0, srq_pd ? srq_pd : pd_b,
                                        log_srq, 4, limit);
        for (int i = 0; i < 2; i++) {
            qa_[i] = std::make_unique<RingQp>(*a, 0, pd_a, VIRTIO_RDMA_QPT_RC,
                                              *ca, *ca);
            qb_[i] = std::make_unique<RingQp>(*b, 0, pd_b, VIRTIO_RDMA_QPT_RC,
                                              *cb, *cb, 3, 4, srq.get());
            connect_pair(*a, qa_[i]->qpn, *b, qb_[i]->qpn, VIRTIO_RDMA_QPT_RC,
                         conn, true);
            connect_pair(*b, qb_[i]->qpn, *a, qa_[i]->qpn, VIRTIO_RDMA_QPT_RC,
                         conn, false);
        }
        src = buffer(*a, pd_a, 1 << 16);
        dst = buffer(*b, pd_b, 1 << 16);
    }

    void send(int i, uint64_t wr_id, uint32_t len = 64)
    {
        ASSERT_TRUE(qa_[i]->post_send(SendWr{}
                                          .op(VIRTIO_RDMA_WR_SEND)
                                          .id(wr_id)
                                          .flags(kSignaled)
                                          .sge(src.addr, len, src.lkey)));
        settle();
    }

    /* A receive of 4 KiB at slot @slot (of 16) of dst. */
    void post(uint64_t wr_id, uint32_t slot = 0)
    {
        srq->post(wr_id, {{dst.addr + slot * 4096, 4096, dst.lkey}});
    }

    /* An RNR NAK is retried once: the sender gives up, the wire idles. */
    static Conn one_rnr_retry()
    {
        Conn c;
        c.rnr_retry = 1;
        return c;
    }

    std::vector<virtio_rdma_cq_req> drain(RingCq &cq)
    {
        std::vector<virtio_rdma_cq_req> got;
        while (auto c = cq.poll()) {
            got.push_back(*c);
        }
        return got;
    }

    const vrdma::Srq &core_srq() { return *b->core->srqs.at(srq->srqn); }

    unsigned events(Node &n, uint32_t type)
    {
        unsigned k = 0;
        for (const auto &e : n.async_events) {
            k += e.type == type && e.handle == srq->srqn;
        }
        return k;
    }

    uint8_t create(const virtio_rdma_cmd_create_srq_ring &r)
    {
        virtio_rdma_rsp_create_srq rsp{};
        return b->ctrl(VIRTIO_RDMA_CMD_CREATE_SRQ_RING, r, &rsp);
    }

    std::unique_ptr<RingSrq> srq;
    std::unique_ptr<RingQp> qa_[2], qb_[2];
};

TEST_F(Srq, CreateChecks)
{
    const RingMem m = RingMem::make(*b, 3, 7);
    const virtio_rdma_cmd_create_srq_ring ok{.ctx = 0,
                                             .pdn = pd_b,
                                             .max_wr = 8,
                                             .max_sge = 4,
                                             .srq_limit = 0,
                                             .reserved = 0,
                                             .ring = m.desc};
    struct Case {
        std::function<void(virtio_rdma_cmd_create_srq_ring &)> f;
        uint8_t status;
        const char *what;
    };
    const Case cases[] = {
        {[](auto &r) { r.ctx = 3; }, VIRTIO_RDMA_ENOENT, "ctx"},
        {[](auto &r) { r.pdn ^= 0x10000; }, VIRTIO_RDMA_ENOENT, "pdn (stale)"},
        {[](auto &r) { r.reserved = 1; }, VIRTIO_RDMA_EINVAL, "reserved"},
        {[](auto &r) { r.max_wr = 0; }, VIRTIO_RDMA_ERANGE, "max_wr 0"},
        {[](auto &r) { r.max_wr = VIRTIO_RDMA_RING_MAX_SRQ_WR + 1; },
         VIRTIO_RDMA_ERANGE, "max_wr"},
        {[](auto &r) { r.max_sge = 0; }, VIRTIO_RDMA_ERANGE, "max_sge 0"},
        {[](auto &r) { r.max_sge = 5; }, VIRTIO_RDMA_ERANGE,
         "max_sge > the device's"},
        {[](auto &r) { r.srq_limit = 9; }, VIRTIO_RDMA_EINVAL, "srq_limit"},
        {[](auto &r) { r.max_wr = 9; }, VIRTIO_RDMA_ERANGE,
         "ring.log_entries (fewer entries than max_wr)"},
        {[](auto &r) { r.ring.log_stride = 6; }, VIRTIO_RDMA_ERANGE,
         "ring.log_stride (4 SGEs need 80 bytes)"},
        {[](auto &r) { r.ring.npages++; }, VIRTIO_RDMA_EINVAL, "ring.npages"},
        {[](auto &r) { r.ring.reserved = 1; }, VIRTIO_RDMA_EINVAL,
         "ring.reserved"},
    };
    for (const Case &k : cases) {
        virtio_rdma_cmd_create_srq_ring r = ok;
        k.f(r);
        EXPECT_EQ(create(r), k.status) << k.what;
    }
    EXPECT_EQ(b->core->srqs.live(), 0u) << "a refusal leaves nothing";

    /* Numbers 1..max_srq, then ENOMEM. */
    const uint32_t max_srq = dp_limits().max_srq;
    for (uint32_t i = 1; i <= max_srq; i++) {
        virtio_rdma_rsp_create_srq rsp{};
        const RingMem mi = RingMem::make(*b, 3, 7);
        virtio_rdma_cmd_create_srq_ring r = ok;
        r.ring = mi.desc;
        ASSERT_EQ(b->ctrl(VIRTIO_RDMA_CMD_CREATE_SRQ_RING, r, &rsp),
                  VIRTIO_RDMA_OK);
        EXPECT_GE(rsp.srqn, 1u);
        EXPECT_LE(rsp.srqn, max_srq);
    }
    EXPECT_EQ(create(ok), VIRTIO_RDMA_ENOMEM);
}

TEST_F(Srq, OnlyWithRings)
{
    b->set_features(1ull << VIRTIO_RDMA_F_EVENT_QUEUE);
    const RingMem m = RingMem::make(*b, 3, 7);
    EXPECT_EQ(create({.ctx = 0, .pdn = pd_b, .max_wr = 8, .max_sge = 4,
                      .srq_limit = 0, .reserved = 0, .ring = m.desc}),
              VIRTIO_RDMA_EOPNOTSUPP);
    EXPECT_EQ(b->ctrl(VIRTIO_RDMA_CMD_QUERY_SRQ,
                      virtio_rdma_cmd_query_srq{.srqn = 1}),
              VIRTIO_RDMA_EOPNOTSUPP);
}

TEST_F(Srq, ModifyQueryDestroy)
{
    up_srq();
    virtio_rdma_rsp_query_srq q{};
    ASSERT_EQ(b->ctrl(VIRTIO_RDMA_CMD_QUERY_SRQ,
                      virtio_rdma_cmd_query_srq{.srqn = srq->srqn}, &q),
              VIRTIO_RDMA_OK);
    EXPECT_EQ(q.max_wr, 8u);
    EXPECT_EQ(q.max_sge, 4u);
    EXPECT_EQ(q.srq_limit, 0u);

    auto modify = [&](uint32_t mask, uint32_t limit) {
        return b->ctrl(VIRTIO_RDMA_CMD_MODIFY_SRQ,
                       virtio_rdma_cmd_modify_srq{.srqn = srq->srqn,
                                                  .attr_mask = mask,
                                                  .max_wr = 16,
                                                  .srq_limit = limit});
    };
    EXPECT_EQ(modify(VIRTIO_RDMA_SRQ_MAX_WR, 0), VIRTIO_RDMA_EOPNOTSUPP);
    EXPECT_EQ(modify(4, 0), VIRTIO_RDMA_EINVAL);
    EXPECT_EQ(modify(VIRTIO_RDMA_SRQ_LIMIT, 9), VIRTIO_RDMA_EINVAL);
    EXPECT_EQ(modify(VIRTIO_RDMA_SRQ_LIMIT, 5), VIRTIO_RDMA_OK);
    ASSERT_EQ(b->ctrl(VIRTIO_RDMA_CMD_QUERY_SRQ,
                      virtio_rdma_cmd_query_srq{.srqn = srq->srqn}, &q),
              VIRTIO_RDMA_OK);
    EXPECT_EQ(q.srq_limit, 5u);
    EXPECT_EQ(b->ctrl(VIRTIO_RDMA_CMD_QUERY_SRQ,
                      virtio_rdma_cmd_query_srq{.srqn = 0}),
              VIRTIO_RDMA_ENOENT);
    EXPECT_EQ(b->ctrl(VIRTIO_RDMA_CMD_MODIFY_SRQ,
                      virtio_rdma_cmd_modify_srq{.srqn = 7,
                                                 .attr_mask = 0,
                                                 .max_wr = 0,
                                                 .srq_limit = 0}),
              VIRTIO_RDMA_ENOENT);

    /* In use while a QP receives from it; the PD too. */
    const virtio_rdma_cmd_destroy_srq d{.srqn = srq->srqn};
    EXPECT_EQ(b->ctrl(VIRTIO_RDMA_CMD_DESTROY_SRQ, d), VIRTIO_RDMA_EBUSY);
    for (auto &q : qb_) {
        ASSERT_EQ(b->destroy_qp(q->qpn), VIRTIO_RDMA_OK);
    }
    EXPECT_EQ(b->ctrl(VIRTIO_RDMA_CMD_DESTROY_SRQ, d), VIRTIO_RDMA_OK);
    EXPECT_EQ(b->ctrl(VIRTIO_RDMA_CMD_DESTROY_SRQ, d), VIRTIO_RDMA_ENOENT);
    EXPECT_EQ(b->core->srqs.live(), 0u);
}

TEST_F(Srq, QpChecks)
{
    ca = std::make_unique<RingCq>(*b, 0, 4, 2);
    srq = std::make_unique<RingSrq>(*b, 0, pd_b);
    const uint32_t ctx = alloc_context(*b);
    RingCq ucq(*b, ctx, 4, 2);
    RingSrq usrq(*b, ctx, pd_b);
    const RingMem sq = RingMem::make(*b, 2, 8);
    const RingMem rq = RingMem::make(*b, 2, 7);
    virtio_rdma_cmd_create_qp_ring ok{};
    ok.qp.pdn = pd_b;
    ok.qp.qp_type = VIRTIO_RDMA_QPT_RC;
    ok.qp.max_send_wr = 4;
    ok.qp.max_send_sge = 1;
    ok.qp.send_cqn = ca->cqn;
    ok.qp.recv_cqn = ca->cqn;
    ok.sq = sq.desc;
    ok.srqn = srq->srqn;
    struct Case {
        std::function<void(virtio_rdma_cmd_create_qp_ring &)> f;
        uint8_t status;
        const char *what;
    };
    const Case cases[] = {
        {[&](auto &r) { r.srqn = usrq.srqn + 1; }, VIRTIO_RDMA_ENOENT,
         "srqn (none)"},
        {[&](auto &r) { r.srqn = usrq.srqn; }, VIRTIO_RDMA_EINVAL,
         "srqn (another context's)"},
        {[](auto &r) { r.qp.max_recv_wr = 4; }, VIRTIO_RDMA_EINVAL,
         "max_recv_wr with an SRQ"},
        {[](auto &r) { r.qp.max_recv_sge = 1; }, VIRTIO_RDMA_EINVAL,
         "max_recv_sge with an SRQ"},
        {[&](auto &r) { r.rq = rq.desc; }, VIRTIO_RDMA_EINVAL,
         "an rq ring with an SRQ"},
        {[](auto &r) { r.qp.qp_type = VIRTIO_RDMA_QPT_GSI; },
         VIRTIO_RDMA_EINVAL, "GSI on an SRQ"},
    };
    virtio_rdma_rsp_create_qp_wire rsp{};
    for (const Case &k : cases) {
        virtio_rdma_cmd_create_qp_ring r = ok;
        k.f(r);
        EXPECT_EQ(b->ctrl(VIRTIO_RDMA_CMD_CREATE_QP_RING, r, &rsp), k.status)
            << k.what;
    }
    EXPECT_EQ(core_srq().refs, 0u);
    ASSERT_EQ(b->ctrl(VIRTIO_RDMA_CMD_CREATE_QP_RING, ok, &rsp),
              VIRTIO_RDMA_OK);
    EXPECT_EQ(core_srq().refs, 1u);
    EXPECT_EQ(b->core->qps.at(rsp.qpn)->srqn, srq->srqn);

    /* A context that owns an SRQ is not freed. */
    EXPECT_EQ(b->ctrl(VIRTIO_RDMA_CMD_DESTROY_CQ,
                      virtio_rdma_cmd_destroy_cq{.cqn = ucq.cqn}),
              VIRTIO_RDMA_OK);
    EXPECT_EQ(b->ctrl(VIRTIO_RDMA_CMD_FREE_CONTEXT,
                      virtio_rdma_cmd_free_context{.ctx = ctx}),
              VIRTIO_RDMA_EBUSY);
    ASSERT_EQ(b->ctrl(VIRTIO_RDMA_CMD_DESTROY_SRQ,
                      virtio_rdma_cmd_destroy_srq{.srqn = usrq.srqn}),
              VIRTIO_RDMA_OK);
    EXPECT_EQ(b->ctrl(VIRTIO_RDMA_CMD_FREE_CONTEXT,
                      virtio_rdma_cmd_free_context{.ctx = ctx}),
              VIRTIO_RDMA_OK);
}

TEST_F(Srq, QpsTakeEntriesByNeedInRingOrder)
{
    up_srq(2); /* 4 entries: the ring wraps */
    for (uint32_t i = 0; i < 4; i++) {
        post(100 + i, i);
    }
    rings_drain(*b);
    EXPECT_EQ(srq->device_idx(), 0u) << "nothing taken before a message";

    /* Twelve messages, alternating QPs, the SRQ refilled as it drains. */
    std::vector<virtio_rdma_cq_req> got;
    for (uint32_t m = 0; m < 12; m++) {
        a->fill(src.addr, 64, m);
        send(m % 2, m);
        EXPECT_EQ(srq->device_idx(), m + 1) << "one entry per message";
        for (const auto &c : drain(*cb)) {
            got.push_back(c);
        }
        post(104 + m, m % 4);
    }
    ASSERT_EQ(got.size(), 12u);
    for (uint32_t m = 0; m < 12; m++) {
        EXPECT_EQ(got[m].status, VIRTIO_RDMA_WC_SUCCESS) << m;
        EXPECT_EQ(got[m].opcode, VIRTIO_RDMA_WC_RECV);
        EXPECT_EQ(got[m].wr_id, 100 + m) << "ring order";
        EXPECT_EQ(got[m].qp_num, b->wire_qpn(qb_[m % 2]->qpn))
            << "completes as the QP that took it";
        EXPECT_EQ(got[m].byte_len, 64u);
    }
    EXPECT_TRUE(b->check(dst.addr + 3 * 4096, 64, 11));
    EXPECT_EQ(b->stats().rnr_naks_sent, 0u);
    EXPECT_TRUE(b->async_events.empty());
    EXPECT_EQ(drain(*ca).size(), 12u);
}

TEST_F(Srq, EmptySrqRnrNaksUntilPosted)
{
    up_srq();
    ASSERT_TRUE(qa_[0]->post_send(SendWr{}.op(VIRTIO_RDMA_WR_SEND).id(1)
                                      .flags(kSignaled)
                                      .sge(src.addr, 64, src.lkey)));
    rings_drain(*a);
    ASSERT_TRUE(wire.pump_until([&] { return b->stats().rnr_naks_sent > 0; }));
    EXPECT_TRUE(drain(*cb).empty());
    EXPECT_EQ(srq->device_idx(), 0u);
    post(7);
    std::vector<virtio_rdma_cq_req> got;
    ASSERT_TRUE(wire.pump_until([&] {
        for (const auto &c : drain(*cb)) {
            got.push_back(c);
        }
        return !got.empty();
    }));
    EXPECT_EQ(got[0].wr_id, 7u);
    EXPECT_EQ(got[0].status, VIRTIO_RDMA_WC_SUCCESS);
    EXPECT_EQ(srq->device_idx(), 1u);
}

TEST_F(Srq, LimitFiresOnceBelowIt)
{
    up_srq(4, 0);
    for (uint32_t i = 0; i < 10; i++) {
        post(i, i);
    }
    ASSERT_EQ(b->ctrl(VIRTIO_RDMA_CMD_MODIFY_SRQ,
                      virtio_rdma_cmd_modify_srq{.srqn = srq->srqn,
                                                 .attr_mask =
                                                     VIRTIO_RDMA_SRQ_LIMIT,
                                                 .max_wr = 0,
                                                 .srq_limit = 7}),
              VIRTIO_RDMA_OK);
    for (int m = 0; m < 3; m++) {
        send(m % 2, m);
    }
    EXPECT_EQ(events(*b, VIRTIO_RDMA_EVENT_SRQ_LIMIT), 0u) << "7 left";
    send(1, 3);
    EXPECT_EQ(events(*b, VIRTIO_RDMA_EVENT_SRQ_LIMIT), 1u) << "6 left";
    EXPECT_EQ(core_srq().limit, 0u) << "disarmed";
    send(0, 4);
    EXPECT_EQ(events(*b, VIRTIO_RDMA_EVENT_SRQ_LIMIT), 1u) << "once";
    EXPECT_EQ(drain(*cb).size(), 5u);
}

TEST_F(Srq, DoorbellBeyondTheRingBreaksOnlyTheSrq)
{
    up_srq(2, 0, one_rnr_retry());
    post(1);
    EXPECT_FALSE(srq->ring(srq->pi + 4)) << "5 ahead of a 4-entry ring";
    EXPECT_TRUE(core_srq().broken);
    EXPECT_EQ(events(*b, VIRTIO_RDMA_EVENT_SRQ_ERR), 1u);
    send(0, 1);
    EXPECT_TRUE(drain(*cb).empty()) << "a broken SRQ gives no receive";
    const auto s = drain(*ca);
    ASSERT_EQ(s.size(), 1u);
    EXPECT_EQ(s[0].status, VIRTIO_RDMA_WC_RNR_RETRY_EXC_ERR);
    EXPECT_EQ(srq->device_idx(), 0u);
    /* Its QPs still send; the device goes on. */
    qb_[1]->post_send(SendWr{}.op(VIRTIO_RDMA_WR_RDMA_WRITE).id(9)
                          .flags(kSignaled).sge(dst.addr, 32, dst.lkey)
                          .rdma(src.addr, src.rkey));
    settle();
    const auto w = drain(*cb);
    ASSERT_EQ(w.size(), 1u);
    EXPECT_EQ(w[0].status, VIRTIO_RDMA_WC_SUCCESS);
    EXPECT_EQ(events(*b, VIRTIO_RDMA_EVENT_SRQ_ERR), 1u);
}

TEST_F(Srq, MalformedEntryBreaksTheSrq)
{
    up_srq(3, 0, one_rnr_retry());
    srq->put(1, {{dst.addr, 16, dst.lkey}});
    /* num_sge 5 > max_sge 4 (and beyond the entry's SGEs written). */
    auto *h = reinterpret_cast<virtio_rdma_rq_req *>(srq->mem.slot(*b, 0));
    h->num_sge = 5;
    ASSERT_FALSE(srq->ring(srq->pi));
    send(0, 1);
    EXPECT_TRUE(core_srq().broken);
    EXPECT_EQ(events(*b, VIRTIO_RDMA_EVENT_SRQ_ERR), 1u);
    EXPECT_TRUE(drain(*cb).empty());
}

TEST_F(Srq, ForeignOrUnknownDoorbellsAreIgnored)
{
    up_srq();
    const uint32_t ctx = alloc_context(*b);
    post(1);
    const size_t errs = b->errors.size();
    EXPECT_FALSE(vrdma_core_doorbell(
        b->core, ctx, VIRTIO_RDMA_DB(VIRTIO_RDMA_DB_SRQ, srq->srqn, 100)));
    EXPECT_FALSE(vrdma_core_doorbell(
        b->core, 0, VIRTIO_RDMA_DB(VIRTIO_RDMA_DB_SRQ, srq->srqn + 1, 1)));
    EXPECT_FALSE(vrdma_core_doorbell(
        b->core, 0, VIRTIO_RDMA_DB(VIRTIO_RDMA_DB_SRQ, 0, 1)));
    EXPECT_EQ(b->errors.size(), errs + 3);
    EXPECT_FALSE(core_srq().broken);
    EXPECT_EQ(core_srq().ring.pi, 1u);
    /* RQ doorbells for a QP on an SRQ: it has no RQ. */
    EXPECT_FALSE(qb_[0]->ring_rq(1));
    send(0, 1);
    EXPECT_EQ(drain(*cb).size(), 1u);
}

TEST_F(Srq, ErrFlushesOnlyTheTakenEntry)
{
    up_srq();
    post(1, 0);
    post(2, 1);
    /* The first packet of a 2-packet SEND takes an entry; then ERR. */
    ASSERT_TRUE(qa_[0]->post_send(SendWr{}.op(VIRTIO_RDMA_WR_SEND).id(5)
                                      .flags(kSignaled)
                                      .sge(src.addr, 2048, src.lkey)));
    rings_drain(*a);
    ASSERT_TRUE(wire.pump_until([&] { return srq->device_idx() == 1; }));
    EXPECT_TRUE(drain(*cb).empty()) << "the message is half in";
    ASSERT_EQ(b->to_state(qb_[0]->qpn, VIRTIO_RDMA_QPS_ERR), VIRTIO_RDMA_OK);
    settle();
    const auto f = drain(*cb);
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].wr_id, 1u);
    EXPECT_EQ(f[0].status, VIRTIO_RDMA_WC_WR_FLUSH_ERR);
    EXPECT_EQ(srq->device_idx(), 1u) << "the other entry stays in the SRQ";
    send(1, 6);
    const auto r = drain(*cb);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].wr_id, 2u);
    EXPECT_EQ(r[0].status, VIRTIO_RDMA_WC_SUCCESS);
}

/* IBA: a receive from an SRQ names MRs of the SRQ's PD, not the QP's. */
TEST_F(Srq, ReceivesUseTheSrqsPd)
{
    const uint32_t pd2 = b->create_pd();
    up_srq(3, 0, Conn{}, pd2);
    const MrInfo in_pd2 = buffer(*b, pd2, 4096);
    srq->post(1, {{in_pd2.addr, 4096, in_pd2.lkey}});
    a->fill(src.addr, 64, 5);
    send(0, 1);
    auto got = drain(*cb);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].status, VIRTIO_RDMA_WC_SUCCESS);
    EXPECT_TRUE(b->check(in_pd2.addr, 64, 5));

    srq->post(2, {{dst.addr, 4096, dst.lkey}}); /* the QP's PD's MR */
    send(0, 2);
    got = drain(*cb);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].wr_id, 2u);
    EXPECT_EQ(got[0].status, VIRTIO_RDMA_WC_LOC_PROT_ERR);
}

TEST_F(Srq, ResetFreesSrqs)
{
    up_srq();
    post(1);
    vrdma_core_reset(b->core);
    EXPECT_EQ(b->core->srqs.live(), 0u);
    EXPECT_TRUE(b->core->srq_sched.empty());
}

} // namespace
} // namespace vrdma_test

#include "dp_harness.h"

namespace vrdma_test {
namespace {

class DpSmoke : public DpTest {};

TEST_F(DpSmoke, RcSendOnce)
{
    auto [qa, qb] = connect();
    const uint64_t src = a->alloc(8192), dst = b->alloc(8192);
    const MrInfo ma = a->reg_mr(pd_a, src, 8192, VIRTIO_RDMA_ACCESS_LOCAL_WRITE);
    const MrInfo mb = b->reg_mr(pd_b, dst, 8192, VIRTIO_RDMA_ACCESS_LOCAL_WRITE);
    a->fill(src, 5000, 7);
    b->post_recv(qb, 77, {{dst, 8192, mb.lkey}});
    a->post_send(qa, SendWr().op(VIRTIO_RDMA_WR_SEND).id(5)
                         .flags(VIRTIO_RDMA_SEND_SIGNALED).sge(src, 5000, ma.lkey));
    ASSERT_TRUE(wire.pump());
    ASSERT_EQ(a->cq_size(cq_a), 1u);
    ASSERT_EQ(b->cq_size(cq_b), 1u);
    auto ca = a->pop_cqe(cq_a);
    auto cb = b->pop_cqe(cq_b);
    EXPECT_EQ(ca.status, 0u);
    EXPECT_EQ(ca.wr_id, 5u);
    EXPECT_EQ(cb.status, 0u);
    EXPECT_EQ(cb.wr_id, 77u);
    EXPECT_EQ(cb.byte_len, 5000u);
    EXPECT_TRUE(b->check(dst, 5000, 7));
}

/*
 * A host that writes completions later (the engine in an iothread) reports
 * one it could not write: counted as an overrun, not as a completion, and
 * the QP that completed goes to ERR and flushes what it still holds.
 */
TEST_F(DpSmoke, LateCqOverrunPutsTheQpInErr)
{
    auto [qa, qb] = connect();
    const uint64_t src = a->alloc(8192), dst = b->alloc(8192);
    const MrInfo ma = a->reg_mr(pd_a, src, 8192, VIRTIO_RDMA_ACCESS_LOCAL_WRITE);
    const MrInfo mb = b->reg_mr(pd_b, dst, 8192, VIRTIO_RDMA_ACCESS_LOCAL_WRITE);
    b->post_recv(qb, 1, {{dst, 4096, mb.lkey}});
    b->post_recv(qb, 2, {{dst + 4096, 4096, mb.lkey}});
    a->post_send(qa, SendWr().op(VIRTIO_RDMA_WR_SEND).id(5)
                         .flags(VIRTIO_RDMA_SEND_SIGNALED).sge(src, 100, ma.lkey));
    ASSERT_TRUE(wire.pump());
    ASSERT_EQ(b->cq_size(cq_b), 1u);
    const virtio_rdma_cq_req lost = b->pop_cqe(cq_b);
    const VrdmaDpStats before = b->stats();

    vrdma_core_cq_overrun(b->core, cq_b, vrdma_core_qp_token(b->core, qb),
                          lost.status);
    EXPECT_EQ(b->qp_state(qb), VIRTIO_RDMA_QPS_ERR);
    ASSERT_EQ(b->cq_size(cq_b), 1u);
    const virtio_rdma_cq_req flushed = b->pop_cqe(cq_b);
    EXPECT_EQ(flushed.wr_id, 2u);
    EXPECT_EQ(flushed.status, VIRTIO_RDMA_WC_WR_FLUSH_ERR);
    /* The lost one was taken back, the flush added one (an error). */
    const VrdmaDpStats after = b->stats();
    EXPECT_EQ(after.cq_overruns, before.cq_overruns + 1);
    EXPECT_EQ(after.completions, before.completions);
    EXPECT_EQ(after.error_completions, before.error_completions + 1);
}

/* A report for a CQ the QP does not use, or for no QP: counted, no ERR. */
TEST_F(DpSmoke, LateCqOverrunOfAnotherCqLeavesTheQp)
{
    auto [qa, qb] = connect();
    (void)qa;
    const uint32_t token = vrdma_core_qp_token(b->core, qb);
    vrdma_core_cq_overrun(b->core, cq_b + 1, token, VIRTIO_RDMA_WC_SUCCESS);
    vrdma_core_cq_overrun(b->core, cq_b, 0xFFFF, VIRTIO_RDMA_WC_SUCCESS);
    vrdma_core_cq_overrun(b->core, cq_b, 0, VIRTIO_RDMA_WC_SUCCESS);
    EXPECT_EQ(b->qp_state(qb), VIRTIO_RDMA_QPS_RTS);
    EXPECT_EQ(b->stats().cq_overruns, 3u);
    EXPECT_EQ(b->stats().stale_overruns, 2u) << "no QP 0xFFFF, token 0";
    EXPECT_EQ(b->stats().completions, 0u) << "never below zero";
}

/*
 * The token names a QP instance, not a number: it differs from the QP
 * number, from the token of every other QP, and changes when the instance
 * ends -- destroy, MODIFY_QP to RESET, device reset -- and 0 names none.
 */
TEST_F(DpSmoke, QpTokenNamesTheInstance)
{
    const uint32_t q1 = b->create_qp(pd_b, VIRTIO_RDMA_QPT_RC, cq_b, cq_b);
    const uint32_t q2 = b->create_qp(pd_b, VIRTIO_RDMA_QPT_RC, cq_b, cq_b);
    const uint32_t t1 = vrdma_core_qp_token(b->core, q1);
    EXPECT_NE(t1, 0u);
    EXPECT_EQ(t1 & 0xFFFF, q1);
    EXPECT_NE(t1, vrdma_core_qp_token(b->core, q2));
    EXPECT_EQ(vrdma_core_qp_token(b->core, q1), t1) << "stable while it lives";
    EXPECT_EQ(vrdma_core_qp_token(b->core, 0), 0u);
    EXPECT_EQ(vrdma_core_qp_token(b->core, 0xFFFF), 0u);

    ASSERT_EQ(b->to_state(q1, VIRTIO_RDMA_QPS_ERR), VIRTIO_RDMA_OK);
    EXPECT_EQ(vrdma_core_qp_token(b->core, q1), t1);
    ASSERT_EQ(b->to_state(q1, VIRTIO_RDMA_QPS_RESET), VIRTIO_RDMA_OK);
    const uint32_t t1r = vrdma_core_qp_token(b->core, q1);
    EXPECT_NE(t1r, t1) << "RESET ends the instance";
    EXPECT_EQ(t1r & 0xFFFF, q1);

    ASSERT_EQ(b->destroy_qp(q1), VIRTIO_RDMA_OK);
    EXPECT_EQ(vrdma_core_qp_token(b->core, q1), 0u);
    vrdma_core_reset(b->core);
    EXPECT_EQ(vrdma_core_qp_token(b->core, q2), 0u);
}

/*
 * A late overrun staged for a QP that was destroyed before the host wrote
 * it must not hit the QP that took its number since (before the token, the
 * new QP went to ERR); the token of the live instance still does.
 */
TEST_F(DpSmoke, LateCqOverrunOfAnEndedQpLeavesItsSuccessor)
{
    auto [qa, qb] = connect();
    (void)qa;
    const uint32_t stale = vrdma_core_qp_token(b->core, qb);
    ASSERT_EQ(b->destroy_qp(qb), VIRTIO_RDMA_OK);
    /* Take QPs until one gets the number back (whichever slot is chosen). */
    uint32_t again = 0;
    for (int i = 0; i < 16 && again != qb; i++) {
        again = b->create_qp(pd_b, VIRTIO_RDMA_QPT_RC, cq_b, cq_b);
    }
    ASSERT_EQ(again, qb);
    EXPECT_NE(vrdma_core_qp_token(b->core, qb), stale);

    vrdma_core_cq_overrun(b->core, cq_b, stale, VIRTIO_RDMA_WC_SUCCESS);
    EXPECT_EQ(b->qp_state(qb), VIRTIO_RDMA_QPS_RESET);
    EXPECT_EQ(b->stats().cq_overruns, 1u);
    EXPECT_EQ(b->stats().stale_overruns, 1u);

    /* A completion of the QP before its RESET is stale too. */
    ASSERT_EQ(b->to_state(qb, VIRTIO_RDMA_QPS_ERR), VIRTIO_RDMA_OK);
    const uint32_t token = vrdma_core_qp_token(b->core, qb);
    ASSERT_EQ(b->to_state(qb, VIRTIO_RDMA_QPS_RESET), VIRTIO_RDMA_OK);
    vrdma_core_cq_overrun(b->core, cq_b, token, VIRTIO_RDMA_WC_SUCCESS);
    EXPECT_EQ(b->qp_state(qb), VIRTIO_RDMA_QPS_RESET);
    EXPECT_EQ(b->stats().stale_overruns, 2u);

    vrdma_core_cq_overrun(b->core, cq_b, vrdma_core_qp_token(b->core, qb),
                          VIRTIO_RDMA_WC_SUCCESS);
    EXPECT_EQ(b->qp_state(qb), VIRTIO_RDMA_QPS_ERR);
    EXPECT_EQ(b->stats().cq_overruns, 3u);
    EXPECT_EQ(b->stats().stale_overruns, 2u);
}

} // namespace
} // namespace vrdma_test

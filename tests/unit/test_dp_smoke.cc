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

    vrdma_core_cq_overrun(b->core, cq_b, qb, lost.status);
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
    vrdma_core_cq_overrun(b->core, cq_b + 1, qb, VIRTIO_RDMA_WC_SUCCESS);
    vrdma_core_cq_overrun(b->core, cq_b, 0xFFFF, VIRTIO_RDMA_WC_SUCCESS);
    EXPECT_EQ(b->qp_state(qb), VIRTIO_RDMA_QPS_RTS);
    EXPECT_EQ(b->stats().cq_overruns, 2u);
    EXPECT_EQ(b->stats().completions, 0u) << "never below zero";
}

} // namespace
} // namespace vrdma_test

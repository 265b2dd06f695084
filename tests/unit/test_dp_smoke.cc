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
    b->reset();
    EXPECT_EQ(vrdma_core_qp_token(b->core, q2), 0u);
}

} // namespace
} // namespace vrdma_test

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

} // namespace
} // namespace vrdma_test

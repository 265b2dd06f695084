/*
 * The ibverbs backend's completions: a host CQE, when the completion
 * channel says so, becomes the guest's in its CQ ring (same wr_id, status,
 * opcode, length; the QP's wire number; flags renumbered); the event is
 * acked and the host CQ re-armed; a turn takes a bounded number and
 * leaves the rest to run().
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "ib_fixture.h"

namespace vrdma_test {
namespace {

class IbCompletions : public IbTest {
protected:
    void SetUp() override
    {
        IbTest::SetUp();
        own_gid(*a, 0);
        pd = a->create_pd();
        cq = a->create_cq(1024);
        qpn = rc_up(*a, pd, cq);
        host = verbs.qps_of(ctx_a)[0];
        host_cq = verbs.cq(host->qp.send_cq);
        ASSERT_NE(host_cq, nullptr);
    }

    uint32_t pd = 0, cq = 0, qpn = 0;
    FakeHostVerbs::Qp *host = nullptr;
    FakeHostVerbs::Cq *host_cq = nullptr;
};

TEST_F(IbCompletions, HostCqesReachTheGuestsRing)
{
    verbs.complete_qp(*host, true, 0x1234, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE,
                      512);
    EXPECT_TRUE(a->cq(cq).empty()) << "not before the channel says so";
    host_completions(*a, ctx_a);
    ASSERT_EQ(a->cq_size(cq), 1u);
    const virtio_rdma_cq_req c = a->pop_cqe(cq);
    EXPECT_EQ(c.wr_id, 0x1234u);
    EXPECT_EQ(c.status, uint32_t{VIRTIO_RDMA_WC_SUCCESS});
    EXPECT_EQ(c.opcode, uint32_t{VIRTIO_RDMA_WC_RDMA_WRITE});
    EXPECT_EQ(c.byte_len, 512u);
    EXPECT_EQ(c.qp_num, a->wire_qpn(qpn));
    EXPECT_EQ(host_cq->unacked, 0u) << "the event acked at once";
    EXPECT_TRUE(host_cq->armed) << "re-armed for the next CQE";

    /* The next CQE raises the next event. */
    verbs.complete_qp(*host, false, 0x99, IBV_WC_SUCCESS, IBV_WC_RECV, 7);
    host_completions(*a, ctx_a);
    ASSERT_EQ(a->cq_size(cq), 1u);
    EXPECT_EQ(a->pop_cqe(cq).opcode, uint32_t{VIRTIO_RDMA_WC_RECV});
}

TEST_F(IbCompletions, ImmediateDataAndFlagsAreRenumbered)
{
    ibv_wc wc{};
    wc.wr_id = 5;
    wc.status = IBV_WC_SUCCESS;
    wc.opcode = IBV_WC_RECV;
    wc.qp_num = host->qp.qp_num;
    wc.wc_flags = IBV_WC_WITH_IMM | IBV_WC_GRH;
    wc.imm_data = 0xdeadbeef;
    wc.byte_len = 40;
    verbs.complete(host->qp.recv_cq, wc);
    host_completions(*a, ctx_a);
    ASSERT_EQ(a->cq_size(cq), 1u);
    const virtio_rdma_cq_req c = a->pop_cqe(cq);
    EXPECT_EQ(c.wc_flags, VIRTIO_RDMA_WC_WITH_IMM | VIRTIO_RDMA_WC_GRH);
    EXPECT_EQ(c.ex, 0xdeadbeefu) << "as the guest reads it: unchanged";
    EXPECT_EQ(c.port_num, 1u);
}

TEST_F(IbCompletions, AnErrorCompletionPutsTheQpInError)
{
    verbs.complete_qp(*host, true, 3, IBV_WC_RETRY_EXC_ERR, IBV_WC_SEND);
    host_completions(*a, ctx_a);
    ASSERT_EQ(a->cq_size(cq), 1u);
    EXPECT_EQ(a->pop_cqe(cq).status, uint32_t{VIRTIO_RDMA_WC_RETRY_EXC_ERR});
    EXPECT_EQ(a->qp_state(qpn), uint32_t{VIRTIO_RDMA_QPS_ERR})
        << "QUERY_QP says so before the guest posts again";
}

TEST_F(IbCompletions, ABusyTurnLeavesTheRestToRun)
{
    for (uint64_t i = 0; i < 300; i++) {
        verbs.complete_qp(*host, true, i, IBV_WC_SUCCESS, IBV_WC_SEND);
    }
    a->kicked = false;
    host_completions(*a, ctx_a);
    const size_t first = a->cq_size(cq);
    EXPECT_LT(first, 300u) << "one turn is bounded";
    EXPECT_GT(first, 0u);
    EXPECT_TRUE(a->kicked) << "the host is asked to run the core again";
    while (vrdma_core_run(a->core)) {
    }
    a->collect();
    ASSERT_EQ(a->cq_size(cq), 300u);
    for (uint64_t i = 0; i < 300; i++) {
        ASSERT_EQ(a->pop_cqe(cq).wr_id, i) << "in order";
    }
}

TEST_F(IbCompletions, ADestroyedQpsCqesNeverReachTheGuest)
{
    const uint32_t other = rc_up(*a, pd, cq);
    FakeHostVerbs::Qp *host2 = verbs.qp(a->wire_qpn(other));
    ASSERT_NE(host2, nullptr);
    verbs.complete_qp(*host, true, 1, IBV_WC_WR_FLUSH_ERR, IBV_WC_SEND);
    verbs.complete_qp(*host2, true, 2, IBV_WC_SUCCESS, IBV_WC_SEND);
    verbs.complete_qp(*host, true, 3, IBV_WC_WR_FLUSH_ERR, IBV_WC_SEND);
    ASSERT_EQ(a->destroy_qp(qpn), VIRTIO_RDMA_OK);
    host_completions(*a, ctx_a);
    ASSERT_EQ(a->cq_size(cq), 1u) << "the other QP's only";
    EXPECT_EQ(a->pop_cqe(cq).wr_id, 2u);
    EXPECT_EQ(ib_stats(*a).purged_cqes, 2u);
}

TEST_F(IbCompletions, OneChannelServesEveryCq)
{
    const uint32_t cq2 = a->create_cq(16);
    const uint32_t qp2 = a->create_qp(pd, VIRTIO_RDMA_QPT_RC, cq2, cq2);
    FakeHostVerbs::Qp *h2 = verbs.qp(a->wire_qpn(qp2));
    ASSERT_NE(h2, nullptr);
    verbs.complete_qp(*host, true, 10, IBV_WC_SUCCESS, IBV_WC_SEND);
    verbs.complete_qp(*h2, false, 20, IBV_WC_SUCCESS, IBV_WC_RECV);
    EXPECT_EQ(verbs.channel_of(ctx_a)->events.size(), 2u);
    host_completions(*a, ctx_a);
    ASSERT_EQ(a->cq_size(cq), 1u);
    ASSERT_EQ(a->cq_size(cq2), 1u);
    EXPECT_EQ(a->pop_cqe(cq).wr_id, 10u);
    EXPECT_EQ(a->pop_cqe(cq2).wr_id, 20u);
    EXPECT_TRUE(verbs.channel_of(ctx_a)->events.empty());
}

} // namespace
} // namespace vrdma_test

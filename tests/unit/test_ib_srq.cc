/*
 * The ibverbs backend's SRQs: every entry the guest announces is posted
 * to the host SRQ with the host's lkeys; an entry that cannot be (an lkey
 * of no MR of the SRQ's PD, a host refusal) breaks the SRQ, as no QP owns
 * it yet to complete it with an error.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <cerrno>

#include "ib_fixture.h"

namespace vrdma_test {
namespace {

class IbSrq : public IbTest {
protected:
    void SetUp() override
    {
        IbTest::SetUp();
        pd = a->create_pd();
        buf = a->reg_mr(pd, a->alloc(4096), 4096, kAllAccess);
        srq = std::make_unique<RingSrq>(*a, 0, pd, 3, 2, 0);
        ASSERT_EQ(verbs.srqs(ctx_a), 1u);
        host = verbs.srqs_of(ctx_a)[0];
    }

    void TearDown() override
    {
        srq.reset();
        IbTest::TearDown();
    }

    void turn()
    {
        while (vrdma_core_rings_turn(a->core)) {
        }
    }

    uint32_t pd = 0;
    MrInfo buf;
    std::unique_ptr<RingSrq> srq;
    FakeHostVerbs::Srq *host = nullptr;
};

TEST_F(IbSrq, EntriesArePostedWithTheHostsLkeys)
{
    srq->post(0x10, {{buf.addr, 100, buf.lkey}});
    srq->post(0x11, {{buf.addr + 128, 50, buf.lkey},
                     {buf.addr + 512, 60, buf.lkey}});
    turn();
    ASSERT_EQ(host->recvs.size(), 2u);
    EXPECT_EQ(host->recvs[0].wr.wr_id, 0x10u);
    ASSERT_EQ(host->recvs[1].sge.size(), 2u);
    const FakeHostVerbs::Mr *m = verbs.mr_by_lkey(host->recvs[0].sge[0].lkey);
    ASSERT_NE(m, nullptr) << "a host MR's lkey";
    EXPECT_EQ(m->mr.pd, host->srq.pd);
    EXPECT_EQ(host->recvs[1].sge[1].addr, buf.addr + 512);
    EXPECT_TRUE(a->async_events.empty());
}

TEST_F(IbSrq, AForeignLkeyBreaksTheSrq)
{
    srq->post(0x20, {{buf.addr, 16, buf.lkey ^ 0x300}});
    turn();
    EXPECT_TRUE(host->recvs.empty());
    ASSERT_EQ(a->async_events.size(), 1u);
    EXPECT_EQ(a->async_events[0].type, uint32_t{VIRTIO_RDMA_EVENT_SRQ_ERR});
    EXPECT_EQ(a->async_events[0].handle, srq->srqn);
}

TEST_F(IbSrq, AHostRefusalBreaksTheSrq)
{
    verbs.refuse(Verb::kPostSrqRecv, ENOMEM);
    srq->post(0x30, {{buf.addr, 16, buf.lkey}});
    turn();
    EXPECT_TRUE(host->recvs.empty());
    ASSERT_EQ(a->async_events.size(), 1u);
    EXPECT_EQ(a->async_events[0].type, uint32_t{VIRTIO_RDMA_EVENT_SRQ_ERR});
}

TEST_F(IbSrq, ModifyLimitReachesTheHost)
{
    virtio_rdma_cmd_modify_srq m{};
    m.srqn = srq->srqn;
    m.attr_mask = VIRTIO_RDMA_SRQ_LIMIT;
    m.srq_limit = 4;
    EXPECT_EQ(a->ctrl(VIRTIO_RDMA_CMD_MODIFY_SRQ, m), VIRTIO_RDMA_OK);
    EXPECT_EQ(host->attr.srq_limit, 4u);
    verbs.refuse(Verb::kModifySrq, EINVAL);
    m.srq_limit = 2;
    EXPECT_EQ(a->ctrl(VIRTIO_RDMA_CMD_MODIFY_SRQ, m), VIRTIO_RDMA_EINVAL);
    EXPECT_EQ(host->attr.srq_limit, 4u);
}

} // namespace
} // namespace vrdma_test

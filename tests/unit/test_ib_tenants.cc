/*
 * Tenants of one host device: two cores on the same fake device, each on
 * its own context.  Neither sees nor uses the other's host objects: its
 * objects are made on its context, its keys name only its MRs, the
 * other's address is refused as a GID, events reach only the owner, and
 * one core's reset or end leaves the other's objects alone.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "ib_fixture.h"

namespace vrdma_test {
namespace {

class IbTenants : public IbTest {
protected:
    void SetUp() override
    {
        IbTest::SetUp();
        b = tenant(1, &ctx_b);
        ASSERT_NE(b->core, nullptr);
        ASSERT_NE(ctx_a, ctx_b);
        own_gid(*a, 0);
        own_gid(*b, 1);
        pd_a = a->create_pd();
        pd_b = b->create_pd();
        cq_a = a->create_cq(64);
        cq_b = b->create_cq(64);
        qp_a = rc_up(*a, pd_a, cq_a);
        qp_b = rc_up(*b, pd_b, cq_b);
    }

    uint32_t pd_a = 0, pd_b = 0, cq_a = 0, cq_b = 0, qp_a = 0, qp_b = 0;
};

TEST_F(IbTenants, EachCoreMakesItsObjectsOnItsOwnContext)
{
    EXPECT_EQ(verbs.pds(ctx_a), 1u);
    EXPECT_EQ(verbs.pds(ctx_b), 1u);
    EXPECT_EQ(verbs.qps(ctx_a), 1u);
    EXPECT_EQ(verbs.qps(ctx_b), 1u);
    EXPECT_EQ(verbs.qp(a->wire_qpn(qp_a))->qp.context, ctx_a);
    EXPECT_EQ(verbs.qp(b->wire_qpn(qp_b))->qp.context, ctx_b);
    EXPECT_NE(a->wire_qpn(qp_a), b->wire_qpn(qp_b))
        << "QP numbers are the device's";
    EXPECT_NE(verbs.channel_of(ctx_a), verbs.channel_of(ctx_b));
}

TEST_F(IbTenants, AnotherTenantsLkeyIsALocalProtectionError)
{
    /* Same seed, same first key: b's lkey number names no MR of a's. */
    const MrInfo mb = b->reg_mr(pd_b, b->alloc(4096), 4096, kAllAccess);
    FakeHostVerbs::Qp *host_a = verbs.qp(a->wire_qpn(qp_a));
    a->post_send(qp_a, SendWr{}.op(VIRTIO_RDMA_WR_SEND).id(1).sge(
                           mb.addr, 16, mb.lkey));
    EXPECT_TRUE(host_a->sends.empty()) << "b's host MR never named by a";
    ASSERT_EQ(a->cq_size(cq_a), 1u);
    EXPECT_EQ(a->pop_cqe(cq_a).status, uint32_t{VIRTIO_RDMA_WC_LOC_PROT_ERR});
}

TEST_F(IbTenants, AnotherTenantsAddressIsRefusedAsAGid)
{
    virtio_rdma_cmd_add_gid r{};
    std::memcpy(r.gid, b->gid.data(), 16);
    r.gid_type = VIRTIO_RDMA_GID_TYPE_ROCE_UDP_ENCAP;
    r.index = 1;
    r.port_num = 1;
    EXPECT_EQ(a->ctrl(VIRTIO_RDMA_CMD_ADD_GID, r), VIRTIO_RDMA_EPERM);
    EXPECT_EQ(a->errors.back().err, VRDMA_ERR_NOT_ALLOWED);
}

TEST_F(IbTenants, EventsReachOnlyTheirOwner)
{
    verbs.qp_event(*verbs.qp(b->wire_qpn(qp_b)), IBV_EVENT_QP_FATAL);
    host_async(*a, ctx_a); /* a's fd: nothing for it */
    EXPECT_EQ(ib_stats(*a).async_events, 0u);
    host_async(*b, ctx_b);
    EXPECT_EQ(b->qp_state(qp_b), uint32_t{VIRTIO_RDMA_QPS_ERR});
    EXPECT_EQ(a->qp_state(qp_a), uint32_t{VIRTIO_RDMA_QPS_RTS});

    verbs.complete_qp(*verbs.qp(a->wire_qpn(qp_a)), true, 5, IBV_WC_SUCCESS,
                      IBV_WC_SEND);
    host_completions(*b, ctx_b);
    EXPECT_TRUE(b->cq(cq_b).empty());
    host_completions(*a, ctx_a);
    EXPECT_EQ(a->cq_size(cq_a), 1u);
}

TEST_F(IbTenants, OnesResetLeavesTheOthersObjects)
{
    a->reset();
    EXPECT_EQ(verbs.pds(ctx_a) + verbs.cqs(ctx_a) + verbs.qps(ctx_a), 0u);
    EXPECT_EQ(verbs.pds(ctx_b), 1u);
    EXPECT_EQ(verbs.cqs(ctx_b), 1u);
    EXPECT_EQ(verbs.qps(ctx_b), 1u);
    EXPECT_EQ(b->qp_state(qp_b), uint32_t{VIRTIO_RDMA_QPS_RTS});
    a.reset(); /* and its end */
    EXPECT_EQ(verbs.contexts(), 1u);
    EXPECT_EQ(verbs.qps(ctx_b), 1u);
}

} // namespace
} // namespace vrdma_test

/*
 * The ibverbs backend's MODIFY_QP: the guest's attributes become the host
 * QP's (the source GID by the host's index of the same address), and the
 * host's refusal is the guest's, the QP's state unchanged.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <cerrno>

#include "ib_fixture.h"

namespace vrdma_test {
namespace {

class IbModifyQp : public IbTest {
protected:
    void SetUp() override
    {
        IbTest::SetUp();
        pd = a->create_pd();
        cq = a->create_cq(64);
        qpn = a->create_qp(pd, VIRTIO_RDMA_QPT_RC, cq, cq);
        ASSERT_EQ(verbs.qps(ctx_a), 1u);
        host = verbs.qps_of(ctx_a)[0];
    }

    void to_init()
    {
        virtio_rdma_qp_attr at{};
        at.qp_state = VIRTIO_RDMA_QPS_INIT;
        at.port_num = 1;
        at.pkey_index = 0;
        at.qp_access_flags = VIRTIO_RDMA_ACCESS_LOCAL_WRITE |
                             VIRTIO_RDMA_ACCESS_REMOTE_READ;
        ASSERT_EQ(a->modify(qpn, VIRTIO_RDMA_QP_STATE |
                                     VIRTIO_RDMA_QP_PKEY_INDEX |
                                     VIRTIO_RDMA_QP_PORT |
                                     VIRTIO_RDMA_QP_ACCESS_FLAGS,
                            at),
                  VIRTIO_RDMA_OK);
    }

    uint32_t pd = 0, cq = 0, qpn = 0;
    FakeHostVerbs::Qp *host = nullptr;
};

TEST_F(IbModifyQp, AttributesMappedToTheHosts)
{
    own_gid(*a, 3);
    to_init();
    EXPECT_EQ(host->qp.state, IBV_QPS_INIT);
    EXPECT_EQ(host->mask, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                              IBV_QP_ACCESS_FLAGS);
    EXPECT_EQ(host->attr.port_num, 1);
    EXPECT_EQ(host->attr.qp_access_flags,
              unsigned{IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ});

    ASSERT_EQ(a->modify(qpn, kRtrMask, rtr_attrs(*a)), VIRTIO_RDMA_OK);
    EXPECT_EQ(host->qp.state, IBV_QPS_RTR);
    EXPECT_EQ(host->mask, static_cast<int>(kRtrMask)) << "the same bits";
    EXPECT_EQ(host->attr.dest_qp_num, 0x99u);
    EXPECT_EQ(host->attr.rq_psn, 0x111u);
    EXPECT_EQ(host->attr.path_mtu, IBV_MTU_1024);
    EXPECT_EQ(host->attr.min_rnr_timer, 12);
    EXPECT_EQ(host->attr.ah_attr.is_global, 1);
    EXPECT_EQ(host->attr.ah_attr.port_num, 1);
    EXPECT_EQ(host->attr.ah_attr.grh.sgid_index, 3)
        << "the host's index of the guest's source GID";
    EXPECT_EQ(std::memcmp(host->attr.ah_attr.grh.dgid.raw, a->gid.data(), 16),
              0);
    EXPECT_EQ(host->attr.ah_attr.grh.hop_limit, 64);
}

TEST_F(IbModifyQp, SourceGidNotYetOnTheHostIsRefused)
{
    a->add_gid(0, a->gid); /* management has not put it on the host yet */
    to_init();
    const unsigned asked = verbs.calls(Verb::kModifyQp);
    EXPECT_NE(a->modify(qpn, kRtrMask, rtr_attrs(*a)), VIRTIO_RDMA_OK);
    EXPECT_EQ(a->errors.back().err, VRDMA_ERR_BAD_INDEX);
    EXPECT_EQ(verbs.calls(Verb::kModifyQp), asked) << "the host not asked";
    EXPECT_EQ(a->qp_state(qpn), uint32_t{VIRTIO_RDMA_QPS_INIT});
    EXPECT_EQ(host->qp.state, IBV_QPS_INIT);
}

TEST_F(IbModifyQp, HostRefusalIsTheGuestsAndChangesNoState)
{
    own_gid(*a, 0);
    to_init();
    verbs.refuse(Verb::kModifyQp, EINVAL);
    EXPECT_EQ(a->modify(qpn, kRtrMask, rtr_attrs(*a)), VIRTIO_RDMA_EINVAL);
    EXPECT_EQ(a->errors.back().err, VRDMA_ERR_BAD_ARG);
    EXPECT_EQ(a->qp_state(qpn), uint32_t{VIRTIO_RDMA_QPS_INIT});
    EXPECT_EQ(a->modify(qpn, kRtrMask, rtr_attrs(*a)), VIRTIO_RDMA_OK)
        << "the refusal was the host's, once";
}

TEST_F(IbModifyQp, ErrorStateReachesTheHost)
{
    own_gid(*a, 0);
    to_init();
    virtio_rdma_qp_attr at{};
    at.qp_state = VIRTIO_RDMA_QPS_ERR;
    ASSERT_EQ(a->modify(qpn, VIRTIO_RDMA_QP_STATE, at), VIRTIO_RDMA_OK);
    EXPECT_EQ(host->qp.state, IBV_QPS_ERR) << "the host flushes its work";
    EXPECT_EQ(a->qp_state(qpn), uint32_t{VIRTIO_RDMA_QPS_ERR});
}

} // namespace
} // namespace vrdma_test

/*
 * The ibverbs backend's host asynchronous events, as the guest sees them:
 * a QP's fatal error is its ERR state, the port's state is QUERY_PORT's,
 * a host CQ overrun puts its QPs in ERR, an SRQ's limit is the guest's
 * SRQ_LIMIT event.  Each event is acked.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "ib_fixture.h"

namespace vrdma_test {
namespace {

class IbAsyncEvents : public IbTest {
protected:
    void SetUp() override
    {
        IbTest::SetUp();
        own_gid(*a, 0);
        pd = a->create_pd();
        cq = a->create_cq(64);
        qpn = rc_up(*a, pd, cq);
        host = verbs.qp(a->wire_qpn(qpn));
        ASSERT_NE(host, nullptr);
    }

    uint32_t port_state()
    {
        virtio_rdma_port_attr at{};
        EXPECT_EQ(a->ctrl(VIRTIO_RDMA_CMD_QUERY_PORT,
                          virtio_rdma_cmd_query_port{.port = 1}, &at),
                  VIRTIO_RDMA_OK);
        return at.state;
    }

    uint32_t pd = 0, cq = 0, qpn = 0;
    FakeHostVerbs::Qp *host = nullptr;
};

TEST_F(IbAsyncEvents, QpFatalPutsTheQpInError)
{
    verbs.qp_event(*host, IBV_EVENT_QP_FATAL);
    EXPECT_EQ(a->qp_state(qpn), uint32_t{VIRTIO_RDMA_QPS_RTS})
        << "not before the host's loop reads it";
    host_async(*a, ctx_a);
    EXPECT_EQ(a->qp_state(qpn), uint32_t{VIRTIO_RDMA_QPS_ERR});
    EXPECT_EQ(ib_stats(*a).async_events, 1u);
}

TEST_F(IbAsyncEvents, HostQpAndCqErrorsAreTheGuestsEventsOnce)
{
    verbs.qp_event(*host, IBV_EVENT_QP_FATAL);
    verbs.qp_event(*host, IBV_EVENT_QP_REQ_ERR);
    host_async(*a, ctx_a);
    ASSERT_EQ(a->async_events.size(), 1u) << "one per QP";
    EXPECT_EQ(a->async_events[0].type, uint32_t{VIRTIO_RDMA_EVENT_QP_FATAL});
    EXPECT_EQ(a->async_events[0].handle, qpn) << "the guest's index";
    verbs.cq_event(*verbs.cq(host->qp.send_cq), IBV_EVENT_CQ_ERR);
    host_async(*a, ctx_a);
    ASSERT_EQ(a->async_events.size(), 2u);
    EXPECT_EQ(a->async_events[1].type, uint32_t{VIRTIO_RDMA_EVENT_CQ_ERR});
    EXPECT_EQ(a->async_events[1].handle, cq);
}

TEST_F(IbAsyncEvents, PortStateFollowsTheHostsPort)
{
    EXPECT_EQ(port_state(), uint32_t{VIRTIO_RDMA_PORT_ACTIVE});
    verbs.port_event(ctx_a, IBV_EVENT_PORT_ERR);
    host_async(*a, ctx_a);
    EXPECT_EQ(port_state(), uint32_t{VIRTIO_RDMA_PORT_DOWN});
    verbs.port_event(ctx_a, IBV_EVENT_PORT_ERR, 2); /* not the core's port */
    verbs.port_event(ctx_a, IBV_EVENT_PORT_ACTIVE);
    host_async(*a, ctx_a);
    EXPECT_EQ(port_state(), uint32_t{VIRTIO_RDMA_PORT_ACTIVE});
    EXPECT_EQ(ib_stats(*a).async_events, 3u);
}

TEST_F(IbAsyncEvents, DeviceFatalEndsEveryQpAndThePort)
{
    const uint32_t other = rc_up(*a, pd, cq);
    verbs.port_event(ctx_a, IBV_EVENT_DEVICE_FATAL);
    host_async(*a, ctx_a);
    EXPECT_EQ(a->qp_state(qpn), uint32_t{VIRTIO_RDMA_QPS_ERR});
    EXPECT_EQ(a->qp_state(other), uint32_t{VIRTIO_RDMA_QPS_ERR});
    EXPECT_EQ(port_state(), uint32_t{VIRTIO_RDMA_PORT_DOWN});
}

TEST_F(IbAsyncEvents, HostCqOverrunPutsItsQpsInError)
{
    const uint32_t cq2 = a->create_cq(16);
    const uint32_t bystander = rc_up(*a, pd, cq2);
    verbs.cq_event(*verbs.cq(host->qp.send_cq), IBV_EVENT_CQ_ERR);
    host_async(*a, ctx_a);
    EXPECT_EQ(a->qp_state(qpn), uint32_t{VIRTIO_RDMA_QPS_ERR});
    EXPECT_EQ(host->qp.state, IBV_QPS_ERR) << "the host QP too";
    EXPECT_EQ(a->qp_state(bystander), uint32_t{VIRTIO_RDMA_QPS_RTS})
        << "a QP of another CQ goes on";
    EXPECT_EQ(a->stats().cq_overruns, 1u);
}

TEST_F(IbAsyncEvents, SrqLimitIsTheGuestsOnce)
{
    RingSrq srq(*a, 0, pd, 3, 2, 2);
    ASSERT_EQ(verbs.srqs(ctx_a), 1u);
    FakeHostVerbs::Srq *h = verbs.srqs_of(ctx_a)[0];
    EXPECT_EQ(h->attr.srq_limit, 2u) << "armed on the host";
    verbs.srq_event(*h, IBV_EVENT_SRQ_LIMIT_REACHED);
    host_async(*a, ctx_a);
    ASSERT_EQ(a->async_events.size(), 1u);
    EXPECT_EQ(a->async_events[0].type, uint32_t{VIRTIO_RDMA_EVENT_SRQ_LIMIT});
    EXPECT_EQ(a->async_events[0].handle, srq.srqn);
    /* The limit disarmed itself (IBA 10.2.9.3): a second one is dropped. */
    verbs.srq_event(*h, IBV_EVENT_SRQ_LIMIT_REACHED);
    host_async(*a, ctx_a);
    EXPECT_EQ(a->async_events.size(), 1u);
    virtio_rdma_cmd_destroy_srq d{};
    d.srqn = srq.srqn;
    EXPECT_EQ(a->ctrl(VIRTIO_RDMA_CMD_DESTROY_SRQ, d), VIRTIO_RDMA_OK);
}

} // namespace
} // namespace vrdma_test

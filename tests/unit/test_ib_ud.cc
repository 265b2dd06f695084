/*
 * The ibverbs backend's UD sends: each destination an address handle on
 * the host, made on first use and kept with the PD (at most max_ah), the
 * send posted with it; a host that refuses one fails the send
 * (LOC_QP_OP_ERR).  Here the host has no worker thread, so the handle is
 * made at once.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <cerrno>

#include "ib_fixture.h"

namespace vrdma_test {
namespace {

class IbUd : public IbTest {
protected:
    void SetUp() override
    {
        IbTest::SetUp();
        own_gid(*a, 2);
        pd = a->create_pd();
        cq = a->create_cq(64);
        qpn = a->create_qp(pd, VIRTIO_RDMA_QPT_UD, cq, cq);
        a->ud_up(qpn, 0x1111);
        host = verbs.qp(a->wire_qpn(qpn));
        ASSERT_NE(host, nullptr);
        ASSERT_EQ(host->qp.state, IBV_QPS_RTS);
        buf = a->reg_mr(pd, a->alloc(4096), 4096, kAllAccess);
    }

    void send_to(uint8_t last, uint64_t wr_id)
    {
        a->post_send(qpn, SendWr{}
                              .op(VIRTIO_RDMA_WR_SEND)
                              .id(wr_id)
                              .sge(buf.addr, 32, buf.lkey)
                              .ud(0x77, 0x2222, gid_v4(10, 0, 9, last),
                                  Mac{2, 0, 0, 0, 9, last}));
    }

    uint32_t pd = 0, cq = 0, qpn = 0;
    FakeHostVerbs::Qp *host = nullptr;
    MrInfo buf;
};

TEST_F(IbUd, ADestinationsHandleIsMadeOnceAndKept)
{
    send_to(1, 10);
    send_to(1, 11);
    EXPECT_EQ(verbs.calls(Verb::kCreateAh), 1u) << "the second one cached";
    EXPECT_EQ(verbs.ahs(ctx_a), 1u);
    ASSERT_EQ(host->sends.size(), 2u);
    const ibv_send_wr &w = host->sends[0].wr;
    EXPECT_EQ(w.wr_id, 10u);
    EXPECT_NE(w.wr.ud.ah, nullptr);
    EXPECT_EQ(w.wr.ud.ah, host->sends[1].wr.wr.ud.ah);
    EXPECT_EQ(w.wr.ud.remote_qpn, 0x77u);
    EXPECT_EQ(w.wr.ud.remote_qkey, 0x2222u);
    send_to(2, 12);
    EXPECT_EQ(verbs.ahs(ctx_a), 2u) << "another destination, another handle";
    EXPECT_EQ(ib_stats(*a).ahs, 2u);
}

TEST_F(IbUd, RefusedHandleFailsTheSend)
{
    verbs.refuse(Verb::kCreateAh, ENETUNREACH);
    send_to(3, 20);
    EXPECT_TRUE(host->sends.empty());
    ASSERT_EQ(a->cq_size(cq), 1u);
    const virtio_rdma_cq_req c = a->pop_cqe(cq);
    EXPECT_EQ(c.wr_id, 20u);
    EXPECT_EQ(c.status, uint32_t{VIRTIO_RDMA_WC_LOC_QP_OP_ERR});
    EXPECT_EQ(verbs.ahs(), 0u);
}

TEST_F(IbUd, HandlesGoWithTheirPd)
{
    send_to(1, 1);
    ASSERT_EQ(verbs.ahs(ctx_a), 1u);
    ASSERT_EQ(a->destroy_qp(qpn), VIRTIO_RDMA_OK);
    EXPECT_EQ(a->dereg_mr(buf.mrn), VIRTIO_RDMA_OK);
    EXPECT_EQ(a->ctrl(VIRTIO_RDMA_CMD_DESTROY_PD,
                      virtio_rdma_cmd_destroy_pd{.pdn = pd}),
              VIRTIO_RDMA_OK);
    EXPECT_EQ(verbs.ahs(), 0u);
    EXPECT_EQ(verbs.pds(), 0u) << "after its handles: not EBUSY";
}

} // namespace
} // namespace vrdma_test

/*
 * The ibverbs backend's work requests: posted to the host QP with the
 * host's lkeys for the guest's (an lkey of no MR of the QP's PD never
 * reaches the host: LOC_PROT_ERR), and a host refusal completes the
 * request with LOC_QP_OP_ERR and puts the QP in ERR.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <cerrno>

#include "ib_fixture.h"

namespace vrdma_test {
namespace {

class IbPost : public IbTest {
protected:
    void SetUp() override
    {
        IbTest::SetUp();
        own_gid(*a, 0);
        pd = a->create_pd();
        cq = a->create_cq(64);
        qpn = rc_up(*a, pd, cq);
        ASSERT_EQ(verbs.qps(ctx_a), 1u);
        host = verbs.qps_of(ctx_a)[0];
        ASSERT_EQ(host->qp.state, IBV_QPS_RTS);
        buf = a->reg_mr(pd, a->alloc(8192), 8192, kAllAccess);
        host_lkey = host_mr_lkey();
    }

    /* The host lkey of the one host MR. */
    uint32_t host_mr_lkey()
    {
        for (uint32_t k = 0x100; k < 0x400; k++) {
            if (FakeHostVerbs::Mr *m = verbs.mr_by_lkey(k)) {
                return m->mr.lkey;
            }
        }
        ADD_FAILURE() << "no host MR";
        return 0;
    }

    uint32_t pd = 0, cq = 0, qpn = 0;
    FakeHostVerbs::Qp *host = nullptr;
    MrInfo buf;
    uint32_t host_lkey = 0;
};

TEST_F(IbPost, SendTranslatesLkeys)
{
    a->post_send(qpn, SendWr{}
                          .op(VIRTIO_RDMA_WR_SEND)
                          .id(0x77)
                          .flags(VIRTIO_RDMA_SEND_SIGNALED)
                          .sge(buf.addr, 100, buf.lkey)
                          .sge(buf.addr + 4096, 200, buf.lkey));
    ASSERT_EQ(host->sends.size(), 1u);
    const PostedSend &s = host->sends[0];
    EXPECT_EQ(s.wr.wr_id, 0x77u);
    EXPECT_EQ(s.wr.opcode, IBV_WR_SEND);
    EXPECT_EQ(s.wr.send_flags, unsigned{IBV_SEND_SIGNALED});
    ASSERT_EQ(s.sge.size(), 2u);
    EXPECT_EQ(s.sge[0].lkey, host_lkey) << "the host MR's key, not the guest's";
    EXPECT_EQ(s.sge[0].addr, buf.addr) << "MRs are at the guest's IOVA";
    EXPECT_EQ(s.sge[0].length, 100u);
    EXPECT_EQ(s.sge[1].addr, buf.addr + 4096);
    EXPECT_EQ(s.sge[1].length, 200u);
    EXPECT_TRUE(a->cq(cq).empty()) << "the host completes it";
}

TEST_F(IbPost, RdmaWriteCarriesTheRemoteAddressAndKey)
{
    a->post_send(qpn, SendWr{}
                          .op(VIRTIO_RDMA_WR_RDMA_WRITE)
                          .id(1)
                          .sge(buf.addr, 64, buf.lkey)
                          .rdma(0x123456789000ull, 0xabcdef01));
    ASSERT_EQ(host->sends.size(), 1u);
    EXPECT_EQ(host->sends[0].wr.opcode, IBV_WR_RDMA_WRITE);
    EXPECT_EQ(host->sends[0].wr.wr.rdma.remote_addr, 0x123456789000ull);
    EXPECT_EQ(host->sends[0].wr.wr.rdma.rkey, 0xabcdef01u);
}

TEST_F(IbPost, RecvTranslatesLkeys)
{
    a->post_recv(qpn, 0x55, {{buf.addr + 8, 1000, buf.lkey}});
    ASSERT_EQ(host->recvs.size(), 1u);
    EXPECT_EQ(host->recvs[0].wr.wr_id, 0x55u);
    ASSERT_EQ(host->recvs[0].sge.size(), 1u);
    EXPECT_EQ(host->recvs[0].sge[0].lkey, host_lkey);
    EXPECT_EQ(host->recvs[0].sge[0].addr, buf.addr + 8);
    EXPECT_EQ(host->recvs[0].sge[0].length, 1000u);
}

TEST_F(IbPost, AnotherPdsLkeyIsALocalProtectionError)
{
    const uint32_t pd2 = a->create_pd();
    const MrInfo other = a->reg_mr(pd2, a->alloc(4096), 4096, kAllAccess);
    a->post_send(qpn, SendWr{}
                          .op(VIRTIO_RDMA_WR_SEND)
                          .id(9)
                          .flags(VIRTIO_RDMA_SEND_SIGNALED)
                          .sge(other.addr, 16, other.lkey));
    EXPECT_TRUE(host->sends.empty()) << "never reaches the host";
    ASSERT_EQ(a->cq_size(cq), 1u);
    const virtio_rdma_cq_req c = a->pop_cqe(cq);
    EXPECT_EQ(c.wr_id, 9u);
    EXPECT_EQ(c.status, uint32_t{VIRTIO_RDMA_WC_LOC_PROT_ERR});
    EXPECT_EQ(c.qp_num, a->wire_qpn(qpn));
    /* An error completion of a request the QP took: the QP is in ERR. */
    EXPECT_EQ(a->qp_state(qpn), uint32_t{VIRTIO_RDMA_QPS_ERR});
    EXPECT_EQ(host->qp.state, IBV_QPS_ERR) << "the host flushes the rest";
}

TEST_F(IbPost, UnknownLkeyOnARecvIsALocalProtectionError)
{
    a->post_recv(qpn, 0x66, {{buf.addr, 64, buf.lkey ^ 0x100}});
    EXPECT_TRUE(host->recvs.empty());
    ASSERT_EQ(a->cq_size(cq), 1u);
    const virtio_rdma_cq_req c = a->pop_cqe(cq);
    EXPECT_EQ(c.wr_id, 0x66u);
    EXPECT_EQ(c.status, uint32_t{VIRTIO_RDMA_WC_LOC_PROT_ERR});
    EXPECT_EQ(c.opcode, uint32_t{VIRTIO_RDMA_WC_RECV});
}

TEST_F(IbPost, RefusedHostSendIsAnErrorCompletionOfTheQp)
{
    verbs.refuse(Verb::kPostSend, ENOMEM);
    a->post_send(qpn, SendWr{}
                          .op(VIRTIO_RDMA_WR_SEND)
                          .id(0x31)
                          .sge(buf.addr, 16, buf.lkey));
    EXPECT_TRUE(host->sends.empty());
    ASSERT_EQ(a->cq_size(cq), 1u);
    const virtio_rdma_cq_req c = a->pop_cqe(cq);
    EXPECT_EQ(c.wr_id, 0x31u);
    EXPECT_EQ(c.status, uint32_t{VIRTIO_RDMA_WC_LOC_QP_OP_ERR});
    /* The QP took it and cannot execute it: as any failed request, ERR. */
    EXPECT_EQ(a->qp_state(qpn), uint32_t{VIRTIO_RDMA_QPS_ERR});
    EXPECT_EQ(host->qp.state, IBV_QPS_ERR) << "the host flushes the rest";
    /* The next one flushes: no later request overtakes the failed one. */
    a->post_send(qpn, SendWr{}.op(VIRTIO_RDMA_WR_SEND).id(0x32).sge(
                          buf.addr, 16, buf.lkey));
    EXPECT_TRUE(host->sends.empty());
    ASSERT_EQ(a->cq_size(cq), 1u);
    EXPECT_EQ(a->pop_cqe(cq).status, uint32_t{VIRTIO_RDMA_WC_WR_FLUSH_ERR});
}

TEST_F(IbPost, RefusedHostRecvIsAnErrorCompletionOfTheQp)
{
    verbs.refuse(Verb::kPostRecv, ENOMEM);
    a->post_recv(qpn, 0x41, {{buf.addr, 64, buf.lkey}});
    EXPECT_TRUE(host->recvs.empty());
    ASSERT_EQ(a->cq_size(cq), 1u);
    const virtio_rdma_cq_req c = a->pop_cqe(cq);
    EXPECT_EQ(c.wr_id, 0x41u);
    EXPECT_EQ(c.status, uint32_t{VIRTIO_RDMA_WC_LOC_QP_OP_ERR});
    EXPECT_EQ(c.opcode, uint32_t{VIRTIO_RDMA_WC_RECV});
    EXPECT_EQ(a->qp_state(qpn), uint32_t{VIRTIO_RDMA_QPS_ERR});
    EXPECT_EQ(host->qp.state, IBV_QPS_ERR);
    a->post_recv(qpn, 0x42, {{buf.addr, 64, buf.lkey}});
    EXPECT_TRUE(host->recvs.empty());
    ASSERT_EQ(a->cq_size(cq), 1u);
    EXPECT_EQ(a->pop_cqe(cq).status, uint32_t{VIRTIO_RDMA_WC_WR_FLUSH_ERR});
}

TEST_F(IbPost, FastRegistrationIsNotForTheHost)
{
    a->post_send(qpn, SendWr{}.op(VIRTIO_RDMA_WR_LOCAL_INV).id(3).inv(
                          0x1234));
    EXPECT_TRUE(host->sends.empty());
    ASSERT_EQ(a->cq_size(cq), 1u);
    EXPECT_EQ(a->pop_cqe(cq).status, uint32_t{VIRTIO_RDMA_WC_LOC_QP_OP_ERR});
}

} // namespace
} // namespace vrdma_test

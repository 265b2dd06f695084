/*
 * The ibverbs backend's objects: each guest PD, CQ, QP, MR and SRQ is one
 * host object, made with the guest's attributes and ended with it; a host
 * refusal is the guest's refusal, with nothing changed on either side.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <cerrno>

#include "ib_fixture.h"

namespace vrdma_test {
namespace {

class IbObjects : public IbTest {
protected:
    /* What a refused command must leave alone: the guest's and the host's. */
    struct Counts {
        uint32_t pds, cqs, qps, mrs;
        size_t host_pds, host_cqs, host_qps, host_mrs, host_srqs;
        uint64_t live_maps;
        bool operator==(const Counts &) const = default;
    };

    Counts counts()
    {
        VrdmaStats st{};
        vrdma_core_get_stats(a->core, &st);
        return Counts{st.pds, st.cqs, st.qps, st.mrs,
                      verbs.pds(), verbs.cqs(), verbs.qps(), verbs.mrs(),
                      verbs.srqs(), a->guest.live_maps()};
    }

    /*
     * @cmd (@req) while the host refuses @v with @err: the guest is
     * refused with @want, and nothing changed.
     */
    template <typename Req>
    void expect_host_refusal(Verb v, int err, uint8_t cmd, const Req &req,
                             VrdmaErr want)
    {
        expect_host_refusal(v, err, cmd, &req, sizeof(req), want);
    }
    void expect_host_refusal(Verb v, int err, uint8_t cmd, const void *req,
                             size_t len, VrdmaErr want)
    {
        const Counts before = counts();
        const size_t errors = a->errors.size();
        const unsigned tried = verbs.calls(v);
        verbs.refuse(v, err);
        errno = EAGAIN; /* stale: what an earlier call left there */
        uint8_t rsp[VRDMA_CTRL_RSP_MAX];
        EXPECT_NE(a->ctrl_raw(cmd, req, len, rsp, sizeof(rsp)),
                  VIRTIO_RDMA_OK);
        EXPECT_EQ(verbs.calls(v), tried + 1) << "the host was asked";
        ASSERT_EQ(a->errors.size(), errors + 1);
        EXPECT_EQ(a->errors.back().err, want)
            << "got " << vrdma_err_name(a->errors.back().err) << ", want "
            << vrdma_err_name(want) << " (" << a->errors.back().field << ")";
        EXPECT_EQ(counts(), before) << "a host refusal changed something";
    }

    virtio_rdma_cmd_create_cq_ring cq_cmd(uint32_t cqe = 16)
    {
        const RingMem m = RingMem::make(*a, 4, VIRTIO_RDMA_CQE_LOG_STRIDE);
        return virtio_rdma_cmd_create_cq_ring{.ctx = 0, .cqe = cqe,
                                              .ring = m.desc};
    }

    virtio_rdma_cmd_create_qp_ring qp_cmd(uint32_t pd, uint32_t cq)
    {
        virtio_rdma_cmd_create_qp_ring r{};
        r.qp = qp_request(pd, VIRTIO_RDMA_QPT_RC, cq, cq, 3, 4);
        r.ctx = 0;
        r.sq = RingMem::make(*a, 3, 8).desc;
        r.rq = RingMem::make(*a, 3, 8).desc;
        return r;
    }
};

TEST_F(IbObjects, PdCqQpMirroredOnTheHost)
{
    const uint32_t pd = a->create_pd();
    const uint32_t cq = a->create_cq(64);
    EXPECT_EQ(verbs.pds(ctx_a), 1u);
    ASSERT_EQ(verbs.cqs(ctx_a), 1u);
    FakeHostVerbs::Cq &hcq = *verbs.cqs_of(ctx_a)[0];
    EXPECT_EQ(hcq.cq.cqe, 64);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(hcq.cq.cq_context), cq)
        << "the CQN rides in cq_context";
    EXPECT_EQ(hcq.cq.channel, &verbs.channel_of(ctx_a)->ch);
    EXPECT_TRUE(hcq.armed) << "armed at creation";

    const uint32_t qpn = a->create_qp(qp_request(pd, VIRTIO_RDMA_QPT_UC, cq,
                                                 cq, 3, 2));
    ASSERT_EQ(verbs.qps(ctx_a), 1u);
    FakeHostVerbs::Qp &hqp = *verbs.qps_of(ctx_a)[0];
    EXPECT_EQ(hqp.init.qp_type, IBV_QPT_UC);
    EXPECT_EQ(hqp.init.cap.max_send_wr, 8u);
    EXPECT_EQ(hqp.init.cap.max_recv_wr, 8u);
    EXPECT_EQ(hqp.init.cap.max_send_sge, 2u);
    EXPECT_EQ(hqp.init.send_cq, &hcq.cq);
    EXPECT_EQ(hqp.init.recv_cq, &hcq.cq);
    EXPECT_EQ(a->wire_qpn(qpn), hqp.qp.qp_num)
        << "the guest's wire QPN is the host's";

    EXPECT_EQ(a->destroy_qp(qpn), VIRTIO_RDMA_OK);
    EXPECT_EQ(verbs.qps(), 0u);
    EXPECT_EQ(a->ctrl(VIRTIO_RDMA_CMD_DESTROY_CQ,
                      virtio_rdma_cmd_destroy_cq{.cqn = cq}),
              VIRTIO_RDMA_OK);
    EXPECT_EQ(verbs.cqs(), 0u);
    EXPECT_EQ(a->ctrl(VIRTIO_RDMA_CMD_DESTROY_PD,
                      virtio_rdma_cmd_destroy_pd{.pdn = pd}),
              VIRTIO_RDMA_OK);
    EXPECT_EQ(verbs.pds(), 0u);
}

TEST_F(IbObjects, MrRegisteredAtTheGuestsIova)
{
    const uint32_t pd = a->create_pd();
    const uint64_t addr = a->alloc(3 * 4096);
    const MrInfo mr = a->reg_mr(pd, addr + 100, 2 * 4096,
                                VIRTIO_RDMA_ACCESS_LOCAL_WRITE |
                                    VIRTIO_RDMA_ACCESS_REMOTE_WRITE);
    ASSERT_EQ(verbs.mrs(ctx_a), 1u);
    FakeHostVerbs::Mr *h = nullptr;
    for (uint32_t k = 0; k < 0x1000 && !h; k++) {
        h = verbs.mr_by_lkey(0x100 + k);
    }
    ASSERT_NE(h, nullptr);
    EXPECT_EQ(h->iova, addr + 100);
    EXPECT_EQ(h->mr.length, 2u * 4096);
    EXPECT_EQ(h->access, unsigned{IBV_ACCESS_LOCAL_WRITE |
                                  IBV_ACCESS_REMOTE_WRITE});
    EXPECT_EQ(mr.rkey, h->mr.rkey) << "peers use the host's rkey";
    /* The window is a second mapping of the guest's pages. */
    std::memcpy(a->mem(addr + 100, 8), "guestmem", 8);
    EXPECT_EQ(std::memcmp(h->mr.addr, "guestmem", 8), 0);
    EXPECT_EQ(a->dereg_mr(mr.mrn), VIRTIO_RDMA_OK);
    EXPECT_EQ(verbs.mrs(), 0u);
}

TEST_F(IbObjects, LocalOnlyMrHasNoRkey)
{
    const uint32_t pd = a->create_pd();
    const MrInfo mr = a->reg_mr(pd, a->alloc(4096), 4096,
                                VIRTIO_RDMA_ACCESS_LOCAL_WRITE);
    EXPECT_EQ(mr.rkey, 0u);
    EXPECT_EQ(verbs.mrs(ctx_a), 1u);
}

TEST_F(IbObjects, RefusedDeregKeepsTheMr)
{
    const uint32_t pd = a->create_pd();
    const MrInfo mr = a->reg_mr(pd, a->alloc(4096), 4096,
                                VIRTIO_RDMA_ACCESS_LOCAL_WRITE |
                                    VIRTIO_RDMA_ACCESS_REMOTE_READ);
    verbs.refuse(Verb::kDeregMr, EBUSY);
    EXPECT_NE(a->dereg_mr(mr.mrn), VIRTIO_RDMA_OK)
        << "its rkey still works for peers: the guest's MR stays";
    ASSERT_FALSE(a->errors.empty());
    EXPECT_EQ(a->errors.back().err, VRDMA_ERR_HOST);
    EXPECT_EQ(verbs.mrs(ctx_a), 1u);
    EXPECT_EQ(a->dereg_mr(mr.mrn), VIRTIO_RDMA_OK);
    EXPECT_EQ(verbs.mrs(), 0u);
}

TEST_F(IbObjects, SrqMirroredWithItsLimit)
{
    const uint32_t pd = a->create_pd();
    RingSrq srq(*a, 0, pd, 3, 2, 3);
    ASSERT_EQ(verbs.srqs(ctx_a), 1u);
    EXPECT_EQ(verbs.calls(Verb::kModifySrq), 1u) << "the limit armed";
    virtio_rdma_cmd_destroy_srq d{};
    d.srqn = srq.srqn;
    EXPECT_EQ(a->ctrl(VIRTIO_RDMA_CMD_DESTROY_SRQ, d), VIRTIO_RDMA_OK);
    EXPECT_EQ(verbs.srqs(), 0u);
}

/*
 * Regression: cq_created read errno after ibv_req_notify_cq failed, but
 * req_notify returns its errno and leaves errno alone: the guest got
 * whatever an earlier call had left there (here EAGAIN, a HOST error)
 * instead of the host's ENOMEM.
 */
TEST_F(IbObjects, HostRefusalsChangeNothing)
{
    expect_host_refusal(Verb::kAllocPd, ENOMEM, VIRTIO_RDMA_CMD_CREATE_PD,
                        nullptr, 0, VRDMA_ERR_TABLE_FULL);
    const uint32_t pd = a->create_pd();
    expect_host_refusal(Verb::kCreateCq, EINVAL,
                        VIRTIO_RDMA_CMD_CREATE_CQ_RING, cq_cmd(),
                        VRDMA_ERR_BAD_ARG);
    expect_host_refusal(Verb::kReqNotifyCq, ENOMEM,
                        VIRTIO_RDMA_CMD_CREATE_CQ_RING, cq_cmd(),
                        VRDMA_ERR_TABLE_FULL);
    const uint32_t cq = a->create_cq(16);
    expect_host_refusal(Verb::kCreateQp, ENOSPC,
                        VIRTIO_RDMA_CMD_CREATE_QP_RING, qp_cmd(pd, cq),
                        VRDMA_ERR_TABLE_FULL);
    virtio_rdma_cmd_create_srq_ring s{.ctx = 0, .pdn = pd, .max_wr = 8,
                                      .max_sge = 2, .srq_limit = 0,
                                      .reserved = 0,
                                      .ring = RingMem::make(*a, 3, 7).desc};
    expect_host_refusal(Verb::kCreateSrq, EOPNOTSUPP,
                        VIRTIO_RDMA_CMD_CREATE_SRQ_RING, s,
                        VRDMA_ERR_UNSUPPORTED);
    s.srq_limit = 2;
    expect_host_refusal(Verb::kModifySrq, EINVAL,
                        VIRTIO_RDMA_CMD_CREATE_SRQ_RING, s,
                        VRDMA_ERR_BAD_ARG);
    EXPECT_EQ(verbs.srqs(), 0u) << "the SRQ whose limit failed is gone";
}

TEST_F(IbObjects, RefusedMrRegistrationUnmapsItsWindow)
{
    const uint32_t pd = a->create_pd();
    const uint64_t addr = a->alloc(2 * 4096);
    uint32_t npages = 0;
    virtio_rdma_cmd_reg_user_mr r{};
    r.pdn = pd;
    r.access_flags = VIRTIO_RDMA_ACCESS_LOCAL_WRITE;
    r.start = addr;
    r.length = 2 * 4096;
    r.virt_addr = addr;
    r.pages = a->page_table(addr, 2 * 4096, &npages);
    r.npages = npages;
    expect_host_refusal(Verb::kRegMr, ENOMEM, VIRTIO_RDMA_CMD_REG_USER_MR, r,
                        VRDMA_ERR_TABLE_FULL);
    EXPECT_EQ(ib_stats(*a).map_runs, 0u) << "the window went with it";
}

} // namespace
} // namespace vrdma_test

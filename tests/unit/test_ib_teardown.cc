/*
 * The ibverbs backend's end: a reset ends every host object the guest
 * made (QPs first, then SRQs, MRs, CQs, PDs, as the host needs), and the
 * core's end closes the device too -- the fake device asserts that nothing
 * is left open (IbTest::TearDown) and that no object went before what
 * used it (its EBUSY refusals, counted as none here).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "ib_fixture.h"

namespace vrdma_test {
namespace {

class IbTeardown : public IbTest {
protected:
    /* One of everything, a QP in RTS with work posted. */
    void populate()
    {
        own_gid(*a, 0);
        const uint32_t pd = a->create_pd();
        const uint32_t cq = a->create_cq(64);
        srq = std::make_unique<RingSrq>(*a, 0, pd, 3, 2, 1);
        const uint32_t qpn = rc_up(*a, pd, cq);
        const MrInfo mr = a->reg_mr(pd, a->alloc(8192), 8192, kAllAccess);
        a->post_send(qpn, SendWr{}.op(VIRTIO_RDMA_WR_SEND).id(1).sge(
                              mr.addr, 64, mr.lkey));
        a->post_recv(qpn, 2, {{mr.addr, 64, mr.lkey}});
        verbs.complete_qp(*verbs.qp(a->wire_qpn(qpn)), true, 1,
                          IBV_WC_SUCCESS, IBV_WC_SEND);
        ASSERT_EQ(verbs.pds(ctx_a), 1u);
        ASSERT_EQ(verbs.cqs(ctx_a), 1u);
        ASSERT_EQ(verbs.qps(ctx_a), 1u);
        ASSERT_EQ(verbs.mrs(ctx_a), 1u);
        ASSERT_EQ(verbs.srqs(ctx_a), 1u);
    }

    size_t objects() const
    {
        return verbs.pds() + verbs.cqs() + verbs.qps() + verbs.mrs() +
               verbs.srqs() + verbs.ahs();
    }

    std::unique_ptr<RingSrq> srq;
};

TEST_F(IbTeardown, ResetEndsEveryHostObject)
{
    populate();
    const uint64_t maps = a->guest.live_maps();
    a->reset();
    EXPECT_EQ(objects(), 0u) << verbs.leaks();
    EXPECT_EQ(verbs.contexts(), 1u) << "the device stays open";
    EXPECT_EQ(verbs.channels(), 1u);
    EXPECT_LT(a->guest.live_maps(), maps);
    const VrdmaIbStats st = ib_stats(*a);
    EXPECT_EQ(st.graveyard, 0u);
    EXPECT_EQ(st.map_runs, 0u);
    EXPECT_EQ(verbs.calls(Verb::kDestroyCq) + verbs.calls(Verb::kDeallocPd),
              2u) << "each once: nothing was destroyed before its users";
}

TEST_F(IbTeardown, TheCoreAfterAResetWorksAgain)
{
    populate();
    a->reset();
    /* Management took the guest's address off the host when it went. */
    verbs.remove_gid(a->gid);
    own_gid(*a, 1);
    const uint32_t pd = a->create_pd();
    const uint32_t cq = a->create_cq(16);
    rc_up(*a, pd, cq);
    EXPECT_EQ(verbs.qps(ctx_a), 1u);
}

TEST_F(IbTeardown, FreeWithEverythingOpenClosesTheDevice)
{
    populate();
    a.reset();
    EXPECT_EQ(verbs.live(), 0u) << verbs.leaks();
}

TEST_F(IbTeardown, EndStopsWatchingAndEndsTheObjects)
{
    populate();
    vrdma_core_end(a->core);
    EXPECT_TRUE(a->fd_watches.empty());
    EXPECT_EQ(objects(), 0u) << verbs.leaks();
}

} // namespace
} // namespace vrdma_test

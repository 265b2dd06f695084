/*
 * Test fixture of the ibverbs backend (hw/rdma/virtio/core/ib/): cores on
 * a fake host device (fake_host_verbs.h), each a Node (dp_harness.h)
 * without a wire, driven through its rings as a guest driver drives them.
 * The fixture's host device is shared: a second core (tenant()) is another
 * tenant of it.  Every test ends with nothing left open on the host and no
 * rule of the device broken.
 *
 * The host's loop is the test: host_completions() and host_async() say
 * the completion channel or the async-event fd of a core is readable.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef TESTS_UNIT_IB_FIXTURE_H
#define TESTS_UNIT_IB_FIXTURE_H

#include <memory>
#include <string>

#include "dp_harness.h"
#include "fake_host_verbs.h"
#include "hw/rdma/virtio-rdma-ibverbs.h"
#include "ring_driver.h"

namespace vrdma_test {

/* A core on host device @dev, port @port of @verbs; its refusal in *@err. */
inline Node::CoreMaker ib_core(FakeHostVerbs &verbs,
                               const std::string &dev = "fake0",
                               unsigned port = 1, std::string *err = nullptr)
{
    return [&verbs, dev, port, err](const VrdmaLimits &lim,
                                    const VrdmaHostOps &ops) {
        char why[256] = "";
        VrdmaCore *c = vrdma::ib::core_new(verbs, &lim, &ops, dev.c_str(),
                                           port, why, sizeof(why));
        if (err) {
            *err = why;
        }
        return c;
    };
}

class IbTest : public ::testing::Test {
protected:
    void SetUp() override
    {
        a = tenant(0, &ctx_a);
        ASSERT_NE(a->core, nullptr);
    }

    void TearDown() override
    {
        b.reset();
        a.reset();
        EXPECT_EQ(verbs.live(), 0u) << "left open on the host: "
                                    << verbs.leaks();
        for (const std::string &v : verbs.violations) {
            ADD_FAILURE() << "host rule broken: " << v;
        }
    }

    /* Another core on the fixture's host device; *@ctx its context. */
    std::unique_ptr<Node> tenant(int id, ibv_context **ctx)
    {
        auto n = std::make_unique<Node>(nullptr, id, dp_limits(),
                                        ib_core(verbs));
        *ctx = n->core ? verbs.last_context() : nullptr;
        return n;
    }

    /* The host's loop: @n's completion channel is readable. */
    void host_completions(Node &n, ibv_context *ctx)
    {
        FakeHostVerbs::Channel *ch = verbs.channel_of(ctx);
        ASSERT_NE(ch, nullptr);
        ASSERT_TRUE(n.fd_ready(ch->ch.fd)) << "the channel is not watched";
    }
    /* ... and its async-event fd. */
    void host_async(Node &n, ibv_context *ctx)
    {
        ASSERT_TRUE(n.fd_ready(ctx->async_fd)) << "async fd not watched";
    }

    /*
     * GID 0 of @n, its own address: the guest adds it, then management
     * puts it in the host's table at @host_index (the guest may not add
     * one the host has already).
     */
    void own_gid(Node &n, uint32_t host_index)
    {
        n.add_gid(0, n.gid);
        verbs.add_gid(n.gid, host_index);
    }

    /* An RC QP of @n on @pd and @cq, in RTS towards QP 0x99 of @n's GID. */
    uint32_t rc_up(Node &n, uint32_t pd, uint32_t cq)
    {
        const uint32_t qpn = n.create_qp(pd, VIRTIO_RDMA_QPT_RC, cq, cq);
        virtio_rdma_qp_attr a{};
        a.qp_state = VIRTIO_RDMA_QPS_INIT;
        a.port_num = 1;
        a.qp_access_flags = VIRTIO_RDMA_ACCESS_LOCAL_WRITE;
        EXPECT_EQ(n.modify(qpn, VIRTIO_RDMA_QP_STATE |
                                    VIRTIO_RDMA_QP_PKEY_INDEX |
                                    VIRTIO_RDMA_QP_PORT |
                                    VIRTIO_RDMA_QP_ACCESS_FLAGS,
                           a),
                  VIRTIO_RDMA_OK);
        a = rtr_attrs(n);
        EXPECT_EQ(n.modify(qpn, kRtrMask, a), VIRTIO_RDMA_OK);
        a.qp_state = VIRTIO_RDMA_QPS_RTS;
        a.sq_psn = 0x222;
        a.timeout = 14;
        a.retry_cnt = 7;
        a.rnr_retry = 7;
        a.max_rd_atomic = 1;
        EXPECT_EQ(n.modify(qpn, VIRTIO_RDMA_QP_STATE | VIRTIO_RDMA_QP_SQ_PSN |
                                    VIRTIO_RDMA_QP_TIMEOUT |
                                    VIRTIO_RDMA_QP_RETRY_CNT |
                                    VIRTIO_RDMA_QP_RNR_RETRY |
                                    VIRTIO_RDMA_QP_MAX_QP_RD_ATOMIC,
                           a),
                  VIRTIO_RDMA_OK);
        return qpn;
    }

    static constexpr uint32_t kRtrMask =
        VIRTIO_RDMA_QP_STATE | VIRTIO_RDMA_QP_AV | VIRTIO_RDMA_QP_PATH_MTU |
        VIRTIO_RDMA_QP_DEST_QPN | VIRTIO_RDMA_QP_RQ_PSN |
        VIRTIO_RDMA_QP_MAX_DEST_RD_ATOMIC | VIRTIO_RDMA_QP_MIN_RNR_TIMER;

    /* INIT -> RTR of an RC QP towards QP 0x99 at @n's own GID 0. */
    static virtio_rdma_qp_attr rtr_attrs(const Node &n)
    {
        virtio_rdma_qp_attr a{};
        a.qp_state = VIRTIO_RDMA_QPS_RTR;
        a.path_mtu = VIRTIO_RDMA_MTU_1024;
        a.dest_qp_num = 0x99;
        a.rq_psn = 0x111;
        a.max_dest_rd_atomic = 1;
        a.min_rnr_timer = 12;
        a.ah_attr.ah_flags = VIRTIO_RDMA_AH_GRH;
        a.ah_attr.port_num = 1;
        a.ah_attr.grh.sgid_index = 0;
        a.ah_attr.grh.hop_limit = 64;
        std::memcpy(a.ah_attr.grh.dgid, n.gid.data(), 16);
        std::memcpy(a.ah_attr.dmac, n.mac.data(), 6);
        return a;
    }

    VrdmaIbStats ib_stats(const Node &n) const
    {
        VrdmaIbStats st{};
        EXPECT_TRUE(vrdma_core_ib_stats(n.core, &st));
        return st;
    }

    /* The fake is declared first: it outlives the cores on it. */
    FakeHostVerbs verbs;
    std::unique_ptr<Node> a, b;
    ibv_context *ctx_a = nullptr, *ctx_b = nullptr;
};

} // namespace vrdma_test

#endif

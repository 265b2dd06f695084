/*
 * QP and CQ numbers: CREATE_QP_RING and CREATE_CQ_RING number them up to
 * VrdmaLimits.max_qp / max_cq, which the config says as max_ring_qp /
 * max_ring_cq (the virtqueue path's max_qp / max_cq fields are 0).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "ring_fixture.h"

namespace vrdma_test {
namespace {

constexpr uint32_t kRingQps = 1200; /* dp_limits' max_qp is 16 */
constexpr uint32_t kRingCqs = 300;  /* and max_cq 8 */

VrdmaLimits ring_limits()
{
    VrdmaLimits lim = dp_limits();
    lim.max_qp = kRingQps;
    lim.max_cq = kRingCqs;
    return lim;
}

class RingNumbers : public ::testing::Test {
protected:
    Wire wire{777};
};

TEST_F(RingNumbers, ConfigSaysBothSpaces)
{
    Node n(&wire, 0, ring_limits());
    virtio_rdma_config cfg{};
    vrdma_core_get_config(n.core, &cfg);
    /* packed: copies */
    const uint32_t old_qp = cfg.reserved_max_qp, old_cq = cfg.reserved_max_cq;
    const uint32_t ring_qp = cfg.max_ring_qp, ring_cq = cfg.max_ring_cq;
    EXPECT_EQ(old_qp, 0u);
    EXPECT_EQ(old_cq, 0u);
    EXPECT_EQ(ring_qp, kRingQps);
    EXPECT_EQ(ring_cq, kRingCqs);
    /* dp_limits' own. */
    Node d(&wire, 1);
    vrdma_core_get_config(d.core, &cfg);
    const uint32_t same_qp = cfg.max_ring_qp, same_cq = cfg.max_ring_cq;
    EXPECT_EQ(same_qp, 16u);
    EXPECT_EQ(same_cq, 8u);
}

TEST_F(RingNumbers, RingObjectsGoBeyondTheVirtqueues)
{
    Node n(&wire, 0, ring_limits());
    n.set_features(kRingFeatures);
    const uint32_t pd = n.create_pd();
    std::vector<std::unique_ptr<RingCq>> cqs;
    for (uint32_t i = 0; i < kRingCqs; i++) {
        cqs.push_back(std::make_unique<RingCq>(n, 0, 1, 0));
        ASSERT_EQ(cqs.back()->cqn, i);
    }
    /* One more than the space. */
    const RingMem m = RingMem::make(n, 0, 6);
    virtio_rdma_rsp_create_cq crsp{};
    EXPECT_EQ(n.ctrl(VIRTIO_RDMA_CMD_CREATE_CQ_RING,
                     virtio_rdma_cmd_create_cq_ring{.ctx = 0, .cqe = 1,
                                                    .ring = m.desc},
                     &crsp),
              VIRTIO_RDMA_ENOMEM);
    EXPECT_EQ(n.errors.back().field, "cqn");

    /* QPs 2..kRingQps-1 (0 unused, 1 the GSI QP's), on the last CQ. */
    std::vector<std::unique_ptr<RingQp>> qps;
    uint32_t highest = 0;
    for (uint32_t i = 2; i < kRingQps; i++) {
        qps.push_back(std::make_unique<RingQp>(n, 0, pd, VIRTIO_RDMA_QPT_RC,
                                               *cqs.back(), *cqs.back(), 0, 1));
        ASSERT_NE(qps.back()->qpn, UINT32_MAX) << i;
        highest = std::max(highest, qps.back()->qpn);
    }
    EXPECT_EQ(highest, kRingQps - 1);
    virtio_rdma_cmd_create_qp_ring r{};
    r.qp.pdn = pd;
    r.qp.qp_type = VIRTIO_RDMA_QPT_RC;
    r.qp.max_send_wr = 1;
    r.qp.send_cqn = r.qp.recv_cqn = cqs.back()->cqn;
    r.sq = RingMem::make(n, 0, 7).desc;
    virtio_rdma_rsp_create_qp_wire qrsp{};
    EXPECT_EQ(n.ctrl(VIRTIO_RDMA_CMD_CREATE_QP_RING, r, &qrsp),
              VIRTIO_RDMA_ENOMEM);
    EXPECT_EQ(n.errors.back().field, "qpn");
    EXPECT_EQ(n.errors.back().a, kRingQps);
}

TEST_F(RingNumbers, TrafficOnAQpNumberedBeyondMaxQp)
{
    Node a(&wire, 0, ring_limits()), b(&wire, 1, ring_limits());
    for (Node *n : {&a, &b}) {
        n->set_features(kRingFeatures);
        n->add_gid(0, n->gid);
    }
    const uint32_t pa = a.create_pd(), pb = b.create_pd();
    RingCq ca(a, 0, 8, 3), cb(b, 0, 8, 3);
    /* Fill the low numbers so the pair's are high. */
    std::vector<std::unique_ptr<RingQp>> filler;
    for (int i = 0; i < 100; i++) {
        filler.push_back(std::make_unique<RingQp>(a, 0, pa, VIRTIO_RDMA_QPT_RC,
                                                  ca, ca, 0, 1));
    }
    RingQp qa(a, 0, pa, VIRTIO_RDMA_QPT_RC, ca, ca, 2);
    RingQp qb(b, 0, pb, VIRTIO_RDMA_QPT_RC, cb, cb, 2);
    ASSERT_NE(qa.qpn, UINT32_MAX);
    ASSERT_GE(qa.qpn, 16u) << "the pair's QP should be beyond max_qp";
    DpTest::connect_pair(a, qa.qpn, b, qb.qpn, VIRTIO_RDMA_QPT_RC, Conn{}, true);
    DpTest::connect_pair(b, qb.qpn, a, qa.qpn, VIRTIO_RDMA_QPT_RC, Conn{},
                         false);
    const MrInfo src = a.reg_mr(pa, a.alloc(4096), 4096, kAllAccess);
    const MrInfo dst = b.reg_mr(pb, b.alloc(4096), 4096, kAllAccess);
    a.fill(src.addr, 1000, 9);
    qb.post_recv(7, {{dst.addr, 4096, dst.lkey}});
    ASSERT_TRUE(qa.post_send(SendWr{}.op(VIRTIO_RDMA_WR_SEND).id(8)
                                 .flags(kSignaled)
                                 .sge(src.addr, 1000, src.lkey)));
    for (int i = 0; i < 8; i++) {
        rings_drain(a);
        rings_drain(b);
        ASSERT_TRUE(wire.pump());
    }
    const auto s = ca.poll();
    ASSERT_TRUE(s);
    EXPECT_EQ(s->wr_id, 8u);
    EXPECT_EQ(s->status, VIRTIO_RDMA_WC_SUCCESS);
    const auto r = cb.poll();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->wr_id, 7u);
    EXPECT_EQ(r->byte_len, 1000u);
    EXPECT_TRUE(b.check(dst.addr, 1000, 9));
}

} // namespace
} // namespace vrdma_test

/*
 * Wire QP numbers (VIRTIO_RDMA_F_WIRE_QPN): the wire QPN -> queue index
 * table, what CREATE_QP_RING answers with and without the feature, and the
 * data path addressing peers by wire QPN.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <map>
#include <random>
#include <set>

#include "core_fixture.h"
#include "dp_harness.h"
#include "roce/frame.h"
#include "test_roce_util.h"
#include "wire_qpn.h"

namespace vrdma_test {
namespace {

using vrdma::Rng;
using vrdma::WireQpnTable;

constexpr uint64_t kWireFeature = 1ull << VIRTIO_RDMA_F_WIRE_QPN;
/* The rings data path without wire QPNs. */
constexpr uint64_t kRingsOnly = kRingFeatures & ~kWireFeature;

/* ---- the table ---- */

TEST(WireQpnTable, InsertFindRelease)
{
    WireQpnTable t(8);
    EXPECT_EQ(t.capacity(), 16u) << "twice max_qp, a power of two";
    EXPECT_FALSE(t.find(5));
    t.insert(5, 2);
    t.insert(0xABCDEF, 3);
    EXPECT_EQ(t.find(5), 2u);
    EXPECT_EQ(t.find(0xABCDEF), 3u);
    EXPECT_FALSE(t.find(0)) << "0 is never a wire QPN";
    EXPECT_EQ(t.live(), 2u);
    t.release(5);
    EXPECT_FALSE(t.find(5));
    EXPECT_EQ(t.find(0xABCDEF), 3u);
    EXPECT_TRUE(t.recently_freed(5));
    EXPECT_FALSE(t.recently_freed(0xABCDEF));
    t.clear();
    EXPECT_FALSE(t.find(0xABCDEF));
    EXPECT_EQ(t.live(), 0u);
    EXPECT_TRUE(t.recently_freed(5)) << "clear keeps what was freed";
}

/*
 * Random inserts and releases at full load (max_qp live), against a
 * std::map: clusters form and are cut in the middle, which the backward
 * shift of release() must repair without losing an entry.
 */
TEST(WireQpnTable, MatchesAMapUnderChurn)
{
    for (uint32_t max_qp : {2u, 3u, 8u, 64u, 1000u}) {
        WireQpnTable t(max_qp);
        std::map<uint32_t, uint32_t> ref;
        std::mt19937 gen(max_qp);
        /* A small key space makes home slots collide often. */
        std::uniform_int_distribution<uint32_t> key(1, 4 * max_qp + 8);

        for (int op = 0; op < 20000; op++) {
            const uint32_t w = key(gen);
            if (ref.count(w)) {
                t.release(w);
                ref.erase(w);
            } else if (ref.size() < max_qp) {
                t.insert(w, op & 0xFFFF);
                ref[w] = op & 0xFFFF;
            }
            if (op % 97 == 0) {
                for (uint32_t k = 1; k <= 4 * max_qp + 8; k++) {
                    const auto f = t.find(k);
                    const auto it = ref.find(k);
                    ASSERT_EQ(f.has_value(), it != ref.end())
                        << "max_qp " << max_qp << " key " << k << " op " << op;
                    if (f) {
                        ASSERT_EQ(*f, it->second);
                    }
                }
            }
        }
        EXPECT_EQ(t.live(), ref.size());
    }
}

TEST(WireQpnTable, PickIsA24BitNumberNeitherLiveNorReserved)
{
    WireQpnTable t(16384);
    Rng rng(42);
    std::set<uint32_t> seen;

    for (int i = 0; i < 16384; i++) {
        const uint32_t w = t.pick(rng);
        ASSERT_GE(w, 2u);
        ASSERT_LT(w, 0xFFFFFFu);
        ASSERT_FALSE(t.find(w));
        t.insert(w, i);
        seen.insert(w);
    }
    EXPECT_EQ(seen.size(), 16384u);
    /* Not a sequence: the numbers are spread over the 24-bit space. */
    EXPECT_LT(*seen.begin(), 0x100000u);
    EXPECT_GT(*seen.rbegin(), 0xF00000u);
}

/* The draw a fresh generator with @seed makes first. */
uint32_t first_draw(uint64_t seed)
{
    WireQpnTable t(2);
    Rng rng(seed);
    return t.pick(rng);
}

TEST(WireQpnTable, PickSkipsLiveAndRecentlyFreedNumbers)
{
    const uint32_t w = first_draw(7);

    WireQpnTable t(4);
    t.insert(w, 2);
    Rng r1(7);
    EXPECT_NE(t.pick(r1), w) << "live";

    t.release(w);
    Rng r2(7);
    EXPECT_NE(t.pick(r2), w) << "freed a moment ago";

    /* kRecent later releases push it out of the memory. */
    for (uint32_t i = 0; i < WireQpnTable::kRecent; i++) {
        t.insert(100 + i, 3);
        t.release(100 + i);
    }
    EXPECT_FALSE(t.recently_freed(w));
    Rng r3(7);
    EXPECT_EQ(t.pick(r3), w);
}

/* ---- CREATE_QP_RING and the rest of the control path ---- */

class WireQpnCore : public CoreTest {
protected:
    void SetUp() override
    {
        VrdmaLimits lim = default_limits();
        lim.rng_seed = 99;
        start(lim, kRingsOnly);
        pdn = create_pd();
        cqn = create_cq();
    }

    /* CREATE_QP_RING with @cap bytes of response room; @len: what came back. */
    uint8_t create(uint8_t type, size_t cap, virtio_rdma_rsp_create_qp_wire *r,
                   size_t *len)
    {
        const virtio_rdma_cmd_create_qp_ring req =
            qp_ring_req(qp_req(pdn, type, cqn));
        uint8_t buf[VRDMA_CTRL_RSP_MAX];

        std::memset(buf, 0xa5, sizeof(buf));
        const uint8_t st = raw(VIRTIO_RDMA_CMD_CREATE_QP_RING, &req,
                               sizeof(req), buf, cap, len);
        std::memcpy(r, buf, sizeof(*r));
        return st;
    }

    uint32_t pdn = 0, cqn = 0;
};

TEST_F(WireQpnCore, WithTheFeatureTheAnswerCarriesTheWireQpn)
{
    vrdma_core_set_features(core_, kRingFeatures);
    std::set<uint32_t> wires;
    virtio_rdma_rsp_create_qp_wire r;
    size_t len = 0;

    ASSERT_EQ(create(VIRTIO_RDMA_QPT_GSI, VRDMA_CTRL_RSP_MAX, &r, &len),
              VIRTIO_RDMA_OK);
    EXPECT_EQ(len, sizeof(virtio_rdma_rsp_create_qp_wire));
    EXPECT_EQ(r.qpn, 1u);
    EXPECT_EQ(r.wire_qpn, 1u) << "GSI is QP1 on the wire";

    for (uint32_t i = 2; i < lim_.max_qp; i++) {
        ASSERT_EQ(create(VIRTIO_RDMA_QPT_RC, 8, &r, &len), VIRTIO_RDMA_OK);
        EXPECT_GE(r.wire_qpn, 2u);
        EXPECT_LT(r.wire_qpn, 0xFFFFFFu);
        EXPECT_TRUE(wires.insert(r.wire_qpn).second) << "unique";
        /* Commands keep naming the queue index. */
        EXPECT_EQ(query_qp(r.qpn).qp_state, VIRTIO_RDMA_QPS_RESET);
    }
    /* Not the queue indexes 2..7 in disguise. */
    EXPECT_GT(*wires.rbegin(), lim_.max_qp);
}

/* The response always carries the wire QPN: 4 bytes of room are short. */
TEST_F(WireQpnCore, ResponseRoomForTheWireQpnIsRequired)
{
    for (uint64_t features : {kRingsOnly, kRingFeatures}) {
        vrdma_core_set_features(core_, features);
        const virtio_rdma_cmd_create_qp_ring req =
            qp_ring_req(qp_req(pdn, VIRTIO_RDMA_QPT_RC, cqn));
        const Snapshot before = snapshot();
        uint8_t buf[8];
        size_t len = 1;

        EXPECT_EQ(raw(VIRTIO_RDMA_CMD_CREATE_QP_RING, &req, sizeof(req), buf,
                      4, &len),
                  VIRTIO_RDMA_EINVAL);
        EXPECT_EQ(len, 0u);
        ASSERT_FALSE(guest_.errors.empty());
        EXPECT_EQ(guest_.errors.back().err, VRDMA_ERR_RSP_SIZE);
        EXPECT_EQ(snapshot(), before);
    }
}

TEST_F(WireQpnCore, DestroyFreesTheWireQpnAndResetForgetsTheFeature)
{
    vrdma_core_set_features(core_, kRingFeatures);
    virtio_rdma_rsp_create_qp_wire r;
    size_t len = 0;

    /* The same queue index again: another wire QPN. */
    virtio_rdma_rsp_create_qp_wire r2;
    VrdmaLimits lim = lim_;
    lim.max_qp = 3; /* one RC index: 2 */
    start(lim);
    pdn = create_pd();
    cqn = create_cq();
    ASSERT_EQ(create(VIRTIO_RDMA_QPT_RC, 8, &r, &len), VIRTIO_RDMA_OK);
    ASSERT_EQ(destroy_qp(r.qpn), VIRTIO_RDMA_OK);
    ASSERT_EQ(create(VIRTIO_RDMA_QPT_RC, 8, &r2, &len), VIRTIO_RDMA_OK);
    EXPECT_EQ(r2.qpn, r.qpn);
    EXPECT_NE(r2.wire_qpn, r.wire_qpn) << "recently freed: not reused";

    /* Reset forgets every feature: no rings until they are negotiated. */
    vrdma_core_reset(core_);
    expect_refused(VIRTIO_RDMA_CMD_CREATE_CQ_RING, cq_req(16),
                   VRDMA_ERR_UNSUPPORTED);
    vrdma_core_set_features(core_, kRingsOnly);
    pdn = create_pd();
    cqn = create_cq();
    ASSERT_EQ(create(VIRTIO_RDMA_QPT_RC, VRDMA_CTRL_RSP_MAX, &r, &len),
              VIRTIO_RDMA_OK);
    EXPECT_EQ(len, sizeof(virtio_rdma_rsp_create_qp_wire));
}

/* ---- the data path ---- */

class WireQpnDp : public DpTest {
protected:
    void SetUp() override
    {
        DpTest::SetUp(); /* kRingFeatures: WIRE_QPN among them */
        wire.capture = true;
    }
};

TEST_F(WireQpnDp, RcPeersAddressEachOtherByWireQpn)
{
    const auto [qa, qb] = connect();
    ASSERT_NE(a->wire_qpn(qa), qa);
    ASSERT_NE(b->wire_qpn(qb), qb);
    const MrInfo src = buffer(*a, pd_a, 4096), dst = buffer(*b, pd_b, 4096);

    a->fill(src.addr, 100, 3);
    b->post_recv(qb, 0x11, {{dst.addr, 4096, dst.lkey}});
    a->post_send(qa, SendWr()
                         .op(VIRTIO_RDMA_WR_SEND)
                         .id(0x22)
                         .flags(VIRTIO_RDMA_SEND_SIGNALED)
                         .sge(src.addr, 100, src.lkey));
    ASSERT_TRUE(wire.pump());

    const virtio_rdma_cq_req s = a->pop_cqe(cq_a);
    EXPECT_EQ(s.status, VIRTIO_RDMA_WC_SUCCESS);
    EXPECT_EQ(s.qp_num, a->wire_qpn(qa)) << "CQE qp_num: the local wire QPN";
    const virtio_rdma_cq_req r = b->pop_cqe(cq_b);
    EXPECT_EQ(r.status, VIRTIO_RDMA_WC_SUCCESS);
    EXPECT_EQ(r.qp_num, b->wire_qpn(qb));
    EXPECT_EQ(r.src_qp, a->wire_qpn(qa)) << "src_qp: the peer's wire QPN";
    EXPECT_TRUE(b->check(dst.addr, 100, 3));
    virtio_rdma_qp_attr qa_attr{};
    ASSERT_EQ(b->ctrl(VIRTIO_RDMA_CMD_QUERY_QP,
                      virtio_rdma_cmd_query_qp{.qpn = qb, .attr_mask = 0},
                      &qa_attr),
              VIRTIO_RDMA_OK) << "QUERY_QP takes the queue index";
    EXPECT_EQ(qa_attr.dest_qp_num, a->wire_qpn(qa)) << "and says the wire QPN";

    /* Every frame named the receiver's wire QPN in its BTH. */
    ASSERT_FALSE(wire.captured.empty());
    for (const auto &f : wire.captured) {
        vrdma::roce::Packet pkt;
        ASSERT_EQ(vrdma::roce::parse_frame(f.data, &pkt),
                  vrdma::roce::ParseError::kNone);
        EXPECT_EQ(pkt.bth().qpn(), f.src == a->id ? b->wire_qpn(qb) : a->wire_qpn(qa));
    }
}

TEST_F(WireQpnDp, AFrameForTheQueueIndexFindsNoQp)
{
    const auto [qa, qb] = connect();
    const MrInfo src = buffer(*a, pd_a, 4096);

    a->post_send(qa, SendWr()
                         .op(VIRTIO_RDMA_WR_SEND)
                         .id(1)
                         .sge(src.addr, 8, src.lkey));
    /* The first step runs a's core: its request goes on the wire. */
    while (wire.captured.empty()) {
        ASSERT_TRUE(wire.step());
    }
    Bytes frame = wire.captured.front().data;
    vrdma::roce::Packet pkt;
    ASSERT_EQ(vrdma::roce::parse_frame(frame, &pkt),
              vrdma::roce::ParseError::kNone);
    ASSERT_EQ(pkt.bth().qpn(), b->wire_qpn(qb));

    /* The same frame addressed to b's queue index instead. */
    frame[pkt.bth_off + 5] = static_cast<uint8_t>(qb >> 16);
    frame[pkt.bth_off + 6] = static_cast<uint8_t>(qb >> 8);
    frame[pkt.bth_off + 7] = static_cast<uint8_t>(qb);
    fix_icrc(frame);
    const uint64_t before = b->drops(VRDMA_DROP_NO_QP);
    EXPECT_TRUE(b->receive(frame));
    EXPECT_EQ(b->drops(VRDMA_DROP_NO_QP), before + 1);
}

TEST_F(WireQpnDp, UdDethCarriesTheSendersWireQpn)
{
    const uint32_t qa = a->create_qp(pd_a, VIRTIO_RDMA_QPT_UD, cq_a, cq_a);
    const uint32_t qb = b->create_qp(pd_b, VIRTIO_RDMA_QPT_UD, cq_b, cq_b);
    a->ud_up(qa, 0x1234, 0);
    b->ud_up(qb, 0x1234, 0);
    const MrInfo src = buffer(*a, pd_a, 4096), dst = buffer(*b, pd_b, 4096);

    b->post_recv(qb, 5, {{dst.addr, 4096, dst.lkey}});
    a->post_send(qa, SendWr()
                         .op(VIRTIO_RDMA_WR_SEND)
                         .id(6)
                         .flags(VIRTIO_RDMA_SEND_SIGNALED)
                         .sge(src.addr, 64, src.lkey)
                         .ud(b->wire_qpn(qb), 0x1234, b->gid, b->mac));
    ASSERT_TRUE(wire.pump());
    EXPECT_EQ(a->pop_cqe(cq_a).qp_num, a->wire_qpn(qa));
    const virtio_rdma_cq_req r = b->pop_cqe(cq_b);
    EXPECT_EQ(r.status, VIRTIO_RDMA_WC_SUCCESS);
    EXPECT_EQ(r.src_qp, a->wire_qpn(qa));
    EXPECT_EQ(r.qp_num, b->wire_qpn(qb));
}

} // namespace
} // namespace vrdma_test

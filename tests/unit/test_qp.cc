/*
 * CREATE_QP_RING's CREATE_QP fields / MODIFY_QP (attribute values) /
 * QUERY_QP / DESTROY_QP.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <algorithm>
#include <numeric>
#include <vector>

#include "core.h"
#include "qp_fixture.h"

namespace vrdma_test {
namespace {

using Qp = QpTest;

TEST_F(Qp, NumbersGsiIsOneOthersFromTwo)
{
    EXPECT_EQ(new_qp(VIRTIO_RDMA_QPT_RC), 2u);
    EXPECT_EQ(new_qp(VIRTIO_RDMA_QPT_UD), 3u);
    EXPECT_EQ(new_qp(VIRTIO_RDMA_QPT_GSI), 1u);
    EXPECT_EQ(new_qp(VIRTIO_RDMA_QPT_UC), 4u);
    EXPECT_EQ(destroy_qp(3), VIRTIO_RDMA_OK);
    EXPECT_EQ(new_qp(VIRTIO_RDMA_QPT_RC), 3u); /* lowest free */
    EXPECT_TRUE(guest_.errors.empty());
}

/*
 * With a seed, a new QP takes a random free number of 2..max_qp-1 (the
 * sequence depends on the seed), never a live one, and still fills the
 * table; GSI stays QP 1.
 */
TEST_F(Qp, SeededNumbersAreRandomFreeSlots)
{
    auto numbers = [&](uint64_t seed) {
        VrdmaLimits lim = default_limits();
        lim.max_qp = 64;
        lim.rng_seed = seed;
        start(lim);
        pdn_ = create_pd();
        cqn_ = create_cq();
        std::vector<uint32_t> v;
        for (uint32_t i = 2; i < lim.max_qp; i++) {
            v.push_back(new_qp(VIRTIO_RDMA_QPT_RC));
        }
        expect_refused(VIRTIO_RDMA_CMD_CREATE_QP_RING,
                       qp_ring_req(qp_req(pdn_, VIRTIO_RDMA_QPT_UD, cqn_)),
                       VRDMA_ERR_TABLE_FULL);
        EXPECT_EQ(new_qp(VIRTIO_RDMA_QPT_GSI), 1u);
        return v;
    };
    const std::vector<uint32_t> a = numbers(1), b = numbers(2);
    std::vector<uint32_t> sorted = a;
    std::sort(sorted.begin(), sorted.end());
    for (uint32_t i = 0; i < sorted.size(); i++) {
        ASSERT_EQ(sorted[i], i + 2) << "each of 2..63 exactly once";
    }
    std::vector<uint32_t> lowest(a.size());
    std::iota(lowest.begin(), lowest.end(), 2u);
    EXPECT_NE(a, lowest) << "not the lowest free";
    EXPECT_NE(a, b) << "the seed decides";
    EXPECT_EQ(numbers(1), a) << "same seed, same numbers";

    /* One slot freed in a full table: the new QP can only take it. */
    EXPECT_EQ(destroy_qp(a[10]), VIRTIO_RDMA_OK);
    EXPECT_EQ(new_qp(VIRTIO_RDMA_QPT_UC), a[10]);
}

TEST_F(Qp, OnlyOneGsiQp)
{
    EXPECT_EQ(new_qp(VIRTIO_RDMA_QPT_GSI), 1u);
    expect_refused(VIRTIO_RDMA_CMD_CREATE_QP_RING,
                   qp_ring_req(qp_req(pdn_, VIRTIO_RDMA_QPT_GSI, cqn_)),
                   VRDMA_ERR_IN_USE);
    EXPECT_EQ(guest_.errors.back().field, "qp_type");
    EXPECT_EQ(destroy_qp(1), VIRTIO_RDMA_OK);
    EXPECT_EQ(new_qp(VIRTIO_RDMA_QPT_GSI), 1u);
}

TEST_F(Qp, TableFull)
{
    for (uint32_t qpn = 2; qpn < lim_.max_qp; qpn++) {
        EXPECT_EQ(new_qp(VIRTIO_RDMA_QPT_RC), qpn);
    }
    expect_refused(VIRTIO_RDMA_CMD_CREATE_QP_RING,
                   qp_ring_req(qp_req(pdn_, VIRTIO_RDMA_QPT_UD, cqn_)),
                   VRDMA_ERR_TABLE_FULL);
    EXPECT_EQ(guest_.errors.back().field, "qpn") << "no QP number left";
    EXPECT_EQ(new_qp(VIRTIO_RDMA_QPT_GSI), 1u) << "QP 1 is kept for GSI";
}

TEST_F(Qp, SmallestDeviceHasOnlyGsi)
{
    VrdmaLimits lim = default_limits();
    lim.max_qp = 2;
    start(lim);
    const uint32_t pd = create_pd();
    const uint32_t cq = create_cq();
    expect_refused(VIRTIO_RDMA_CMD_CREATE_QP_RING,
                   qp_ring_req(qp_req(pd, VIRTIO_RDMA_QPT_RC, cq)),
                   VRDMA_ERR_TABLE_FULL);
    EXPECT_EQ(create_qp(qp_req(pd, VIRTIO_RDMA_QPT_GSI, cq)), 1u);
}

TEST_F(Qp, CreateRecordsCapsAndStartsInReset)
{
    auto req = qp_req(pdn_, VIRTIO_RDMA_QPT_RC, cqn_);
    req.max_send_wr = 4096; /* beyond queue_size: a ring's depth */
    req.max_recv_wr = 0;    /* one side may be empty */
    req.max_send_sge = 4;   /* == max_sge */
    req.max_recv_sge = 0;
    const uint32_t qpn = create_qp(req);
    const virtio_rdma_qp_attr a = query_qp(qpn);
    EXPECT_EQ(a.qp_state, RESET);
    EXPECT_EQ(a.cur_qp_state, RESET);
    EXPECT_EQ(a.cap.max_send_wr, 4096u);
    EXPECT_EQ(a.cap.max_recv_wr, 0u);
    EXPECT_EQ(a.cap.max_send_sge, 4u);
    EXPECT_EQ(a.cap.max_recv_sge, 0u);
    EXPECT_EQ(a.cap.max_inline_data, 0u);
    EXPECT_EQ(a.port_num, 0u);
    EXPECT_EQ(a.qkey, 0u);
}

/*
 * The engine's WQE rings follow each QP's caps (max_*_wr rounded up to a
 * power of two, SGE arrays at max_*_sge) up to a ring QP's window, not
 * the depth of its rings: on a 32-SGE device a QP of 1024 requests a
 * queue once took about 1.3 MB.
 */
TEST_F(Qp, RingsAreSizedByTheQpsCaps)
{
    using vrdma::soft_roce::kRingWindow;
    VrdmaLimits lim = default_limits();
    lim.max_sge = 32;
    start(lim);
    const uint32_t pd = create_pd();
    const uint32_t cq = create_cq();
    auto ring_of = [&](uint32_t send_wr, uint32_t send_sge, uint32_t recv_wr,
                       uint32_t recv_sge) -> const vrdma::soft_roce::QpEngine & {
        auto req = qp_req(pd, VIRTIO_RDMA_QPT_RC, cq);
        req.max_send_wr = send_wr;
        req.max_send_sge = send_sge;
        req.max_recv_wr = recv_wr;
        req.max_recv_sge = recv_sge;
        return std::get<vrdma::soft_roce::QpEngine>(core_->qps.at(create_qp(req))->backend);
    };
    /* sq, sq SGEs, rq, rq SGEs: slots of each */
    auto bytes = [](size_t sq, size_t sq_sge, size_t rq, size_t rq_sge) {
        return sq * sizeof(vrdma::soft_roce::SendWqe) +
               (sq_sge + rq_sge) * sizeof(vrdma::Sge) +
               rq * sizeof(vrdma::soft_roce::RecvWqe);
    };

    const auto &full = ring_of(1024, 32, 1024, 32);
    EXPECT_EQ(full.sq.size(), kRingWindow);
    EXPECT_EQ(full.rq.size(), kRingWindow);
    EXPECT_EQ(full.ring_bytes(),
              bytes(kRingWindow, kRingWindow * 32, kRingWindow, kRingWindow * 32));
    EXPECT_LT(full.ring_bytes(), 1u << 17);

    const auto &small = ring_of(16, 2, 32, 3);
    EXPECT_EQ(small.sq_mask, 15u);
    EXPECT_EQ(small.rq_mask, 31u);
    EXPECT_EQ(small.ring_bytes(), bytes(16, 16 * 2, 32, 32 * 3));
    EXPECT_LT(small.ring_bytes(), 8u << 10);

    /* Rounded up; an empty queue and no SGEs still get one slot each. */
    const auto &odd = ring_of(17, 0, 0, 5);
    EXPECT_EQ(odd.sq_mask, 31u);
    EXPECT_EQ(odd.rq_mask, 0u);
    EXPECT_EQ(odd.send_sge_cap, 1u);
    EXPECT_EQ(odd.ring_bytes(), bytes(32, 32, 1, 5));
}

TEST_F(Qp, CreateErrors)
{
    const auto good = qp_req(pdn_, VIRTIO_RDMA_QPT_RC, cqn_);
    /* Each refusal names the field that failed. */
    const auto field = [this] { return guest_.errors.back().field; };
    auto r = good;
    r.pdn = pdn_ + 0x10000;
    expect_refused(VIRTIO_RDMA_CMD_CREATE_QP_RING, qp_ring_req(r),
                   VRDMA_ERR_BAD_HANDLE);
    EXPECT_EQ(field(), "pdn");
    for (uint8_t type : {uint8_t{VIRTIO_RDMA_QPT_SMI}, uint8_t{5},
                         uint8_t{0xff}}) {
        r = good;
        r.qp_type = type;
        expect_refused(VIRTIO_RDMA_CMD_CREATE_QP_RING, qp_ring_req(r),
                       VRDMA_ERR_BAD_ARG);
        EXPECT_EQ(field(), "qp_type");
    }
    r = good;
    r.sq_sig_type = 2;
    expect_refused(VIRTIO_RDMA_CMD_CREATE_QP_RING, qp_ring_req(r),
                   VRDMA_ERR_BAD_ARG);
    EXPECT_EQ(field(), "sq_sig_type");
    r = good;
    r.max_send_wr = VIRTIO_RDMA_RING_MAX_QP_WR + 1; /* max_ring_qp_wr's */
    expect_refused(VIRTIO_RDMA_CMD_CREATE_QP_RING, qp_ring_req(r),
                   VRDMA_ERR_LIMIT);
    EXPECT_EQ(field(), "max_send_wr");
    r = good;
    r.max_recv_wr = 0xffffffff;
    expect_refused(VIRTIO_RDMA_CMD_CREATE_QP_RING, qp_ring_req(r),
                   VRDMA_ERR_LIMIT);
    EXPECT_EQ(field(), "max_recv_wr");
    r = good;
    r.max_send_wr = 0;
    r.max_recv_wr = 0;
    expect_refused(VIRTIO_RDMA_CMD_CREATE_QP_RING, qp_ring_req(r),
                   VRDMA_ERR_LIMIT);
    EXPECT_EQ(field(), "max_send_wr+max_recv_wr");
    r = good;
    r.max_send_sge = 5;
    expect_refused(VIRTIO_RDMA_CMD_CREATE_QP_RING, qp_ring_req(r),
                   VRDMA_ERR_LIMIT);
    EXPECT_EQ(field(), "max_send_sge");
    r = good;
    r.max_recv_sge = 0x80000000;
    expect_refused(VIRTIO_RDMA_CMD_CREATE_QP_RING, qp_ring_req(r),
                   VRDMA_ERR_LIMIT);
    EXPECT_EQ(field(), "max_recv_sge");
    r = good;
    r.send_cqn = 1;
    expect_refused(VIRTIO_RDMA_CMD_CREATE_QP_RING, qp_ring_req(r),
                   VRDMA_ERR_BAD_HANDLE);
    EXPECT_EQ(field(), "send_cqn");
    EXPECT_EQ(guest_.errors.back().a, 1u);
    r = good;
    r.recv_cqn = 0xffffffff;
    expect_refused(VIRTIO_RDMA_CMD_CREATE_QP_RING, qp_ring_req(r),
                   VRDMA_ERR_BAD_HANDLE);
    EXPECT_EQ(field(), "recv_cqn");
    r = good;
    r.max_inline_data = 1;
    expect_refused(VIRTIO_RDMA_CMD_CREATE_QP_RING, qp_ring_req(r),
                   VRDMA_ERR_LIMIT);
    EXPECT_EQ(field(), "max_inline_data");

    EXPECT_EQ(create_qp(good), 2u);
}

TEST_F(Qp, DestroyErrorsAndReferences)
{
    const uint32_t qpn = new_qp(VIRTIO_RDMA_QPT_UD);
    for (uint32_t bad : {0u, 1u, 3u, 8u, 0x10002u, 0xffffffffu}) {
        expect_refused(VIRTIO_RDMA_CMD_DESTROY_QP,
                       virtio_rdma_cmd_destroy_qp{.qpn = bad},
                       VRDMA_ERR_BAD_HANDLE);
    }
    EXPECT_EQ(destroy_qp(qpn), VIRTIO_RDMA_OK);
    expect_refused(VIRTIO_RDMA_CMD_DESTROY_QP,
                   virtio_rdma_cmd_destroy_qp{.qpn = qpn},
                   VRDMA_ERR_BAD_HANDLE);
    EXPECT_EQ(destroy_cq(cqn_), VIRTIO_RDMA_OK);
    EXPECT_EQ(destroy_pd(pdn_), VIRTIO_RDMA_OK);
}

TEST_F(Qp, RcConnectAndQuery)
{
    const uint32_t qpn = new_qp(VIRTIO_RDMA_QPT_RC);
    drive(qpn, VIRTIO_RDMA_QPT_RC, RTS);
    const virtio_rdma_qp_attr a = query_qp(qpn);
    const virtio_rdma_qp_attr g = good_attrs();
    EXPECT_EQ(a.qp_state, RTS);
    EXPECT_EQ(a.cur_qp_state, RTS);
    EXPECT_EQ(a.port_num, 1u);
    EXPECT_EQ(a.pkey_index, 0u);
    EXPECT_EQ(a.qp_access_flags, g.qp_access_flags);
    EXPECT_EQ(a.path_mtu, g.path_mtu);
    EXPECT_EQ(a.dest_qp_num, g.dest_qp_num);
    EXPECT_EQ(a.rq_psn, g.rq_psn);
    EXPECT_EQ(a.sq_psn, g.sq_psn);
    EXPECT_EQ(a.max_dest_rd_atomic, g.max_dest_rd_atomic);
    EXPECT_EQ(a.min_rnr_timer, g.min_rnr_timer);
    EXPECT_EQ(a.timeout, g.timeout);
    EXPECT_EQ(a.retry_cnt, g.retry_cnt);
    EXPECT_EQ(a.rnr_retry, g.rnr_retry);
    EXPECT_EQ(a.max_rd_atomic, g.max_rd_atomic);
    EXPECT_EQ(a.qkey, 0u) << "QKEY was never given to this RC QP";
    EXPECT_EQ(std::memcmp(&a.ah_attr, &g.ah_attr, sizeof(a.ah_attr)), 0);
    EXPECT_EQ(a.cap.max_send_wr, 16u);
    EXPECT_EQ(a.cap.max_recv_sge, 3u);
}

TEST_F(Qp, UdAndGsiTakeQkey)
{
    for (uint8_t type : {VIRTIO_RDMA_QPT_UD, VIRTIO_RDMA_QPT_GSI}) {
        const uint32_t qpn = new_qp(type);
        drive(qpn, type, RTS);
        const virtio_rdma_qp_attr a = query_qp(qpn);
        EXPECT_EQ(a.qkey, good_attrs().qkey);
        EXPECT_EQ(a.sq_psn, good_attrs().sq_psn);
        EXPECT_EQ(a.port_num, type == VIRTIO_RDMA_QPT_UD ? 1u : 0u);
        /* RTS->RTS may change the Q_Key. */
        virtio_rdma_qp_attr n = good_attrs();
        n.qkey = 0x1234;
        EXPECT_EQ(modify_qp(qpn, M_QKEY, n), VIRTIO_RDMA_OK);
        EXPECT_EQ(query_qp(qpn).qkey, 0x1234u);
    }
}

/*
 * A Q_Key with bit 31 set is a controlled one (IBA 10.2.5, C10-15): only
 * the GSI QP holds one (0x80010000, which the guest's MAD layer sets on
 * QP1); any other QP is refused it, as Linux refuses an unprivileged
 * process since 6.4.  Otherwise a UD QP could send with QP1's Q_Key.
 */
TEST_F(Qp, ControlledQkeyOnlyOnTheGsiQp)
{
    const uint32_t ud = new_qp(VIRTIO_RDMA_QPT_UD);
    virtio_rdma_qp_attr a = good_attrs();
    a.qp_state = INIT;
    for (uint32_t bad : {0x80010000u, 0x80000000u, 0xffffffffu}) {
        a.qkey = bad;
        expect_refused(VIRTIO_RDMA_CMD_MODIFY_QP,
                       virtio_rdma_cmd_modify_qp{
                           .qpn = ud,
                           .attr_mask = M_STATE | required_attrs(
                                            VIRTIO_RDMA_QPT_UD, RESET, INIT),
                           .attrs = a},
                       VRDMA_ERR_BAD_ARG);
        ASSERT_FALSE(guest_.errors.empty());
        EXPECT_EQ(guest_.errors.back().field, "attrs.qkey");
        EXPECT_EQ(guest_.errors.back().a, bad);
        EXPECT_EQ(guest_.errors.back().b, 0x7fffffffu) << "the largest allowed";
    }
    EXPECT_EQ(state_of(ud), RESET);

    drive(ud, VIRTIO_RDMA_QPT_UD, RTS);
    const uint32_t before = query_qp(ud).qkey;
    a.qkey = 0x80010000;
    expect_refused(VIRTIO_RDMA_CMD_MODIFY_QP,
                   virtio_rdma_cmd_modify_qp{.qpn = ud, .attr_mask = M_QKEY,
                                             .attrs = a},
                   VRDMA_ERR_BAD_ARG);
    EXPECT_EQ(query_qp(ud).qkey, before) << "RTS->RTS: Q_Key unchanged";
    a.qkey = 0x7fffffff;
    EXPECT_EQ(modify_qp(ud, M_QKEY, a), VIRTIO_RDMA_OK);
    EXPECT_EQ(query_qp(ud).qkey, 0x7fffffffu);

    /* The GSI QP takes QP1's Q_Key, as the kernel's MAD layer sets it. */
    const uint32_t gsi = new_qp(VIRTIO_RDMA_QPT_GSI);
    a = good_attrs();
    a.qp_state = INIT;
    a.qkey = 0x80010000;
    EXPECT_EQ(modify_qp(gsi, M_STATE | required_attrs(VIRTIO_RDMA_QPT_GSI,
                                                      RESET, INIT),
                        a),
              VIRTIO_RDMA_OK);
    EXPECT_EQ(query_qp(gsi).qkey, 0x80010000u);
}

TEST_F(Qp, ResetForgetsAttributes)
{
    const uint32_t qpn = new_qp(VIRTIO_RDMA_QPT_RC);
    drive(qpn, VIRTIO_RDMA_QPT_RC, RTS);
    ASSERT_EQ(move(qpn, RESET, 0), VIRTIO_RDMA_OK);
    const virtio_rdma_qp_attr a = query_qp(qpn);
    virtio_rdma_qp_attr fresh{};
    fresh.cap = a.cap;
    EXPECT_EQ(std::memcmp(&a, &fresh, sizeof(a)), 0);
    EXPECT_EQ(a.cap.max_send_wr, 16u);
    /* And it can be brought up again. */
    drive(qpn, VIRTIO_RDMA_QPT_RC, RTS);
}

TEST_F(Qp, ErrorStateKeepsAttributes)
{
    const uint32_t qpn = new_qp(VIRTIO_RDMA_QPT_RC);
    drive(qpn, VIRTIO_RDMA_QPT_RC, RTS);
    ASSERT_EQ(move(qpn, ERR, 0), VIRTIO_RDMA_OK);
    const virtio_rdma_qp_attr a = query_qp(qpn);
    EXPECT_EQ(a.qp_state, ERR);
    EXPECT_EQ(a.dest_qp_num, good_attrs().dest_qp_num);
}

/* One bad value in an otherwise valid RC transition. */
struct BadValue {
    const char *name;
    uint32_t from;                        /* state the QP is in */
    uint32_t to;
    void (*set)(virtio_rdma_qp_attr &a);
    VrdmaErr err;
    const char *field;                    /* the refusal names it */
};

const BadValue kBadValues[] = {
    {"port0", RESET, INIT, [](auto &a) { a.port_num = 0; }, VRDMA_ERR_BAD_PORT,
     "attrs.port_num"},
    {"port2", RESET, INIT, [](auto &a) { a.port_num = 2; }, VRDMA_ERR_BAD_PORT,
     "attrs.port_num"},
    {"pkey1", RESET, INIT, [](auto &a) { a.pkey_index = 1; },
     VRDMA_ERR_BAD_INDEX, "attrs.pkey_index"},
    {"pkeyMax", RESET, INIT, [](auto &a) { a.pkey_index = 0xffff; },
     VRDMA_ERR_BAD_INDEX, "attrs.pkey_index"},
    {"accessMwBind", RESET, INIT,
     [](auto &a) { a.qp_access_flags = VIRTIO_RDMA_ACCESS_MW_BIND; },
     VRDMA_ERR_BAD_ARG, "attrs.qp_access_flags"},
    {"accessRelaxed", RESET, INIT,
     [](auto &a) { a.qp_access_flags = VIRTIO_RDMA_ACCESS_RELAXED_ORDERING; },
     VRDMA_ERR_BAD_ARG, "attrs.qp_access_flags"},
    {"mtu0", INIT, RTR, [](auto &a) { a.path_mtu = 0; }, VRDMA_ERR_BAD_ARG,
     "attrs.path_mtu"},
    {"mtu6", INIT, RTR, [](auto &a) { a.path_mtu = 6; }, VRDMA_ERR_BAD_ARG,
     "attrs.path_mtu"},
    {"mtuAboveActive", INIT, RTR,
     [](auto &a) { a.path_mtu = VIRTIO_RDMA_MTU_2048; }, VRDMA_ERR_BAD_ARG,
     "attrs.path_mtu"},
    {"rqPsn", INIT, RTR, [](auto &a) { a.rq_psn = 1u << 24; },
     VRDMA_ERR_BAD_ARG, "attrs.rq_psn"},
    {"destQpn", INIT, RTR, [](auto &a) { a.dest_qp_num = 0xffffffff; },
     VRDMA_ERR_BAD_ARG, "attrs.dest_qp_num"},
    {"minRnr", INIT, RTR, [](auto &a) { a.min_rnr_timer = 32; },
     VRDMA_ERR_BAD_ARG, "attrs.min_rnr_timer"},
    {"destRdAtomic", INIT, RTR, [](auto &a) { a.max_dest_rd_atomic = 17; },
     VRDMA_ERR_BAD_ARG, "attrs.max_dest_rd_atomic"},
    {"avNoGrh", INIT, RTR, [](auto &a) { a.ah_attr.ah_flags = 0; },
     VRDMA_ERR_BAD_ARG, "attrs.ah_attr.ah_flags"},
    {"avPort", INIT, RTR, [](auto &a) { a.ah_attr.port_num = 2; },
     VRDMA_ERR_BAD_PORT, "attrs.ah_attr.port_num"},
    {"avSgidRange", INIT, RTR, [](auto &a) { a.ah_attr.grh.sgid_index = 16; },
     VRDMA_ERR_BAD_INDEX, "attrs.ah_attr.grh.sgid_index"},
    {"avSgidEmpty", INIT, RTR, [](auto &a) { a.ah_attr.grh.sgid_index = 5; },
     VRDMA_ERR_BAD_INDEX, "attrs.ah_attr.grh.sgid_index"},
    {"sqPsn", RTR, RTS, [](auto &a) { a.sq_psn = 0x01000000; },
     VRDMA_ERR_BAD_ARG, "attrs.sq_psn"},
    {"timeout", RTR, RTS, [](auto &a) { a.timeout = 32; }, VRDMA_ERR_BAD_ARG,
     "attrs.timeout"},
    {"retry", RTR, RTS, [](auto &a) { a.retry_cnt = 8; }, VRDMA_ERR_BAD_ARG,
     "attrs.retry_cnt"},
    {"rnrRetry", RTR, RTS, [](auto &a) { a.rnr_retry = 0xff; },
     VRDMA_ERR_BAD_ARG, "attrs.rnr_retry"},
    {"rdAtomic", RTR, RTS, [](auto &a) { a.max_rd_atomic = 17; },
     VRDMA_ERR_BAD_ARG, "attrs.max_rd_atomic"},
    {"enSqd", RTS, SQD, [](auto &a) { a.en_sqd_async_notify = 2; },
     VRDMA_ERR_BAD_ARG, "attrs.en_sqd_async_notify"},
};

class QpValues : public QpTest, public ::testing::WithParamInterface<BadValue> {};

TEST_P(QpValues, RefusedAndNothingApplied)
{
    const BadValue &v = GetParam();
    const uint32_t qpn = new_qp(VIRTIO_RDMA_QPT_RC);
    drive(qpn, VIRTIO_RDMA_QPT_RC, v.from);
    const virtio_rdma_qp_attr before = query_qp(qpn);

    virtio_rdma_qp_attr a = good_attrs();
    a.qp_state = v.to;
    a.rq_psn = a.sq_psn = 7; /* would change if anything were applied */
    v.set(a);
    uint32_t mask = M_STATE | required_attrs(VIRTIO_RDMA_QPT_RC, v.from, v.to);
    if (v.to == SQD) {
        mask |= M_EN_SQD;
    }
    expect_refused(VIRTIO_RDMA_CMD_MODIFY_QP,
                   virtio_rdma_cmd_modify_qp{.qpn = qpn, .attr_mask = mask,
                                             .attrs = a},
                   v.err);
    EXPECT_EQ(guest_.errors.back().field, v.field);
    const virtio_rdma_qp_attr after = query_qp(qpn);
    EXPECT_EQ(std::memcmp(&before, &after, sizeof(after)), 0);
    EXPECT_EQ(move(qpn, v.to, mask & ~M_STATE), VIRTIO_RDMA_OK);
}

INSTANTIATE_TEST_SUITE_P(Rc, QpValues, ::testing::ValuesIn(kBadValues),
                         [](const auto &info) {
                             return std::string(info.param.name);
                         });

TEST_F(Qp, ValueBoundsAreInclusive)
{
    const uint32_t qpn = new_qp(VIRTIO_RDMA_QPT_RC);
    drive(qpn, VIRTIO_RDMA_QPT_RC, INIT);
    virtio_rdma_qp_attr a = good_attrs();
    a.qp_state = RTR;
    a.path_mtu = VIRTIO_RDMA_MTU_256;
    a.rq_psn = (1u << 24) - 1;
    a.dest_qp_num = (1u << 24) - 1;
    a.min_rnr_timer = 0;
    a.max_dest_rd_atomic = 0;
    a.ah_attr.ah_flags = 0xff; /* GRH set; other bits are ignored */
    a.ah_attr.grh.sgid_index = 15;
    ASSERT_EQ(add_gid(15, 0x15), VIRTIO_RDMA_OK);
    EXPECT_EQ(modify_qp(qpn, M_STATE | required_attrs(VIRTIO_RDMA_QPT_RC,
                                                      INIT, RTR),
                        a),
              VIRTIO_RDMA_OK);
}

TEST_F(Qp, ModifyBadHandle)
{
    for (uint32_t bad : {0u, 1u, 2u, 8u, 0xffffffffu}) {
        expect_refused(VIRTIO_RDMA_CMD_MODIFY_QP,
                       virtio_rdma_cmd_modify_qp{.qpn = bad,
                                                 .attr_mask = M_STATE,
                                                 .attrs = {}},
                       VRDMA_ERR_BAD_HANDLE);
    }
}

TEST_F(Qp, QueryErrors)
{
    const uint32_t qpn = new_qp(VIRTIO_RDMA_QPT_UD);
    for (uint32_t bad : {0u, 1u, 3u, 0xffffffffu}) {
        expect_refused(VIRTIO_RDMA_CMD_QUERY_QP,
                       virtio_rdma_cmd_query_qp{.qpn = bad, .attr_mask = 0},
                       VRDMA_ERR_BAD_HANDLE);
    }
    for (uint32_t mask : {1u << 21, 1u << 24, 1u << 31, 0xffffffffu}) {
        expect_refused(VIRTIO_RDMA_CMD_QUERY_QP,
                       virtio_rdma_cmd_query_qp{.qpn = qpn, .attr_mask = mask},
                       VRDMA_ERR_BAD_MASK);
    }
    virtio_rdma_qp_attr a{};
    EXPECT_EQ(ctrl(VIRTIO_RDMA_CMD_QUERY_QP,
                   virtio_rdma_cmd_query_qp{
                       .qpn = qpn, .attr_mask = ((1u << 21) - 1) |
                                                VIRTIO_RDMA_QP_RATE_LIMIT},
                   &a),
              VIRTIO_RDMA_OK);
}

} // namespace
} // namespace vrdma_test

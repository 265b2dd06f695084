/*
 * CREATE_CQ_RING / DESTROY_CQ, and arming a CQ by its doorbell.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <array>

#include "core_fixture.h"

namespace vrdma_test {
namespace {

using Cq = CoreTest;

TEST_F(Cq, CreateTakesLowestFreeNumber)
{
    EXPECT_EQ(create_cq(1), 0u);
    EXPECT_EQ(create_cq(4096), 1u); /* a ring's depth, not queue_size's */
    EXPECT_EQ(create_cq(), 2u);
    EXPECT_EQ(destroy_cq(1), VIRTIO_RDMA_OK);
    EXPECT_EQ(create_cq(), 1u);
    EXPECT_TRUE(guest_.errors.empty());
}

TEST_F(Cq, CqeOutOfRange)
{
    for (uint32_t cqe : {0u, VIRTIO_RDMA_RING_MAX_CQE + 1, 0x80000000u,
                         0xffffffffu}) {
        expect_refused(VIRTIO_RDMA_CMD_CREATE_CQ_RING, cq_req(cqe),
                       VRDMA_ERR_LIMIT);
        EXPECT_EQ(guest_.errors.back().field, "cqe");
    }
    EXPECT_EQ(create_cq(VIRTIO_RDMA_RING_MAX_CQE), 0u);
}

TEST_F(Cq, TableFull)
{
    for (uint32_t i = 0; i < lim_.max_cq; i++) {
        EXPECT_EQ(create_cq(), i);
    }
    expect_refused(VIRTIO_RDMA_CMD_CREATE_CQ_RING, cq_req(1),
                   VRDMA_ERR_TABLE_FULL);
    EXPECT_EQ(guest_.errors.back().field, "cqn");
    EXPECT_EQ(destroy_cq(5), VIRTIO_RDMA_OK);
    EXPECT_EQ(create_cq(), 5u);
}

TEST_F(Cq, DestroyBadHandle)
{
    const uint32_t cqn = create_cq();
    for (uint32_t bad : {1u, 7u, 8u, 0x10000u, 0xffffffffu}) {
        expect_refused(VIRTIO_RDMA_CMD_DESTROY_CQ,
                       virtio_rdma_cmd_destroy_cq{.cqn = bad},
                       VRDMA_ERR_BAD_HANDLE);
    }
    EXPECT_EQ(destroy_cq(cqn), VIRTIO_RDMA_OK);
    expect_refused(VIRTIO_RDMA_CMD_DESTROY_CQ,
                   virtio_rdma_cmd_destroy_cq{.cqn = cqn},
                   VRDMA_ERR_BAD_HANDLE);
}

TEST_F(Cq, DestroyInUseBySendOrRecvQueue)
{
    const uint32_t pdn = create_pd();
    const uint32_t scq = create_cq();
    const uint32_t rcq = create_cq();
    auto req = qp_req(pdn, VIRTIO_RDMA_QPT_RC, scq);
    req.recv_cqn = rcq;
    const uint32_t qpn = create_qp(req);
    expect_refused(VIRTIO_RDMA_CMD_DESTROY_CQ,
                   virtio_rdma_cmd_destroy_cq{.cqn = scq}, VRDMA_ERR_IN_USE);
    expect_refused(VIRTIO_RDMA_CMD_DESTROY_CQ,
                   virtio_rdma_cmd_destroy_cq{.cqn = rcq}, VRDMA_ERR_IN_USE);
    EXPECT_EQ(destroy_qp(qpn), VIRTIO_RDMA_OK);
    EXPECT_EQ(destroy_cq(scq), VIRTIO_RDMA_OK);
    EXPECT_EQ(destroy_cq(rcq), VIRTIO_RDMA_OK);
}

TEST_F(Cq, DestroyInUseWhenBothQueuesShareIt)
{
    const uint32_t pdn = create_pd();
    const uint32_t cqn = create_cq();
    const uint32_t a = create_qp(qp_req(pdn, VIRTIO_RDMA_QPT_RC, cqn));
    const uint32_t b = create_qp(qp_req(pdn, VIRTIO_RDMA_QPT_UD, cqn));
    EXPECT_EQ(destroy_qp(a), VIRTIO_RDMA_OK);
    expect_refused(VIRTIO_RDMA_CMD_DESTROY_CQ,
                   virtio_rdma_cmd_destroy_cq{.cqn = cqn}, VRDMA_ERR_IN_USE);
    EXPECT_EQ(destroy_qp(b), VIRTIO_RDMA_OK);
    EXPECT_EQ(destroy_cq(cqn), VIRTIO_RDMA_OK);
}

TEST_F(Cq, ArmByDoorbellAddsFlags)
{
    const uint32_t cqn = create_cq();
    EXPECT_EQ(vrdma_core_cq_armed(core_, cqn), 0u);
    EXPECT_FALSE(arm_cq(cqn, VIRTIO_RDMA_NOTIFY_SOLICITED)) << "no ring work";
    EXPECT_EQ(vrdma_core_cq_armed(core_, cqn), VIRTIO_RDMA_NOTIFY_SOLICITED);
    arm_cq(cqn, VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION);
    EXPECT_EQ(vrdma_core_cq_armed(core_, cqn),
              VIRTIO_RDMA_NOTIFY_SOLICITED | VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION);

    const uint32_t other = create_cq();
    arm_cq(other, 3);
    EXPECT_EQ(vrdma_core_cq_armed(core_, other), 3u);
    /* Not live / out of range: 0. */
    EXPECT_EQ(vrdma_core_cq_armed(core_, 5), 0u);
    EXPECT_EQ(vrdma_core_cq_armed(core_, 1000), 0u);
    /* A re-created CQ starts disarmed. */
    EXPECT_EQ(destroy_cq(cqn), VIRTIO_RDMA_OK);
    EXPECT_EQ(create_cq(), cqn);
    EXPECT_EQ(vrdma_core_cq_armed(core_, cqn), 0u);
    EXPECT_TRUE(guest_.errors.empty());
}

/*
 * An arm for no CQ, or with no or unknown flags, is ignored and traced
 * (cmd 0): nothing is armed.  REQ_NOTIFY_CQ, the virtqueue path's arm,
 * is refused on the rings path.
 */
TEST_F(Cq, ArmErrors)
{
    const uint32_t cqn = create_cq();
    const auto expect_ignored = [&](uint32_t cq, uint32_t flags,
                                    const char *field) {
        const size_t errors = guest_.errors.size();
        EXPECT_FALSE(arm_cq(cq, flags));
        ASSERT_EQ(guest_.errors.size(), errors + 1) << field;
        EXPECT_EQ(guest_.errors.back().cmd, 0u);
        EXPECT_EQ(guest_.errors.back().err, VRDMA_ERR_BAD_HANDLE);
        EXPECT_EQ(guest_.errors.back().field, field);
        EXPECT_EQ(guest_.errors.back().a,
                  VIRTIO_RDMA_DB(VIRTIO_RDMA_DB_CQ_ARM, cq, flags));
    };
    expect_ignored(3, 1, "doorbell.cqn");
    expect_ignored(VIRTIO_RDMA_DB_QN_MASK, 1, "doorbell.cqn");
    for (uint32_t flags : {0u, 4u, 5u, 0x80000000u}) {
        expect_ignored(cqn, flags, "doorbell.flags");
    }
    EXPECT_EQ(vrdma_core_cq_armed(core_, cqn), 0u);
    /* Version 1's REQ_NOTIFY_CQ (cqn, flags): refused, whatever it asks. */
    const std::array<uint32_t, 2> req_notify{cqn, 2};
    expect_refused(VIRTIO_RDMA_CMD_REQ_NOTIFY_CQ, req_notify,
                   VRDMA_ERR_UNSUPPORTED);
    EXPECT_EQ(vrdma_core_cq_armed(core_, cqn), 0u);
    arm_cq(cqn, 2);
    EXPECT_EQ(vrdma_core_cq_armed(core_, cqn), 2u);
}

} // namespace
} // namespace vrdma_test

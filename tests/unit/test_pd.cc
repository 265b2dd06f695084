/*
 * CREATE_PD / DESTROY_PD: handles, generations, references.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core_fixture.h"

namespace vrdma_test {
namespace {

using Pd = CoreTest;

TEST_F(Pd, CreateReturnsGenerationAndLowestIndex)
{
    EXPECT_EQ(create_pd(), 0x10000u);
    EXPECT_EQ(create_pd(), 0x10001u);
    EXPECT_EQ(create_pd(), 0x10002u);
    EXPECT_EQ(destroy_pd(0x10001), VIRTIO_RDMA_OK);
    EXPECT_EQ(create_pd(), 0x20001u); /* lowest free slot, next generation */
    EXPECT_TRUE(guest_.errors.empty());
}

TEST_F(Pd, TableFull)
{
    for (uint32_t i = 0; i < lim_.max_pd; i++) {
        create_pd();
    }
    expect_refused(VIRTIO_RDMA_CMD_CREATE_PD, None{}, VRDMA_ERR_TABLE_FULL);
    EXPECT_EQ(guest_.errors.back().field, "pdn") << "no PD number left";
    EXPECT_EQ(destroy_pd(0x10002), VIRTIO_RDMA_OK);
    EXPECT_EQ(create_pd(), 0x20002u);
}

TEST_F(Pd, DestroyBadAndStaleHandles)
{
    const uint32_t pdn = create_pd();
    for (uint32_t bad : {0u, 0x00000u | 0u, 0x10001u, 0x20000u, 0xffff0000u,
                         0x10000u | 4u /* index == max_pd */, 0x1ffffu,
                         0xffffffffu}) {
        expect_refused(VIRTIO_RDMA_CMD_DESTROY_PD,
                       virtio_rdma_cmd_destroy_pd{.pdn = bad},
                       VRDMA_ERR_BAD_HANDLE);
        EXPECT_EQ(guest_.errors.back().field, "pdn");
    }
    EXPECT_EQ(destroy_pd(pdn), VIRTIO_RDMA_OK);
    /* Stale: the slot is free, and later reused under a new generation. */
    expect_refused(VIRTIO_RDMA_CMD_DESTROY_PD,
                   virtio_rdma_cmd_destroy_pd{.pdn = pdn},
                   VRDMA_ERR_BAD_HANDLE);
    const uint32_t again = create_pd();
    EXPECT_EQ(again, 0x20000u);
    expect_refused(VIRTIO_RDMA_CMD_DESTROY_PD,
                   virtio_rdma_cmd_destroy_pd{.pdn = pdn},
                   VRDMA_ERR_BAD_HANDLE);
    EXPECT_EQ(destroy_pd(again), VIRTIO_RDMA_OK);
}

TEST_F(Pd, GenerationNeverZero)
{
    uint32_t pdn = 0;
    for (uint32_t i = 0; i < 0xffff; i++) {
        pdn = create_pd();
        ASSERT_EQ(destroy_pd(pdn), VIRTIO_RDMA_OK);
    }
    EXPECT_EQ(pdn, 0xffff0000u);
    EXPECT_EQ(create_pd(), 0x10000u); /* wrapped past 0 */
}

TEST_F(Pd, InUseByMr)
{
    const uint32_t pdn = create_pd();
    const virtio_rdma_rsp_mr mr = get_dma_mr(pdn, 0);
    expect_refused(VIRTIO_RDMA_CMD_DESTROY_PD,
                   virtio_rdma_cmd_destroy_pd{.pdn = pdn}, VRDMA_ERR_IN_USE);
    EXPECT_EQ(dereg_mr(mr.mrn), VIRTIO_RDMA_OK);
    EXPECT_EQ(destroy_pd(pdn), VIRTIO_RDMA_OK);
}

TEST_F(Pd, InUseByQp)
{
    const uint32_t pdn = create_pd();
    const uint32_t cqn = create_cq();
    const uint32_t qpn = create_qp(qp_req(pdn, VIRTIO_RDMA_QPT_UD, cqn));
    const uint32_t gsi = create_qp(qp_req(pdn, VIRTIO_RDMA_QPT_GSI, cqn));
    expect_refused(VIRTIO_RDMA_CMD_DESTROY_PD,
                   virtio_rdma_cmd_destroy_pd{.pdn = pdn}, VRDMA_ERR_IN_USE);
    EXPECT_EQ(destroy_qp(qpn), VIRTIO_RDMA_OK);
    expect_refused(VIRTIO_RDMA_CMD_DESTROY_PD,
                   virtio_rdma_cmd_destroy_pd{.pdn = pdn}, VRDMA_ERR_IN_USE);
    EXPECT_EQ(destroy_qp(gsi), VIRTIO_RDMA_OK);
    EXPECT_EQ(destroy_pd(pdn), VIRTIO_RDMA_OK);
}

} // namespace
} // namespace vrdma_test

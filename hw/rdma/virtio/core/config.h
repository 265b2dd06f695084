/*
 * virtio-rdma core: device limits and the config space derived from them.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_VIRTIO_CORE_CONFIG_H
#define HW_RDMA_VIRTIO_CORE_CONFIG_H

#include <cstdint>

#include "hw/rdma/virtio-rdma-core.h"

namespace vrdma {

inline constexpr uint64_t kPageSize = VIRTIO_RDMA_PAGE_SIZE;
inline constexpr uint64_t kPageMask = kPageSize - 1;
inline constexpr uint64_t kMaxMrSize =
    static_cast<uint64_t>(VIRTIO_RDMA_MAX_MR_PAGES) * VIRTIO_RDMA_PAGE_SIZE;
inline constexpr uint32_t kMaxSge = VRDMA_MAX_SGE;
/* Outstanding RDMA Read / Atomic operations per QP, each direction. */
inline constexpr uint32_t kMaxQpRdAtom = 16;

/* The capabilities commands are checked against (a subset of the config). */
struct DeviceCaps {
    uint32_t max_fast_reg_page_list_len;
    uint32_t max_qp_rd_atom;      /* bound of max_dest_rd_atomic */
    uint32_t max_qp_init_rd_atom; /* bound of max_rd_atomic */
    bool atomics;
    bool fast_reg;                /* MEM_MGT_EXTENSIONS */
};

/* CREATE_CQ_RING's largest cqe under @lim. */
inline uint32_t max_ring_cqe(const VrdmaLimits &lim)
{
    return lim.max_ring_cqe && lim.max_ring_cqe < VIRTIO_RDMA_RING_MAX_CQE
               ? lim.max_ring_cqe
               : VIRTIO_RDMA_RING_MAX_CQE;
}

/* CREATE_QP_RING's largest max_send_wr / max_recv_wr under @lim. */
inline uint32_t max_ring_qp_wr(const VrdmaLimits &lim)
{
    return lim.max_ring_qp_wr && lim.max_ring_qp_wr < VIRTIO_RDMA_RING_MAX_QP_WR
               ? lim.max_ring_qp_wr
               : VIRTIO_RDMA_RING_MAX_QP_WR;
}

/* CREATE_SRQ_RING's largest max_wr under @lim. */
inline uint32_t max_srq_wr(const VrdmaLimits &lim)
{
    return lim.max_srq_wr && lim.max_srq_wr < VIRTIO_RDMA_RING_MAX_SRQ_WR
               ? lim.max_srq_wr
               : VIRTIO_RDMA_RING_MAX_SRQ_WR;
}

/* CREATE_SRQ_RING's largest max_sge under @lim. */
inline uint32_t max_srq_sge(const VrdmaLimits &lim)
{
    return lim.max_srq_sge && lim.max_srq_sge < lim.max_sge ? lim.max_srq_sge
                                                            : lim.max_sge;
}

/* @returns whether @lim is within what the core supports. */
bool limits_valid(const VrdmaLimits &lim);

DeviceCaps device_caps(const VrdmaLimits &lim);

/* The config space for @lim, every field little-endian. */
void fill_config(const VrdmaLimits &lim, virtio_rdma_config &cfg);

} // namespace vrdma

#endif

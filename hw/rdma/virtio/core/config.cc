/*
 * virtio-rdma core: device limits and the config space derived from them.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "config.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "gid_allow.h"
#include "guest_abi.h"

namespace vrdma {

namespace {

bool object_limit_ok(uint32_t v)
{
    return v >= VIRTIO_RDMA_LIMIT_MIN && v <= VIRTIO_RDMA_LIMIT_MAX;
}

/* @ours, or the backend's @theirs if that is lower (0: none given). */
uint32_t lower(uint32_t ours, uint32_t theirs)
{
    return theirs ? std::min(ours, theirs) : ours;
}

} // namespace

bool limits_valid(const VrdmaLimits &lim)
{
    return lim.max_qp >= 2 && /* qpn 0 unused, 1 is GSI */
           lim.max_qp <= VIRTIO_RDMA_RING_MAX_QP && lim.max_cq >= 1 &&
           lim.max_cq <= VIRTIO_RDMA_RING_MAX_CQ && object_limit_ok(lim.max_mr) &&
           object_limit_ok(lim.max_pd) && object_limit_ok(lim.max_ah) &&
           lim.max_sge >= 1 && lim.max_sge <= kMaxSge &&
           lim.max_mr_size >= kPageSize && lim.max_mr_size <= kMaxMrSize &&
           lim.max_ctx <= VRDMA_MAX_CTX && gid_allow_valid(lim.allow) &&
           lim.max_srq <= VIRTIO_RDMA_RING_MAX_SRQ;
}

DeviceCaps device_caps(const VrdmaLimits &lim)
{
    return DeviceCaps{
        .max_fast_reg_page_list_len = static_cast<uint32_t>(
            std::min<uint64_t>(lim.max_mr_size / kPageSize,
                               VIRTIO_RDMA_PT2_PAGES)),
        .max_qp_rd_atom = lower(kMaxQpRdAtom, lim.max_qp_rd_atom),
        .max_qp_init_rd_atom = lower(kMaxQpRdAtom, lim.max_qp_init_rd_atom),
        .atomics = !lim.no_atomics,
        .fast_reg = !lim.no_fast_reg,
    };
}

void fill_config(const VrdmaLimits &lim, virtio_rdma_config &cfg)
{
    const DeviceCaps caps = device_caps(lim);
    const uint64_t res_rd_atom = std::min<uint64_t>(
        uint64_t{caps.max_qp_rd_atom} * lim.max_qp, UINT32_MAX);

    std::memset(&cfg, 0, sizeof(cfg));
    cfg.phys_port_cnt = le<uint32_t>(1);
    /* Already in network byte order as the config holds it: copy as is. */
    cfg.sys_image_guid = lim.sys_image_guid;
    cfg.vendor_id = le<uint32_t>(0x1af4);
    cfg.vendor_part_id = le<uint32_t>(VIRTIO_RDMA_PCI_DEVICE_ID);
    cfg.hw_ver = le<uint32_t>(VIRTIO_RDMA_ABI_VERSION);
    cfg.max_mr_size = le(lim.max_mr_size);
    cfg.page_size_cap = le(kPageSize);
    cfg.device_cap_flags = le<uint64_t>(
        VIRTIO_RDMA_DEV_RC_RNR_NAK_GEN | VIRTIO_RDMA_DEV_SYS_IMAGE_GUID |
        (caps.fast_reg ? VIRTIO_RDMA_DEV_MEM_MGT_EXTENSIONS : 0));
    cfg.max_send_sge = le(lim.max_sge);
    cfg.max_recv_sge = le(lim.max_sge);
    cfg.max_sge_rd = le(lim.max_sge);
    cfg.max_mr = le(lim.max_mr);
    cfg.max_pd = le(lim.max_pd);
    cfg.max_qp_rd_atom = le(caps.max_qp_rd_atom);
    cfg.max_res_rd_atom = le(static_cast<uint32_t>(res_rd_atom));
    cfg.max_qp_init_rd_atom = le(caps.max_qp_init_rd_atom);
    cfg.atomic_cap = le<uint32_t>(caps.atomics ? VIRTIO_RDMA_ATOMIC_HCA
                                               : VIRTIO_RDMA_ATOMIC_NONE);
    cfg.max_ah = le(lim.max_ah);
    cfg.max_fast_reg_page_list_len =
        le(caps.fast_reg ? caps.max_fast_reg_page_list_len : 0u);
    cfg.max_pkeys = le<uint16_t>(VRDMA_PKEY_TABLE_LEN);
    cfg.local_ca_ack_delay = 15;
    cfg.max_ctx = le(lim.max_ctx);
    cfg.max_ring_cqe = le(max_ring_cqe(lim));
    cfg.max_ring_qp_wr = le(max_ring_qp_wr(lim));
    cfg.max_ring_qp = le(lim.max_qp);
    cfg.max_ring_cq = le(lim.max_cq);
    cfg.max_srq = le(lim.max_srq);
    cfg.max_srq_wr = le(lim.max_srq ? max_srq_wr(lim) : 0u);
    cfg.max_srq_sge = le(lim.max_srq ? max_srq_sge(lim) : 0u);
}

} // namespace vrdma

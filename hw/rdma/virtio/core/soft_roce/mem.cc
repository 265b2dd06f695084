/*
 * virtio-rdma soft-RoCE engine: the work requests that change an MR's state
 * (LOCAL_INV, REG_MR).  MrTable (../mr.cc) says what each may do; guest
 * memory through MRs is ../mr_access.cc.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "../core.h"
#include "../guest_abi.h"
#include "engine.h"

namespace vrdma::soft_roce {

/* LOCAL_INV and REG_MR work requests: MrTable says what each may do. */
uint8_t local_inv(VrdmaCore &c, const Qp &qp, uint32_t key)
{
    return c.mrs.invalidate_local(key, qp.pd_index)
               ? VIRTIO_RDMA_WC_SUCCESS
               : VIRTIO_RDMA_WC_LOC_QP_OP_ERR;
}

uint8_t reg_mr(VrdmaCore &c, const Qp &qp, const SendWqe &w)
{
    return c.mrs.fast_register(w.reg_mrn, qp.pd_index, w.reg_key,
                               w.reg_access)
               ? VIRTIO_RDMA_WC_SUCCESS
               : VIRTIO_RDMA_WC_LOC_QP_OP_ERR;
}

} // namespace vrdma::soft_roce

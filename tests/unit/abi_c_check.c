/*
 * The ABI and core headers compile as C (their _Static_assert pins hold
 * for the C compiler too) and give the same sizes as C++ sees.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "abi_c_check.h"

#include "hw/rdma/virtio-rdma-abi.h"
#include "hw/rdma/virtio-rdma-core.h"

size_t vrdma_c_sizeof(enum vrdma_c_struct s)
{
    switch (s) {
    case VRDMA_C_CONFIG: return sizeof(struct virtio_rdma_config);
    case VRDMA_C_PORT_ATTR: return sizeof(struct virtio_rdma_port_attr);
    case VRDMA_C_CREATE_QP: return sizeof(struct virtio_rdma_cmd_create_qp);
    case VRDMA_C_QP_ATTR: return sizeof(struct virtio_rdma_qp_attr);
    case VRDMA_C_MODIFY_QP: return sizeof(struct virtio_rdma_cmd_modify_qp);
    case VRDMA_C_REG_USER_MR: return sizeof(struct virtio_rdma_cmd_reg_user_mr);
    case VRDMA_C_SQ_REQ: return sizeof(struct virtio_rdma_sq_req);
    case VRDMA_C_CQ_REQ: return sizeof(struct virtio_rdma_cq_req);
    case VRDMA_C_STATS: return sizeof(VrdmaStats);
    case VRDMA_C_LIMITS: return sizeof(VrdmaLimits);
    }
    return 0;
}

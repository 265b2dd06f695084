/*
 * virtio-rdma core: names of refusals and commands, and the refusal ->
 * status byte mapping (docs/specs/virtio-rdma.rst, "Status values").
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "errors.h"

namespace vrdma {

uint8_t status_of(VrdmaErr err)
{
    switch (err) {
    case VRDMA_ERR_NONE:
        return VIRTIO_RDMA_OK;
    case VRDMA_ERR_UNKNOWN_CMD:
        return VIRTIO_RDMA_EOPNOTSUPP;
    case VRDMA_ERR_BAD_HANDLE:
        return VIRTIO_RDMA_ENOENT;
    case VRDMA_ERR_TABLE_FULL:
        return VIRTIO_RDMA_ENOMEM;
    case VRDMA_ERR_IN_USE:
        return VIRTIO_RDMA_EBUSY;
    case VRDMA_ERR_LIMIT:
        return VIRTIO_RDMA_ERANGE;
    case VRDMA_ERR_BAD_ADDR:
        return VIRTIO_RDMA_EFAULT;
    case VRDMA_ERR_REQ_SIZE:
    case VRDMA_ERR_RSP_SIZE:
    case VRDMA_ERR_BAD_ARG:
    case VRDMA_ERR_OVERFLOW:
    case VRDMA_ERR_BAD_STATE:
    case VRDMA_ERR_BAD_MASK:
    case VRDMA_ERR_BAD_PORT:
    case VRDMA_ERR_BAD_INDEX:
    case VRDMA_ERR__COUNT:
        break;
    }
    return VIRTIO_RDMA_EINVAL;
}

} // namespace vrdma

extern "C" const char *vrdma_err_name(VrdmaErr err)
{
    switch (err) {
    case VRDMA_ERR_NONE: return "NONE";
    case VRDMA_ERR_UNKNOWN_CMD: return "UNKNOWN_CMD";
    case VRDMA_ERR_REQ_SIZE: return "REQ_SIZE";
    case VRDMA_ERR_RSP_SIZE: return "RSP_SIZE";
    case VRDMA_ERR_BAD_HANDLE: return "BAD_HANDLE";
    case VRDMA_ERR_TABLE_FULL: return "TABLE_FULL";
    case VRDMA_ERR_IN_USE: return "IN_USE";
    case VRDMA_ERR_BAD_ARG: return "BAD_ARG";
    case VRDMA_ERR_LIMIT: return "LIMIT";
    case VRDMA_ERR_OVERFLOW: return "OVERFLOW";
    case VRDMA_ERR_BAD_ADDR: return "BAD_ADDR";
    case VRDMA_ERR_BAD_STATE: return "BAD_STATE";
    case VRDMA_ERR_BAD_MASK: return "BAD_MASK";
    case VRDMA_ERR_BAD_PORT: return "BAD_PORT";
    case VRDMA_ERR_BAD_INDEX: return "BAD_INDEX";
    case VRDMA_ERR__COUNT: break;
    }
    return "?";
}

extern "C" const char *vrdma_cmd_name(uint8_t cmd)
{
    switch (cmd) {
    case VIRTIO_RDMA_CMD_ILLEGAL: return "ILLEGAL";
    case VIRTIO_RDMA_CMD_QUERY_PORT: return "QUERY_PORT";
    case VIRTIO_RDMA_CMD_CREATE_CQ: return "CREATE_CQ";
    case VIRTIO_RDMA_CMD_DESTROY_CQ: return "DESTROY_CQ";
    case VIRTIO_RDMA_CMD_CREATE_PD: return "CREATE_PD";
    case VIRTIO_RDMA_CMD_DESTROY_PD: return "DESTROY_PD";
    case VIRTIO_RDMA_CMD_GET_DMA_MR: return "GET_DMA_MR";
    case VIRTIO_RDMA_CMD_CREATE_MR: return "CREATE_MR";
    case VIRTIO_RDMA_CMD_MAP_MR_SG: return "MAP_MR_SG";
    case VIRTIO_RDMA_CMD_REG_USER_MR: return "REG_USER_MR";
    case VIRTIO_RDMA_CMD_DEREG_MR: return "DEREG_MR";
    case VIRTIO_RDMA_CMD_CREATE_QP: return "CREATE_QP";
    case VIRTIO_RDMA_CMD_MODIFY_QP: return "MODIFY_QP";
    case VIRTIO_RDMA_CMD_QUERY_QP: return "QUERY_QP";
    case VIRTIO_RDMA_CMD_DESTROY_QP: return "DESTROY_QP";
    case VIRTIO_RDMA_CMD_QUERY_PKEY: return "QUERY_PKEY";
    case VIRTIO_RDMA_CMD_ADD_GID: return "ADD_GID";
    case VIRTIO_RDMA_CMD_DEL_GID: return "DEL_GID";
    case VIRTIO_RDMA_CMD_REQ_NOTIFY_CQ: return "REQ_NOTIFY_CQ";
    default: break;
    }
    return "UNKNOWN";
}

/*
 * virtio-rdma core: names of refusals and commands, and the refusal ->
 * status byte mapping (docs/specs/virtio-rdma.rst, "Status values"), all
 * expanded from the lists in virtio-rdma-names.h.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "errors.h"

namespace vrdma {

uint8_t status_of(VrdmaErr err)
{
    switch (err) {
#define VRDMA_ERR_STATUS_(up, status, why)                                  \
    case VRDMA_ERR_##up:                                                    \
        return VIRTIO_RDMA_##status;
    VRDMA_ERRS(VRDMA_ERR_STATUS_)
#undef VRDMA_ERR_STATUS_
    case VRDMA_ERR__COUNT:
        break;
    }
    return VIRTIO_RDMA_EINVAL;
}

} // namespace vrdma

extern "C" const char *vrdma_err_name(VrdmaErr err)
{
    switch (err) {
#define VRDMA_ERR_NAME_(up, status, why) case VRDMA_ERR_##up: return #up;
    VRDMA_ERRS(VRDMA_ERR_NAME_)
#undef VRDMA_ERR_NAME_
    case VRDMA_ERR__COUNT: break;
    }
    return "?";
}

extern "C" const char *vrdma_cmd_name(uint8_t cmd)
{
    switch (cmd) {
#define VRDMA_CMD_NAME_(up) case VIRTIO_RDMA_CMD_##up: return #up;
    VRDMA_CMDS(VRDMA_CMD_NAME_)
#undef VRDMA_CMD_NAME_
    default: break;
    }
    return "UNKNOWN";
}

/*
 * virtio-rdma core: protection domains.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_VIRTIO_CORE_PD_H
#define HW_RDMA_VIRTIO_CORE_PD_H

#include <cstdint>

#include "errors.h"
#include "guest_abi.h"

namespace vrdma {

struct Pd {
    uint32_t refs = 0; /* QPs and MRs in this PD */
};

Status cmd_create_pd(VrdmaCore &c, const NoPayload &req,
                     virtio_rdma_rsp_create_pd &rsp);
Status cmd_destroy_pd(VrdmaCore &c, const virtio_rdma_cmd_destroy_pd &req,
                      NoPayload &rsp);

} // namespace vrdma

#endif

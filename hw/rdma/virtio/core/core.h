/*
 * virtio-rdma core: the device state behind the opaque VrdmaCore handle.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_VIRTIO_CORE_CORE_H
#define HW_RDMA_VIRTIO_CORE_CORE_H

#include <array>
#include <cstdint>

#include "config.h"
#include "cq.h"
#include "dp/engine.h"
#include "hw/rdma/virtio-rdma-core.h"
#include "mr.h"
#include "object_table.h"
#include "pd.h"
#include "port.h"
#include "qp.h"

struct VrdmaCore {
    VrdmaCore(const VrdmaLimits &lim_, const VrdmaHostOps &ops_);
    ~VrdmaCore();
    VrdmaCore(const VrdmaCore &) = delete;
    VrdmaCore &operator=(const VrdmaCore &) = delete;

    /*
     * Frees every object and GID (reporting each GID deleted): the device is
     * as new, but for the command counters.
     */
    void reset();

    void gid_changed(uint32_t index, const vrdma::GidEntry &e, bool added) const
    {
        if (ops.gid_changed) {
            ops.gid_changed(ops.opaque, vrdma::kPortNum, index, e.gid.data(),
                            e.type, added);
        }
    }

    const VrdmaLimits lim;
    const VrdmaHostOps ops; /* MRs keep a pointer to it: never moves */
    const vrdma::DeviceCaps caps;

    vrdma::ObjectTable<vrdma::Pd> pds;
    vrdma::ObjectTable<vrdma::Cq> cqs;
    vrdma::MrTable mrs;
    vrdma::ObjectTable<vrdma::Qp> qps;
    vrdma::Port port;
    vrdma::dp::Engine dp;

    uint64_t cmds = 0;
    uint64_t cmd_errors = 0;
    std::array<uint64_t, VRDMA_ERR__COUNT> err_count{};
};

#endif

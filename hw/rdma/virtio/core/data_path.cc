/*
 * virtio-rdma core: the data path's C entry points
 * (include/hw/rdma/virtio-rdma-core.h): the backend (backend.h) does the
 * work.  These are per packet, so each visits the backend here, inline:
 * one call from the host to the backend's work.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <span>

#include "backend.h"
#include "core.h"

using namespace vrdma;
using vrdma::backend::with;

extern "C" {

bool vrdma_core_net_receive(VrdmaCore *core, const void *frame, size_t len)
{
    const std::span<const uint8_t> f(static_cast<const uint8_t *>(frame), len);
    return with(*core, [&](auto &b) { return b.frame_receive(*core, f); });
}

bool vrdma_core_mad_receive(VrdmaCore *core, const VrdmaMad *mad)
{
    return with(*core, [&](auto &b) { return b.mad_receive(*core, *mad); });
}

void vrdma_core_timer(VrdmaCore *core)
{
    with(*core, [&](auto &b) { b.timer(*core); });
}

bool vrdma_core_run(VrdmaCore *core)
{
    return with(*core, [&](auto &b) { return b.run(*core); });
}

void vrdma_core_get_dp_stats(const VrdmaCore *core, VrdmaDpStats *stats)
{
    *stats = backend::stats(*core);
}

} // extern "C"

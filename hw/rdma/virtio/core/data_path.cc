/*
 * virtio-rdma core: the data path's C entry points
 * (include/hw/rdma/virtio-rdma-core.h).  The core names the QP; its
 * backend (backend.h) does the rest.  These are per packet, so each visits
 * the backend here, inline: one call from the host to the backend's work.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <span>

#include "backend.h"
#include "core.h"

using namespace vrdma;
using vrdma::backend::with;

namespace {

/*
 * The QP a work request was posted to.  One for a QP that does not exist
 * has no CQ to complete on: it is reported through guest_error (cmd 0,
 * BAD_HANDLE, field "qpn", the queue index and the request's length).
 */
Qp *posted_to(VrdmaCore &c, uint32_t qpn, size_t len)
{
    Qp *qp = c.qps.at(qpn);
    if (!qp) {
        c.host.guest_error(0, VRDMA_ERR_BAD_HANDLE, "qpn", qpn, len);
    }
    return qp;
}

} // namespace

extern "C" {

void vrdma_core_post_send(VrdmaCore *core, uint32_t qpn, const void *wqe,
                          size_t len)
{
    if (Qp *qp = posted_to(*core, qpn, len)) {
        with(*core, [&](auto &b) { b.post_send(*core, *qp, wqe, len); });
    }
}

void vrdma_core_post_recv(VrdmaCore *core, uint32_t qpn, const void *wqe,
                          size_t len)
{
    if (Qp *qp = posted_to(*core, qpn, len)) {
        with(*core, [&](auto &b) { b.post_recv(*core, *qp, wqe, len); });
    }
}

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

/*
 * virtio-rdma core built without libibverbs (meson
 * -Dvirtio_rdma_ibverbs=disabled, or libibverbs-dev missing): the ibverbs
 * backend's entry points say so, so realize can refuse backend=ibverbs
 * with the reason.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <cstdio>

#include "hw/rdma/virtio-rdma-ibverbs.h"

extern "C" {

bool vrdma_ibverbs_built(void)
{
    return false;
}

bool vrdma_ib_probe(const char *, unsigned, VrdmaLimits *, VrdmaIbHostInfo *,
                    char *err, size_t errlen)
{
    std::snprintf(err, errlen, "this build has no ibverbs backend (configure "
                  "QEMU with -Dvirtio_rdma_ibverbs=enabled; needs "
                  "libibverbs-dev)");
    return false;
}

VrdmaCore *vrdma_core_new_ibverbs(const VrdmaLimits *lim,
                                  const VrdmaHostOps *, const char *,
                                  unsigned, char *err, size_t errlen)
{
    vrdma_ib_probe(nullptr, 0, const_cast<VrdmaLimits *>(lim), nullptr, err,
                   errlen);
    return nullptr;
}

bool vrdma_core_ib_stats(const VrdmaCore *, VrdmaIbStats *)
{
    return false;
}

} // extern "C"

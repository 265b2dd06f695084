/*
 * virtio-rdma core, backend=ibverbs: the host RDMA device the backend
 * proxies to (libibverbs; a Linux rxe or an HCA).  C interface for QEMU's
 * device, which checks the host side at realize with it.
 *
 * Blocking: each call opens the host device and queries it (milliseconds);
 * call at realize, under the BQL, never on the data path.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_VIRTIO_RDMA_IBVERBS_H
#define HW_RDMA_VIRTIO_RDMA_IBVERBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hw/rdma/virtio-rdma-core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Whether this build has the ibverbs backend (meson -Dvirtio_rdma_ibverbs). */
bool vrdma_ibverbs_built(void);

/* The host side of a device in backend=ibverbs mode, as found at realize. */
typedef struct VrdmaIbHostInfo {
    char ibdev[64];          /* the host device's name, e.g. "rxe0" */
    char fw_ver[64];
    char netdev[16];         /* the port's host netdev (IFNAMSIZ), or "" */
    uint32_t port;
    uint32_t port_state;     /* enum ibv_port_state: 4 = ACTIVE */
    uint32_t active_mtu;     /* bytes */
    uint32_t max_msg_sz;     /* bytes */
    uint32_t gid_tbl_len;
    uint32_t vendor_id, vendor_part_id;
} VrdmaIbHostInfo;

/*
 * Opens host RDMA device @ibdev and checks its port @ibport exists and is
 * Ethernet (RoCE); lowers each limit of @lim above the host device's to
 * the host's (the caller says which it lowered, by comparing), and fills
 * @info.  @returns true, or false with a message for the user in @err
 * (@errlen bytes, always NUL-terminated): no such device (naming the ones
 * the host has), no such port, an InfiniBand port, or a build without the
 * backend.
 */
bool vrdma_ib_probe(const char *ibdev, unsigned ibport, VrdmaLimits *lim,
                    VrdmaIbHostInfo *info, char *err, size_t errlen);

/*
 * A core whose backend is host RDMA device @ibdev, port @ibport: each
 * guest PD, CQ, QP and MR becomes one host object.  @lim as
 * vrdma_ib_probe() left it; @ops as for vrdma_core_new(), plus
 * loop.fd_watch (the completion channel is watched from now until
 * vrdma_core_free()).  @returns the core, or NULL with a message in @err.
 */
VrdmaCore *vrdma_core_new_ibverbs(const VrdmaLimits *lim,
                                  const VrdmaHostOps *ops, const char *ibdev,
                                  unsigned ibport, char *err, size_t errlen);

/* The host side of a core made by vrdma_core_new_ibverbs(), for QMP. */
typedef struct VrdmaIbStats {
    uint32_t pds, cqs, qps, mrs, ahs;   /* host objects now */
    uint64_t map_runs, max_map_runs;    /* MR window mappings (VMAs), cap */
    uint64_t async_events;              /* host async events seen */
    uint64_t mads_sent, mads_received;  /* GSI QP through the MAD link */
    uint64_t mads_dropped;
    uint64_t dma_pages;                 /* pinned for DMA MRs (shared per PD) */
    uint32_t host_jobs;                 /* in flight on the worker thread */
    uint32_t graveyard;                 /* host objects waiting for a job */
    uint64_t purged_cqes;               /* of destroyed QPs, dropped */
} VrdmaIbStats;

/* @returns false (and leaves @st alone) if @core is not on ibverbs. */
bool vrdma_core_ib_stats(const VrdmaCore *core, VrdmaIbStats *st);

#ifdef __cplusplus
}
#endif

#endif /* HW_RDMA_VIRTIO_RDMA_IBVERBS_H */

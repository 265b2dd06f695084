/*
 * virtio-rdma: which backend moves the data (property backend=), the
 * properties that belong to each, and the host side of backend=ibverbs.
 *
 * backend=ibverbs proxies guest objects 1:1 to a host RDMA device, which
 * registers guest pages as host MRs: the host maps them from the guest RAM's
 * file descriptor, so guest RAM must be shared fd-backed memory of 4 KiB
 * pages (memory-backend-memfd, or memory-backend-ram,share=on), and the
 * device's limits may not promise more than the host device gives.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/util.h"
#include "qemu/error-report.h"
#include "exec/cpu-common.h"
#include "exec/memory.h"
#include "exec/ramblock.h"
#include <sys/vfs.h>
#include <linux/magic.h>
#include "hw/boards.h"
#include "virtio-rdma.h"
#include "migration/blocker.h"
#include "trace.h"

/* Guest RAM the host device can map: shared, fd-backed, 4 KiB pages. */
static bool virtio_rdma_ram_is_mappable(Error **errp)
{
    MachineState *ms = MACHINE(qdev_get_machine());
    RAMBlock *rb = ms->ram ? ms->ram->ram_block : NULL;
    struct statfs fs;

    if (!rb || qemu_ram_get_fd(rb) < 0 || !qemu_ram_is_shared(rb)) {
        error_setg(errp, "virtio-rdma: backend=ibverbs needs guest RAM that "
                   "is shared and backed by a file descriptor");
        error_append_hint(errp, "The host RDMA device maps guest pages from "
                          "it: use -object memory-backend-memfd,id=mem,"
                          "size=<RAM size> -machine memory-backend=mem (or "
                          "memory-backend-ram,share=on)\n");
        return false;
    }
    if (fstatfs(qemu_ram_get_fd(rb), &fs) < 0) {
        error_setg_errno(errp, errno, "virtio-rdma: backend=ibverbs cannot "
                         "tell what backs guest RAM");
        return false;
    }
    /*
     * The host device pins guest pages for as long as they are registered:
     * long-term writable pins of page-cache pages of a disk filesystem
     * corrupt it (host kernels before 6.5) or fail.  Memory only: memfd
     * and shmem are tmpfs; hugetlbfs is refused below by its page size.
     */
    if (fs.f_type != TMPFS_MAGIC && fs.f_type != HUGETLBFS_MAGIC) {
        error_setg(errp, "virtio-rdma: backend=ibverbs needs guest RAM in "
                   "memory, not in a file on a disk filesystem (f_type "
                   "0x%llx)", (unsigned long long)fs.f_type);
        error_append_hint(errp, "Use -object memory-backend-memfd (or "
                          "memory-backend-file with mem-path on tmpfs)\n");
        return false;
    }
    if (qemu_ram_pagesize(rb) != VIRTIO_RDMA_PAGE_SIZE) {
        error_setg(errp, "virtio-rdma: backend=ibverbs needs guest RAM of "
                   "4 KiB pages, not %zu KiB (hugetlbfs)",
                   qemu_ram_pagesize(rb) / 1024);
        return false;
    }
    return true;
}

/* Says which limit the host device lowered, by property name. */
static void virtio_rdma_report_lowered(const char *name, uint64_t want,
                                       uint64_t got, const char *ibdev)
{
    if (got != want) {
        warn_report("virtio-rdma: %s=%" PRIu64 " lowered to %" PRIu64
                    ", host RDMA device %s's limit", name, want, got, ibdev);
    }
}

/*
 * backend=ibverbs: the host device and port, limits lowered to the host's
 * (before realize sizes the virtqueues by them).
 */
static bool virtio_rdma_ibverbs_check(VirtIORdma *r, Error **errp)
{
    VirtIORdmaConf *c = &r->conf;
    unsigned port = c->ibport ? c->ibport : 1;
    char why[256];
    VrdmaLimits lim = {
        /* 0, the default: as many as the host allows. */
        .max_qp = c->max_qp ? c->max_qp : VIRTIO_RDMA_RING_MAX_QP,
        .max_cq = c->max_cq ? c->max_cq : VIRTIO_RDMA_RING_MAX_CQ,
        .max_mr = c->max_mr, .max_pd = c->max_pd, .max_ah = c->max_ah,
        .max_sge = c->max_sge, .max_mr_size = c->max_mr_size,
        .max_srq = c->max_srq ? c->max_srq : VIRTIO_RDMA_RING_MAX_SRQ,
    };

    if (!vrdma_ibverbs_built()) {
        vrdma_ib_probe(NULL, 0, &lim, &r->ib, why, sizeof(why));
        error_setg(errp, "virtio-rdma: backend=ibverbs: %s", why);
        return false;
    }
    if (!c->ibdev || !*c->ibdev) {
        error_setg(errp, "virtio-rdma: backend=ibverbs needs ibdev=<host "
                   "RDMA device>");
        error_append_hint(errp, "rdma link show lists the host's devices\n");
        return false;
    }
    if (!virtio_rdma_ram_is_mappable(errp)) {
        return false;
    }
    if (!vrdma_ib_probe(c->ibdev, port, &lim, &r->ib, why, sizeof(why))) {
        error_setg(errp, "virtio-rdma: %s", why);
        return false;
    }
    trace_virtio_rdma_ibverbs_host(r->ib.ibdev, r->ib.port,
                                   r->ib.port_state, r->ib.active_mtu,
                                   r->ib.max_msg_sz);
    if (c->max_qp) {
        virtio_rdma_report_lowered("max-qp", c->max_qp, lim.max_qp,
                                   c->ibdev);
    }
    if (c->max_cq) {
        virtio_rdma_report_lowered("max-cq", c->max_cq, lim.max_cq,
                                   c->ibdev);
    }
    if (c->max_srq) {
        virtio_rdma_report_lowered("max-srq", c->max_srq, lim.max_srq,
                                   c->ibdev);
    }
    virtio_rdma_report_lowered("max-mr", c->max_mr, lim.max_mr, c->ibdev);
    virtio_rdma_report_lowered("max-pd", c->max_pd, lim.max_pd, c->ibdev);
    virtio_rdma_report_lowered("max-ah", c->max_ah, lim.max_ah, c->ibdev);
    virtio_rdma_report_lowered("max-sge", c->max_sge, lim.max_sge, c->ibdev);
    virtio_rdma_report_lowered("max-mr-size", c->max_mr_size,
                               lim.max_mr_size, c->ibdev);
    c->max_qp = lim.max_qp;
    c->max_cq = lim.max_cq;
    c->max_srq = lim.max_srq;
    c->max_mr = lim.max_mr;
    c->max_pd = lim.max_pd;
    c->max_ah = lim.max_ah;
    c->max_sge = lim.max_sge;
    c->max_mr_size = lim.max_mr_size;

    /*
     * The host device pins registered guest pages: a balloon or virtio-mem
     * must not discard them under it (as for VFIO).
     */
    if (ram_block_discard_disable(true)) {
        error_setg(errp, "virtio-rdma: backend=ibverbs cannot pin guest RAM "
                   "for host RDMA device %s: a device in this machine "
                   "discards RAM (virtio-mem?)", r->ib.ibdev);
        return false;
    }
    r->discard_disabled = true;
    error_setg(&r->migration_blocker, "virtio-rdma: backend=ibverbs: guest "
               "memory is registered with host RDMA device %s and its queue "
               "pairs live there; they cannot move to another host",
               r->ib.ibdev);
    if (migrate_add_blocker(&r->migration_blocker, errp) < 0) {
        virtio_rdma_backend_release(r);
        return false;
    }
    return true;
}

bool virtio_rdma_backend_check(VirtIORdma *r, Error **errp)
{
    VirtIORdmaConf *c = &r->conf;
    int kind = qapi_enum_parse(&VirtioRdmaBackend_lookup,
                               c->backend ? c->backend : "soft-roce", -1,
                               NULL);

    if (kind < 0) {
        error_setg(errp, "virtio-rdma: backend=%s is not a backend",
                   c->backend);
        error_append_hint(errp, "Use backend=soft-roce (the default) or "
                          "backend=ibverbs\n");
        return false;
    }
    r->backend = kind;
    if (r->backend == VIRTIO_RDMA_BACKEND_IBVERBS) {
        /*
         * netdev= names a host interface, to which libvirt adds every
         * address the guest's GID events name: on a shared host device
         * only addresses management allowed may get there.
         */
        if (c->netdev && !r->allow.n) {
            error_setg(errp, "virtio-rdma: backend=ibverbs: netdev=%s needs "
                       "allowed-gids", c->netdev);
            error_append_hint(errp, "RDMA_GID_STATUS_CHANGED names netdev= "
                              "as the host interface for the guest's GID "
                              "addresses; allowed-gids says which ones the "
                              "guest may have\n");
            return false;
        }
        return virtio_rdma_ibverbs_check(r, errp);
    }
    /* Properties of the other backend would be silently ignored: refuse. */
    if (c->ibdev || c->ibport || qemu_chr_fe_backend_connected(&c->mad_chr)) {
        error_setg(errp, "virtio-rdma: %s is for backend=ibverbs; this "
                   "device is backend=soft-roce",
                   c->ibdev ? "ibdev" : c->ibport ? "ibport" : "mad-chardev");
        return false;
    }
    return true;
}

void virtio_rdma_backend_release(VirtIORdma *r)
{
    migrate_del_blocker(&r->migration_blocker);
    if (r->discard_disabled) {
        ram_block_discard_disable(false);
        r->discard_disabled = false;
    }
}

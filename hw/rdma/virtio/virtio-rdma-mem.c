/*
 * virtio-rdma device: guest memory for the core (its map/unmap/read/write
 * host-ops).
 *
 * RAM only.  Every access is translated, checked and done in ONE RCU
 * critical section on ONE flatview: a range is refused unless each byte of
 * it is plain guest RAM (not MMIO, not a RAM device, not read-only for a
 * write).  Nothing here ever reaches a MemoryRegionOps callback, so no
 * access can call back into a device (ours included) while core_lock is
 * held, and none needs the BQL: the same code serves the main-loop and the
 * iothread placement.  A refusal is traced and returns NULL / -1, which the
 * core turns into the spec's status (EFAULT, LOC_PROT_ERR, REM_ACCESS_ERR).
 *
 * Long-lived maps (MR data pages) hold one reference per memory region, not
 * per page: a 64-bit count per region, the object reference taken on its
 * first page and dropped after its last (an object's refcount is 32 bits).
 * The last drop is deferred to a main-loop bottom half: it may finalize the
 * region's owner (a hot-unplugged DIMM's backend), which needs the BQL and
 * must not run under core_lock.
 *
 * A MemoryListener invalidates maps whose RAM leaves the address space
 * (memory hot-unplug, a RAM BAR disabled or moved): see vrdma_mem_commit().
 *
 * What is NOT followed, and why that is safe:
 *  - Balloon discards (uncoordinated): QEMU madvise()s the pages away but
 *    the host mapping stays; our pointer is the vCPU's own view of the page,
 *    which reads back as zeroes like the guest sees it.  Unlike vfio we pin
 *    no physical page, so nothing diverges and discards need not be
 *    disabled (ram_block_discard_disable()).
 *  - RamDiscardManager regions (virtio-mem): unplugged blocks must not be
 *    touched, and following them needs a RamDiscardListener per section as
 *    vfio registers.  Not in this build's device set, so such regions are
 *    refused outright (map, read and write).
 *  - vIOMMU: this build has none (no intel-iommu, amd-iommu, virtio-iommu),
 *    so dma_as is always address_space_memory.  Behind one, dma_as is the
 *    bus-master AS, whose IOMMU unmaps are not region_del events: maps are
 *    then refused (reads and writes still translate through it).  Support
 *    would need an IOMMU_NOTIFIER_UNMAP notifier per IOMMU section that
 *    invalidates by IOVA, as vhost does.
 *
 * Threading: the four host-ops run under core_lock (BQL held in the main
 * loop, not held in an iothread); init, cleanup, the listener and the bottom
 * half under the BQL.  Lock order: BQL, then core_lock.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/lockable.h"
#include "qemu/main-loop.h"
#include "qemu/rcu.h"
#include "exec/memory.h"
#include "exec/address-spaces.h"
#include "system/hostmem.h"
#include "system/xen.h"
#include "hw/virtio/virtio.h"
#include "virtio-rdma.h"
#include "trace.h"

/* A stretch of RAM the address space lost in the current transaction. */
typedef struct VrdmaMemGone {
    hwaddr gpa;
    uint64_t len;
    uint8_t *host;
} VrdmaMemGone;

struct VirtIORdmaMem {
    VirtIORdma *r;
    MemoryListener listener;
    bool listening;         /* false during cleanup: callbacks do nothing */
    GArray *gone;           /* VrdmaMemGone, BQL: this transaction's losses */

    /* core_lock: */
    GHashTable *maps;       /* MemoryRegion * -> uint64_t * pages mapped */
    GPtrArray *unref;       /* regions whose last page went; see unref_bh */
    QEMUBH *unref_bh;
};

/*
 * The RAM under [gpa, gpa + *plen) on @fv, with *plen clipped to what one
 * section covers: the region, with the host address in *host; NULL (traced)
 * if the device may not touch it directly.  Called in an RCU critical
 * section, the result is valid until it ends.
 */
static MemoryRegion *vrdma_mem_ram(FlatView *fv, hwaddr gpa, hwaddr *plen,
                                   bool is_write, uint8_t **host)
{
    hwaddr xlat;
    MemoryRegion *mr = flatview_translate(fv, gpa, &xlat, plen, is_write,
                                          MEMTXATTRS_UNSPECIFIED);
    const char *why = NULL;

    if (!memory_region_is_ram(mr) || memory_region_is_ram_device(mr)) {
        why = "not RAM";
    } else if (is_write && (mr->readonly || mr->rom_device)) {
        why = "read-only";
    } else if (memory_region_has_ram_discard_manager(mr)) {
        why = "discard-managed RAM (virtio-mem) is not followed";
    } else if (xen_enabled()) {
        why = "Xen's map cache gives no long-lived pointers";
    }
    if (why) {
        trace_virtio_rdma_mem_refused(gpa, *plen, is_write,
                                      memory_region_name(mr), why);
        return NULL;
    }
    /*
     * QEMU's generic-fuzz fills what a device is about to read (a no-op
     * unless built for fuzzing); its qtest link is the main loop's only.
     */
    if (!is_write && bql_locked()) {
        fuzz_dma_read_cb(gpa, *plen, mr);
    }
    *host = (uint8_t *)memory_region_get_ram_ptr(mr) + xlat;
    return mr;
}

/*
 * What address_space_unmap() does after a device wrote RAM: the dirty
 * bitmaps (migration, display) and TCG's translated code.  It also drops a
 * reference on the region, so lend it one; the caller keeps its own.
 */
static void vrdma_mem_dirty(VirtIORdma *r, void *host, uint64_t len)
{
    ram_addr_t offset;
    MemoryRegion *mr = memory_region_from_host(host, &offset);

    memory_region_ref(mr);
    address_space_unmap(VIRTIO_DEVICE(r)->dma_as, host, len, true, len);
}

void *virtio_rdma_mem_map(void *opaque, uint64_t gpa, uint64_t len,
                          bool is_write)
{
    VirtIORdma *r = opaque;
    VirtIORdmaMem *m = r->mem;
    AddressSpace *as = VIRTIO_DEVICE(r)->dma_as;
    uint8_t *host = NULL;

    if (!len || gpa + len < gpa) {
        goto refused;
    }
    if (as != &address_space_memory) {
        /* Only this address space is listened to (see the top). */
        trace_virtio_rdma_mem_refused(gpa, len, is_write, as->name,
                                      "maps behind a vIOMMU are not followed");
        goto refused;
    }
    WITH_RCU_READ_LOCK_GUARD() {
        FlatView *fv = address_space_to_flatview(as);
        hwaddr l = len, done;
        ram_addr_t offset;
        MemoryRegion *mr = vrdma_mem_ram(fv, gpa, &l, is_write, &host);
        uint64_t *count;

        /* All of it in that region, contiguous. */
        for (done = l; mr && done < len; done += l) {
            uint8_t *h;

            l = len - done;
            if (vrdma_mem_ram(fv, gpa + done, &l, is_write, &h) != mr ||
                h != host + done) {
                trace_virtio_rdma_mem_refused(gpa, len, is_write,
                                              memory_region_name(mr),
                                              "crosses a region boundary");
                mr = NULL;
            }
        }
        if (!mr) {
            goto refused;
        }
        /* The region the unmap of @host will find. */
        mr = memory_region_from_host(host, &offset);
        count = g_hash_table_lookup(m->maps, mr);
        if (!count) {
            count = g_new0(uint64_t, 1);
            g_hash_table_insert(m->maps, mr, count);
            memory_region_ref(mr);  /* alive past this RCU section */
            trace_virtio_rdma_mem_region(memory_region_name(mr), true);
        }
        ++*count;
    }
    return host;

refused:
    trace_virtio_rdma_err_map(gpa, len, is_write);
    return NULL;
}

void virtio_rdma_mem_unmap(void *opaque, void *host, uint64_t len,
                           bool is_write)
{
    VirtIORdma *r = opaque;
    VirtIORdmaMem *m = r->mem;
    ram_addr_t offset;
    MemoryRegion *mr = memory_region_from_host(host, &offset);
    uint64_t *count = mr ? g_hash_table_lookup(m->maps, mr) : NULL;

    /* Our reference keeps the block listed: every map has one. */
    assert(count && *count);
    if (is_write) {
        vrdma_mem_dirty(r, host, len);
    }
    if (--*count == 0) {
        g_hash_table_remove(m->maps, mr);
        g_ptr_array_add(m->unref, mr);
        qemu_bh_schedule(m->unref_bh);
        trace_virtio_rdma_mem_region(memory_region_name(mr), false);
    }
}

/* Copy in one RCU section, after the whole range was found to be RAM. */
static int vrdma_mem_rw(VirtIORdma *r, uint64_t gpa, uint8_t *buf,
                        uint64_t len, bool is_write)
{
    FlatView *fv;
    hwaddr done, l;
    uint8_t *host;

    if (!len) {
        return 0;
    }
    if (gpa + len < gpa) {
        trace_virtio_rdma_err_map(gpa, len, is_write);
        return -1;
    }
    RCU_READ_LOCK_GUARD();
    fv = address_space_to_flatview(VIRTIO_DEVICE(r)->dma_as);

    /* Nothing is copied from or into a range that is only partly RAM. */
    for (done = 0; done < len; done += l) {
        l = len - done;
        if (!vrdma_mem_ram(fv, gpa + done, &l, is_write, &host)) {
            trace_virtio_rdma_err_map(gpa, len, is_write);
            return -1;
        }
    }
    for (done = 0; done < len; done += l) {
        l = len - done;
        vrdma_mem_ram(fv, gpa + done, &l, is_write, &host);
        if (is_write) {
            memcpy(host, buf + done, l);
            vrdma_mem_dirty(r, host, l);
        } else {
            memcpy(buf + done, host, l);
        }
    }
    return 0;
}

int virtio_rdma_mem_read(void *opaque, uint64_t gpa, void *buf, uint64_t len)
{
    return vrdma_mem_rw(opaque, gpa, buf, len, false);
}

int virtio_rdma_mem_write(void *opaque, uint64_t gpa, const void *buf,
                          uint64_t len)
{
    return vrdma_mem_rw(opaque, gpa, (uint8_t *)buf, len, true);
}

/* Drops the references of regions whose last page was unmapped (BQL). */
static void vrdma_mem_unref_bh(void *opaque)
{
    VirtIORdma *r = opaque;
    VirtIORdmaMem *m = r->mem;
    g_autoptr(GPtrArray) mrs = NULL;
    guint i;

    WITH_QEMU_LOCK_GUARD(&r->core_lock) {
        mrs = m->unref;
        m->unref = g_ptr_array_new();
    }
    /* Without core_lock: a finalized owner may start a memory transaction. */
    for (i = 0; i < mrs->len; i++) {
        memory_region_unref(mrs->pdata[i]);
    }
}

/* ---- following the address space ----------------------------------------- */

static void vrdma_mem_region_del(MemoryListener *listener,
                                 MemoryRegionSection *s)
{
    VirtIORdmaMem *m = container_of(listener, VirtIORdmaMem, listener);
    VrdmaMemGone g;

    if (!m->listening || !memory_region_is_ram(s->mr) ||
        memory_region_is_ram_device(s->mr)) {
        return;
    }
    g = (VrdmaMemGone) {
        .gpa = s->offset_within_address_space,
        .len = int128_get64(s->size),
        .host = (uint8_t *)memory_region_get_ram_ptr(s->mr) +
                s->offset_within_region,
    };
    g_array_append_val(m->gone, g);
}

/*
 * After a transaction, the new flatview is published: RAM that was deleted
 * and is not at the same address with the same host memory now (a section
 * is also deleted when it is merely split or merged) is invalidated in the
 * core, which unmaps every page of an MR over it; the MR then fails with
 * the spec's error.  Done here, not in region_del, because only now does a
 * map that starts later (in an iothread) see the new flatview: one that
 * took core_lock earlier has finished, and its page is invalidated here.
 * The memory stays alive while mapped (our reference), so until this runs
 * the core touches memory the guest no longer sees there, never freed
 * memory.
 */
static void vrdma_mem_commit(MemoryListener *listener)
{
    VirtIORdmaMem *m = container_of(listener, VirtIORdmaMem, listener);
    VirtIORdma *r = m->r;
    guint i;

    if (!m->gone->len) {
        return;
    }
    if (m->listening && r->core) {
        FlatView *fv;

        QEMU_LOCK_GUARD(&r->core_lock);
        RCU_READ_LOCK_GUARD();
        fv = address_space_to_flatview(&address_space_memory);
        for (i = 0; i < m->gone->len; i++) {
            VrdmaMemGone *g = &g_array_index(m->gone, VrdmaMemGone, i);
            hwaddr done, l, xlat;

            for (done = 0; done < g->len; done += l) {
                MemoryRegion *mr;

                l = g->len - done;
                mr = flatview_translate(fv, g->gpa + done, &xlat, &l, false,
                                        MEMTXATTRS_UNSPECIFIED);
                if (memory_region_is_ram(mr) &&
                    !memory_region_is_ram_device(mr) &&
                    (uint8_t *)memory_region_get_ram_ptr(mr) + xlat ==
                    g->host + done) {
                    continue;
                }
                trace_virtio_rdma_mem_gone(g->gpa + done, l);
                vrdma_core_invalidate_host_range(r->core, g->host + done, l);
            }
        }
    }
    g_array_set_size(m->gone, 0);
}

void virtio_rdma_mem_init(VirtIORdma *r)
{
    VirtIORdmaMem *m = g_new0(VirtIORdmaMem, 1);

    m->r = r;
    m->gone = g_array_new(false, false, sizeof(VrdmaMemGone));
    m->maps = g_hash_table_new_full(NULL, NULL, NULL, g_free);
    m->unref = g_ptr_array_new();
    m->unref_bh = qemu_bh_new(vrdma_mem_unref_bh, r);
    r->mem = m;

    /*
     * dma_as is only set when the transport plugs the device, after
     * realize; without a vIOMMU it is this one (maps check that it is).
     */
    m->listener = (MemoryListener) {
        .name = "virtio-rdma",
        .region_del = vrdma_mem_region_del,
        .commit = vrdma_mem_commit,
    };
    m->listening = true;
    memory_listener_register(&m->listener, &address_space_memory);
}

void virtio_rdma_mem_cleanup(VirtIORdma *r)
{
    VirtIORdmaMem *m = r->mem;
    GHashTableIter it;
    gpointer mr;
    guint i;

    if (!m) {
        return;
    }
    /* Unregistering deletes every section: nothing to invalidate. */
    m->listening = false;
    memory_listener_unregister(&m->listener);
    qemu_bh_delete(m->unref_bh);

    /* The core is gone and unmapped all; a leftover is its bug, not a leak. */
    g_hash_table_iter_init(&it, m->maps);
    while (g_hash_table_iter_next(&it, &mr, NULL)) {
        trace_virtio_rdma_mem_leftover(memory_region_name(mr));
        g_ptr_array_add(m->unref, mr);
    }
    for (i = 0; i < m->unref->len; i++) {
        memory_region_unref(m->unref->pdata[i]);
    }
    g_ptr_array_free(m->unref, true);
    g_hash_table_destroy(m->maps);
    g_array_free(m->gone, true);
    g_free(m);
    r->mem = NULL;
}

/* The listing in progress: ranges found so far, the last one kept whole. */
typedef struct VrdmaRamList {
    VrdmaRamRange *out;
    size_t max, n;
    VrdmaRamRange last;
    const MemoryRegion *last_mr;
    hwaddr last_end;            /* offset in last_mr after the last range */
} VrdmaRamList;

static bool vrdma_mem_list_range(Int128 start, Int128 len,
                                 const MemoryRegion *cmr, hwaddr offset,
                                 void *opaque)
{
    VrdmaRamList *l = opaque;
    MemoryRegion *mr = (MemoryRegion *)cmr;
    uint64_t gpa = int128_get64(start), n = int128_get64(len);

    /*
     * What vrdma_mem_ram() accepts for writing, and of that only the
     * guest's RAM -- a memory backend's (-m, memory-backend=, DIMMs) -- not
     * a device's RAM such as VGA memory, whose BAR the guest may move.
     */
    if (!memory_region_is_ram(mr) || memory_region_is_ram_device(mr) ||
        mr->readonly || mr->rom_device ||
        memory_region_has_ram_discard_manager(mr) ||
        !object_dynamic_cast(memory_region_owner(mr), TYPE_MEMORY_BACKEND)) {
        return false;
    }
    if (l->n && l->last_mr == mr && l->last.gpa + l->last.len == gpa &&
        l->last_end == offset) {
        l->last.len += n;       /* the same region, on in both spaces */
    } else {
        l->last = (VrdmaRamRange) { .gpa = gpa, .len = n };
        l->n++;
    }
    l->last_mr = mr;
    l->last_end = offset + n;
    if (l->n <= l->max) {
        l->out[l->n - 1] = l->last;
    }
    return false;               /* on to the next */
}

size_t virtio_rdma_mem_ram_ranges(void *opaque, VrdmaRamRange *out,
                                  size_t max)
{
    VirtIORdma *r = opaque;
    VrdmaRamList l = { .out = out, .max = max };

    if (VIRTIO_DEVICE(r)->dma_as != &address_space_memory || xen_enabled()) {
        return 0;               /* map refuses these (see the top) */
    }
    WITH_RCU_READ_LOCK_GUARD() {
        flatview_for_each_range(
            address_space_to_flatview(&address_space_memory),
            vrdma_mem_list_range, &l);
    }
    trace_virtio_rdma_mem_ram_ranges(l.n, max);
    return l.n;
}

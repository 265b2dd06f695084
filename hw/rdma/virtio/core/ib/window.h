/*
 * virtio-rdma ibverbs backend: an MR's guest pages as one contiguous host
 * virtual range (a "window"), which the host device registers with the
 * guest's IOVA.  Guest SGE addresses then pass to the host unchanged, and
 * a peer's RDMA reaches the very guest pages.
 *
 * Each run of pages contiguous in QEMU's mapping becomes one mapping of the
 * same memory in the window (mremap with old_size 0, which duplicates a
 * shared mapping: guest RAM must be shared, as realize checked), so a
 * THP-backed buffer is one mapping, a scattered one a mapping per page.
 * Each mapping is one VMA of the process: vm.max_map_count bounds them.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_VIRTIO_CORE_IB_WINDOW_H
#define HW_RDMA_VIRTIO_CORE_IB_WINDOW_H

#include <cstddef>
#include <cstdint>

#include "../page_table.h"

namespace vrdma::ib {

struct Window {
    void *base = nullptr;  /* page 0 of the MR */
    size_t len = 0;        /* pages * 4 KiB */
    uint32_t runs = 0;     /* mappings made (VMAs) */
};

/* The mappings (VMAs) window_map() would make for @pages. */
uint32_t window_runs(const GuestPages &pages);

/*
 * Maps @pages into a new window.  @returns false (errno set, nothing left
 * mapped) if the address space or the process's mapping count runs out,
 * or guest RAM is not a shared mapping.
 */
bool window_map(const GuestPages &pages, Window *w);
void window_unmap(void *base, size_t len);

} // namespace vrdma::ib

#endif

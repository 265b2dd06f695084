/*
 * virtio-rdma core: rings in guest memory (ring.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "ring.h"

#include "core.h"
#include "mr.h"

namespace vrdma {

Status GuestRing::map(VrdmaCore &c, const virtio_rdma_ring &d,
                      const RingNames &f, GuestRing &out)
{
    if (d.reserved) {
        return fail(VRDMA_ERR_BAD_ARG, f.reserved, d.reserved, 0);
    }
    if (d.log_entries > VIRTIO_RDMA_RING_MAX_LOG_ENTRIES) {
        return fail(VRDMA_ERR_LIMIT, f.log_entries, d.log_entries,
                    VIRTIO_RDMA_RING_MAX_LOG_ENTRIES);
    }
    if (d.log_stride < VIRTIO_RDMA_RING_MIN_LOG_STRIDE ||
        d.log_stride > VIRTIO_RDMA_RING_MAX_LOG_STRIDE) {
        return fail(VRDMA_ERR_LIMIT, f.log_stride, d.log_stride,
                    VIRTIO_RDMA_RING_MAX_LOG_STRIDE);
    }
    /* At most 2^16 entries of 2^12 bytes: no overflow in 64 bits. */
    const uint64_t bytes = (uint64_t{1} << (d.log_entries + d.log_stride)) +
                           sizeof(virtio_rdma_ring_trailer);
    const uint64_t want = (bytes + kRingPage - 1) / kRingPage;
    if (d.npages != want) {
        return fail(VRDMA_ERR_BAD_ARG, f.npages, d.npages, want);
    }
    if (Status s = check_page_cap(c, d.npages); !s.ok()) {
        s.field = f.npages;
        return s;
    }
    GuestPages pages;
    if (Status s = map_page_table(c.host, d.pages, d.npages, true,
                                  c.mrs.mapped_counter(), pages);
        !s.ok()) {
        s.field = f.pages;
        return s;
    }
    out.pages_ = std::move(pages);
    out.log_entries_ = d.log_entries;
    out.log_stride_ = d.log_stride;
    return kOk;
}

bool GuestRing::overlaps(uintptr_t host, uint64_t len) const
{
    for (size_t i = 0; i < pages_.count(); i++) {
        const auto p = reinterpret_cast<uintptr_t>(pages_.page(i));
        if (p < host + len && host < p + kRingPage) {
            return true;
        }
    }
    return false;
}

} // namespace vrdma

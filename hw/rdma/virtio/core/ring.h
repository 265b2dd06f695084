/*
 * virtio-rdma core: a ring in guest memory (VIRTIO_RDMA_F_RINGS) -- the
 * pages of a CQ, SQ or RQ ring, mapped once when the queue is made.
 *
 * The ring is 2^log_entries entries of 2^log_stride bytes from offset 0 of
 * its first page, then the 64-byte trailer (virtio_rdma_ring_trailer).
 * Entries never cross a page (the stride divides it), so an entry is one
 * host pointer.  All pages are mapped for writing: the device writes CQEs
 * and the trailer's device_idx.  The pages count in the device's cap on
 * mapped pages, like MR pages.
 *
 * The guest may write the ring at any time: a caller copies what it reads
 * once and checks the copy (rings.cc, cq.cc).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_VIRTIO_CORE_RING_H
#define HW_RDMA_VIRTIO_CORE_RING_H

#include <cstdint>

#include "errors.h"
#include "guest_abi.h"
#include "page_table.h"

struct VrdmaCore;

namespace vrdma {

/* The request fields a ring's refusals name: one set per ring of a command. */
struct RingNames {
    const char *reserved, *log_entries, *log_stride, *npages, *pages;
};
inline constexpr RingNames kCqRingNames{"ring.reserved", "ring.log_entries",
                                        "ring.log_stride", "ring.npages",
                                        "ring.pages"};
inline constexpr RingNames kSqRingNames{"sq.reserved", "sq.log_entries",
                                        "sq.log_stride", "sq.npages",
                                        "sq.pages"};
inline constexpr RingNames kRqRingNames{"rq.reserved", "rq.log_entries",
                                        "rq.log_stride", "rq.npages",
                                        "rq.pages"};

class GuestRing {
public:
    /*
     * Checks @desc (refusals name the fields of @names) and
     * maps its pages: BAD_ARG for reserved bits, LIMIT for log_entries or
     * log_stride outside the device's, BAD_ARG for npages that do not
     * match, TABLE_FULL past the page cap, then the page-table walk's
     * refusals.  On refusal @out is untouched.
     */
    static Status map(VrdmaCore &c, const virtio_rdma_ring &desc,
                      const RingNames &names, GuestRing &out);

    bool mapped() const { return pages_.count() != 0; }
    uint32_t entries() const { return 1u << log_entries_; }
    uint32_t stride() const { return 1u << log_stride_; }
    uint8_t log_entries() const { return log_entries_; }

    /* The slot counter @i names (i mod entries). */
    uint8_t *entry(uint32_t i) const
    {
        const uint64_t off = uint64_t{i & (entries() - 1)} << log_stride_;
        return pages_.page(off / kRingPage) + off % kRingPage;
    }

    /* The trailer's two indexes, as the guest wrote them / for it. */
    uint32_t driver_idx() const
    {
        return le(__atomic_load_n(&trailer()->driver_idx, __ATOMIC_ACQUIRE));
    }
    void set_device_idx(uint32_t v) const
    {
        __atomic_store_n(&trailer()->device_idx, le(v), __ATOMIC_RELEASE);
    }

    /* Does any page of the ring lie in host memory [host, host + len)? */
    bool overlaps(uintptr_t host, uint64_t len) const;
    /* Unmaps the ring now (memory under it went away). */
    void release() { pages_.release(); }

private:
    static constexpr uint64_t kRingPage = VIRTIO_RDMA_PAGE_SIZE;

    virtio_rdma_ring_trailer *trailer() const
    {
        const uint64_t off = uint64_t{entries()} << log_stride_;
        return reinterpret_cast<virtio_rdma_ring_trailer *>(
            pages_.page(off / kRingPage) + off % kRingPage);
    }

    GuestPages pages_;
    uint8_t log_entries_ = 0;
    uint8_t log_stride_ = 0;
};

} // namespace vrdma

#endif

/*
 * virtio-rdma core: MR page tables.
 *
 * The guest describes an MR's pages with a two-level table: a 4 KiB level-1
 * page of up to 512 le64 guest-physical addresses of level-2 pages, each of
 * up to 512 le64 guest-physical addresses of 4 KiB data pages.  The core
 * reads each table page once, validates every entry, then maps every data
 * page for long-lived access and keeps the host pointers (pre-translation:
 * the data path never translates a guest address again).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_VIRTIO_CORE_PAGE_TABLE_H
#define HW_RDMA_VIRTIO_CORE_PAGE_TABLE_H

#include <cstddef>
#include <cstdint>
#include <vector>

#include "errors.h"
#include "host.h"
#include "hw/rdma/virtio-rdma-core.h"

namespace vrdma {

/*
 * Guest pages mapped through the host (host.h); unmapped when destroyed.  Every
 * page mapped adds one to *@mapped and every page unmapped takes it back,
 * so the owner's total is a running count (O(1) to read).
 */
class GuestPages {
public:
    GuestPages() = default;
    GuestPages(const Host *host, bool is_write, uint64_t *mapped)
        : host_(host), mapped_(mapped), is_write_(is_write)
    {
    }
    ~GuestPages() { release(); }
    GuestPages(GuestPages &&o) noexcept { take(o); }
    GuestPages &operator=(GuestPages &&o) noexcept
    {
        if (this != &o) {
            release();
            take(o);
        }
        return *this;
    }
    GuestPages(const GuestPages &) = delete;
    GuestPages &operator=(const GuestPages &) = delete;

    size_t count() const { return pages_.size(); }
    bool is_write() const { return is_write_; }
    /* Host address of data page @i (i < count()). */
    uint8_t *page(size_t i) const { return static_cast<uint8_t *>(pages_[i]); }

    void reserve(size_t n) { pages_.reserve(n); }
    /* Maps the 4 KiB page at @gpa and appends it. @returns false if not RAM. */
    bool map(uint64_t gpa);
    /* Unmaps every page now; count() is 0 after. */
    void release();

private:
    void take(GuestPages &o);

    const Host *host_ = nullptr;
    uint64_t *mapped_ = nullptr;
    bool is_write_ = false;
    std::vector<void *> pages_;
};

/*
 * Reads and validates the page table at @table_gpa describing @npages
 * (1..VIRTIO_RDMA_MAX_MR_PAGES, checked by the caller) data pages, then maps
 * them all into @out, counting them in *@mapped.  On refusal nothing stays mapped and @out is
 * untouched: BAD_ARG for a table or page address not 4 KiB aligned,
 * BAD_ADDR for a table page that cannot be read or a data page not in RAM.
 */
Status map_page_table(const Host &host, uint64_t table_gpa,
                      uint32_t npages, bool is_write, uint64_t *mapped,
                      GuestPages &out);

} // namespace vrdma

#endif

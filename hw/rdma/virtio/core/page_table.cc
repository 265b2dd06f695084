/*
 * virtio-rdma core: MR page tables (see page_table.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "page_table.h"

#include <algorithm>
#include <array>

#include "config.h"
#include "guest_abi.h"

namespace vrdma {

bool GuestPages::map(uint64_t gpa)
{
    void *host = host_->map(gpa, kPageSize, is_write_);
    if (!host) {
        return false;
    }
    pages_.push_back(host);
    ++*mapped_;
    return true;
}

void GuestPages::release()
{
    for (void *host : pages_) {
        host_->unmap(host, kPageSize, is_write_);
    }
    if (mapped_) {
        *mapped_ -= pages_.size();
    }
    pages_.clear();
}

void GuestPages::take(GuestPages &o)
{
    host_ = o.host_;
    mapped_ = o.mapped_;
    is_write_ = o.is_write_;
    pages_ = std::move(o.pages_);
    o.pages_.clear();
}

namespace {

using TablePage = std::array<uint64_t, VIRTIO_RDMA_PT_ENTRIES>;

/*
 * Copies the first @n entries of the table page at @gpa into @buf (one read,
 * so the guest cannot change an entry between check and use), validating
 * that each is 4 KiB aligned; appends them to @out in host byte order.
 */
Status read_table_page(const Host &host, uint64_t gpa, uint32_t n,
                       TablePage &buf, std::vector<uint64_t> &out)
{
    const uint64_t len = uint64_t{n} * sizeof(uint64_t);

    if (!host.read(gpa, buf.data(), len)) {
        return fail(VRDMA_ERR_BAD_ADDR, gpa, len);
    }
    for (uint32_t i = 0; i < n; i++) {
        const uint64_t entry = le(buf[i]);
        if (entry & kPageMask) {
            return fail(VRDMA_ERR_BAD_ARG, entry, gpa);
        }
        out.push_back(entry);
    }
    return kOk;
}

/* ceil(n / 512): the table pages for @n entries of the level below. */
uint32_t table_pages(uint32_t n)
{
    return (n + VIRTIO_RDMA_PT_ENTRIES - 1) / VIRTIO_RDMA_PT_ENTRIES;
}

/*
 * The entries of the pages at @gpas, @n in all (512 a page, the last one
 * the rest), appended to @out.
 */
Status read_level(const Host &host, const std::vector<uint64_t> &gpas,
                  uint32_t n, TablePage &buf, std::vector<uint64_t> &out)
{
    for (uint32_t i = 0; i < gpas.size(); i++) {
        const uint32_t k = std::min<uint32_t>(n - i * VIRTIO_RDMA_PT_ENTRIES,
                                              VIRTIO_RDMA_PT_ENTRIES);
        if (Status s = read_table_page(host, gpas[i], k, buf, out); !s.ok()) {
            return s;
        }
    }
    return kOk;
}

} // namespace

Status map_page_table(const Host &host, uint64_t table_gpa,
                      uint32_t npages, bool is_write, uint64_t *mapped,
                      GuestPages &out)
{
    const uint32_t n_l2 = table_pages(npages);
    TablePage buf;
    std::vector<uint64_t> l1_gpas;
    std::vector<uint64_t> l2_gpas;
    std::vector<uint64_t> data_gpas;

    if (table_gpa & kPageMask) {
        return fail(VRDMA_ERR_BAD_ARG, table_gpa, 0);
    }
    /*
     * Every table page is read and checked before anything is mapped.
     * Above 512 * 512 pages a level-0 page lists the level-1 pages.
     */
    if (npages > VIRTIO_RDMA_PT2_PAGES) {
        const uint32_t n_l1 = table_pages(n_l2);
        l1_gpas.reserve(n_l1);
        if (Status s = read_table_page(host, table_gpa, n_l1, buf, l1_gpas);
            !s.ok()) {
            return s;
        }
    } else {
        l1_gpas.push_back(table_gpa);
    }
    l2_gpas.reserve(n_l2);
    if (Status s = read_level(host, l1_gpas, n_l2, buf, l2_gpas); !s.ok()) {
        return s;
    }
    data_gpas.reserve(npages);
    if (Status s = read_level(host, l2_gpas, npages, buf, data_gpas);
        !s.ok()) {
        return s;
    }

    GuestPages pages(&host, is_write, mapped);
    pages.reserve(npages);
    for (uint32_t i = 0; i < npages; i++) {
        if (!pages.map(data_gpas[i])) {
            return fail(VRDMA_ERR_BAD_ADDR, data_gpas[i], i); /* unmaps all */
        }
    }
    out = std::move(pages);
    return kOk;
}

} // namespace vrdma

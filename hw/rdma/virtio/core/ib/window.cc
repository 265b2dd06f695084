/*
 * virtio-rdma ibverbs backend: MR windows (window.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "window.h"

#include <sys/mman.h>

#include <cerrno>

#include "hw/rdma/virtio-rdma-abi.h"

namespace vrdma::ib {

namespace {

constexpr size_t kPage = VIRTIO_RDMA_PAGE_SIZE;

/* A second mapping of [src, src + len) at @dst, in place of what is there. */
bool alias(const uint8_t *src, uint8_t *dst, size_t len)
{
    void *p = mremap(const_cast<uint8_t *>(src), 0, len,
                     MREMAP_MAYMOVE | MREMAP_FIXED, dst);
    return p != MAP_FAILED;
}

} // namespace

uint32_t window_runs(const GuestPages &pages)
{
    uint32_t runs = pages.count() ? 1 : 0;
    for (size_t i = 1; i < pages.count(); i++) {
        runs += pages.page(i) != pages.page(i - 1) + kPage;
    }
    return runs;
}

bool window_map(const GuestPages &pages, Window *w)
{
    const size_t n = pages.count();
    if (n == 0) {
        errno = EINVAL;
        return false;
    }
    /* Reserved whole first, so the runs land side by side. */
    const size_t len = n * kPage;
    void *base = mmap(nullptr, len, PROT_NONE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) {
        return false;
    }
    auto *dst = static_cast<uint8_t *>(base);
    uint32_t runs = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && pages.page(j) == pages.page(j - 1) + kPage) {
            j++;
        }
        /*
         * A run may cross two of QEMU's mappings (one RAM block split by
         * madvise): page by page then.
         */
        if (!alias(pages.page(i), dst + i * kPage, (j - i) * kPage)) {
            for (size_t k = i; k < j; k++, runs++) {
                if (!alias(pages.page(k), dst + k * kPage, kPage)) {
                    const int e = errno;
                    munmap(base, len);
                    errno = e;
                    return false;
                }
            }
        } else {
            runs++;
        }
        i = j;
    }
    w->base = base;
    w->len = len;
    w->runs = runs;
    return true;
}

void window_unmap(void *base, size_t len)
{
    if (base) {
        munmap(base, len);
    }
}

} // namespace vrdma::ib

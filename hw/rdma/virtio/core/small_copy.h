/*
 * virtio-rdma core: copies of a few hundred bytes on the packet path.
 *
 * Knowing that a memcpy's size is small (a bound checked just before),
 * GCC 12 expands it inline as "rep movs", whose start-up costs more than
 * the copy of a 64-byte packet.  Written as this loop, it becomes a call
 * to libc's memcpy instead.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_VIRTIO_CORE_SMALL_COPY_H
#define HW_RDMA_VIRTIO_CORE_SMALL_COPY_H

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace vrdma {

inline void small_copy(uint8_t *dst, const uint8_t *src, size_t n) noexcept
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        std::memcpy(dst + i, src + i, 16);
    }
    for (; i < n; i++) {
        dst[i] = src[i];
    }
}

} // namespace vrdma

#endif

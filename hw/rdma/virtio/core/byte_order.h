/*
 * virtio-rdma core: the one byte-swap helper.  le(): the guest ABI's
 * little-endian fields (guest_abi.h); be(): the network order of packet
 * headers (roce/).  Each is its own inverse and compiles to nothing where
 * the host's order already matches.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_VIRTIO_CORE_BYTE_ORDER_H
#define HW_RDMA_VIRTIO_CORE_BYTE_ORDER_H

#include <bit>
#include <cstdint>
#include <type_traits>

namespace vrdma {

namespace detail {
template <bool Swap, typename T>
constexpr T swap_if(T v)
{
    static_assert(std::is_integral_v<T>);
    if constexpr (!Swap || sizeof(T) == 1) {
        return v;
    } else if constexpr (sizeof(T) == 2) {
        return static_cast<T>(__builtin_bswap16(static_cast<uint16_t>(v)));
    } else if constexpr (sizeof(T) == 4) {
        return static_cast<T>(__builtin_bswap32(static_cast<uint32_t>(v)));
    } else {
        static_assert(sizeof(T) == 8);
        return static_cast<T>(__builtin_bswap64(static_cast<uint64_t>(v)));
    }
}
} // namespace detail

template <typename T>
constexpr T le(T v)
{
    return detail::swap_if<std::endian::native != std::endian::little>(v);
}

template <typename T>
constexpr T be(T v)
{
    return detail::swap_if<std::endian::native != std::endian::big>(v);
}

} // namespace vrdma

#endif

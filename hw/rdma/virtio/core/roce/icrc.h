/*
 * virtio-rdma soft-RoCE: the invariant CRC of a RoCEv2 packet (IBA vol 1
 * annex A17.3.3, as Linux rxe computes it in rxe_icrc.c).
 *
 * The ICRC is the reflected CRC-32 of polynomial 0xEDB88320 (the zlib/gzip
 * one, not CRC32C) over: 8 bytes of 0xFF standing in for the IB LRH, then
 * the IP header, UDP header, BTH, extension headers, payload and pad, with
 * the fields a router may change masked to all ones: IPv4 TOS, TTL and
 * header checksum; IPv6 traffic class, flow label and hop limit; the UDP
 * checksum; BTH byte 4 (FECN, BECN, reserved).  It is stored little-endian
 * after the pad.  Computed with ISA-L's crc32_gzip_refl (zlib convention:
 * crc32_gzip_refl(crc32_gzip_refl(0, a), b) == crc32 of a then b).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_VIRTIO_CORE_ROCE_ICRC_H
#define HW_RDMA_VIRTIO_CORE_ROCE_ICRC_H

#include <cstddef>
#include <cstdint>
#include <span>

namespace vrdma::roce {

/* zlib crc32(0, FF FF FF FF FF FF FF FF): the 8 masked LRH bytes. */
inline constexpr uint32_t kIcrcSeed = 0x2144DF1C;

/* Bytes of the IP header that are covered (IPv4 without options). */
inline constexpr size_t kIcrcIpv4HdrBytes = 20;
inline constexpr size_t kIcrcIpv6HdrBytes = 40;

/*
 * @returns the ICRC of the packet whose IP header starts at @l3 and whose
 * pad ends at the end of @l3 (the ICRC itself excluded).  @l3 must hold at
 * least the IP header (20 bytes for IPv4, which has no options here, 40 for
 * IPv6), the UDP header and the BTH; 0 otherwise (a caller bug).  @l3 is
 * not modified: the masked headers are copied to the stack.
 */
uint32_t icrc_compute(std::span<const uint8_t> l3, bool ipv6) noexcept;

/* Raw reflected CRC-32 (zlib convention) of @data continuing from @crc. */
uint32_t crc32_refl(uint32_t crc, std::span<const uint8_t> data) noexcept;

} // namespace vrdma::roce

#endif

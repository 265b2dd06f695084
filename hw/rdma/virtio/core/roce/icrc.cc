/*
 * virtio-rdma soft-RoCE: the ICRC (see icrc.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "icrc.h"

#include <cstring>

#include <isa-l/crc.h>

#include "opcode.h"
#include "../small_copy.h"

namespace vrdma::roce {

namespace {

constexpr size_t kUdpBytes = 8;
constexpr size_t kUdpCsumOff = 6;
constexpr size_t kBthMaskedByte = 4; /* FECN BECN resv6 */
/* Packets up to this many bytes from the IP header are CRCed in one call. */
constexpr size_t kIcrcOneCallBytes = 256;

} // namespace

uint32_t crc32_refl(uint32_t crc, std::span<const uint8_t> data) noexcept
{
    /* crc32_gzip_refl: reflected 0xEDB88320, not crc32_ieee (unreflected). */
    return crc32_gzip_refl(crc, data.data(), data.size());
}

uint32_t icrc_compute(std::span<const uint8_t> l3, bool ipv6) noexcept
{
    const size_t ip_bytes = ipv6 ? kIcrcIpv6HdrBytes : kIcrcIpv4HdrBytes;
    const size_t fixed = ip_bytes + kUdpBytes + kBthBytes;
    if (l3.size() < fixed) {
        return 0;
    }

    /*
     * The masked headers go to the stack.  A small packet goes there whole:
     * one CRC call instead of two (ISA-L's set-up per call is what a 64-byte
     * SEND pays most for).
     */
    const size_t copied = l3.size() <= kIcrcOneCallBytes ? l3.size() : fixed;
    uint8_t hdr[kIcrcOneCallBytes];
    static_assert(kIcrcOneCallBytes >= kIcrcIpv6HdrBytes + kUdpBytes + kBthBytes);
    small_copy(hdr, l3.data(), copied);
    if (ipv6) {
        hdr[0] |= 0x0F;                   /* traffic class, high nibble */
        hdr[1] = hdr[2] = hdr[3] = 0xFF;  /* traffic class, flow label */
        hdr[7] = 0xFF;                    /* hop limit */
    } else {
        hdr[1] = 0xFF;                    /* TOS */
        hdr[8] = 0xFF;                    /* TTL */
        hdr[10] = hdr[11] = 0xFF;         /* header checksum */
    }
    hdr[ip_bytes + kUdpCsumOff] = 0xFF;
    hdr[ip_bytes + kUdpCsumOff + 1] = 0xFF;
    hdr[ip_bytes + kUdpBytes + kBthMaskedByte] = 0xFF;

    const uint32_t crc =
        crc32_refl(kIcrcSeed, std::span<const uint8_t>(hdr, copied));
    return copied == l3.size() ? crc : crc32_refl(crc, l3.subspan(fixed));
}

} // namespace vrdma::roce

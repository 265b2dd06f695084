/*
 * virtio-rdma: facts of the InfiniBand Architecture (vol 1) and of RoCEv2
 * that the control path and the engines share -- field widths, well-known
 * numbers and keys, protocol limits.  One home each: a fact used in one
 * file only stays there.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_VIRTIO_CORE_ROCE_IBA_H
#define HW_RDMA_VIRTIO_CORE_ROCE_IBA_H

#include <cstddef>
#include <cstdint>

#include "hw/rdma/virtio-rdma-core.h"

namespace vrdma::roce {

/* ---- 24-bit fields: PSNs and QP numbers (IBA 9.2) ---- */
inline constexpr uint32_t kPsnMask = 0x00FFFFFF;
inline constexpr uint32_t kQpnMask = 0x00FFFFFF;
/* Destination QP 0xFFFFFF: multicast (IBA 9.2.3); never a QP's number. */
inline constexpr uint32_t kQpnMulticast = 0x00FFFFFF;

/* a - b as a signed distance in the 24-bit PSN space (IBA 9.7.1). */
constexpr int32_t psn_diff(uint32_t a, uint32_t b)
{
    return static_cast<int32_t>((a - b) << 8) >> 8;
}

constexpr uint32_t psn_add(uint32_t psn, uint32_t n)
{
    return (psn + n) & kPsnMask;
}

/* ---- QP attributes: widths of the fields (IBA 11.2.4.2) ---- */
inline constexpr uint32_t kTimerMax = 31;  /* 5 bits: timeout, min RNR timer */
inline constexpr uint32_t kRetryMax = 7;   /* 3 bits: retry_cnt, rnr_retry */
inline constexpr uint8_t kRnrRetryInfinite = 7; /* IBA 9.7.5.2.8 */

/* ---- messages, keys, headers ---- */
inline constexpr uint32_t kMaxMsgSize = 1u << 31;  /* 2^31 bytes */
inline constexpr uint32_t kGsiQpn = 1;             /* IBA 13.5.1: QP1 */
inline constexpr uint32_t kGsiQkey = 0x80010000;   /* IBA 13.5.3.2 */
inline constexpr uint32_t kQkeyUseQp = 0x80000000; /* IBA C10-15 */
inline constexpr uint16_t kDefaultPkey = VRDMA_DEFAULT_PKEY;
/* AETH credit count "unlimited" in an ACK's syndrome (as rxe sends it). */
inline constexpr uint8_t kAethAckUnlimited = 0x1F;
/* The UD GRH area in front of a receive buffer (IBA 11.4.1.2). */
inline constexpr size_t kGrhBytes = 40;

} // namespace vrdma::roce

#endif

/*
 * virtio-rdma soft-RoCE: the one opcode table (IBA vol 1 ch. 9.2-9.4 and
 * Linux rxe's rxe_opcode[]).  For each BTH opcode it says which extension
 * headers follow the BTH, at which offsets, how long the headers are in
 * total, where the opcode sits in a message (first/middle/last/only), whether
 * it carries payload, and whether a requester or a responder sends it.  The
 * encoder and the parser take every length and offset from this table.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_VIRTIO_CORE_ROCE_OPCODE_H
#define HW_RDMA_VIRTIO_CORE_ROCE_OPCODE_H

#include <array>
#include <cstddef>
#include <cstdint>

namespace vrdma::roce {

/* Header sizes in bytes (IBA 9.2-9.3, 9.8.4 for FETH). */
inline constexpr size_t kBthBytes = 12;
inline constexpr size_t kDethBytes = 8;
inline constexpr size_t kFethBytes = 4;
inline constexpr size_t kRethBytes = 16;
inline constexpr size_t kAtomicEthBytes = 28;
inline constexpr size_t kAethBytes = 4;
inline constexpr size_t kAtomicAckEthBytes = 8;
inline constexpr size_t kImmDtBytes = 4;
inline constexpr size_t kIethBytes = 4;
inline constexpr size_t kIcrcBytes = 4;

/*
 * The extension headers, in the order they follow the BTH on the wire
 * (IBA 9.2: DETH before RETH; ATOMIC ACKNOWLEDGE puts AETH before the
 * AtomicAckETH; RDMA WRITE ONLY with immediate puts RETH before ImmDt; the
 * FLUSH request of IBA 1.5 is BTH, FETH, RETH).  RDETH (reliable datagram)
 * is left out: rxe has no RD QPs, so RD opcodes are unknown here.
 */
enum class Hdr : uint8_t {
    kDeth,
    kFeth,
    kReth,
    kAtomicEth,
    kAeth,
    kAtomicAckEth,
    kImmDt,
    kIeth,
    kCount
};
inline constexpr size_t kHdrCount = static_cast<size_t>(Hdr::kCount);

inline constexpr std::array<uint8_t, kHdrCount> kHdrBytes = {
    kDethBytes, kFethBytes,         kRethBytes,  kAtomicEthBytes,
    kAethBytes, kAtomicAckEthBytes, kImmDtBytes, kIethBytes,
};

constexpr uint32_t hdr_bit(Hdr h) { return 1u << static_cast<unsigned>(h); }

/* OpcodeInfo::mask: the headers present (hdr_bit) plus these flags. */
enum OpMask : uint32_t {
    kMaskDeth = hdr_bit(Hdr::kDeth),
    kMaskFeth = hdr_bit(Hdr::kFeth),
    kMaskReth = hdr_bit(Hdr::kReth),
    kMaskAtomicEth = hdr_bit(Hdr::kAtomicEth),
    kMaskAeth = hdr_bit(Hdr::kAeth),
    kMaskAtomicAckEth = hdr_bit(Hdr::kAtomicAckEth),
    kMaskImmDt = hdr_bit(Hdr::kImmDt),
    kMaskIeth = hdr_bit(Hdr::kIeth),
    kMaskHdrs = (1u << kHdrCount) - 1,

    kMaskPayload = 1u << 8,     /* carries a payload (possibly empty) */
    kMaskReq = 1u << 9,         /* sent by a requester */
    kMaskResp = 1u << 10,       /* sent by a responder (ACK, read resp.) */
    kMaskSend = 1u << 11,
    kMaskWrite = 1u << 12,
    kMaskRead = 1u << 13,       /* RDMA READ request */
    kMaskReadResp = 1u << 14,
    kMaskAtomic = 1u << 15,     /* COMPARE_SWAP, FETCH_ADD */
    kMaskAtomicWrite = 1u << 16,
    kMaskFlush = 1u << 17,
    kMaskAck = 1u << 18,        /* ACKNOWLEDGE, ATOMIC_ACKNOWLEDGE */
    kMaskRwr = 1u << 19,        /* consumes a receive WQE (rxe RWR) */
    kMaskComp = 1u << 20,       /* completes a receive WQE (rxe COMP) */
    kMaskFirst = 1u << 21,      /* first packet of a message (rxe START) */
    kMaskMiddle = 1u << 22,
    kMaskLast = 1u << 23,       /* last packet of a message (rxe END) */
    kMaskOnly = kMaskFirst | kMaskLast,
};

/* BTH opcode bits 7:5 (IBA 9.2.1 table 38). */
enum class Transport : uint8_t {
    kRc = 0,
    kUc = 1,
    kRd = 2,
    kUd = 3,
    kCnp = 4,
    kXrc = 5,
};

/* The opcodes this engine (like rxe) knows: IBA table 38, RC/UC/UD. */
enum Opcode : uint8_t {
    kRcSendFirst = 0x00,
    kRcSendMiddle = 0x01,
    kRcSendLast = 0x02,
    kRcSendLastImm = 0x03,
    kRcSendOnly = 0x04,
    kRcSendOnlyImm = 0x05,
    kRcWriteFirst = 0x06,
    kRcWriteMiddle = 0x07,
    kRcWriteLast = 0x08,
    kRcWriteLastImm = 0x09,
    kRcWriteOnly = 0x0A,
    kRcWriteOnlyImm = 0x0B,
    kRcReadRequest = 0x0C,
    kRcReadResponseFirst = 0x0D,
    kRcReadResponseMiddle = 0x0E,
    kRcReadResponseLast = 0x0F,
    kRcReadResponseOnly = 0x10,
    kRcAcknowledge = 0x11,
    kRcAtomicAcknowledge = 0x12,
    kRcCompareSwap = 0x13,
    kRcFetchAdd = 0x14,
    kRcSendLastInv = 0x16,
    kRcSendOnlyInv = 0x17,
    kRcFlush = 0x1C,
    kRcAtomicWrite = 0x1D,
    kUcSendFirst = 0x20,
    kUcSendMiddle = 0x21,
    kUcSendLast = 0x22,
    kUcSendLastImm = 0x23,
    kUcSendOnly = 0x24,
    kUcSendOnlyImm = 0x25,
    kUcWriteFirst = 0x26,
    kUcWriteMiddle = 0x27,
    kUcWriteLast = 0x28,
    kUcWriteLastImm = 0x29,
    kUcWriteOnly = 0x2A,
    kUcWriteOnlyImm = 0x2B,
    kUdSendOnly = 0x64,
    kUdSendOnlyImm = 0x65,
};

struct OpcodeInfo {
    const char *name = nullptr; /* "RC_SEND_FIRST"; nullptr: unknown */
    uint8_t opcode = 0;
    uint8_t length = 0;         /* BTH + extension headers, bytes */
    uint32_t mask = 0;          /* OpMask */
    /* Offset of each present header from the start of the BTH. */
    std::array<uint8_t, kHdrCount> offset{};

    constexpr bool known() const { return mask != 0; }
    /* @returns whether every bit of @m is set. */
    constexpr bool has(uint32_t m) const { return (mask & m) == m; }
    constexpr bool has(Hdr h) const { return (mask & hdr_bit(h)) != 0; }
    constexpr Transport transport() const
    {
        return static_cast<Transport>(opcode >> 5);
    }
};

/*
 * An entry with its offsets and length laid out from @mask in wire order.
 * The table is built from this; a test checks it against IBA's lengths.
 */
constexpr OpcodeInfo make_opcode_info(const char *name, uint8_t opcode,
                                      uint32_t mask)
{
    OpcodeInfo i;
    i.name = name;
    i.opcode = opcode;
    i.mask = mask;
    size_t off = kBthBytes;
    for (size_t h = 0; h < kHdrCount; h++) {
        if (mask & (1u << h)) {
            i.offset[h] = static_cast<uint8_t>(off);
            off += kHdrBytes[h];
        }
    }
    i.length = static_cast<uint8_t>(off);
    return i;
}

/* Indexed by BTH opcode; unknown opcodes have mask 0 and name nullptr. */
extern const std::array<OpcodeInfo, 256> kOpcodeTable;

/* The longest header stack of any opcode (BTH + AtomicETH). */
inline constexpr size_t kMaxHdrBytes = kBthBytes + kAtomicEthBytes;

/* @returns the table entry for @opcode, or nullptr if it is unknown. */
inline const OpcodeInfo *opcode_info(uint8_t opcode)
{
    const OpcodeInfo &i = kOpcodeTable[opcode];
    return i.known() ? &i : nullptr;
}

} // namespace vrdma::roce

#endif

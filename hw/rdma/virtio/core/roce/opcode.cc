/*
 * virtio-rdma soft-RoCE: the opcode table (see opcode.h).  Header sets and
 * flags follow IBA vol 1 table 38 and section 9.3; the message-role flags
 * (RWR, COMP) follow Linux rxe.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "opcode.h"

namespace vrdma::roce {

namespace {

/* Flags shared by the SEND and RDMA WRITE families of RC and UC. */
constexpr uint32_t kSend = kMaskPayload | kMaskReq | kMaskSend;
constexpr uint32_t kWrite = kMaskPayload | kMaskReq | kMaskWrite;
constexpr uint32_t kReadResp = kMaskPayload | kMaskResp | kMaskReadResp;

/* The SEND and RDMA WRITE opcodes, identical for RC (base 0x00) and UC. */
constexpr void add_send_write(std::array<OpcodeInfo, 256> &t, uint8_t base,
                              const char *const names[12])
{
    constexpr uint32_t masks[12] = {
        kSend | kMaskRwr | kMaskFirst,
        kSend | kMaskMiddle,
        kSend | kMaskComp | kMaskLast,
        kSend | kMaskImmDt | kMaskComp | kMaskLast,
        kSend | kMaskComp | kMaskRwr | kMaskOnly,
        kSend | kMaskImmDt | kMaskComp | kMaskRwr | kMaskOnly,
        kWrite | kMaskReth | kMaskFirst,
        kWrite | kMaskMiddle,
        kWrite | kMaskLast,
        kWrite | kMaskImmDt | kMaskComp | kMaskRwr | kMaskLast,
        kWrite | kMaskReth | kMaskOnly,
        kWrite | kMaskReth | kMaskImmDt | kMaskComp | kMaskRwr | kMaskOnly,
    };
    for (uint8_t i = 0; i < 12; i++) {
        const uint8_t op = static_cast<uint8_t>(base + i);
        t[op] = make_opcode_info(names[i], op, masks[i]);
    }
}

constexpr std::array<OpcodeInfo, 256> build_table()
{
    std::array<OpcodeInfo, 256> t{};

    constexpr const char *rc[12] = {
        "RC_SEND_FIRST",        "RC_SEND_MIDDLE",
        "RC_SEND_LAST",         "RC_SEND_LAST_WITH_IMMEDIATE",
        "RC_SEND_ONLY",         "RC_SEND_ONLY_WITH_IMMEDIATE",
        "RC_RDMA_WRITE_FIRST",  "RC_RDMA_WRITE_MIDDLE",
        "RC_RDMA_WRITE_LAST",   "RC_RDMA_WRITE_LAST_WITH_IMMEDIATE",
        "RC_RDMA_WRITE_ONLY",   "RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE",
    };
    constexpr const char *uc[12] = {
        "UC_SEND_FIRST",        "UC_SEND_MIDDLE",
        "UC_SEND_LAST",         "UC_SEND_LAST_WITH_IMMEDIATE",
        "UC_SEND_ONLY",         "UC_SEND_ONLY_WITH_IMMEDIATE",
        "UC_RDMA_WRITE_FIRST",  "UC_RDMA_WRITE_MIDDLE",
        "UC_RDMA_WRITE_LAST",   "UC_RDMA_WRITE_LAST_WITH_IMMEDIATE",
        "UC_RDMA_WRITE_ONLY",   "UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE",
    };
    add_send_write(t, kRcSendFirst, rc);
    add_send_write(t, kUcSendFirst, uc);

    t[kRcReadRequest] = make_opcode_info(
        "RC_RDMA_READ_REQUEST", kRcReadRequest,
        kMaskReth | kMaskReq | kMaskRead | kMaskOnly);
    t[kRcReadResponseFirst] = make_opcode_info(
        "RC_RDMA_READ_RESPONSE_FIRST", kRcReadResponseFirst,
        kReadResp | kMaskAeth | kMaskFirst);
    t[kRcReadResponseMiddle] = make_opcode_info(
        "RC_RDMA_READ_RESPONSE_MIDDLE", kRcReadResponseMiddle,
        kReadResp | kMaskMiddle);
    t[kRcReadResponseLast] = make_opcode_info(
        "RC_RDMA_READ_RESPONSE_LAST", kRcReadResponseLast,
        kReadResp | kMaskAeth | kMaskLast);
    t[kRcReadResponseOnly] = make_opcode_info(
        "RC_RDMA_READ_RESPONSE_ONLY", kRcReadResponseOnly,
        kReadResp | kMaskAeth | kMaskOnly);
    t[kRcAcknowledge] = make_opcode_info(
        "RC_ACKNOWLEDGE", kRcAcknowledge,
        kMaskAeth | kMaskResp | kMaskAck | kMaskOnly);
    t[kRcAtomicAcknowledge] = make_opcode_info(
        "RC_ATOMIC_ACKNOWLEDGE", kRcAtomicAcknowledge,
        kMaskAeth | kMaskAtomicAckEth | kMaskResp | kMaskAck | kMaskOnly);
    t[kRcCompareSwap] = make_opcode_info(
        "RC_COMPARE_SWAP", kRcCompareSwap,
        kMaskAtomicEth | kMaskReq | kMaskAtomic | kMaskOnly);
    t[kRcFetchAdd] = make_opcode_info(
        "RC_FETCH_ADD", kRcFetchAdd,
        kMaskAtomicEth | kMaskReq | kMaskAtomic | kMaskOnly);
    t[kRcSendLastInv] = make_opcode_info(
        "RC_SEND_LAST_WITH_INVALIDATE", kRcSendLastInv,
        kSend | kMaskIeth | kMaskComp | kMaskLast);
    t[kRcSendOnlyInv] = make_opcode_info(
        "RC_SEND_ONLY_WITH_INVALIDATE", kRcSendOnlyInv,
        kSend | kMaskIeth | kMaskComp | kMaskRwr | kMaskOnly);
    t[kRcFlush] = make_opcode_info(
        "RC_FLUSH", kRcFlush,
        kMaskFeth | kMaskReth | kMaskReq | kMaskFlush | kMaskOnly);
    t[kRcAtomicWrite] = make_opcode_info(
        "RC_ATOMIC_WRITE", kRcAtomicWrite,
        kMaskReth | kMaskPayload | kMaskReq | kMaskAtomicWrite | kMaskOnly);

    t[kUdSendOnly] = make_opcode_info(
        "UD_SEND_ONLY", kUdSendOnly,
        kSend | kMaskDeth | kMaskComp | kMaskRwr | kMaskOnly);
    t[kUdSendOnlyImm] = make_opcode_info(
        "UD_SEND_ONLY_WITH_IMMEDIATE", kUdSendOnlyImm,
        kSend | kMaskDeth | kMaskImmDt | kMaskComp | kMaskRwr | kMaskOnly);
    return t;
}

} // namespace

constexpr std::array<OpcodeInfo, 256> kOpcodeTable = build_table();

/* Checked when the table is built, not when a packet arrives. */
static_assert(kOpcodeTable[kRcAtomicAcknowledge].length ==
              kBthBytes + kAethBytes + kAtomicAckEthBytes);
static_assert(kOpcodeTable[kRcWriteOnlyImm].offset[size_t(Hdr::kImmDt)] ==
              kBthBytes + kRethBytes);
static_assert(kOpcodeTable[kRcFlush].offset[size_t(Hdr::kReth)] ==
              kBthBytes + kFethBytes);

constexpr bool max_hdr_bytes_holds()
{
    for (const OpcodeInfo &i : kOpcodeTable) {
        if (i.length > kMaxHdrBytes) {
            return false;
        }
    }
    return true;
}
static_assert(max_hdr_bytes_holds());

} // namespace vrdma::roce

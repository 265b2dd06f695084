/*
 * virtio-rdma core: the one table of work-request opcodes (enum
 * virtio_rdma_wr_opcode; the facts of Linux rxe's rxe_wr_opcode_info).  For
 * each opcode a driver may post it says its name, the QP types it is valid
 * on, the completion opcode it completes with, what kind of operation it is
 * and which member of the request's union holds its arguments.  Backends
 * ask this table instead of switching on the opcode: the soft-RoCE engine
 * to check, execute and complete a request, a verbs backend to map it.
 *
 * The opcode comes from the guest: wr_opcode_info() checks the bounds and
 * answers any opcode it does not know with kWrOpcodeUnknown (valid on no QP
 * type, no flags, completion opcode kWcOpcodeNone).  Lookup is one compare
 * and one indexed load.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_VIRTIO_CORE_WR_OPCODE_H
#define HW_RDMA_VIRTIO_CORE_WR_OPCODE_H

#include <array>
#include <cstddef>
#include <cstdint>

#include "hw/rdma/virtio-rdma-core.h"

namespace vrdma {

/* WrOpcodeInfo::flags: what kind of operation an opcode is. */
enum WrFlag : uint16_t {
    kWrSend = 1u << 0,     /* SEND family */
    kWrWrite = 1u << 1,    /* RDMA WRITE family */
    kWrRead = 1u << 2,     /* RDMA READ */
    kWrAtomic = 1u << 3,   /* COMPARE_SWAP or FETCH_ADD at the peer */
    kWrLocal = 1u << 4,    /* done by the local device, no packet */
    kWrImm = 1u << 5,      /* carries immediate data (the request's ex) */
    kWrInv = 1u << 6,      /* invalidates the key in ex */
    kWrPeerRecv = 1u << 7, /* completes a receive WQE at the peer, so may
                              ask for a solicited event (BTH SE) */
    kWrLen8 = 1u << 8,     /* its local buffer is exactly one 64-bit word */
};

/* Masks for WrOpcodeInfo::any(). */
/* Its request packets carry the local buffer. */
inline constexpr uint16_t kWrPayload = kWrSend | kWrWrite;
/* The peer answers with data; takes one of max_rd_atomic's credits. */
inline constexpr uint16_t kWrRdAtomic = kWrRead | kWrAtomic;

/*
 * The member of virtio_rdma_sq_req.wr that holds an opcode's arguments on
 * an RC or UC QP (a UD or GSI QP's request has wr.ud, whatever the opcode).
 */
enum class WrArgs : uint8_t {
    kNone,
    kRdma,   /* remote_addr, rkey */
    kAtomic, /* remote_addr, compare_add, swap, rkey */
    kReg,    /* mrn, key, access */
};

/* WrOpcodeInfo::qp_types: bit (1 << VIRTIO_RDMA_QPT_*). */
constexpr uint8_t qpt_bit(uint32_t qp_type)
{
    return static_cast<uint8_t>(1u << qp_type);
}

/* The completion opcode of an unknown request (as rxe: no such opcode). */
inline constexpr uint8_t kWcOpcodeNone = 0xFF;

struct WrOpcodeInfo {
    const char *name = nullptr;        /* "SEND_WITH_IMM"; nullptr: unknown */
    uint8_t qp_types = 0;              /* valid on: qpt_bit() of each type */
    uint8_t wc_opcode = kWcOpcodeNone; /* VIRTIO_RDMA_WC_* it completes as */
    WrArgs args = WrArgs::kNone;
    uint16_t flags = 0;                /* WrFlag */

    constexpr bool known() const { return name != nullptr; }
    /* @qp_type is any u32; a type without a bit is valid for nothing. */
    constexpr bool valid_on(uint32_t qp_type) const
    {
        return qp_type < 8 && ((qp_types >> qp_type) & 1u) != 0;
    }
    /* @returns whether every flag of @f is set. */
    constexpr bool has(uint16_t f) const { return (flags & f) == f; }
    /* @returns whether any flag of @f is set. */
    constexpr bool any(uint16_t f) const { return (flags & f) != 0; }
};

/* One past the highest opcode of the ABI (REG_MR). */
inline constexpr size_t kWrOpcodeCount = VIRTIO_RDMA_WR_REG_MR + 1;

/* Indexed by opcode; the gaps are copies of kWrOpcodeUnknown. */
extern const std::array<WrOpcodeInfo, kWrOpcodeCount> kWrOpcodeTable;

inline constexpr WrOpcodeInfo kWrOpcodeUnknown{};

/* @returns @opcode's entry (any u32), kWrOpcodeUnknown if there is none. */
inline const WrOpcodeInfo &wr_opcode_info(uint32_t opcode)
{
    return opcode < kWrOpcodeCount ? kWrOpcodeTable[opcode]
                                   : kWrOpcodeUnknown;
}

} // namespace vrdma

#endif

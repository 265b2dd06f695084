/*
 * virtio-rdma core: the work-request opcode table (see wr_opcode.h).  The
 * QP types follow IBA vol 1 10.8.2 (READ and atomics need a reliable
 * connection; the only SEND with invalidate on the wire is RC's, table 38)
 * and Linux rxe's rxe_wr_opcode_info; the completion opcodes are
 * ib_wc_opcode's.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "wr_opcode.h"

#include <bit>

namespace vrdma {

namespace {

constexpr uint8_t kRc = qpt_bit(VIRTIO_RDMA_QPT_RC);
constexpr uint8_t kRcUc = kRc | qpt_bit(VIRTIO_RDMA_QPT_UC);
constexpr uint8_t kEvery = kRcUc | qpt_bit(VIRTIO_RDMA_QPT_SMI) |
                           qpt_bit(VIRTIO_RDMA_QPT_GSI) |
                           qpt_bit(VIRTIO_RDMA_QPT_UD);

constexpr std::array<WrOpcodeInfo, kWrOpcodeCount> build_table()
{
    std::array<WrOpcodeInfo, kWrOpcodeCount> t{};
    t.fill(kWrOpcodeUnknown);

    t[VIRTIO_RDMA_WR_RDMA_WRITE] = {
        "RDMA_WRITE", kRcUc, VIRTIO_RDMA_WC_RDMA_WRITE, WrArgs::kRdma,
        kWrWrite};
    t[VIRTIO_RDMA_WR_RDMA_WRITE_WITH_IMM] = {
        "RDMA_WRITE_WITH_IMM", kRcUc, VIRTIO_RDMA_WC_RDMA_WRITE,
        WrArgs::kRdma, kWrWrite | kWrImm | kWrPeerRecv};
    t[VIRTIO_RDMA_WR_SEND] = {
        "SEND", kEvery, VIRTIO_RDMA_WC_SEND, WrArgs::kNone,
        kWrSend | kWrPeerRecv};
    t[VIRTIO_RDMA_WR_SEND_WITH_IMM] = {
        "SEND_WITH_IMM", kEvery, VIRTIO_RDMA_WC_SEND, WrArgs::kNone,
        kWrSend | kWrImm | kWrPeerRecv};
    t[VIRTIO_RDMA_WR_RDMA_READ] = {
        "RDMA_READ", kRc, VIRTIO_RDMA_WC_RDMA_READ, WrArgs::kRdma, kWrRead};
    t[VIRTIO_RDMA_WR_ATOMIC_CMP_AND_SWP] = {
        "ATOMIC_CMP_AND_SWP", kRc, VIRTIO_RDMA_WC_COMP_SWAP,
        WrArgs::kAtomic, kWrAtomic | kWrLen8};
    t[VIRTIO_RDMA_WR_ATOMIC_FETCH_AND_ADD] = {
        "ATOMIC_FETCH_AND_ADD", kRc, VIRTIO_RDMA_WC_FETCH_ADD,
        WrArgs::kAtomic, kWrAtomic | kWrLen8};
    t[VIRTIO_RDMA_WR_LOCAL_INV] = {
        "LOCAL_INV", kRcUc, VIRTIO_RDMA_WC_LOCAL_INV, WrArgs::kNone,
        kWrLocal | kWrInv};
    t[VIRTIO_RDMA_WR_SEND_WITH_INV] = {
        "SEND_WITH_INV", kRc, VIRTIO_RDMA_WC_SEND, WrArgs::kNone,
        kWrSend | kWrInv | kWrPeerRecv};
    /* iWARP's: valid on no QP type here, but it completes as a READ. */
    t[VIRTIO_RDMA_WR_RDMA_READ_WITH_INV] = {
        "RDMA_READ_WITH_INV", 0, VIRTIO_RDMA_WC_RDMA_READ, WrArgs::kRdma,
        kWrRead | kWrInv};
    t[VIRTIO_RDMA_WR_REG_MR] = {
        "REG_MR", kRcUc, VIRTIO_RDMA_WC_REG_MR, WrArgs::kReg, kWrLocal};
    return t;
}

} // namespace

constexpr std::array<WrOpcodeInfo, kWrOpcodeCount> kWrOpcodeTable =
    build_table();

/*
 * Checked when the table is built: the rules the engine relies on when it
 * reads a request by these facts.
 */
constexpr bool table_consistent()
{
    for (const WrOpcodeInfo &i : kWrOpcodeTable) {
        const bool rdma = i.any(kWrWrite | kWrRead);
        const bool atomic = i.has(kWrAtomic);
        if ((i.args == WrArgs::kRdma) != rdma ||
            (i.args == WrArgs::kAtomic) != atomic ||
            i.has(kWrLen8) != atomic ||
            (i.known() != (i.wc_opcode != kWcOpcodeNone)) ||
            (i.qp_types && !i.known()) ||
            /* one kind of operation per opcode */
            std::popcount(static_cast<unsigned>(
                i.flags & (kWrSend | kWrWrite | kWrRead | kWrAtomic |
                           kWrLocal))) != (i.known() ? 1 : 0) ||
            /* READ and atomics only on a reliable connection */
            (i.any(kWrRdAtomic) && (i.qp_types & ~kRc))) {
            return false;
        }
    }
    return true;
}
static_assert(table_consistent());

} // namespace vrdma

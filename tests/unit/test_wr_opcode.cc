/*
 * The work-request opcode table against the rules written out by hand:
 * which opcodes exist, the QP types each is valid on (IBA vol 1 10.8.2,
 * rxe's rxe_wr_opcode_info; SEND with invalidate is RC's only, IBA table
 * 38), the completion opcode each completes as (ib_wc_opcode), its kind and
 * where its arguments are.  A wrong entry fails here, not in a data-path
 * test three layers away.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "wr_opcode.h"

namespace vrdma_test {
namespace {

using vrdma::WrArgs;
using vrdma::WrOpcodeInfo;

enum Kind { SEND, WRITE, READ, ATOMIC, LOCAL };

struct Expect {
    uint32_t op;
    std::string name;
    std::vector<uint8_t> qp_types; /* valid on exactly these */
    uint8_t wc;
    Kind kind;
    WrArgs args;
    bool imm;
    bool inv;
};

const std::vector<uint8_t> kEvery = {
    VIRTIO_RDMA_QPT_SMI, VIRTIO_RDMA_QPT_GSI, VIRTIO_RDMA_QPT_RC,
    VIRTIO_RDMA_QPT_UC, VIRTIO_RDMA_QPT_UD};
const std::vector<uint8_t> kRcUc = {VIRTIO_RDMA_QPT_RC, VIRTIO_RDMA_QPT_UC};
const std::vector<uint8_t> kRc = {VIRTIO_RDMA_QPT_RC};

const std::vector<Expect> &expected()
{
    static const std::vector<Expect> t = {
        {VIRTIO_RDMA_WR_RDMA_WRITE, "RDMA_WRITE", kRcUc,
         VIRTIO_RDMA_WC_RDMA_WRITE, WRITE, WrArgs::kRdma, false, false},
        {VIRTIO_RDMA_WR_RDMA_WRITE_WITH_IMM, "RDMA_WRITE_WITH_IMM", kRcUc,
         VIRTIO_RDMA_WC_RDMA_WRITE, WRITE, WrArgs::kRdma, true, false},
        {VIRTIO_RDMA_WR_SEND, "SEND", kEvery, VIRTIO_RDMA_WC_SEND, SEND,
         WrArgs::kNone, false, false},
        {VIRTIO_RDMA_WR_SEND_WITH_IMM, "SEND_WITH_IMM", kEvery,
         VIRTIO_RDMA_WC_SEND, SEND, WrArgs::kNone, true, false},
        {VIRTIO_RDMA_WR_RDMA_READ, "RDMA_READ", kRc,
         VIRTIO_RDMA_WC_RDMA_READ, READ, WrArgs::kRdma, false, false},
        {VIRTIO_RDMA_WR_ATOMIC_CMP_AND_SWP, "ATOMIC_CMP_AND_SWP", kRc,
         VIRTIO_RDMA_WC_COMP_SWAP, ATOMIC, WrArgs::kAtomic, false, false},
        {VIRTIO_RDMA_WR_ATOMIC_FETCH_AND_ADD, "ATOMIC_FETCH_AND_ADD", kRc,
         VIRTIO_RDMA_WC_FETCH_ADD, ATOMIC, WrArgs::kAtomic, false, false},
        {VIRTIO_RDMA_WR_LOCAL_INV, "LOCAL_INV", kRcUc,
         VIRTIO_RDMA_WC_LOCAL_INV, LOCAL, WrArgs::kNone, false, true},
        {VIRTIO_RDMA_WR_SEND_WITH_INV, "SEND_WITH_INV", kRc,
         VIRTIO_RDMA_WC_SEND, SEND, WrArgs::kNone, false, true},
        /* iWARP's: posted, it fails; flushed, it completes as a READ. */
        {VIRTIO_RDMA_WR_RDMA_READ_WITH_INV, "RDMA_READ_WITH_INV", {},
         VIRTIO_RDMA_WC_RDMA_READ, READ, WrArgs::kRdma, false, true},
        {VIRTIO_RDMA_WR_REG_MR, "REG_MR", kRcUc, VIRTIO_RDMA_WC_REG_MR,
         LOCAL, WrArgs::kReg, false, false},
    };
    return t;
}

void expect_unknown(const WrOpcodeInfo &i)
{
    EXPECT_FALSE(i.known());
    EXPECT_EQ(i.name, nullptr);
    EXPECT_EQ(i.qp_types, 0u);
    EXPECT_EQ(i.wc_opcode, 0xFFu); /* as rxe */
    EXPECT_EQ(i.args, WrArgs::kNone);
    EXPECT_EQ(i.flags, 0u);
    for (uint32_t t = 0; t < 256; t++) {
        EXPECT_FALSE(i.valid_on(t));
    }
}

TEST(WrOpcode, ExactlyTheAbiOpcodesAreKnown)
{
    std::map<uint32_t, const Expect *> want;
    for (const Expect &e : expected()) {
        want[e.op] = &e;
    }
    ASSERT_EQ(want.size(), 11u);
    for (uint32_t op = 0; op < 0x100; op++) {
        SCOPED_TRACE("opcode " + std::to_string(op));
        const WrOpcodeInfo &i = vrdma::wr_opcode_info(op);
        EXPECT_EQ(i.known(), want.count(op) == 1);
        if (!want.count(op)) {
            expect_unknown(i);
        }
    }
}

TEST(WrOpcode, OutOfRangeIsBoundsChecked)
{
    /* Guest-supplied: any u32, never read past the table. */
    for (uint32_t op : {uint32_t{vrdma::kWrOpcodeCount}, 0x100u, 0x8000u,
                        0x80000020u, 0xFFFFFFFFu}) {
        SCOPED_TRACE("opcode " + std::to_string(op));
        const WrOpcodeInfo &i = vrdma::wr_opcode_info(op);
        EXPECT_EQ(&i, &vrdma::kWrOpcodeUnknown);
        expect_unknown(i);
    }
    /* In range: the table's own entry, no copy. */
    for (uint32_t op = 0; op < vrdma::kWrOpcodeCount; op++) {
        EXPECT_EQ(&vrdma::wr_opcode_info(op), &vrdma::kWrOpcodeTable[op]);
    }
}

TEST(WrOpcode, EachOpcodesFacts)
{
    for (const Expect &e : expected()) {
        SCOPED_TRACE(e.name);
        const WrOpcodeInfo &i = vrdma::wr_opcode_info(e.op);
        ASSERT_TRUE(i.known());
        EXPECT_STREQ(i.name, e.name.c_str());
        EXPECT_EQ(i.wc_opcode, e.wc);
        EXPECT_EQ(i.args, e.args);

        for (uint32_t t = 0; t < 256; t++) {
            const bool want = std::find(e.qp_types.begin(), e.qp_types.end(),
                                        t) != e.qp_types.end();
            EXPECT_EQ(i.valid_on(t), want) << "QP type " << t;
        }
        EXPECT_FALSE(i.valid_on(0xFFFFFFFFu));

        EXPECT_EQ(i.has(vrdma::kWrSend), e.kind == SEND);
        EXPECT_EQ(i.has(vrdma::kWrWrite), e.kind == WRITE);
        EXPECT_EQ(i.has(vrdma::kWrRead), e.kind == READ);
        EXPECT_EQ(i.has(vrdma::kWrAtomic), e.kind == ATOMIC);
        EXPECT_EQ(i.has(vrdma::kWrLocal), e.kind == LOCAL);
        EXPECT_EQ(i.has(vrdma::kWrImm), e.imm);
        EXPECT_EQ(i.has(vrdma::kWrInv), e.inv);
        /* The peer's receive: every SEND, and a WRITE with immediate. */
        EXPECT_EQ(i.has(vrdma::kWrPeerRecv),
                  e.kind == SEND || (e.kind == WRITE && e.imm));
        /* An atomic's local buffer is the 64-bit original value. */
        EXPECT_EQ(i.has(vrdma::kWrLen8), e.kind == ATOMIC);
        EXPECT_EQ(i.any(vrdma::kWrPayload), e.kind == SEND || e.kind == WRITE);
        EXPECT_EQ(i.any(vrdma::kWrRdAtomic),
                  e.kind == READ || e.kind == ATOMIC);
    }
}

TEST(WrOpcode, IbaRules)
{
    for (uint32_t op = 0; op < vrdma::kWrOpcodeCount; op++) {
        const WrOpcodeInfo &i = vrdma::wr_opcode_info(op);
        if (!i.known()) {
            continue;
        }
        SCOPED_TRACE(i.name);
        /* READ and atomics need a reliable connection (IBA 10.8.2). */
        if (i.any(vrdma::kWrRdAtomic)) {
            EXPECT_FALSE(i.valid_on(VIRTIO_RDMA_QPT_UC));
            EXPECT_FALSE(i.valid_on(VIRTIO_RDMA_QPT_UD));
            EXPECT_FALSE(i.valid_on(VIRTIO_RDMA_QPT_GSI));
        }
        /* A datagram QP only sends (with or without immediate). */
        if (i.valid_on(VIRTIO_RDMA_QPT_UD) || i.valid_on(VIRTIO_RDMA_QPT_GSI)) {
            EXPECT_TRUE(op == VIRTIO_RDMA_WR_SEND ||
                        op == VIRTIO_RDMA_WR_SEND_WITH_IMM);
        }
        /* Every opcode valid somewhere is valid on RC. */
        if (i.qp_types) {
            EXPECT_TRUE(i.valid_on(VIRTIO_RDMA_QPT_RC));
        }
        /* Immediate data and invalidation never together. */
        EXPECT_FALSE(i.has(vrdma::kWrImm | vrdma::kWrInv));
        /* Known opcodes complete with a real completion opcode. */
        EXPECT_NE(i.wc_opcode, vrdma::kWcOpcodeNone);
    }
}

} // namespace
} // namespace vrdma_test

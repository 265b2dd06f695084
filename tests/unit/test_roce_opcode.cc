/*
 * The opcode table against IBA vol 1 table 38 and section 9.3 written out
 * by hand: which opcodes exist, their headers in wire order, total header
 * length, position in a message, payload, requester or responder.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <algorithm>
#include <map>
#include <string>

#include "test_roce_util.h"

namespace vrdma_test {
namespace {

using roce::Hdr;

enum Pos { F, M, L, O }; /* first, middle, last, only */
enum Who { REQ, RSP };

struct Expect {
    uint8_t op;
    std::string name;
    std::vector<Hdr> hdrs; /* in wire order */
    unsigned length;
    Pos pos;
    bool payload;
    Who who;
};

const std::vector<Expect> &iba()
{
    static const std::vector<Expect> t = [] {
        std::vector<Expect> v;
        for (const uint8_t base : {0x00, 0x20}) {
            const std::string tr = base ? "UC_" : "RC_";
            auto add = [&](uint8_t o, const char *n, std::vector<Hdr> h,
                           unsigned len, Pos p) {
                v.push_back({static_cast<uint8_t>(base + o), tr + n, h, len,
                             p, true, REQ});
            };
            add(0x0, "SEND_FIRST", {}, 12, F);
            add(0x1, "SEND_MIDDLE", {}, 12, M);
            add(0x2, "SEND_LAST", {}, 12, L);
            add(0x3, "SEND_LAST_WITH_IMMEDIATE", {Hdr::kImmDt}, 16, L);
            add(0x4, "SEND_ONLY", {}, 12, O);
            add(0x5, "SEND_ONLY_WITH_IMMEDIATE", {Hdr::kImmDt}, 16, O);
            add(0x6, "RDMA_WRITE_FIRST", {Hdr::kReth}, 28, F);
            add(0x7, "RDMA_WRITE_MIDDLE", {}, 12, M);
            add(0x8, "RDMA_WRITE_LAST", {}, 12, L);
            add(0x9, "RDMA_WRITE_LAST_WITH_IMMEDIATE", {Hdr::kImmDt}, 16, L);
            add(0xA, "RDMA_WRITE_ONLY", {Hdr::kReth}, 28, O);
            add(0xB, "RDMA_WRITE_ONLY_WITH_IMMEDIATE",
                {Hdr::kReth, Hdr::kImmDt}, 32, O);
        }
        v.push_back({0x0C, "RC_RDMA_READ_REQUEST", {Hdr::kReth}, 28, O, false, REQ});
        v.push_back({0x0D, "RC_RDMA_READ_RESPONSE_FIRST", {Hdr::kAeth}, 16, F, true, RSP});
        v.push_back({0x0E, "RC_RDMA_READ_RESPONSE_MIDDLE", {}, 12, M, true, RSP});
        v.push_back({0x0F, "RC_RDMA_READ_RESPONSE_LAST", {Hdr::kAeth}, 16, L, true, RSP});
        v.push_back({0x10, "RC_RDMA_READ_RESPONSE_ONLY", {Hdr::kAeth}, 16, O, true, RSP});
        v.push_back({0x11, "RC_ACKNOWLEDGE", {Hdr::kAeth}, 16, O, false, RSP});
        v.push_back({0x12, "RC_ATOMIC_ACKNOWLEDGE",
                     {Hdr::kAeth, Hdr::kAtomicAckEth}, 24, O, false, RSP});
        v.push_back({0x13, "RC_COMPARE_SWAP", {Hdr::kAtomicEth}, 40, O, false, REQ});
        v.push_back({0x14, "RC_FETCH_ADD", {Hdr::kAtomicEth}, 40, O, false, REQ});
        v.push_back({0x16, "RC_SEND_LAST_WITH_INVALIDATE", {Hdr::kIeth}, 16, L, true, REQ});
        v.push_back({0x17, "RC_SEND_ONLY_WITH_INVALIDATE", {Hdr::kIeth}, 16, O, true, REQ});
        v.push_back({0x1C, "RC_FLUSH", {Hdr::kFeth, Hdr::kReth}, 32, O, false, REQ});
        v.push_back({0x1D, "RC_ATOMIC_WRITE", {Hdr::kReth}, 28, O, true, REQ});
        v.push_back({0x64, "UD_SEND_ONLY", {Hdr::kDeth}, 20, O, true, REQ});
        v.push_back({0x65, "UD_SEND_ONLY_WITH_IMMEDIATE",
                     {Hdr::kDeth, Hdr::kImmDt}, 24, O, true, REQ});
        return v;
    }();
    return t;
}

TEST(RoceOpcode, ExactlyTheIbaOpcodesAreKnown)
{
    std::map<uint8_t, const Expect *> want;
    for (const Expect &e : iba()) {
        want[e.op] = &e;
    }
    ASSERT_EQ(want.size(), 39u);
    for (unsigned op = 0; op < 256; op++) {
        const roce::OpcodeInfo *i = roce::opcode_info(static_cast<uint8_t>(op));
        EXPECT_EQ(i != nullptr, want.count(static_cast<uint8_t>(op)) == 1)
            << "opcode 0x" << std::hex << op;
        if (!i) {
            EXPECT_EQ(roce::kOpcodeTable[op].mask, 0u);
            EXPECT_EQ(roce::kOpcodeTable[op].name, nullptr);
        }
    }
    EXPECT_EQ(known_opcodes().size(), 39u);
}

TEST(RoceOpcode, HeadersLengthsOffsetsAndRoles)
{
    for (const Expect &e : iba()) {
        SCOPED_TRACE(e.name);
        const roce::OpcodeInfo *i = roce::opcode_info(e.op);
        ASSERT_NE(i, nullptr);
        EXPECT_STREQ(i->name, e.name.c_str());
        EXPECT_EQ(i->opcode, e.op);
        EXPECT_EQ(i->length, e.length);

        /* Headers present exactly as listed, back to back in that order. */
        uint32_t hdr_mask = 0;
        unsigned off = roce::kBthBytes;
        for (Hdr h : e.hdrs) {
            hdr_mask |= roce::hdr_bit(h);
            EXPECT_TRUE(i->has(h));
            EXPECT_EQ(i->offset[size_t(h)], off) << "header " << int(h);
            off += roce::kHdrBytes[size_t(h)];
        }
        EXPECT_EQ(off, e.length);
        EXPECT_EQ(i->mask & roce::kMaskHdrs, hdr_mask);

        EXPECT_EQ(i->has(roce::kMaskPayload), e.payload);
        EXPECT_EQ(i->has(roce::kMaskReq), e.who == REQ);
        EXPECT_EQ(i->has(roce::kMaskResp), e.who == RSP);
        EXPECT_EQ(i->has(roce::kMaskFirst), e.pos == F || e.pos == O);
        EXPECT_EQ(i->has(roce::kMaskLast), e.pos == L || e.pos == O);
        EXPECT_EQ(i->has(roce::kMaskMiddle), e.pos == M);
        EXPECT_EQ(i->has(roce::kMaskOnly), e.pos == O);

        /* Exactly one operation class. */
        const uint32_t ops = i->mask &
            (roce::kMaskSend | roce::kMaskWrite | roce::kMaskRead |
             roce::kMaskReadResp | roce::kMaskAtomic | roce::kMaskAtomicWrite |
             roce::kMaskFlush | roce::kMaskAck);
        EXPECT_EQ(__builtin_popcount(ops), 1) << std::hex << ops;

        /* Immediate data only where IBA puts it, and it is completed. */
        const bool imm = e.name.find("IMMEDIATE") != std::string::npos;
        EXPECT_EQ(i->has(Hdr::kImmDt), imm);
        if (imm) {
            EXPECT_TRUE(i->has(roce::kMaskComp));
        }
    }
}

TEST(RoceOpcode, TransportIsTheTopThreeBits)
{
    EXPECT_EQ(roce::opcode_info(roce::kRcSendOnly)->transport(),
              roce::Transport::kRc);
    EXPECT_EQ(roce::opcode_info(roce::kRcAtomicWrite)->transport(),
              roce::Transport::kRc);
    EXPECT_EQ(roce::opcode_info(roce::kUcWriteOnlyImm)->transport(),
              roce::Transport::kUc);
    EXPECT_EQ(roce::opcode_info(roce::kUdSendOnlyImm)->transport(),
              roce::Transport::kUd);
}

TEST(RoceOpcode, ReceiveWqeConsumersAndCompleters)
{
    /* A receive WQE is taken by the first packet of a SEND or of a WRITE
     * with immediate (rxe RWR) and completed by its last packet. */
    const uint8_t rwr[] = {
        roce::kRcSendFirst,    roce::kRcSendOnly,      roce::kRcSendOnlyImm,
        roce::kRcSendOnlyInv,  roce::kRcWriteLastImm,  roce::kRcWriteOnlyImm,
        roce::kUcSendFirst,    roce::kUcSendOnly,      roce::kUcSendOnlyImm,
        roce::kUcWriteLastImm, roce::kUcWriteOnlyImm,  roce::kUdSendOnly,
        roce::kUdSendOnlyImm,
    };
    for (uint8_t op : known_opcodes()) {
        const roce::OpcodeInfo *i = roce::opcode_info(op);
        const bool want = std::find(std::begin(rwr), std::end(rwr), op) !=
                          std::end(rwr);
        EXPECT_EQ(i->has(roce::kMaskRwr), want) << i->name;
        const bool comp = i->has(roce::kMaskLast) &&
                          (i->has(roce::kMaskSend) || i->has(Hdr::kImmDt));
        EXPECT_EQ(i->has(roce::kMaskComp), comp) << i->name;
    }
}

TEST(RoceOpcode, MaxHeaderBytes)
{
    size_t m = 0;
    for (uint8_t op : known_opcodes()) {
        m = std::max<size_t>(m, roce::opcode_info(op)->length);
    }
    EXPECT_EQ(m, roce::kMaxHdrBytes);
}

} // namespace
} // namespace vrdma_test

/*
 * libFuzzer target: everything a guest or a peer can hand the core.
 *
 * Each input runs on two fresh cores (the unit tests' harness: fake guests,
 * an in-memory wire, a fake clock, the rings data path), set up as a
 * driver would: a PD, a CQ ring, MRs (user and fast-registration), an RC
 * ring QP pair connected, a UD ring QP each, receives posted.  The input is
 * then a list of operations:
 *
 *   byte 0 (kind)  what follows
 *   0 frame        raw bytes, delivered to b as a received frame
 *   1 packet       an opcode, a selector and transport bytes (BTH on),
 *                  wrapped by the core's own encoder into Ethernet/IP/UDP
 *                  from a to b or b to a with a correct ICRC: responder
 *                  and completer get packets random bytes never make
 *   2 post_send    raw work-request bytes as the next SQ entry of one of
 *                  the QPs, then its doorbell
 *   3 post_recv    the same for an RQ entry
 *   4 command      a control command and its raw request bytes, to b
 *   5 pump         the wire runs until idle (bounded)
 *   6 time         the clock jumps (retransmit / RNR timers fire)
 *   7 work request a well-formed one (fuzzed opcode, flags, lengths,
 *                  offsets) from a's RC or UD QP to b: real exchanges
 *   8 receive      a well-formed receive WQE on b
 *   9 faults       the wire loses, duplicates, reorders, corrupts
 *
 * with a 2-byte length before the bytes of 0 -- 4.  Raw work-request bytes
 * fill a ring entry from its start and the rest of it is zeroed; bytes
 * past the entry (256 bytes in an SQ, 128 in an RQ: 4 SGEs) are cut, as
 * a ring holds no more (the device then reads the SGEs num_sge names from
 * the entry, or refuses those that do not fit).  A post to a QP the node
 * has no ring of (the GSI QP, any number) is its doorbell alone.  At the
 * end the wire runs until idle.  Inputs of odd length run with
 * VIRTIO_RDMA_F_WIRE_QPN negotiated on both cores besides the rings (QPs
 * then have random wire QPNs, which packets and UD work requests
 * address).  Besides the sanitizers' findings, any harness check that
 * fails (e.g. guest mappings leaked when a node is destroyed) aborts.
 *
 *   scripts/fuzz.sh [seconds]
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <vector>

#include <gtest/gtest.h>

#include "dp_harness.h"
#include "fuzz_input.h"
#include "roce/frame.h"
#include "roce/opcode.h"
#include "wr_opcode.h"

namespace {

using vrdma_test::Bytes;
using vrdma_test::Conn;
using vrdma_test::DpTest;
using vrdma_test::MrInfo;
using vrdma_test::Node;
using vrdma_test::Wire;
using vrdma_test::kAllAccess;

constexpr uint32_t kQkey = 0x11111111;
constexpr uint64_t kMaxSteps = 20000;

using vrdma_fuzz::harness_failures;
using vrdma_fuzz::Input;

struct Setup {
    Wire wire;
    Node a{&wire, 0}, b{&wire, 1};
    uint32_t qa_rc = 0, qb_rc = 0, qa_ud = 0, qb_ud = 0;
    MrInfo src, dst, fmr;

    explicit Setup(bool wire_qpn)
    {
        for (Node *n : {&a, &b}) {
            n->keep_cqes = false;
            n->add_gid(0, n->gid);
            n->set_features(wire_qpn ? vrdma_test::kRingFeatures
                                     : vrdma_test::kRingFeatures &
                                           ~(1ull << VIRTIO_RDMA_F_WIRE_QPN));
        }
        const uint32_t pa = a.create_pd(), pb = b.create_pd();
        const uint32_t ca = a.create_cq(), cb = b.create_cq();
        src = a.reg_mr(pa, a.alloc(16384), 16384, kAllAccess);
        dst = b.reg_mr(pb, b.alloc(16384), 16384, kAllAccess);
        fmr = b.fast_mr(pb, b.alloc(8192), 8192);
        qa_rc = a.create_qp(pa, VIRTIO_RDMA_QPT_RC, ca, ca);
        qb_rc = b.create_qp(pb, VIRTIO_RDMA_QPT_RC, cb, cb);
        Conn conn;
        /* Not 7 (infinite, IBA 9.7.5.2.8): a SEND the peer has no receive
         * WQE for would retry after every RNR NAK for ever, legitimately,
         * and make an input take minutes. */
        conn.rnr_retry = 3;
        DpTest::connect_pair(a, qa_rc, b, qb_rc, VIRTIO_RDMA_QPT_RC, conn,
                             true);
        DpTest::connect_pair(b, qb_rc, a, qa_rc, VIRTIO_RDMA_QPT_RC, conn,
                             false);
        qa_ud = a.create_qp(pa, VIRTIO_RDMA_QPT_UD, ca, ca);
        qb_ud = b.create_qp(pb, VIRTIO_RDMA_QPT_UD, cb, cb);
        a.ud_up(qa_ud, kQkey);
        b.ud_up(qb_ud, kQkey);
        for (uint64_t i = 0; i < 4; i++) {
            b.post_recv(qb_rc, i, {{dst.addr + i * 4096, 4096, dst.lkey}});
            b.post_recv(qb_ud, i, {{dst.addr + i * 4096, 4096, dst.lkey}});
        }
    }

    Node &node(uint8_t sel) { return sel & 1 ? b : a; }
    uint32_t qp(uint8_t sel)
    {
        switch (sel & 6) {
        case 0: return sel & 1 ? qb_rc : qa_rc;
        case 2: return sel & 1 ? qb_ud : qa_ud;
        case 4: return 1; /* GSI */
        default: return sel; /* anything */
        }
    }

    /*
     * Transport bytes as a packet from a to b (or, with bit 6 of the
     * selector, from b to a: ACKs and READ responses for a's completer),
     * framed by the core.
     */
    void packet(Input &in)
    {
        const uint8_t opcode = in.u8();
        const uint8_t sel = in.u8();
        const Bytes t = in.bytes(in.u16());
        const vrdma::roce::OpcodeInfo *info = vrdma::roce::opcode_info(opcode);
        if (!info || t.size() < 1) {
            return;
        }
        size_t payload = t.size() > info->length ? t.size() - info->length : 0;
        if (!info->has(vrdma::roce::kMaskPayload)) {
            payload = 0;
        }
        const bool to_a = sel & 0x40;
        Node &from = to_a ? b : a, &to = to_a ? a : b;
        vrdma::roce::FrameAddr fa{};
        fa.dmac = to.mac;
        fa.smac = from.mac;
        fa.sgid = from.gid;
        fa.dgid = to.gid;
        Bytes buf(vrdma::roce::frame_len(fa, opcode, payload) + 64);
        vrdma::roce::TxFrame f;
        if (vrdma::roce::frame_begin(buf, fa, opcode, payload, &f) !=
            vrdma::roce::BuildError::kNone) {
            return;
        }
        /* The fuzz bytes over BTH (after its opcode byte), headers, payload. */
        uint8_t *bth = f.frame.data() + f.bth_off;
        const size_t room = info->length + payload - 1;
        std::memcpy(bth + 1, t.data() + 1, std::min(room, t.size() - 1));
        if (!(sel & 0x80)) {
            /* Mostly well-formed: version 0, our pad, the default P_Key,
             * to one of its QPs. */
            bth[1] = static_cast<uint8_t>((bth[1] & 0xC0) | f.pad << 4);
            bth[2] = bth[3] = 0xFF;
            const uint32_t qpn = to.wire_qpn(
                qp(static_cast<uint8_t>(to_a ? sel & ~1 : sel | 1)));
            bth[5] = static_cast<uint8_t>(qpn >> 16);
            bth[6] = static_cast<uint8_t>(qpn >> 8);
            bth[7] = static_cast<uint8_t>(qpn);
        }
        vrdma::roce::frame_finish(f);
        to.receive(Bytes(f.frame.begin(), f.frame.end()));
    }

    /*
     * A well-formed work request on a's RC or UD QP towards b, the fuzz
     * choosing the opcode, flags, lengths and offsets (inside the MRs or
     * a little past them): the protocol runs for real between the cores.
     */
    void work_request(Input &in)
    {
        static constexpr uint32_t kOps[] = {
            VIRTIO_RDMA_WR_SEND, VIRTIO_RDMA_WR_SEND_WITH_IMM,
            VIRTIO_RDMA_WR_RDMA_WRITE, VIRTIO_RDMA_WR_RDMA_WRITE_WITH_IMM,
            VIRTIO_RDMA_WR_RDMA_READ, VIRTIO_RDMA_WR_ATOMIC_CMP_AND_SWP,
            VIRTIO_RDMA_WR_ATOMIC_FETCH_AND_ADD, VIRTIO_RDMA_WR_SEND_WITH_INV,
            VIRTIO_RDMA_WR_LOCAL_INV, VIRTIO_RDMA_WR_REG_MR,
        };
        const uint8_t sel = in.u8();
        const uint32_t op = kOps[in.u8() % std::size(kOps)];
        const uint8_t flags = in.u8();
        const uint32_t len = in.u16() % 20000;
        const uint32_t off = in.u16() % 20000;
        const uint32_t roff = in.u16() % 20000;
        vrdma_test::SendWr w;
        w.op(op).id(in.u16()).flags(flags & 0x0F);
        w.sge(src.addr + off, len, src.lkey);
        /* The arguments the opcode's row says it takes (wr_opcode.cc). */
        const vrdma::WrOpcodeInfo &info = vrdma::wr_opcode_info(op);
        if (info.args == vrdma::WrArgs::kAtomic) {
            w.atomic(dst.addr + roff, dst.rkey, off, roff);
        } else if (info.args == vrdma::WrArgs::kReg) {
            w.reg(fmr.mrn, (fmr.lkey & ~0xFFu) | (roff & 0xFF), kAllAccess);
        } else if (info.args == vrdma::WrArgs::kNone &&
                   info.has(vrdma::kWrInv)) {
            w.inv(flags & 0x10 ? fmr.lkey : dst.rkey);
        } else {
            w.rdma(dst.addr + roff, flags & 0x10 ? fmr.rkey : dst.rkey);
        }
        if (sel & 2) {
            w.ud(b.wire_qpn(qb_ud), kQkey, b.gid, b.mac);
            a.post_send(qa_ud, w);
        } else if (op == VIRTIO_RDMA_WR_REG_MR ||
                   op == VIRTIO_RDMA_WR_LOCAL_INV) {
            b.post_send(qb_rc, w); /* b's own fast-registration MR */
        } else {
            a.post_send(qa_rc, w);
        }
    }

    void run(Input &in)
    {
        while (in.n) {
            switch (in.u8() % 10) {
            case 0:
                b.receive(in.bytes(in.u16()));
                break;
            case 1:
                packet(in);
                break;
            case 2: {
                const uint8_t sel = in.u8();
                node(sel).post_send_raw(qp(sel), in.bytes(in.u16()));
                break;
            }
            case 3: {
                const uint8_t sel = in.u8();
                node(sel).post_recv_raw(qp(sel), in.bytes(in.u16()));
                break;
            }
            case 4: {
                const uint8_t cmd = in.u8();
                const Bytes req = in.bytes(in.u16());
                uint8_t rsp[VRDMA_CTRL_RSP_MAX];
                b.ctrl_raw(cmd, req.data(), req.size(), rsp, sizeof(rsp));
                break;
            }
            case 5:
                wire.pump(kMaxSteps);
                break;
            case 6:
                wire.now += uint64_t{in.u16()} << 20; /* up to ~69 s */
                wire.pump(kMaxSteps);
                break;
            case 7:
                work_request(in);
                break;
            case 8: { /* a well-formed receive WQE on b's RC or UD QP */
                const uint8_t sel = in.u8();
                const uint32_t len = in.u16() % 20000;
                const uint32_t off = in.u16() % 20000;
                b.post_recv(sel & 2 ? qb_ud : qb_rc, in.u16(),
                            {{dst.addr + off, len, dst.lkey}});
                break;
            }
            case 9: /* the wire starts losing, duplicating, reordering */
                wire.faults.loss = in.u8() / 512.0;
                wire.faults.dup = in.u8() / 512.0;
                wire.faults.reorder = in.u8() / 512.0;
                wire.faults.corrupt = in.u8() / 2048.0;
                wire.rng.seed(in.u8());
                break;
            }
        }
        wire.pump(kMaxSteps);
    }
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const int failures = harness_failures();
    {
        Setup s(size & 1);
        if (harness_failures() != failures) {
            std::abort(); /* the set-up itself broke */
        }
        Input in{data, size};
        s.run(in);
    } /* the nodes' destructors check that no guest mapping leaked */
    if (harness_failures() != failures) {
        std::abort();
    }
    return 0;
}

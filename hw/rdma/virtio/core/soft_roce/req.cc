/*
 * virtio-rdma soft-RoCE engine: the requester (rxe_req.c's role, IBA
 * 9.7.4).  It walks the send queue from the WQE it stopped at and turns
 * each into packets, one per call of the loop, until the budget is spent or
 * something makes it wait:
 *
 *   the QP is not RTS (SQD: finishes the message in progress, then waits);
 *   the RNR timer runs;
 *   a FENCE WQE waits for the READs/ATOMICs before it (IBA 10.8.3.3);
 *   a READ/ATOMIC waits for one of max_rd_atomic's credits;
 *   RC: the window is full: 128 PSNs (rxe's), at most kWindowBytes of
 *   packets, and after a loss the congestion window (req_window()).
 *
 * Before its first packet a WQE gets its PSNs (first_psn..last_psn) and its
 * SGEs are checked (LOC_PROT_ERR).  LOCAL_INV and REG_MR execute here, in
 * order, and complete without a packet.  A UD message longer than the MTU
 * completes successfully without a packet (C10-93.1.1, as rxe).
 *
 * Packets: segments of the path MTU (capped by the port's); FIRST/MIDDLE/
 * LAST/ONLY as the message goes; AckReq on the last packet of a message,
 * whenever more than 64 packets (or half the window, if smaller) went
 * without one (rxe's cadence with the full window), and on the packet that
 * fills the window (its ACK is what reopens it); the solicited
 * bit on the last packet of a SEND or WRITE-with-immediate that asks for
 * it; UD: DETH with the Q_Key (GSI: 0x80010000; a WQE Q_Key with the high
 * bit set means the QP's, C10-15) and our QP number.
 *
 * UD and UC WQEs are done when their last packet is out; RC WQEs wait for
 * the completer.  Retransmission is go-back-N from the completer's PSN
 * (req_retry()).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <algorithm>

#include "../core.h"
#include "engine.h"
#include "../roce/headers.h"
#include "../guest_abi.h"
#include "../wr_opcode.h"

namespace vrdma::soft_roce {

using namespace roce;

namespace {

/* The RC BTH opcodes of a message by packet (IBA table 38). */
struct Family {
    uint8_t first, middle, last, last_imm, only, only_imm;
};
constexpr Family kSendFamily = {kRcSendFirst, kRcSendMiddle,
                                kRcSendLast,  kRcSendLastImm,
                                kRcSendOnly,  kRcSendOnlyImm};
constexpr Family kWriteFamily = {kRcWriteFirst, kRcWriteMiddle,
                                 kRcWriteLast,  kRcWriteLastImm,
                                 kRcWriteOnly,  kRcWriteOnlyImm};

/* The BTH opcode of a packet of @w, whose opcode's entry is @op. */
uint8_t opcode_for(const Qp &qp, const SendWqe &w, const WrOpcodeInfo &op,
                   bool first, bool last)
{
    const bool imm = op.has(kWrImm);
    if (qp_is_ud(qp)) {
        return imm ? kUdSendOnlyImm : kUdSendOnly;
    }
    if (op.has(kWrRead)) {
        return kRcReadRequest;
    }
    if (op.has(kWrAtomic)) {
        /* Which atomic is the operation itself, not a kind: by opcode. */
        return w.opcode == VIRTIO_RDMA_WR_ATOMIC_CMP_AND_SWP ? kRcCompareSwap
                                                             : kRcFetchAdd;
    }
    const bool only = first && last;
    if (last && op.has(kWrSend | kWrInv)) {
        return only ? kRcSendOnlyInv : kRcSendLastInv; /* RC only */
    }
    const Family &f = op.has(kWrWrite) ? kWriteFamily : kSendFamily;
    uint8_t bth;
    if (!last) {
        bth = first ? f.first : f.middle;
    } else if (only) {
        bth = imm ? f.only_imm : f.only;
    } else {
        bth = imm ? f.last_imm : f.last;
    }
    /* UC's SEND and WRITE opcodes are RC's, moved by the transport bits. */
    const uint8_t base = qp.type == VIRTIO_RDMA_QPT_UC ? kUcSendFirst : 0;
    return static_cast<uint8_t>(base + bth);
}

/*
 * Where an RC/UC QP's packets go, looked up once per req_run() (the QP's
 * AV and our GID cannot change while it runs), not once per packet.
 */
struct QpAddr {
    FrameAddr a;
    bool looked_up = false;
    bool ok = false;
};

/*
 * Sends the next packet of @w (the WQE at sq_req); @win is req_window().
 * @returns a WC status; *@last says whether that was the message's last
 * packet.
 */
uint8_t send_packet(VrdmaCore &c, Qp &qp, SendWqe &w, uint32_t mtu,
                    uint32_t win, QpAddr &qa, bool *last)
{
    QpEngine &e = eng(qp);
    const WrOpcodeInfo &op = wr_opcode_info(w.opcode);
    const bool ud = qp_is_ud(qp);
    const bool data = op.any(kWrPayload);
    const bool read = op.has(kWrRead);
    const uint32_t payload = data ? std::min(mtu, w.length - w.offset) : 0;
    const bool first = w.offset == 0;
    *last = !data || w.offset + payload == w.length;
    const uint8_t opcode = opcode_for(qp, w, op, first, *last);

    FrameAddr ud_addr;
    bool addr_ok;
    if (ud) {
        addr_ok = addr_for_ud(c, qp, w.av, &ud_addr);
    } else {
        if (!qa.looked_up) {
            qa.ok = addr_for_qp(c, qp, &qa.a);
            qa.looked_up = true;
        } else {
            qa.a.ip_id = eng(c).ip_id++; /* what addr_for_qp() would give */
        }
        addr_ok = qa.ok;
    }
    const FrameAddr &a = ud ? ud_addr : qa.a;
    TxFrame f;
    if (!addr_ok || !tx_begin(c, a, opcode, payload, &f)) {
        return VIRTIO_RDMA_WC_LOC_QP_OP_ERR;
    }
    const uint32_t psn = e.req.psn;
    const bool ack_req =
        *last || e.req.noack_pkts++ > std::min(kMaxPktsPerAck, win / 2) ||
        (qp_is_rc(qp) && win < kMaxUnackedPsns &&
         psn_diff(psn, e.comp.psn) + 1 >= static_cast<int32_t>(win));
    if (ack_req) {
        e.req.noack_pkts = 0;
    }
    const MutBth bth = f.bth();
    bth.set_se((w.flags & VIRTIO_RDMA_SEND_SOLICITED) && *last &&
               op.has(kWrPeerRecv));
    bth.set_qpn(ud ? w.remote_qpn : qp.attr.dest_qp_num);
    bth.set_ack_req(ack_req);
    bth.set_psn(psn);
    const OpcodeInfo &info = *f.info;
    if (info.has(Hdr::kReth)) {
        const MutReth reth = f.reth();
        reth.set_va(w.remote_addr + w.offset);
        reth.set_rkey(w.rkey);
        reth.set_dma_len(read ? w.length - w.offset : w.length);
    }
    if (info.has(Hdr::kAtomicEth)) {
        const MutAtomicEth at = f.atomic_eth();
        const bool cas = w.opcode == VIRTIO_RDMA_WR_ATOMIC_CMP_AND_SWP;
        at.set_va(w.remote_addr);
        at.set_rkey(w.rkey);
        at.set_swap_add(cas ? w.swap : w.compare_add);
        at.set_compare(cas ? w.compare_add : 0);
    }
    if (info.has(Hdr::kImmDt)) {
        f.immdt().set_imm_raw(w.ex); /* big-endian as the driver wrote it */
    }
    if (info.has(Hdr::kIeth)) {
        f.ieth().set_rkey(le(w.ex));
    }
    if (info.has(Hdr::kDeth)) {
        f.deth().set_qkey(ud_send_qkey(qp.type, qp.attr.qkey, w.remote_qkey));
        f.deth().set_sqp(qp.wire_qpn);
    }
    if (payload) {
        const uint8_t st = sgl_copy(c, qp.pd_index, e.ssge(e.sq_req), w.num_sge,
                                    w.offset, f.payload().data(), payload,
                                    false);
        if (st != VIRTIO_RDMA_WC_SUCCESS) {
            return st;
        }
    }
    tx_finish(c, f, a);

    if (psn_diff(psn, e.req.psn_hi) < 0) {
        eng(c).stats.retransmits++;
    }
    uint32_t used = 1;
    if (read) {
        used = packets_for(w.length - w.offset, mtu); /* response PSNs */
        w.offset = w.length;
    } else if (data) {
        w.offset += payload;
    } else {
        w.offset = w.length;
    }
    e.req.psn = psn_add(psn, used);
    if (psn_diff(e.req.psn, e.req.psn_hi) > 0) {
        e.req.psn_hi = e.req.psn;
    }
    if (qp_is_rc(qp) && !e.comp.retrans_deadline) {
        const uint64_t t = qp_timeout_ns(qp);
        if (t && c.host.has_timer()) {
            e.comp.retrans_deadline = now(c) + t;
            arm_timer(c, e.comp.retrans_deadline);
        }
    }
    return VIRTIO_RDMA_WC_SUCCESS;
}

/* @w at sq_req fails with @status; it completes in order, then ERR. */
Progress fail(VrdmaCore &c, Qp &qp, SendWqe &w, uint8_t status)
{
    w.status = status;
    w.state = WqeState::kDone;
    comp_drain(c, qp);
    return qp.state() == VIRTIO_RDMA_QPS_ERR ? Progress::kIdle
                                             : Progress::kBlocked;
}

} // namespace

uint32_t req_window(const QpEngine &e, uint32_t mtu)
{
    const uint32_t bytes = std::clamp(kWindowBytes / std::max(mtu, 1u),
                                      kCwndMin, kMaxUnackedPsns);
    return std::min(bytes, std::max(e.req.cwnd, kCwndMin));
}

void req_retry(VrdmaCore &c, Qp &qp)
{
    QpEngine &e = eng(qp);
    const uint32_t mtu = qp_mtu(c, qp);
    bool first = true;
    e.req.need_retry = false;
    for (uint32_t i = e.sq_head; i != e.sq_tail; i++) {
        SendWqe &w = e.swqe(i);
        if (!w.started) {
            break;
        }
        if (w.state == WqeState::kDone) {
            continue;
        }
        w.offset = 0;
        if (first) {
            /* The oldest unfinished WQE resumes at comp.psn. */
            const int32_t n = psn_diff(e.comp.psn, w.first_psn);
            if (n > 0 && !wr_opcode_info(w.opcode).has(kWrAtomic)) {
                w.offset = static_cast<uint32_t>(
                    std::min<uint64_t>(uint64_t(n) * mtu, w.length));
            }
            first = false;
        }
        w.state = WqeState::kPosted;
    }
    e.sq_req = e.sq_head;
    e.req.psn = e.comp.psn;
    e.req.noack_pkts = 0;
}

Progress req_run(VrdmaCore &c, Qp &qp, unsigned &budget)
{
    QpEngine &e = eng(qp);
    const uint32_t state = qp.state();
    if (state != VIRTIO_RDMA_QPS_RTS && state != VIRTIO_RDMA_QPS_SQD) {
        return Progress::kIdle;
    }
    if (e.req.wait_rnr) {
        return Progress::kBlocked;
    }
    if (e.req.need_retry) {
        req_retry(c, qp);
    }
    const uint32_t mtu = qp_mtu(c, qp);
    const bool rc = qp_is_rc(qp);
    QpAddr qa;

    for (;;) {
        if (e.sq_req == e.sq_tail) {
            return Progress::kIdle;
        }
        SendWqe &w = e.swqe(e.sq_req);
        if (w.state == WqeState::kDone) {
            if (w.status != VIRTIO_RDMA_WC_SUCCESS) {
                return Progress::kBlocked; /* completes when at the head */
            }
            e.sq_req++;
            continue;
        }
        if (w.state == WqeState::kPending) {
            e.sq_req++;
            continue;
        }
        if (!budget) {
            return Progress::kBudget;
        }
        if (!w.started) {
            if (state == VIRTIO_RDMA_QPS_SQD) {
                return Progress::kBlocked; /* drained at a message boundary */
            }
            if (w.status != VIRTIO_RDMA_WC_SUCCESS) {
                return fail(c, qp, w, w.status); /* malformed when posted */
            }
            if ((w.flags & VIRTIO_RDMA_SEND_FENCE) && e.req.rd_atomic) {
                return Progress::kBlocked;
            }
            const WrOpcodeInfo &op = wr_opcode_info(w.opcode);
            if (op.has(kWrLocal)) {
                /* Which local operation runs is the opcode itself. */
                const uint8_t st = w.opcode == VIRTIO_RDMA_WR_REG_MR
                                       ? reg_mr(c, qp, w)
                                       : local_inv(c, qp, le(w.ex));
                w.started = true;
                budget--;
                if (st != VIRTIO_RDMA_WC_SUCCESS) {
                    return fail(c, qp, w, st);
                }
                w.state = WqeState::kDone;
                e.sq_req++;
                comp_drain(c, qp);
                if (qp.state() == VIRTIO_RDMA_QPS_ERR) {
                    return Progress::kIdle;
                }
                continue;
            }
            const bool rd = op.any(kWrRdAtomic);
            if (rd && e.req.rd_atomic >= qp.attr.max_rd_atomic) {
                if (qp.attr.max_rd_atomic == 0) {
                    return fail(c, qp, w, VIRTIO_RDMA_WC_LOC_QP_OP_ERR);
                }
                return Progress::kBlocked; /* completions give credits */
            }
            /*
             * A data message of one packet skips the check: send_packet()'s
             * sgl_copy() checks the same SGEs, all of them, with the same
             * LOC_PROT_ERR, before anything is sent.
             */
            const bool one_packet = op.any(kWrPayload) && w.length <= mtu;
            const uint8_t st =
                one_packet ? uint8_t{VIRTIO_RDMA_WC_SUCCESS}
                           : sgl_check(c, qp.pd_index, e.ssge(e.sq_req),
                                       w.num_sge, rd);
            if (st != VIRTIO_RDMA_WC_SUCCESS) {
                return fail(c, qp, w, st);
            }
            if (!rc && qp_is_ud(qp) && w.length > mtu) {
                /* C10-93.1.1: no packet, no error (rxe fakes the send). */
                w.started = true;
                w.first_psn = w.last_psn = e.req.psn;
                e.req.psn = psn_add(e.req.psn, 1);
                w.state = WqeState::kDone;
                e.sq_req++;
                comp_drain(c, qp);
                budget--;
                continue;
            }
            w.started = true;
            w.offset = 0;
            w.first_psn = e.req.psn;
            w.last_psn = psn_add(
                w.first_psn,
                (op.any(kWrPayload | kWrRead) ? packets_for(w.length, mtu)
                                              : 1) -
                    1);
            if (rd) {
                w.rd_atomic = true;
                e.req.rd_atomic++;
            }
        }
        const uint32_t win = req_window(e, mtu);
        if (rc && psn_diff(e.req.psn, e.comp.psn) >=
                      static_cast<int32_t>(win)) {
            return Progress::kBlocked; /* ACKs reopen the window */
        }
        bool last = false;
        const uint8_t st = send_packet(c, qp, w, mtu, win, qa, &last);
        if (st != VIRTIO_RDMA_WC_SUCCESS) {
            return fail(c, qp, w, st);
        }
        budget--;
        if (last) {
            e.sq_req++;
            if (rc) {
                w.state = WqeState::kPending;
            } else {
                w.state = WqeState::kDone; /* UC/UD: nothing to wait for */
                comp_drain(c, qp);
                if (qp.state() == VIRTIO_RDMA_QPS_ERR) {
                    return Progress::kIdle;
                }
            }
        }
    }
}

} // namespace vrdma::soft_roce

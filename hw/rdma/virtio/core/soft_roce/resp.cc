/*
 * virtio-rdma soft-RoCE engine: the responder (rxe_resp.c's role, IBA
 * 9.7.5.1 / 9.9).  One request packet at a time goes through the checks,
 * in this order, each error state mapping to exactly one outcome:
 *
 *   CHK_PSN       RC: ahead -> ERR_PSN_OUT_OF_SEQ (NAK PSN sequence error,
 *                 once until the expected PSN arrives); behind ->
 *                 DUPLICATE.  UC: a gap drops the rest of the message.
 *   CHK_OP_SEQ    a message continues as it began: RC -> ERR_MISSING_FIRST
 *                 or ERR_MISSING_LAST (NAK invalid request); UC -> drop.
 *   CHK_OP_VALID  the QP's access flags allow READ / WRITE / ATOMIC, and
 *                 the opcode is one this engine executes -> ERR_UNSUPPORTED
 *                 (NAK invalid request); UC WRITE refused -> drop.
 *   CHK_RESOURCE  SEND / WRITE-with-immediate need a receive WQE -> ERR_RNR
 *                 (RC: RNR NAK with min_rnr_timer; UC/UD: drop); READ /
 *                 ATOMIC need a free responder resource (max_dest_rd_atomic)
 *                 -> ERR_TOO_MANY_RD_ATOMIC (NAK invalid request).
 *   CHK_LENGTH    FIRST/MIDDLE carry exactly the MTU, LAST 1..MTU, ONLY at
 *                 most the MTU, RETH length <= 2^31, a SEND fits the
 *                 receive buffer (UD: with the 40-byte GRH area) ->
 *                 ERR_LENGTH (RC: NAK invalid request, the receive WQE
 *                 completes with LOC_LEN_ERR; UC/UD: drop).
 *   CHK_RKEY      the R_Key names an MR of the QP's PD granting the access
 *                 over [VA, VA + length); a WRITE's packets add up to its
 *                 RETH length -> ERR_RKEY (RC: NAK remote access error;
 *                 UC: drop) / ERR_LENGTH; an atomic's VA is 8-byte aligned
 *                 -> ERR_MISALIGNED (NAK invalid request).
 *   EXECUTE       data to memory; READ and ATOMIC get a responder resource
 *                 and a reply; SEND with invalidate invalidates its R_Key
 *                 -> ERR_INVALIDATE (NAK invalid request).
 *   COMPLETE      the receive WQE's completion (LAST/ONLY).
 *   ACKNOWLEDGE   RC: ACK when the packet asks for one.
 * A receive buffer whose SGEs cannot be written -> ERR_MALFORMED_WQE (the
 * WQE completes with LOC_PROT_ERR; RC: NAK remote operational error).
 * After a NAK other than PSN-sequence and RNR the QP goes to ERR.
 *
 * Duplicates (IBA 9.9.3.1, C9-105..): SEND/WRITE are acknowledged again;
 * a READ is answered again from its responder resource from the requested
 * PSN on; an ATOMIC gets its saved original value again.
 *
 * What the responder sends leaves through a small per-QP queue, in order:
 * ACK/NAK entries (consecutive plain ACKs merge into the newest) and READ /
 * ATOMIC replies.  A long READ reply is sent from vrdma_core_run() with a
 * budget; ACKs of later requests wait behind it, as the requester expects
 * (responses in PSN order).  When the queue is empty an ACK leaves at once.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <algorithm>
#include <cstring>

#include "../core.h"
#include "engine.h"
#include "../small_copy.h"
#include "../roce/headers.h"

namespace vrdma::soft_roce {

using namespace roce;

namespace {

enum class St : uint8_t {
    kChkPsn,
    kChkOpSeq,
    kChkOpValid,
    kChkResource,
    kChkLength,
    kChkRkey,
    kExecute,
    kComplete,
    kAcknowledge,
    kDuplicate,
    kErrPsnOutOfSeq,
    kErrMissingFirst,
    kErrMissingLast,
    kErrUnsupported,
    kErrTooManyRdAtomic,
    kErrMisaligned,
    kErrRnr,
    kErrRkey,
    kErrInvalidate,
    kErrLength,
    kErrMalformedWqe,
    kDrop,
    kDone,
};

struct Ctx {
    VrdmaCore &c;
    Qp &qp;
    QpEngine &e;
    const Packet &pkt;
    uint32_t psn;
    uint32_t mask;
    uint32_t len;          /* payload bytes */
    bool rc;
    bool ud;
    VrdmaDrop why = VRDMA_DROP_NONE;
    bool nak = false;      /* send syndrome instead of an ACK */
    uint8_t syndrome = 0;
    bool fatal = false;    /* the QP goes to ERR once the NAK is out */
    uint8_t recv_status = VIRTIO_RDMA_WC_SUCCESS;
    Mr *mr = nullptr;
};

/* ---- the reply queue ---- */

void out_push(RespState &r, const OutItem &it)
{
    if (r.out_count) {
        OutItem &tail = r.out[(r.out_head + r.out_count - 1) % kOutSlots];
        /* A newer ACK or NAK says everything a plain ACK said. */
        if (it.kind == OutKind::kAck && tail.kind == OutKind::kAck &&
            (tail.syndrome & kAethTypeMask) == kAethAck) {
            tail = it;
            return;
        }
        if (r.out_count == kOutSlots) {
            /* Cannot happen (resources bound the replies); keep the news. */
            if (it.kind == OutKind::kAck && tail.kind == OutKind::kAck) {
                tail = it;
            }
            return;
        }
    }
    r.out[(r.out_head + r.out_count) % kOutSlots] = it;
    r.out_count++;
}

void push_ack(QpEngine &e, uint8_t syndrome, uint32_t psn)
{
    OutItem it;
    it.kind = OutKind::kAck;
    it.syndrome = syndrome;
    it.psn = psn;
    it.msn = e.resp.msn;
    out_push(e.resp, it);
}

void push_res(QpEngine &e, OutKind kind, uint32_t index)
{
    OutItem it;
    it.kind = kind;
    it.res = static_cast<uint8_t>(index);
    it.gen = e.resp.res[index].gen;
    e.resp.res[index].queued = true;
    out_push(e.resp, it);
}

/*
 * A duplicate READ/ATOMIC: answer it after what is queued now, in the order
 * the requests came (as a responder serving its request queue would).  A
 * reply of this resource still in the queue is taken out first: restarted in
 * place it could stay ahead of an older one the requester waits for, and
 * each go-back-N would restart it again (a livelock under timer pressure).
 */
void requeue_res(QpEngine &e, OutKind kind, uint32_t index)
{
    RespState &r = e.resp;
    if (r.res[index].queued) {
        uint32_t kept = 0;
        for (uint32_t k = 0; k < r.out_count; k++) {
            const OutItem it = r.out[(r.out_head + k) % kOutSlots];
            if (it.kind != OutKind::kAck && it.res == index &&
                it.gen == r.res[index].gen) {
                continue;
            }
            r.out[(r.out_head + kept++) % kOutSlots] = it;
        }
        r.out_count = kept;
    }
    push_res(e, kind, index);
}

/* ---- packets the responder sends ---- */

bool begin(VrdmaCore &c, Qp &qp, uint8_t opcode, uint32_t payload,
           uint32_t psn, FrameAddr *a, TxFrame *f)
{
    if (!addr_for_qp(c, qp, a) || !tx_begin(c, *a, opcode, payload, f)) {
        return false; /* our GID went away: nothing can be sent */
    }
    const MutBth bth = f->bth();
    bth.set_qpn(qp.attr.dest_qp_num);
    bth.set_psn(psn);
    return true;
}

void send_ack(VrdmaCore &c, Qp &qp, uint8_t syndrome, uint32_t psn,
              uint32_t msn)
{
    FrameAddr a;
    TxFrame f;
    if (!begin(c, qp, kRcAcknowledge, 0, psn, &a, &f)) {
        return;
    }
    f.aeth().set_syndrome(syndrome);
    f.aeth().set_msn(msn);
    tx_finish(c, f, a);
    if ((syndrome & kAethTypeMask) == kAethNak) {
        eng(c).stats.naks_sent++;
    } else if ((syndrome & kAethTypeMask) == kAethRnrNak) {
        eng(c).stats.rnr_naks_sent++;
    }
}

void send_atomic_ack(VrdmaCore &c, Qp &qp, const Res &res)
{
    FrameAddr a;
    TxFrame f;
    if (!begin(c, qp, kRcAtomicAcknowledge, 0, res.first_psn, &a, &f)) {
        return;
    }
    f.aeth().set_syndrome(kAethAckUnlimited);
    f.aeth().set_msn(eng(qp).resp.msn);
    f.atomic_ack_eth().set_orig(res.orig);
    tx_finish(c, f, a);
}

/*
 * The next packet of a READ reply.  @returns false if the QP went to ERR
 * (the MR went away under the reply: NAK remote access error).
 */
bool send_read_resp(VrdmaCore &c, Qp &qp, Res &res, bool *done)
{
    const uint32_t mtu = qp_mtu(c, qp);
    const uint32_t payload = std::min(res.resid, mtu);
    const bool last = res.resid <= mtu;
    const uint8_t opcode =
        res.restart ? (last ? kRcReadResponseOnly : kRcReadResponseFirst)
                    : (last ? kRcReadResponseLast : kRcReadResponseMiddle);
    RkeyErr err;
    const Mr *mr = payload ? rkey_check(c, qp, res.rkey, res.va, payload,
                                        VIRTIO_RDMA_ACCESS_REMOTE_READ, &err)
                           : nullptr;
    FrameAddr a;
    TxFrame f;
    if (payload && !mr) {
        send_ack(c, qp, kAethNakRemAccessErr, res.cur_psn, eng(qp).resp.msn);
        qp_enter_error(c, qp);
        return false;
    }
    if (begin(c, qp, opcode, payload, res.cur_psn, &a, &f)) {
        if (f.info->has(Hdr::kAeth)) {
            f.aeth().set_syndrome(kAethAckUnlimited);
            f.aeth().set_msn(eng(qp).resp.msn);
        }
        if (payload && !mr_read(c, *mr, res.va, f.payload().data(), payload)) {
            send_ack(c, qp, kAethNakRemAccessErr, res.cur_psn,
                     eng(qp).resp.msn);
            qp_enter_error(c, qp);
            return false;
        }
        tx_finish(c, f, a);
    }
    res.va += payload;
    res.resid -= payload;
    res.cur_psn = psn_add(res.cur_psn, 1);
    res.restart = false;
    *done = last;
    return true;
}

/* ---- the checks ---- */

bool in_message(const RespState &r, uint32_t kind_mask)
{
    if (r.opcode < 0) {
        return false;
    }
    const OpcodeInfo *i = opcode_info(static_cast<uint8_t>(r.opcode));
    return i && i->has(kind_mask);
}

St check_psn(Ctx &x)
{
    RespState &r = x.e.resp;
    const int32_t d = psn_diff(x.psn, r.epsn);
    if (x.rc) {
        if (d > 0) {
            if (r.sent_psn_nak) {
                return St::kDone; /* said it once (C9-?) */
            }
            r.sent_psn_nak = true;
            return St::kErrPsnOutOfSeq;
        }
        if (d < 0) {
            return St::kDuplicate;
        }
        r.sent_psn_nak = false;
        return St::kChkOpSeq;
    }
    if (x.qp.type == VIRTIO_RDMA_QPT_UC && (r.drop_msg || d != 0)) {
        if (x.mask & kMaskFirst) {
            r.drop_msg = false;
            r.opcode = -1; /* whatever was in progress is lost */
            return St::kChkOpSeq;
        }
        r.drop_msg = true;
        x.why = VRDMA_DROP_UC_MESSAGE;
        return St::kDrop;
    }
    return St::kChkOpSeq;
}

St check_op_seq(Ctx &x)
{
    RespState &r = x.e.resp;
    if (x.ud) {
        return St::kChkOpValid;
    }
    uint32_t kind = 0; /* the kind of message in progress, if any */
    if (in_message(r, kMaskSend)) {
        kind = kMaskSend;
    } else if (in_message(r, kMaskWrite)) {
        kind = kMaskWrite;
    }
    bool ok;
    if (kind) {
        ok = (x.mask & kind) && !(x.mask & kMaskFirst);
    } else {
        ok = (x.mask & kMaskFirst) != 0;
    }
    if (ok) {
        return St::kChkOpValid;
    }
    if (x.rc) {
        return kind ? St::kErrMissingLast : St::kErrMissingFirst;
    }
    /* UC (IBA 9.8.3.3 class D1): the message in progress is lost. */
    r.opcode = -1;
    r.recv_off = 0;
    r.drop_msg = !kind;
    x.why = VRDMA_DROP_UC_MESSAGE;
    return St::kDrop;
}

St check_op_valid(Ctx &x)
{
    const uint32_t acc = x.qp.attr.qp_access_flags;
    if (x.rc) {
        if (((x.mask & kMaskRead) && !(acc & VIRTIO_RDMA_ACCESS_REMOTE_READ)) ||
            ((x.mask & kMaskWrite) &&
             !(acc & VIRTIO_RDMA_ACCESS_REMOTE_WRITE)) ||
            ((x.mask & kMaskAtomic) &&
             !(acc & VIRTIO_RDMA_ACCESS_REMOTE_ATOMIC)) ||
            (x.mask & (kMaskFlush | kMaskAtomicWrite))) {
            return St::kErrUnsupported;
        }
    } else if (x.qp.type == VIRTIO_RDMA_QPT_UC && (x.mask & kMaskWrite) &&
               !(acc & VIRTIO_RDMA_ACCESS_REMOTE_WRITE)) {
        x.e.resp.drop_msg = true;
        x.why = VRDMA_DROP_UC_ACCESS;
        return St::kDrop;
    }
    return St::kChkResource;
}

St check_resource(Ctx &x)
{
    QpEngine &e = x.e;
    if (x.mask & (kMaskRead | kMaskAtomic)) {
        const uint32_t n = std::min<uint32_t>(x.qp.attr.max_dest_rd_atomic,
                                              kMaxQpRdAtom);
        /*
         * The oldest resource is reused (rxe); one whose first answer is
         * still going out means the requester ignored max_dest_rd_atomic.
         * A replay for a duplicate may be cut short by a new request.
         */
        const Res &oldest = e.resp.res[e.resp.res_next % (n ? n : 1)];
        if (n == 0 || (oldest.queued && !oldest.replay)) {
            return St::kErrTooManyRdAtomic;
        }
        return St::kChkLength;
    }
    if ((x.mask & kMaskRwr) && e.rq_count() == 0) {
        qp_rings_pull_recv(x.c, x.qp); /* a ring QP's window is empty */
        if (e.rq_count() == 0) {
            return St::kErrRnr;
        }
    }
    return St::kChkLength;
}

St check_length(Ctx &x)
{
    const uint32_t mtu = qp_mtu(x.c, x.qp);
    const uint32_t pos = x.mask & (kMaskFirst | kMaskMiddle | kMaskLast);
    if (pos == kMaskOnly) {
        if (x.len > mtu) {
            return St::kErrLength;
        }
    } else if (pos & (kMaskFirst | kMaskMiddle)) {
        if (x.len != mtu) {
            return St::kErrLength;
        }
    } else if (x.len == 0 || x.len > mtu) {
        return St::kErrLength;
    }
    if ((x.mask & kMaskReth) && x.pkt.reth().dma_len() > kMaxMsgSize) {
        return St::kErrLength;
    }
    if (x.mask & kMaskSend) {
        const RecvWqe &w = x.e.rwqe(x.e.rq_head);
        const uint64_t at = (x.mask & kMaskFirst)
                                ? (x.ud ? kGrhBytes : 0)
                                : x.e.resp.recv_off;
        if (at + x.len > w.length) {
            return St::kErrLength;
        }
    }
    return St::kChkRkey;
}

St check_rkey(Ctx &x)
{
    RespState &r = x.e.resp;
    uint32_t access;
    if (x.mask & (kMaskRead | kMaskWrite)) {
        if (x.mask & kMaskReth) {
            const Reth reth = x.pkt.reth();
            r.va = reth.va();
            r.rkey = reth.rkey();
            r.resid = reth.dma_len();
            r.length = reth.dma_len();
            if (r.length == 0) {
                /* C9-88: a zero-length op needs no valid address or key. */
                return x.len ? St::kErrLength : St::kExecute;
            }
        }
        access = (x.mask & kMaskRead) ? VIRTIO_RDMA_ACCESS_REMOTE_READ
                                      : VIRTIO_RDMA_ACCESS_REMOTE_WRITE;
    } else if (x.mask & kMaskAtomic) {
        const AtomicEth a = x.pkt.atomic_eth();
        r.va = a.va();
        r.rkey = a.rkey();
        r.resid = sizeof(uint64_t);
        access = VIRTIO_RDMA_ACCESS_REMOTE_ATOMIC;
    } else {
        return St::kExecute;
    }
    RkeyErr err;
    x.mr = rkey_check(x.c, x.qp, r.rkey, r.va, r.resid, access, &err);
    if (!x.mr) {
        return St::kErrRkey;
    }
    if (x.mask & kMaskWrite) {
        /* Every packet but the last carries an MTU; the last the rest. */
        const uint32_t mtu = qp_mtu(x.c, x.qp);
        const bool last = x.mask & kMaskLast;
        if (last ? (x.len != r.resid ||
                    x.pkt.pad != ((0u - r.resid) & 3))
                 : (r.resid <= mtu || x.len != mtu || x.pkt.pad)) {
            return St::kErrLength;
        }
    }
    if ((x.mask & kMaskAtomic) && (r.va & 7)) {
        return St::kErrMisaligned;
    }
    return St::kExecute;
}

/*
 * A UD SEND (one packet, ONLY opcodes) into receive WQE @w: the 40-byte
 * GRH area, then the payload.  @returns the payload copy's status; a GRH
 * area that does not fit is LOC_PROT_ERR (a malformed WQE).
 */
uint8_t ud_copy(Ctx &x, const RecvWqe &w, const Sge *sge)
{
    RespState &r = x.e.resp;
    uint8_t buf[kGrhBytes + kUdJoinBytes];
    grh_area(x.pkt, std::span<uint8_t, kGrhBytes>(buf, kGrhBytes));
    r.recv_off = kGrhBytes;
    if (x.len <= kUdJoinBytes && w.length >= kGrhBytes) {
        /* Small: both in one pass over the SGL (one MR lookup, one copy). */
        small_copy(buf + kGrhBytes, x.pkt.payload.data(), x.len);
        return sgl_copy(x.c, x.qp.recv_pd(), sge, w.num_sge, 0, buf,
                        kGrhBytes + x.len, true);
    }
    if (sgl_copy(x.c, x.qp.recv_pd(), sge, w.num_sge, 0, buf, kGrhBytes,
                 true) != VIRTIO_RDMA_WC_SUCCESS) {
        return VIRTIO_RDMA_WC_LOC_PROT_ERR;
    }
    return sgl_copy(x.c, x.qp.recv_pd(), sge, w.num_sge, kGrhBytes,
                    const_cast<uint8_t *>(x.pkt.payload.data()), x.len, true);
}

St execute(Ctx &x)
{
    QpEngine &e = x.e;
    RespState &r = e.resp;
    const std::span<const uint8_t> payload = x.pkt.payload;

    if (x.mask & kMaskSend) {
        const RecvWqe &w = e.rwqe(e.rq_head);
        const Sge *sge = e.rsge(e.rq_head);
        if (x.mask & kMaskFirst) {
            r.recv_active = true;
            r.recv_off = 0;
        }
        const uint8_t st =
            x.ud ? ud_copy(x, w, sge)
                 : sgl_copy(x.c, x.qp.recv_pd(), sge, w.num_sge, r.recv_off,
                            const_cast<uint8_t *>(payload.data()), x.len, true);
        if (st == VIRTIO_RDMA_WC_LOC_LEN_ERR) {
            return St::kErrLength;
        }
        if (st != VIRTIO_RDMA_WC_SUCCESS) {
            return St::kErrMalformedWqe;
        }
        r.recv_off += x.len;
    } else if (x.mask & kMaskWrite) {
        if (x.len && !mr_write(x.c, *x.mr, r.va, payload.data(), x.len)) {
            return St::kErrRkey;
        }
        r.va += x.len;
        r.resid -= x.len;
    } else if (x.mask & (kMaskRead | kMaskAtomic)) {
        const uint32_t n = std::min<uint32_t>(x.qp.attr.max_dest_rd_atomic,
                                              kMaxQpRdAtom);
        const uint32_t index = r.res_next % n;
        Res &res = r.res[index];
        const uint16_t gen = static_cast<uint16_t>(res.gen + 1);
        res = Res{};
        res.gen = gen;
        res.first_psn = x.psn;
        res.cur_psn = x.psn;
        res.rkey = r.rkey;
        if (x.mask & kMaskRead) {
            const uint32_t mtu = qp_mtu(x.c, x.qp);
            const uint32_t pkts = packets_for(r.length, mtu);
            res.type = ResType::kRead;
            res.last_psn = psn_add(x.psn, pkts - 1);
            res.va_org = res.va = r.va;
            res.length = res.resid = r.length;
            r.epsn = psn_add(res.last_psn, 1);
        } else {
            const AtomicEth a = x.pkt.atomic_eth();
            const bool cas = x.pkt.opcode == kRcCompareSwap;
            if (!mr_atomic(x.c, *x.mr, r.va, cas, a.compare(), a.swap_add(),
                           &res.orig)) {
                return St::kErrRkey;
            }
            res.type = ResType::kAtomic;
            res.last_psn = x.psn;
            r.epsn = psn_add(x.psn, 1);
            r.ack_psn = r.epsn;
        }
        r.res_next = (index + 1) % n;
        r.msn = psn_add(r.msn, 1); /* C9-148: a READ counts when it arrives */
        r.opcode = -1;
        push_res(e, (x.mask & kMaskRead) ? OutKind::kRead : OutKind::kAtomic,
                 index);
        return St::kDone;
    }

    if ((x.mask & kMaskIeth) &&
        !x.c.mrs.invalidate_remote(x.pkt.ieth().rkey(), x.qp.pd_index)) {
        return St::kErrInvalidate;
    }
    if (x.mask & kMaskLast) {
        r.msn = psn_add(r.msn, 1);
    }
    r.epsn = psn_add(x.psn, 1);
    r.ack_psn = r.epsn;
    r.opcode = (x.mask & kMaskLast) ? -1 : x.pkt.opcode;
    if (x.mask & kMaskComp) {
        return St::kComplete;
    }
    return x.rc ? St::kAcknowledge : St::kDone;
}

/* The receive WQE at the head of the RQ completes with x.recv_status. */
St complete(Ctx &x)
{
    QpEngine &e = x.e;
    RespState &r = e.resp;
    const RecvWqe &w = e.rwqe(e.rq_head);
    virtio_rdma_cq_req cqe{};
    cqe.wr_id = w.wr_id;
    cqe.status = x.recv_status;
    cqe.opcode = VIRTIO_RDMA_WC_RECV;
    cqe.qp_num = x.qp.wire_qpn;
    cqe.port_num = kPortNum;
    if (x.recv_status == VIRTIO_RDMA_WC_SUCCESS) {
        const bool write_imm = (x.mask & kMaskWrite) && (x.mask & kMaskImmDt);
        cqe.opcode = write_imm ? VIRTIO_RDMA_WC_RECV_RDMA_WITH_IMM
                               : VIRTIO_RDMA_WC_RECV;
        cqe.byte_len = write_imm ? r.length : r.recv_off;
        cqe.wc_flags = VIRTIO_RDMA_WC_GRH; /* rxe: always, RoCE has one */
        if (x.mask & kMaskImmDt) {
            cqe.wc_flags |= VIRTIO_RDMA_WC_WITH_IMM;
            cqe.ex = x.pkt.immdt().imm_raw();
        }
        if (x.mask & kMaskIeth) {
            cqe.wc_flags |= VIRTIO_RDMA_WC_WITH_INVALIDATE;
            cqe.ex = le(x.pkt.ieth().rkey());
        }
        cqe.src_qp = x.ud ? x.pkt.deth().sqp() : x.qp.attr.dest_qp_num;
        if (x.ud) { /* RoCE has no SL: the datagram's L3 type (spec) */
            cqe.sl = x.pkt.ipv6 ? VIRTIO_RDMA_CQE_SL_IPV6 : VIRTIO_RDMA_CQE_SL_IPV4;
        }
    }
    e.rq_head++;
    r.recv_active = false;
    r.recv_off = 0;
    if (!cq_post(x.c, x.qp.recv_cqn, cqe, x.pkt.bth().se())) {
        x.fatal = true; /* CQ overrun (class G): the QP goes to ERR */
    }
    return x.rc ? St::kAcknowledge : St::kDone;
}

St acknowledge(Ctx &x)
{
    if (!x.rc) {
        return St::kDone;
    }
    if (x.nak) {
        if (x.fatal) {
            /* Out now: the QP's queues go away with the error. */
            send_ack(x.c, x.qp, x.syndrome, x.psn, x.e.resp.msn);
        } else {
            push_ack(x.e, x.syndrome, x.psn);
        }
    } else if (x.pkt.bth().ack_req()) {
        push_ack(x.e, kAethAckUnlimited, x.psn);
    }
    return St::kDone;
}

St duplicate(Ctx &x)
{
    QpEngine &e = x.e;
    RespState &r = e.resp;
    eng(x.c).stats.duplicates++;
    if (x.mask & (kMaskSend | kMaskWrite)) {
        push_ack(e, kAethAckUnlimited, psn_add(r.ack_psn, kPsnMask));
        return St::kDone;
    }
    for (uint32_t i = 0; i < kMaxQpRdAtom; i++) {
        Res &res = r.res[i];
        if ((x.mask & kMaskRead) && res.type == ResType::kRead &&
            psn_diff(x.psn, res.first_psn) >= 0 &&
            psn_diff(x.psn, res.last_psn) <= 0) {
            /* The same request or the tail of it (rxe: else class D). */
            const Reth reth = x.pkt.reth();
            const uint64_t va = reth.va();
            const uint64_t len = reth.dma_len();
            if (reth.rkey() != res.rkey || va < res.va_org ||
                len > res.length || va - res.va_org > res.length - len) {
                return St::kDone;
            }
            res.cur_psn = x.psn;
            res.va = va;
            res.resid = static_cast<uint32_t>(len);
            res.restart = x.psn == res.first_psn;
            res.replay = true;
            requeue_res(e, OutKind::kRead, i);
            return St::kDone;
        }
        if ((x.mask & kMaskAtomic) && res.type == ResType::kAtomic &&
            res.first_psn == x.psn) {
            res.replay = true;
            requeue_res(e, OutKind::kAtomic, i);
            return St::kDone;
        }
    }
    return St::kDone; /* no resource left: class D, drop */
}

/* Class A/C errors (RC): NAK, the receive WQE in progress fails, ERR. */
St fatal(Ctx &x, uint8_t syndrome, uint8_t recv_status, bool recv_head)
{
    x.nak = true;
    x.syndrome = syndrome;
    x.fatal = true;
    x.recv_status = recv_status;
    if (recv_head && !x.e.rq_count()) {
        qp_rings_pull_recv(x.c, x.qp); /* the receive this message names */
    }
    if (x.e.resp.recv_active || (recv_head && x.e.rq_count())) {
        return St::kComplete;
    }
    return St::kAcknowledge;
}

/* UC / UD (class D): the packet (and for UC its message) is dropped. */
St discard(Ctx &x, VrdmaDrop why)
{
    if (x.qp.type == VIRTIO_RDMA_QPT_UC) {
        x.e.resp.drop_msg = true;
        x.e.resp.opcode = -1;
        x.e.resp.recv_off = 0;
    }
    x.why = why;
    return St::kDrop;
}

St step(Ctx &x, St st)
{
    switch (st) {
    case St::kChkPsn: return check_psn(x);
    case St::kChkOpSeq: return check_op_seq(x);
    case St::kChkOpValid: return check_op_valid(x);
    case St::kChkResource: return check_resource(x);
    case St::kChkLength: return check_length(x);
    case St::kChkRkey: return check_rkey(x);
    case St::kExecute: return execute(x);
    case St::kComplete: return complete(x);
    case St::kAcknowledge: return acknowledge(x);
    case St::kDuplicate: return duplicate(x);
    case St::kErrPsnOutOfSeq:
        push_ack(x.e, kAethNakPsnSeqErr, x.e.resp.epsn);
        return St::kDone;
    case St::kErrMissingFirst:
    case St::kErrMissingLast:
    case St::kErrUnsupported:
    case St::kErrTooManyRdAtomic:
    case St::kErrMisaligned:
        return fatal(x, kAethNakInvalidReq, VIRTIO_RDMA_WC_REM_INV_REQ_ERR,
                     false);
    case St::kErrRnr:
        if (x.rc) {
            push_ack(x.e,
                     kAethRnrNak | (x.qp.attr.min_rnr_timer & kAethValueMask),
                     x.psn);
            return St::kDone;
        }
        return discard(x, VRDMA_DROP_NO_RECV_WQE);
    case St::kErrRkey:
        if (x.rc) {
            return fatal(x, kAethNakRemAccessErr,
                         VIRTIO_RDMA_WC_REM_ACCESS_ERR, false);
        }
        return discard(x, VRDMA_DROP_UC_ACCESS);
    case St::kErrInvalidate:
        return fatal(x, kAethNakInvalidReq, VIRTIO_RDMA_WC_REM_INV_REQ_ERR,
                     false);
    case St::kErrLength:
        if (x.rc) {
            return fatal(x, kAethNakInvalidReq, VIRTIO_RDMA_WC_LOC_LEN_ERR,
                         (x.mask & kMaskSend) != 0);
        }
        return discard(x, VRDMA_DROP_LENGTH);
    case St::kErrMalformedWqe:
        /* Class A, every QP type: the receive WQE is broken. */
        x.fatal = true;
        x.nak = x.rc;
        x.syndrome = kAethNakRemOpErr;
        x.recv_status = VIRTIO_RDMA_WC_LOC_PROT_ERR;
        return St::kComplete;
    case St::kDrop:
        drop(x.c, x.why, x.qp.index);
        return St::kDone;
    case St::kDone:
        break;
    }
    return St::kDone;
}

} // namespace

void resp_receive(VrdmaCore &c, Qp &qp, const Packet &pkt)
{
    Ctx x{c,
          qp,
          eng(qp),
          pkt,
          pkt.bth().psn(),
          pkt.info->mask,
          static_cast<uint32_t>(pkt.payload.size()),
          qp_is_rc(qp),
          qp_is_ud(qp)};
    St st = St::kChkPsn;
    while (st != St::kDone) {
        st = step(x, st);
    }
    if (x.fatal) {
        qp_enter_error(c, qp);
        return;
    }
    unsigned budget = kInlineReplyBudget;
    if (resp_flush(c, qp, budget) == Progress::kBudget) {
        schedule(c, qp);
    }
}

Progress resp_flush(VrdmaCore &c, Qp &qp, unsigned &budget)
{
    RespState &r = eng(qp).resp;
    while (r.out_count) {
        if (qp.state() == VIRTIO_RDMA_QPS_ERR) {
            return Progress::kIdle;
        }
        if (!budget) {
            return Progress::kBudget;
        }
        OutItem &it = r.out[r.out_head];
        bool done = true;
        if (it.kind != OutKind::kAck && r.res[it.res].gen != it.gen) {
            /* A replay a newer request took the resource from. */
            r.out_head = (r.out_head + 1) % kOutSlots;
            r.out_count--;
            continue;
        }
        switch (it.kind) {
        case OutKind::kAck:
            send_ack(c, qp, it.syndrome, it.psn, it.msn);
            break;
        case OutKind::kAtomic:
            send_atomic_ack(c, qp, r.res[it.res]);
            r.res[it.res].queued = false;
            break;
        case OutKind::kRead:
            if (!send_read_resp(c, qp, r.res[it.res], &done)) {
                return Progress::kIdle;
            }
            if (done) {
                r.res[it.res].queued = false;
            }
            break;
        }
        budget--;
        if (done) {
            r.out_head = (r.out_head + 1) % kOutSlots;
            r.out_count--;
        }
    }
    return Progress::kIdle;
}

} // namespace vrdma::soft_roce

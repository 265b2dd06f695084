/*
 * virtio-rdma soft-RoCE engine: the completer (rxe_comp.c's role, IBA
 * 9.7.5.2).  One response packet at a time, against the oldest send WQE:
 *
 *   GET_WQE     the oldest WQE the requester started (done ones complete
 *               first, in order).
 *   CHECK_PSN   a response beyond the WQE acknowledges a SEND/WRITE
 *               entirely (COMP_WQE, then the next WQE with the same
 *               packet) but means a lost response for a READ/ATOMIC
 *               (ERROR_RETRY); an old PSN is a duplicate (ignored); a READ
 *               response beyond the expected PSN shows a lost response
 *               (ERROR_RETRY, once per retry).
 *   CHECK_ACK   read responses continue in sequence and belong to a READ,
 *               an atomic ACK to an ATOMIC; AETH: ACK -> WRITE_SEND;
 *               RNR NAK -> RNR_RETRY; NAK PSN sequence error (implicitly
 *               acknowledging the PSNs before it) -> ERROR_RETRY; NAK
 *               invalid request / remote access / remote operational /
 *               invalid RD request -> ERROR with REM_INV_REQ_ERR /
 *               REM_ACCESS_ERR / REM_OP_ERR / REM_INV_RD_REQ_ERR.
 *   READ        the payload to the local SGEs at (PSN - first PSN) * MTU.
 *   ATOMIC      the original value to the local SGE.
 *   COMP_ACK    the WQE is done: its completion, credit back, window open.
 *   UPDATE_COMP progress within a WQE (partial ACK, read response).
 *   ERROR_RETRY retry_cnt left: go-back-N from comp.psn (once until
 *               progress, except on a timeout); none left: RETRY_EXC_ERR.
 *   RNR_RETRY   rnr_retry left (7: forever): wait the RNR timer (IBA table
 *               45), then go-back-N; none left: RNR_RETRY_EXC_ERR.
 *   ERROR       the WQE completes with its status and the QP goes to ERR.
 *
 * Timers: the retransmit timer (4.096 us * 2^timeout, C9-140) runs while
 * packets are unacknowledged and restarts on progress; on expiry it is an
 * ERROR_RETRY.  Progress refills both retry counters (as rxe).
 *
 * Congestion: a go-back-N (ERROR_RETRY) shrinks the requester's window to
 * kCwndMin packets; every packet acknowledged after that grows it by one,
 * up to the full window (req_window()).  retry_cnt 7
 * means 7 retries here (IBA), not forever (an rxe quirk).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <algorithm>

#include "../core.h"
#include "engine.h"
#include "../roce/headers.h"
#include "../wr_opcode.h"

namespace vrdma::soft_roce {

using namespace roce;

namespace {

/* IBA table 45, the RNR NAK timer field, in nanoseconds. */
constexpr uint64_t kRnrNs[32] = {
    655360000, 10000,    20000,    30000,    40000,    60000,    80000,
    120000,    160000,   240000,   320000,   480000,   640000,   960000,
    1280000,   1920000,  2560000,  3840000,  5120000,  7680000,  10240000,
    15360000,  20480000, 30720000, 40960000, 61440000, 81920000, 122880000,
    163840000, 245760000, 327680000, 491520000,
};

enum class St : uint8_t {
    kGetWqe,
    kCheckPsn,
    kCheckAck,
    kRead,
    kAtomic,
    kWriteSend,
    kCompAck,
    kCompWqe,
    kUpdateComp,
    kErrorRetry,
    kRnrRetry,
    kError,
    kIgnore, /* stale or duplicate: nothing to do */
    kDone,
};

/* A READ or an atomic: answered with data, never by a plain ACK. */
bool is_rd(uint32_t op)
{
    return wr_opcode_info(op).any(kWrRdAtomic);
}

struct Ctx {
    VrdmaCore &c;
    Qp &qp;
    QpEngine &e;
    const Packet *pkt;     /* nullptr: the retransmit timer */
    uint32_t psn = 0;
    uint32_t mask = 0;
    SendWqe *w = nullptr;
    bool retried = false;  /* went back N: the window starts over */
    VrdmaDrop ignored = VRDMA_DROP_RESPONSE; /* why kIgnore drops it */
};

/*
 * PSNs sent and not acknowledged.  Measured from the highest PSN sent, not
 * req.psn: while a go-back-N resends, responses to the first transmission
 * may acknowledge beyond req.psn (the requester then skips ahead).
 */
bool outstanding(const QpEngine &e)
{
    return psn_diff(e.req.psn_hi, e.comp.psn) > 0;
}

/*
 * Every packet of @w went out at least once: waiting for its response, or
 * being resent after a go-back-N that the responder may not need.
 */
bool all_sent(const QpEngine &e, const SendWqe &w)
{
    return w.state == WqeState::kPending ||
           psn_diff(w.last_psn, e.req.psn_hi) < 0;
}

St get_wqe(Ctx &x)
{
    QpEngine &e = x.e;
    while (e.sq_head != e.sq_tail && e.swqe(e.sq_head).state == WqeState::kDone) {
        comp_drain(x.c, x.qp);
        if (x.qp.state() == VIRTIO_RDMA_QPS_ERR) {
            return St::kDone;
        }
    }
    if (e.sq_head == e.sq_tail || !e.swqe(e.sq_head).started) {
        return St::kIgnore;
    }
    x.w = &e.swqe(e.sq_head);
    return x.pkt ? St::kCheckPsn : St::kErrorRetry;
}

St check_psn(Ctx &x)
{
    SendWqe &w = *x.w;
    if (psn_diff(x.psn, w.last_psn) > 0) {
        if (!all_sent(x.e, w)) {
            x.ignored = VRDMA_DROP_RESPONSE_AHEAD;
            return St::kIgnore; /* cannot be: not all of it was sent */
        }
        /*
         * Being resent after a go-back-N, but all of it was sent before:
         * the responder has it (C9-114), the requester skips ahead.
         */
        return is_rd(w.opcode) ? St::kErrorRetry : St::kCompWqe;
    }
    const int32_t d = psn_diff(x.psn, x.e.comp.psn);
    if (d < 0) {
        x.ignored = VRDMA_DROP_RESPONSE_OLD;
        return St::kIgnore; /* a duplicate of something handled */
    }
    if (d > 0 && is_rd(w.opcode)) {
        /* A read response after a gap: the ones before it were lost. */
        x.ignored = VRDMA_DROP_RESPONSE_READ;
        return (x.mask & kMaskReadResp) ? St::kErrorRetry : St::kIgnore;
    }
    return St::kCheckAck;
}

St check_ack(Ctx &x)
{
    SendWqe &w = *x.w;
    const uint8_t op = x.pkt->opcode;
    const bool in_read = x.e.comp.opcode == kRcReadResponseFirst ||
                         x.e.comp.opcode == kRcReadResponseMiddle;

    if (x.mask & kMaskReadResp) {
        if (!wr_opcode_info(w.opcode).has(kWrRead)) {
            w.status = VIRTIO_RDMA_WC_BAD_RESP_ERR;
            return St::kError;
        }
        /*
         * In sequence: a READ's responses start with FIRST or ONLY and go
         * on with MIDDLE and LAST; a replay may start again from the
         * first PSN, or (after a partial read) in the middle (rxe).
         */
        const bool starts = x.mask & kMaskFirst;
        const bool ok =
            in_read ? (!starts ||
                       (op == kRcReadResponseFirst && x.psn == w.first_psn) ||
                       (op == kRcReadResponseOnly &&
                        w.first_psn == w.last_psn))
                    : starts;
        if (!ok) {
            w.status = VIRTIO_RDMA_WC_BAD_RESP_ERR;
            return St::kError;
        }
        if ((x.mask & kMaskAeth) &&
            (x.pkt->aeth().syndrome() & kAethTypeMask) != kAethAck) {
            w.status = VIRTIO_RDMA_WC_BAD_RESP_ERR;
            return St::kError;
        }
        comp_progress(x.c, x.qp);
        return St::kRead;
    }
    if (op == kRcAtomicAcknowledge) {
        if ((x.pkt->aeth().syndrome() & kAethTypeMask) != kAethAck ||
            !wr_opcode_info(w.opcode).has(kWrAtomic)) {
            w.status = VIRTIO_RDMA_WC_BAD_RESP_ERR;
            return St::kError;
        }
        comp_progress(x.c, x.qp);
        return St::kAtomic;
    }
    if (op != kRcAcknowledge) {
        w.status = VIRTIO_RDMA_WC_BAD_RESP_ERR;
        return St::kError;
    }
    const uint8_t syn = x.pkt->aeth().syndrome();
    switch (syn & kAethTypeMask) {
    case kAethAck:
        if (is_rd(w.opcode)) {
            x.ignored = VRDMA_DROP_RESPONSE_READ;
            return St::kIgnore; /* an ACK says nothing about a READ */
        }
        comp_progress(x.c, x.qp);
        return St::kWriteSend;
    case kAethRnrNak:
        eng(x.c).stats.rnr_naks_received++;
        return St::kRnrRetry;
    case kAethNak:
        eng(x.c).stats.naks_received++;
        switch (syn) {
        case kAethNakPsnSeqErr:
            /*
             * It acknowledges every PSN before its own (C9-114): that is
             * progress, so the retry counter starts over (otherwise a long
             * message on a lossy link runs out of retries while it moves).
             */
            if (psn_diff(x.psn, x.e.comp.psn) > 0) {
                x.e.comp.psn = x.psn;
                x.e.comp.opcode = -1;
                comp_progress(x.c, x.qp);
            }
            return St::kErrorRetry;
        case kAethNakInvalidReq:
            w.status = VIRTIO_RDMA_WC_REM_INV_REQ_ERR;
            break;
        case kAethNakRemAccessErr:
            w.status = VIRTIO_RDMA_WC_REM_ACCESS_ERR;
            break;
        case kAethNakInvalidRdReq:
            w.status = VIRTIO_RDMA_WC_REM_INV_RD_REQ_ERR;
            break;
        default: /* remote operational error, or reserved codes */
            w.status = VIRTIO_RDMA_WC_REM_OP_ERR;
            break;
        }
        return St::kError;
    default:
        w.status = VIRTIO_RDMA_WC_BAD_RESP_ERR;
        return St::kError;
    }
}

St do_read(Ctx &x)
{
    SendWqe &w = *x.w;
    const uint32_t mtu = qp_mtu(x.c, x.qp);
    const uint64_t off =
        uint64_t(std::max(psn_diff(x.psn, w.first_psn), 0)) * mtu;
    const uint32_t len = static_cast<uint32_t>(x.pkt->payload.size());
    const bool last = x.mask & kMaskLast;
    /* FIRST/MIDDLE carry an MTU, LAST/ONLY exactly what is left. */
    if (off > w.length || len > w.length - off ||
        (last ? off + len != w.length : len != mtu)) {
        w.status = VIRTIO_RDMA_WC_BAD_RESP_ERR;
        return St::kError;
    }
    const uint8_t st =
        sgl_copy(x.c, x.qp.pd_index, x.e.ssge(x.e.sq_head), w.num_sge, off,
                 const_cast<uint8_t *>(x.pkt->payload.data()), len, true);
    if (st != VIRTIO_RDMA_WC_SUCCESS) {
        w.status = st;
        return St::kError;
    }
    return last ? St::kCompAck : St::kUpdateComp;
}

St do_atomic(Ctx &x)
{
    SendWqe &w = *x.w;
    uint8_t buf[8];
    const uint64_t orig = x.pkt->atomic_ack_eth().orig();
    for (int i = 0; i < 8; i++) {
        buf[i] = static_cast<uint8_t>(orig >> (8 * i)); /* guest: LE */
    }
    const uint8_t st = sgl_copy(x.c, x.qp.pd_index, x.e.ssge(x.e.sq_head),
                                w.num_sge, 0, buf, sizeof(buf), true);
    if (st != VIRTIO_RDMA_WC_SUCCESS) {
        w.status = st;
        return St::kError;
    }
    return St::kCompAck;
}

/* The head WQE is done: report it and let the requester go on. */
void finish_head(Ctx &x)
{
    x.w->state = WqeState::kDone;
    x.w->status = VIRTIO_RDMA_WC_SUCCESS;
    comp_drain(x.c, x.qp);
    if (x.qp.state() != VIRTIO_RDMA_QPS_ERR) {
        schedule(x.c, x.qp);
    }
}

St comp_ack(Ctx &x)
{
    QpEngine &e = x.e;
    if (psn_diff(x.psn, e.comp.psn) >= 0) {
        e.comp.psn = psn_add(x.psn, 1);
    }
    e.comp.opcode = -1;
    comp_progress(x.c, x.qp);
    finish_head(x);
    return St::kDone;
}

St comp_wqe(Ctx &x)
{
    QpEngine &e = x.e;
    if (psn_diff(x.w->last_psn, e.comp.psn) >= 0) {
        e.comp.psn = psn_add(x.w->last_psn, 1);
        e.comp.opcode = -1;
    }
    comp_progress(x.c, x.qp);
    finish_head(x);
    return x.qp.state() == VIRTIO_RDMA_QPS_ERR ? St::kDone : St::kGetWqe;
}

St update_comp(Ctx &x)
{
    QpEngine &e = x.e;
    e.comp.opcode = (x.mask & kMaskLast) ? -1 : x.pkt->opcode;
    if (psn_diff(x.psn, e.comp.psn) >= 0) {
        e.comp.psn = psn_add(x.psn, 1);
    }
    comp_progress(x.c, x.qp);
    schedule(x.c, x.qp); /* the window moved */
    return St::kDone;
}

St error_retry(Ctx &x)
{
    QpEngine &e = x.e;
    const bool timeout = x.pkt == nullptr;
    if (!timeout && (e.comp.started_retry || e.req.wait_rnr)) {
        /*
         * This loss is being repaired already -- also when the peer said
         * RNR: the packets after the refused one were out of sequence for
         * it, and its NAK for them is part of the same episode.
         */
        return St::kDone;
    }
    if (e.comp.retry_left == 0) {
        x.w->status = VIRTIO_RDMA_WC_RETRY_EXC_ERR;
        return St::kError;
    }
    e.comp.retry_left--;
    if (outstanding(e)) {
        e.req.need_retry = true;
        e.comp.started_retry = true;
        e.req.cwnd = kCwndMin; /* slow start: a small burst first */
        x.retried = true;
        schedule(x.c, x.qp);
    }
    return St::kDone;
}

St rnr_retry(Ctx &x)
{
    QpEngine &e = x.e;
    if (e.comp.rnr_left == 0) {
        x.w->status = VIRTIO_RDMA_WC_RNR_RETRY_EXC_ERR;
        return St::kError;
    }
    if (e.comp.rnr_left != kRnrRetryInfinite) {
        e.comp.rnr_left--;
    }
    if (psn_diff(x.psn, e.comp.psn) > 0) {
        e.comp.psn = x.psn; /* the NAK acknowledges what came before */
    }
    e.req.need_retry = true;
    e.comp.started_retry = true; /* NAKs for what followed: same episode */
    if (!x.c.host.has_timer()) {
        schedule(x.c, x.qp); /* a host without timers: retry at once */
        return St::kDone;
    }
    e.req.wait_rnr = true;
    e.comp.retrans_deadline = 0; /* not while the peer asked us to wait */
    const uint64_t t = kRnrNs[x.pkt->aeth().syndrome() & kAethValueMask];
    e.comp.rnr_deadline = now(x.c) + t;
    arm_timer(x.c, e.comp.rnr_deadline);
    return St::kDone;
}

St step(Ctx &x, St st)
{
    switch (st) {
    case St::kGetWqe: return get_wqe(x);
    case St::kCheckPsn: return check_psn(x);
    case St::kCheckAck: return check_ack(x);
    case St::kRead: return do_read(x);
    case St::kAtomic: return do_atomic(x);
    case St::kWriteSend:
        return (all_sent(x.e, *x.w) && x.psn == x.w->last_psn)
                   ? St::kCompAck
                   : St::kUpdateComp;
    case St::kCompAck: return comp_ack(x);
    case St::kCompWqe: return comp_wqe(x);
    case St::kUpdateComp: return update_comp(x);
    case St::kErrorRetry: return error_retry(x);
    case St::kRnrRetry: return rnr_retry(x);
    case St::kError:
        x.w->state = WqeState::kDone;
        comp_drain(x.c, x.qp); /* its own status, then ERR flushes */
        return St::kDone;
    case St::kIgnore:
        if (x.pkt) {
            drop(x.c, x.ignored, x.qp.index);
        }
        return St::kDone;
    case St::kDone:
        break;
    }
    return St::kDone;
}

void run(Ctx &x)
{
    St st = St::kGetWqe;
    while (st != St::kDone) {
        st = step(x, st);
    }
}

} // namespace

void comp_progress(VrdmaCore &c, Qp &qp)
{
    QpEngine &e = eng(qp);
    e.comp.retry_left = qp.attr.retry_cnt;
    e.comp.rnr_left = qp.attr.rnr_retry;
    e.comp.started_retry = false;
    e.comp.retrans_deadline = 0;
    if (outstanding(e) && !e.req.wait_rnr) {
        const uint64_t t = qp_timeout_ns(qp);
        if (t && c.host.has_timer()) {
            e.comp.retrans_deadline = now(c) + t;
            arm_timer(c, e.comp.retrans_deadline);
        }
    }
}

void comp_receive(VrdmaCore &c, Qp &qp, const Packet &pkt)
{
    Ctx x{c, qp, eng(qp), &pkt};
    x.psn = pkt.bth().psn();
    x.mask = pkt.info->mask;
    const uint32_t before = eng(qp).comp.psn;
    run(x);
    /* Slow start: the window grows by what this response acknowledged. */
    const int32_t acked = psn_diff(eng(qp).comp.psn, before);
    if (!x.retried && acked > 0 && qp.state() != VIRTIO_RDMA_QPS_ERR) {
        QpEngine &e = eng(qp);
        e.req.cwnd = std::min<uint32_t>(e.req.cwnd + acked, kMaxUnackedPsns);
        if (psn_diff(e.comp.psn, e.req.psn) > 0) {
            /*
             * An ACK beyond what this go-back-N resent so far: those PSNs
             * arrived the first time.  Resume at comp.psn rather than
             * resend them (a small window would otherwise stay full).
             */
            e.req.need_retry = true;
            schedule(c, qp);
        }
    }
}

void comp_timer(VrdmaCore &c, Qp &qp, uint64_t t)
{
    QpEngine &e = eng(qp);
    if (e.comp.rnr_deadline && t >= e.comp.rnr_deadline) {
        e.comp.rnr_deadline = 0;
        e.req.wait_rnr = false;
        schedule(c, qp); /* need_retry is set: go back and send again */
    }
    if (e.comp.retrans_deadline && t >= e.comp.retrans_deadline) {
        e.comp.retrans_deadline = 0;
        if (outstanding(e) && !e.req.wait_rnr) {
            eng(c).stats.retry_timeouts++;
            Ctx x{c, qp, eng(qp), nullptr};
            run(x);
        }
    }
}

} // namespace vrdma::soft_roce

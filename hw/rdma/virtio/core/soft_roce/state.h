/*
 * virtio-rdma soft-RoCE engine: its state -- protocol constants, the
 * work requests as the engine keeps them, one QP's requester / completer /
 * responder state (QpEngine, a Qp's backend state), and the device-wide
 * queues and counters (Engine, the core's backend state).  The functions
 * that work on them are declared in engine.h.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_VIRTIO_CORE_SOFT_ROCE_STATE_H
#define HW_RDMA_VIRTIO_CORE_SOFT_ROCE_STATE_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "../config.h"
#include "../errors.h"
#include "../roce/iba.h"
#include "../wqe.h"
#include "hw/rdma/virtio-rdma-core.h"

struct VrdmaCore;

namespace vrdma {
struct Qp;
struct Mr;
struct Cq;
struct Srq;
struct GidEntry;
struct SendReq;
struct RecvReq;
}

namespace vrdma::soft_roce {

/* The IBA facts the engine uses (../roce/iba.h). */
using roce::kAethAckUnlimited;
using roce::kGrhBytes;
using roce::kGsiQkey;
using roce::kMaxMsgSize;
using roce::kPsnMask;
using roce::kQkeyUseQp;
using roce::kRnrRetryInfinite;
using roce::psn_add;
using roce::psn_diff;

/* ---- protocol constants ---- */

inline constexpr uint32_t kMaxUnackedPsns = 128;   /* rxe: requester window */
inline constexpr uint32_t kMaxPktsPerAck = 64;     /* rxe: AckReq every 64 */
/*
 * RC requester window in bytes, on top of the 128 PSNs: what a receiver
 * that drains its socket slowly still holds.  A QEMU -netdev dgram socket
 * has the default 208 KiB receive buffer (about 24 frames of 4 KiB once
 * the kernel's per-datagram overhead is counted) and is read one datagram
 * per main-loop pass, so bursts of 128 x 4 KiB overflow it.  The window in
 * packets is kWindowBytes / MTU, between kCwndMin and kMaxUnackedPsns
 * (MTU 256: 128 packets as rxe; MTU 4096: 16).
 */
inline constexpr uint32_t kWindowBytes = 64 * 1024;
/*
 * After a loss (NAK sequence error, retransmit timeout) the window starts
 * again at kCwndMin packets and grows by one per packet acknowledged (slow
 * start) back to the full window, instead of resending the window at once.
 */
inline constexpr uint32_t kCwndMin = 4;
/* A UD payload up to this size is copied with its GRH area, in one pass. */
inline constexpr size_t kUdJoinBytes = 256;

/*
 * The largest frame: Ethernet + 802.1Q + IPv6 + UDP + BTH + the largest
 * extension headers + 4096 bytes + pad + ICRC, rounded up.
 */
inline constexpr size_t kMaxFrame = 4352;

/* Work per call of vrdma_core_run() (packets), and per QP in one turn. */
inline constexpr unsigned kRunBudget = 256;
inline constexpr unsigned kQpBudget = 64;
/* Frames taken from the loopback queue per vrdma_core_run(). */
inline constexpr unsigned kLoopBudget = 256;
/*
 * Capacity of the loopback queue (frames): twice what one run() takes, so
 * the replies to a full turn of looped-back requests fit.
 */
inline constexpr uint32_t kLoopSlots = 2 * kLoopBudget;
/* Responder packets sent right away from inside net_receive. */
inline constexpr unsigned kInlineReplyBudget = 8;

/*
 * A ring QP's window (VIRTIO_RDMA_F_RINGS): the engine holds at most this
 * many requests of each queue, taken from the guest's ring as it has room
 * (rings.h), whatever the queue's depth.  So a QP costs the same host
 * memory at 16 or 16384 work requests.  64 keeps the requester's 128-PSN
 * window full with single-packet messages and a 64 KiB message's 16
 * packets (MTU 4096) in flight four times over.
 */
inline constexpr uint32_t kRingWindow = 64;

/* ---- work requests, as the engine keeps them ---- */

/* Where a UD send goes (from the WQE's address vector). */
struct Av {
    std::array<uint8_t, 16> dgid{};
    std::array<uint8_t, 6> dmac{};
    uint8_t gid_index = 0;
    uint8_t hop_limit = 0;
    uint8_t tclass = 0;
    uint32_t flow_label = 0;
};

enum class WqeState : uint8_t {
    kPosted,  /* not (completely) sent yet */
    kPending, /* RC: every packet sent, waiting for the response */
    kDone,    /* finished (status says how); the completer reports it */
};

struct SendWqe {
    uint64_t wr_id = 0;
    uint32_t opcode = 0;     /* enum virtio_rdma_wr_opcode */
    uint32_t flags = 0;      /* VIRTIO_RDMA_SEND_* */
    uint32_t ex = 0;         /* imm_data as it is in memory, or an rkey */
    uint32_t rkey = 0;
    uint64_t remote_addr = 0;
    uint64_t compare_add = 0;
    uint64_t swap = 0;
    uint32_t remote_qpn = 0; /* UD */
    uint32_t remote_qkey = 0;
    Av av;
    uint32_t reg_mrn = 0;    /* REG_MR */
    uint32_t reg_key = 0;
    uint32_t reg_access = 0;
    uint32_t num_sge = 0;
    uint32_t length = 0;     /* sum of the SGE lengths, <= 2^31 */

    /* progress */
    WqeState state = WqeState::kPosted;
    uint8_t status = VIRTIO_RDMA_WC_SUCCESS;
    bool rd_atomic = false;  /* holds one of max_rd_atomic's credits */
    bool started = false;    /* first packet sent: PSNs assigned */
    uint32_t first_psn = 0;
    uint32_t last_psn = 0;
    uint32_t offset = 0;     /* message bytes already sent (requested) */
};

struct RecvWqe {
    uint64_t wr_id = 0;
    uint32_t num_sge = 0;
    uint32_t length = 0;     /* sum of the SGE lengths */
};

/* ---- per-QP state ---- */

struct ReqState {
    uint32_t psn = 0;        /* next PSN to send */
    uint32_t psn_hi = 0;     /* highest next PSN ever (retransmit count) */
    uint32_t noack_pkts = 0; /* packets since the last AckReq */
    uint32_t cwnd = kMaxUnackedPsns; /* packets; see kCwndMin */
    uint32_t rd_atomic = 0;  /* outstanding READ/ATOMIC WQEs */
    bool need_retry = false; /* go back to comp.psn before sending more */
    bool wait_rnr = false;   /* RNR timer running: send nothing */
};

struct CompState {
    uint32_t psn = 0;        /* oldest PSN not yet acknowledged */
    int16_t opcode = -1;     /* last read response opcode of a message */
    uint8_t retry_left = 0;
    uint8_t rnr_left = 0;
    bool started_retry = false;
    uint64_t retrans_deadline = 0; /* 0: not armed */
    uint64_t rnr_deadline = 0;
};

enum class ResType : uint8_t { kNone, kRead, kAtomic };

/* A responder resource (IBA 9.7.5.1.3): one READ or ATOMIC to answer again. */
struct Res {
    ResType type = ResType::kNone;
    bool queued = false;     /* in the reply queue */
    bool replay = false;     /* queued again for a duplicate request */
    uint16_t gen = 0;        /* bumped on reuse: older queue entries lapse */
    bool restart = true;     /* next read response starts a message */
    uint32_t first_psn = 0;
    uint32_t last_psn = 0;
    uint32_t cur_psn = 0;
    uint64_t va_org = 0;
    uint64_t va = 0;
    uint32_t length = 0;
    uint32_t resid = 0;
    uint32_t rkey = 0;
    uint64_t orig = 0;       /* ATOMIC: the value before the operation */
};

/* What the responder still has to send, in order. */
enum class OutKind : uint8_t { kAck, kRead, kAtomic };

struct OutItem {
    OutKind kind = OutKind::kAck;
    uint8_t syndrome = 0;    /* kAck: AETH syndrome */
    uint8_t res = 0;         /* kRead/kAtomic: resource index */
    uint16_t gen = 0;        /* kRead/kAtomic: the resource's generation */
    uint32_t psn = 0;        /* kAck */
    uint32_t msn = 0;        /* kAck */
};

inline constexpr uint32_t kOutSlots = 2 * kMaxQpRdAtom + 8;

struct RespState {
    uint32_t epsn = 0;       /* next expected request PSN */
    uint32_t ack_psn = 0;    /* epsn after the last SEND/WRITE/ATOMIC */
    uint32_t msn = 0;        /* messages completed (24 bits on the wire) */
    int16_t opcode = -1;     /* last request opcode inside a message */
    bool sent_psn_nak = false;
    bool drop_msg = false;   /* UC: drop until the next message starts */
    /* the message in progress */
    bool recv_active = false;/* a receive WQE is being filled */
    uint32_t recv_off = 0;
    uint64_t va = 0;         /* RDMA WRITE: where the next byte goes */
    uint32_t rkey = 0;
    uint32_t resid = 0;
    uint32_t length = 0;     /* RDMA WRITE: DMA length of the RETH */
    std::array<Res, kMaxQpRdAtom> res{};
    uint32_t res_next = 0;
    std::array<OutItem, kOutSlots> out{};
    uint32_t out_head = 0;
    uint32_t out_count = 0;
};

struct QpEngine {
    /*
     * Requests the engine holds at most: max_send_wr / max_recv_wr, or
     * for a ring QP at most kRingWindow of them.
     */
    uint32_t sq_cap = 0;
    uint32_t rq_cap = 0;
    /* slots - 1: sq_cap / rq_cap rounded up to 2^n */
    uint32_t sq_mask = 0;
    uint32_t rq_mask = 0;
    uint32_t send_sge_cap = 0;
    uint32_t recv_sge_cap = 0;
    std::vector<SendWqe> sq;
    std::vector<Sge> sq_sge;
    /* free-running counters; slot = counter & sq_mask (rq_mask) */
    uint32_t sq_head = 0;    /* oldest not completed */
    uint32_t sq_req = 0;     /* next the requester works on */
    uint32_t sq_tail = 0;    /* next free */
    std::vector<RecvWqe> rq;
    std::vector<Sge> rq_sge;
    uint32_t rq_head = 0;
    uint32_t rq_tail = 0;

    ReqState req;
    CompState comp;
    RespState resp;
    bool in_runq = false;

    uint32_t sq_count() const { return sq_tail - sq_head; }
    uint32_t rq_count() const { return rq_tail - rq_head; }
    /* Requests the queue can take now (a ring QP's window). */
    uint32_t sq_room() const { return sq_cap - sq_count(); }
    uint32_t rq_room() const { return rq_cap - rq_count(); }
    SendWqe &swqe(uint32_t i) { return sq[i & sq_mask]; }
    Sge *ssge(uint32_t i) { return &sq_sge[(i & sq_mask) * send_sge_cap]; }
    RecvWqe &rwqe(uint32_t i) { return rq[i & rq_mask]; }
    Sge *rsge(uint32_t i) { return &rq_sge[(i & rq_mask) * recv_sge_cap]; }
    /* Bytes the four rings hold (allocated, not just used). */
    size_t ring_bytes() const;
};

/* ---- device-wide state ---- */

struct Engine {
    explicit Engine(const VrdmaLimits &lim);

    /* QPs with work for vrdma_core_run(), FIFO, each at most once. */
    std::vector<uint32_t> runq;
    uint32_t runq_head = 0;
    uint32_t runq_count = 0;

    /* Frames between two QPs of this device, delivered by run(). */
    std::vector<uint8_t> loop_buf; /* kLoopSlots * kMaxFrame */
    std::vector<uint16_t> loop_len;
    uint32_t loop_head = 0;
    uint32_t loop_count = 0;

    std::vector<uint8_t> tx;       /* the frame being built */
    uint64_t timer_armed = UINT64_MAX; /* deadline given to timer_mod */
    bool kicked = false;           /* kick() called, run() not yet */
    uint16_t ip_id = 0;

    VrdmaDpStats stats{};

    /* The backend seam's hooks (../backend.h), in backend.cc. */
    Status pd_created(VrdmaCore &, uint32_t) { return kOk; }
    void pd_destroyed(VrdmaCore &, uint32_t) {}
    Status cq_created(VrdmaCore &, uint32_t, Cq &) { return kOk; }
    void cq_destroyed(VrdmaCore &, uint32_t) {}
    Status qp_created(VrdmaCore &c, Qp &qp);
    /* The engine takes every attribute the core's checks let through. */
    Status qp_modifying(VrdmaCore &, Qp &, uint32_t,
                        const virtio_rdma_qp_attr &)
    {
        return kOk;
    }
    void qp_modified(VrdmaCore &c, Qp &qp, uint32_t old_state, uint32_t mask);
    void qp_destroyed(VrdmaCore &c, Qp &qp);
    void qp_error_flush(VrdmaCore &c, Qp &qp);
    /* The wire is the guest's own NIC's: the allow-list is all there is. */
    Status gid_adding(VrdmaCore &, uint32_t, const GidEntry &) { return kOk; }
    Status mr_registered(VrdmaCore &c, uint32_t index, Mr &mr);
    void mr_mapped(VrdmaCore &c, Mr &mr);
    void mr_revoked(VrdmaCore &c, Mr &mr);
    Status mr_deregistered(VrdmaCore &c, Mr &mr);
    void post_send(VrdmaCore &c, Qp &qp, const SendReq &r);
    void post_recv(VrdmaCore &c, Qp &qp, const RecvReq &r);
    uint32_t wq_room(const Qp &qp, bool is_rq) const;
    /*
     * SRQs keep no host state; a QP takes an entry when a message needs it
     * (srq_take, from the responder), so the ring turn never offers one:
     * room 0, and post_srq_recv is never called.
     */
    Status srq_created(VrdmaCore &, Srq &) { return kOk; }
    void srq_destroyed(VrdmaCore &, Srq &) {}
    Status srq_limit_set(VrdmaCore &, Srq &, uint32_t) { return kOk; }
    uint32_t srq_room(const Srq &) const { return 0; }
    void post_srq_recv(VrdmaCore &, Srq &, const RecvReq &) {}
    bool frame_receive(VrdmaCore &c, std::span<const uint8_t> frame);
    /* The GSI QP's MADs come as frames here: none by the MAD link. */
    bool mad_receive(VrdmaCore &, const VrdmaMad &) { return false; }
    bool run(VrdmaCore &c);
    void timer(VrdmaCore &c);
    void reset(VrdmaCore &c);
    void detach(VrdmaCore &) {}
};

} // namespace vrdma::soft_roce

#endif

/*
 * virtio-rdma soft-RoCE engine: the backend that builds and parses RoCEv2
 * frames itself on the paired NIC's wire.  This header has the functions
 * the engine's files share; its state is in state.h, its side of the
 * backend seam (../backend.h) in backend.cc.
 *
 * The engine follows Linux rxe's split, one file per role:
 *   wqe.cc    work requests posted by the driver (admitted by ../admit.h),
 *             into the rings
 *   mem.cc    LOCAL_INV and REG_MR (SGE <-> guest memory: ../mr_access.h)
 *   cqe.cc    completions, flushes
 *   qp.cc     per-QP lifecycle: create, modify hooks, error, destroy
 *   net.cc    frames out: building, the wire, the internal loopback
 *   recv.cc   frames in: is it ours, parse, route to a QP
 *   req.cc    requester: WQEs -> request packets (segmentation, PSNs)
 *   comp.cc   completer: ACKs/NAKs/read responses -> completions, retries
 *   resp.cc   responder: request packets -> memory, receive completions,
 *             ACKs, read/atomic replies
 *   run.cc    scheduling, timers
 * The requester, completer and responder are explicit state machines: an
 * enum of states and one driving loop, each step returning the next state.
 *
 * Storage is allocated when a QP is created (rings of parsed WQEs and SGE
 * arrays sized by the QP's caps, responder resources) and when the core is
 * created (transmit buffer, loopback queue, run queue).  From then on the
 * data path does not allocate, throw or make a virtual call.  Every guest
 * value is untrusted: 64-bit checked arithmetic, copied once, validated
 * before use.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_VIRTIO_CORE_SOFT_ROCE_ENGINE_H
#define HW_RDMA_VIRTIO_CORE_SOFT_ROCE_ENGINE_H

#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <variant>

#include "../core.h"
#include "../mr_access.h"
#include "../roce/frame.h"
#include "state.h"

namespace vrdma::soft_roce {

/*
 * The engine's state in a core (a QP) created with the soft-RoCE backend.
 * The engine is reached only through the seam's visit of an Engine, so
 * the alternative is known: telling the compiler keeps the data path free
 * of a variant index test on every access.
 */
template <typename T, typename V>
inline auto &alt(V &v)
{
    auto *p = std::get_if<T>(&v);
    if (!p) {
        __builtin_unreachable();
    }
    return *p;
}
inline Engine &eng(VrdmaCore &c)
{
    return alt<Engine>(c.backend);
}
inline const Engine &eng(const VrdmaCore &c)
{
    return alt<Engine>(c.backend);
}
inline QpEngine &eng(Qp &qp)
{
    return alt<QpEngine>(qp.backend);
}
inline const QpEngine &eng(const Qp &qp)
{
    return alt<QpEngine>(qp.backend);
}

/* ---- shared functions ---- */

/* qp.cc */
void qp_create(VrdmaCore &c, Qp &qp);
void qp_destroy(VrdmaCore &c, Qp &qp);
/* After MODIFY_QP applied @mask; the state was @old_state. */
void qp_modified(VrdmaCore &c, Qp &qp, uint32_t old_state, uint32_t mask);
/*
 * The QP went to ERR for an error of its own (the core's qp_enter_error,
 * which the engine calls when it finds one): everything in flight
 * forgotten, every outstanding WQE flushed.
 */
void qp_error_flush(VrdmaCore &c, Qp &qp);
/* Bytes per packet of this QP (path MTU capped by the port's). */
uint32_t qp_mtu(const VrdmaCore &c, const Qp &qp);
/* Packets of a @bytes message at @mtu (a power of two: no division). */
inline uint32_t packets_for(uint32_t bytes, uint32_t mtu)
{
    const uint32_t n = static_cast<uint32_t>(
        (uint64_t{bytes} + mtu - 1) >> std::countr_zero(mtu));
    return n ? n : 1;
}
uint64_t qp_timeout_ns(const Qp &qp);
/* Per packet: inline. */
inline bool qp_is_rc(const Qp &qp)
{
    return qp.type == VIRTIO_RDMA_QPT_RC;
}
inline bool qp_is_ud(const Qp &qp) /* UD or GSI */
{
    return qp.type == VIRTIO_RDMA_QPT_UD || qp.type == VIRTIO_RDMA_QPT_GSI;
}

/* cqe.cc */
/*
 * Writes @cqe (host order) to CQ @cqn, then applies the arming rules.
 * @returns false on a CQ overrun (counted; the caller errors the QP).
 */
bool cq_post(VrdmaCore &c, uint32_t cqn, const virtio_rdma_cq_req &cqe,
             bool solicited);
/* Completes every kDone WQE at the head of the SQ; may put the QP in ERR. */
void comp_drain(VrdmaCore &c, Qp &qp);
void flush_queues(VrdmaCore &c, Qp &qp);

/* mem.cc (guest memory through MRs: ../mr_access.h) */
uint8_t local_inv(VrdmaCore &c, const Qp &qp, uint32_t key);
uint8_t reg_mr(VrdmaCore &c, const Qp &qp, const SendWqe &w);

/* net.cc */
/* The addresses of @qp's packets to its RC/UC peer (the QP's AV). */
bool addr_for_qp(VrdmaCore &c, const Qp &qp, roce::FrameAddr *a);
/* ... of a UD send to @av. */
bool addr_for_ud(VrdmaCore &c, const Qp &qp, const Av &av,
                 roce::FrameAddr *a);
/*
 * Lays out a packet of @opcode with @payload bytes in c.dp.tx, BTH P_Key,
 * TVer and pad set.  @returns false if it cannot be built.
 */
bool tx_begin(VrdmaCore &c, const roce::FrameAddr &a, uint8_t opcode,
              uint32_t payload, roce::TxFrame *f);
/* ICRC, then out: to the wire, or to the loopback queue if it is for us. */
void tx_finish(VrdmaCore &c, const roce::TxFrame &f,
               const roce::FrameAddr &a);

/* recv.cc */
/* A frame from the wire (@loopback false) or the loopback queue. */
bool receive(VrdmaCore &c, std::span<const uint8_t> frame, bool loopback);
void drop(VrdmaCore &c, VrdmaDrop why, uint32_t qpn);

/* req.cc */
enum class Progress : uint8_t { kIdle, kBlocked, kBudget };
Progress req_run(VrdmaCore &c, Qp &qp, unsigned &budget);
/* Go-back-N from comp.psn (IBA 9.7.4.1.4). */
void req_retry(VrdmaCore &c, Qp &qp);
/* RC: unacknowledged PSNs the requester may have now (the window). */
uint32_t req_window(const QpEngine &e, uint32_t mtu);

/* comp.cc */
void comp_receive(VrdmaCore &c, Qp &qp, const roce::Packet &pkt);
void comp_timer(VrdmaCore &c, Qp &qp, uint64_t now);
/* Forward progress: retry counters back to full, timer pushed out. */
void comp_progress(VrdmaCore &c, Qp &qp);

/* resp.cc */
void resp_receive(VrdmaCore &c, Qp &qp, const roce::Packet &pkt);
Progress resp_flush(VrdmaCore &c, Qp &qp, unsigned &budget);

/* run.cc */
void schedule(VrdmaCore &c, Qp &qp);
void kick(VrdmaCore &c);
uint64_t now(const VrdmaCore &c);
/* Makes sure the host timer fires no later than @deadline. */
void arm_timer(VrdmaCore &c, uint64_t deadline);

} // namespace vrdma::soft_roce

#endif

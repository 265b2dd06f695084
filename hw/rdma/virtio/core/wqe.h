/*
 * virtio-rdma core: work requests as the driver posts them, read and
 * checked the same way for every backend.
 *
 * The ring turn copied the entry's bytes once (rings.cc).  These read
 * them into host order and check them against the QP with no side effect
 * but a trace (rdma-core's rxe provider: validate, then queue); admission
 * (admit.h) runs them, once per request for every backend, and completes
 * or hands on a request by what they say.  What is checked, and the
 * completion status of a failure:
 *
 *   length below the header, num_sge above the QP's cap, length not exactly
 *   header + num_sge SGEs, unknown send flag, IB_SEND_INLINE (unsupported),
 *   opcode unknown or not valid for the QP type, a UD QP's request to
 *   QPN 1 (also traced: guest_error)                -> LOC_QP_OP_ERR
 *   SGE lengths adding up to more than 2^31, an atomic's local buffer not
 *   8 bytes                                          -> LOC_LEN_ERR
 *   a UD request's source GID index past the table  -> LOC_QP_OP_ERR
 *
 * Keys are not looked up here: a REG_MR earlier in the same send queue may
 * create the key a later request uses, so a backend checks SGEs when it
 * executes them.
 *
 * Where a request goes depends on the QP state (IBA 10.3.1, 11.4.1.1):
 *   send queue: RTS, SQD -> queued (a malformed request too: it completes
 *     in order with its error and the QP goes to ERR, as rxe's requester
 *     does); RESET, INIT, RTR -> LOC_QP_OP_ERR right away (the verb's
 *     "immediate error"), state unchanged; SQE, ERR -> WR_FLUSH_ERR.
 *   receive queue: INIT..SQE -> queued (a malformed one completes with its
 *     error right away); RESET -> LOC_QP_OP_ERR; ERR -> WR_FLUSH_ERR.
 *   either queue full (the QP's max_send_wr / max_recv_wr outstanding;
 *     a ring QP's backend takes no more than its window, rings.h)
 *     -> LOC_QP_OP_ERR right away.
 *
 * Everything here is inline: it runs once per work request.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_VIRTIO_CORE_WQE_H
#define HW_RDMA_VIRTIO_CORE_WQE_H

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "guest_abi.h"
#include "host.h"
#include "roce/iba.h"
#include "wr_opcode.h"

namespace vrdma {

struct Sge {
    uint64_t addr = 0;
    uint32_t length = 0;
    uint32_t lkey = 0;
};

/*
 * The request header from the @len bytes at @p, in host order; zeros past
 * a short one (so wr_id is 0 if the header is cut short before it).  A
 * whole header is one fixed-size copy (vector moves); an empty request may
 * come without a buffer.
 */
template <typename T>
T read_header(const uint8_t *p, size_t len)
{
    T h;
    if (len >= sizeof(h)) {
        std::memcpy(&h, p, sizeof(h));
    } else {
        h = T{};
        if (len) {
            std::memcpy(&h, p, len);
        }
    }
    le_fields(h);
    return h;
}

/*
 * Copies @n SGEs from @p into @out (host order) and sums their lengths.
 * @returns false if the sum exceeds the largest message.
 */
inline bool read_sges(const uint8_t *p, uint32_t n, Sge *out, uint32_t *total)
{
    uint64_t sum = 0;
    for (uint32_t i = 0; i < n; i++) {
        virtio_rdma_sge s;
        std::memcpy(&s, p + i * sizeof(s), sizeof(s));
        le_fields(s);
        out[i] = Sge{s.addr, s.length, s.lkey};
        sum += s.length;
    }
    if (sum > roce::kMaxMsgSize) {
        return false;
    }
    *total = static_cast<uint32_t>(sum);
    return true;
}

/* What a queue does with a request, by the QP's state. */
enum class Admit : uint8_t {
    kQueue, /* take it */
    kError, /* complete it with LOC_QP_OP_ERR now */
    kFlush, /* complete it with WR_FLUSH_ERR now */
};

inline Admit send_queue_admits(uint32_t state)
{
    switch (state) {
    case VIRTIO_RDMA_QPS_RTS:
    case VIRTIO_RDMA_QPS_SQD:
        return Admit::kQueue;
    case VIRTIO_RDMA_QPS_SQE:
    case VIRTIO_RDMA_QPS_ERR:
        return Admit::kFlush;
    default:
        return Admit::kError;
    }
}

inline Admit recv_queue_admits(uint32_t state)
{
    switch (state) {
    case VIRTIO_RDMA_QPS_RESET:
        return Admit::kError;
    case VIRTIO_RDMA_QPS_ERR:
        return Admit::kFlush;
    default:
        return Admit::kQueue;
    }
}

inline constexpr uint32_t kKnownSendFlags =
    VIRTIO_RDMA_SEND_FENCE | VIRTIO_RDMA_SEND_SIGNALED |
    VIRTIO_RDMA_SEND_SOLICITED | VIRTIO_RDMA_SEND_INLINE |
    VIRTIO_RDMA_SEND_IP_CSUM;

/* Does @len bytes hold exactly a header and its @num_sge SGEs? */
template <typename Header>
bool wqe_length_ok(size_t len, uint32_t num_sge)
{
    return len >= sizeof(Header) &&
           len == sizeof(Header) + uint64_t{num_sge} * sizeof(virtio_rdma_sge);
}

/*
 * The header checks of a send request to QP @qpn (queue index): SUCCESS or
 * LOC_QP_OP_ERR.  QP1 is the GSI QP's to address (IBA 13.5.1: MADs go
 * between QP1s; with backend=ibverbs, only through rdmacm-mux): a UD QP's
 * request to it would put a MAD of any class on the wire, so it is refused
 * like an invalid address vector and reported (field wr.ud.remote_qpn, the
 * QPN, the sending QP).
 */
inline uint8_t check_send(const Host &host, uint32_t qpn,
                          const virtio_rdma_qp_cap &cap, uint8_t qp_type,
                          const virtio_rdma_sq_req &h, size_t len,
                          const WrOpcodeInfo &op)
{
    if (h.num_sge > cap.max_send_sge ||
        !wqe_length_ok<virtio_rdma_sq_req>(len, h.num_sge) ||
        (h.send_flags & ~kKnownSendFlags) ||
        (h.send_flags & VIRTIO_RDMA_SEND_INLINE) || !op.valid_on(qp_type)) {
        return VIRTIO_RDMA_WC_LOC_QP_OP_ERR;
    }
    if (qp_type == VIRTIO_RDMA_QPT_UD) {
        const uint32_t dest = le(h.wr.ud.remote_qpn) & roce::kQpnMask;
        if (dest == roce::kGsiQpn) {
            host.guest_error(0, VRDMA_ERR_BAD_ARG, "wr.ud.remote_qpn", dest,
                             qpn);
            return VIRTIO_RDMA_WC_LOC_QP_OP_ERR;
        }
    }
    return VIRTIO_RDMA_WC_SUCCESS;
}

/*
 * The Q_Key a UD or GSI request goes out with: the GSI QP's is QP1's (IBA
 * 13.5.3.2); a request's Q_Key with bit 31 set is a controlled one and
 * means the QP's own (IBA C10-15).  Linux rxe sends a UD request's Q_Key as
 * it is, so the rule is applied here for both backends; MODIFY_QP gives no
 * other QP a controlled Q_Key (qp.cc), so no UD QP sends with QP1's.
 */
inline uint32_t ud_send_qkey(uint8_t qp_type, uint32_t qp_qkey,
                             uint32_t wr_qkey)
{
    if (qp_type == VIRTIO_RDMA_QPT_GSI) {
        return roce::kGsiQkey;
    }
    return (wr_qkey & roce::kQkeyUseQp) ? qp_qkey : wr_qkey;
}

/* The header checks of a receive request: SUCCESS or LOC_QP_OP_ERR. */
inline uint8_t check_recv(uint32_t max_sge, const virtio_rdma_rq_req &h,
                          size_t len)
{
    if (h.num_sge > max_sge ||
        !wqe_length_ok<virtio_rdma_rq_req>(len, h.num_sge)) {
        return VIRTIO_RDMA_WC_LOC_QP_OP_ERR;
    }
    return VIRTIO_RDMA_WC_SUCCESS;
}

} // namespace vrdma

#endif

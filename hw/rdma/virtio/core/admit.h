/*
 * virtio-rdma core: admission -- a work request from a QP's ring, read,
 * checked and parsed once, before any backend sees it.
 *
 * The ring turn (rings.cc, srq.cc) hands an entry's bytes here.  By the
 * rules of wqe.h the request either completes at once, outside queue
 * order (complete_now: the queue's state flushes it, does not take it or
 * has no room), or goes to the backend's post_send / post_recv as a
 * parsed request: host order, SGEs summed, the union member its opcode
 * names, a UD request's address vector decoded.  A send request the QP
 * took but that failed a check goes to the backend too, with the status,
 * so that it completes in its place in the queue; a receive request that
 * failed one completes here.
 *
 * What is left to a backend: its own refusals (an opcode or a destination
 * it cannot serve, keys), and executing the request.  Each request lives
 * on the caller's stack, filled field by field (no whole-struct clear:
 * its SGE array is not initialised past num_sge).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_VIRTIO_CORE_ADMIT_H
#define HW_RDMA_VIRTIO_CORE_ADMIT_H

#include <cstddef>
#include <cstdint>

#include "hw/rdma/virtio-rdma-core.h"
#include "wqe.h"
#include "wr_opcode.h"

struct VrdmaCore;

namespace vrdma {

struct Qp;

/* A UD (or GSI) send's address vector, decoded. */
struct WrAv {
    uint8_t dgid[16];
    uint8_t dmac[6];
    uint8_t gid_index;  /* < VRDMA_GID_TABLE_LEN once admitted */
    uint8_t hop_limit;
    /* From sl(31:28) | traffic class(27:20) | flow label(19:0). */
    uint8_t tclass;
    uint8_t sl;
    uint32_t flow_label;
};

/* Up to VRDMA_MAX_SGE SGEs, only the first num_sge of them written. */
union SgeList {
    SgeList() {}
    Sge s[VRDMA_MAX_SGE];
};

struct SendReq {
    uint64_t wr_id;
    const WrOpcodeInfo *op; /* wr_opcode_info(opcode): any u32 */
    uint32_t opcode;        /* enum virtio_rdma_wr_opcode, as posted */
    uint32_t flags;         /* VIRTIO_RDMA_SEND_* */
    uint32_t ex;            /* imm_data as in memory, or an rkey (le) */
    /*
     * SUCCESS, or the failed check's status: num_sge is then 0, length
     * the SGEs' sum if they were read, and the union's fields 0 unless
     * they were read.
     */
    uint8_t status;
    uint32_t num_sge;
    uint32_t length;        /* sum of the SGE lengths, <= 2^31 */
    /* The union member op->args names (0 otherwise). */
    uint64_t remote_addr;
    uint64_t compare_add;
    uint64_t swap;
    uint32_t rkey;
    uint32_t reg_mrn;
    uint32_t reg_key;
    uint32_t reg_access;
    /*
     * UD and GSI QPs only: the destination as posted (the Q_Key's
     * controlled-key rule, ud_send_qkey, applies when it is sent).
     */
    uint32_t remote_qpn;    /* masked to 24 bits */
    uint32_t remote_qkey;
    WrAv av;
    SgeList sge;
};

/* A receive request that passed every check (a failed one completed). */
struct RecvReq {
    uint64_t wr_id;
    uint32_t num_sge;
    uint32_t length;
    SgeList sge;
};

/*
 * A completion the device makes itself, outside the queues' order (an
 * immediate error, a flush, or a request a backend completes at once),
 * counted in the backend's stats.
 */
void complete_now(VrdmaCore &c, const Qp &qp, uint32_t cqn, uint64_t wr_id,
                  uint32_t wc_opcode, uint8_t status);

/*
 * The send request in @len bytes at @p posted to @qp's send queue.
 * @returns true with @out filled if the queue takes it (the backend's
 * post_send gets it next), false if it completed here.
 */
bool admit_send(VrdmaCore &c, Qp &qp, const uint8_t *p, size_t len,
                SendReq &out);

/* The same for a receive request to @qp's receive queue (or its SRQ's). */
bool admit_recv(VrdmaCore &c, Qp &qp, const uint8_t *p, size_t len,
                RecvReq &out);

/*
 * Reads and checks a receive request of at most @max_sge SGEs into @out:
 * SUCCESS, LOC_QP_OP_ERR (check_recv) or LOC_LEN_ERR (the SGEs' sum).
 * wr_id and num_sge are set whatever the status.
 */
uint8_t read_recv(const uint8_t *p, size_t len, uint32_t max_sge,
                  RecvReq &out);

} // namespace vrdma

#endif

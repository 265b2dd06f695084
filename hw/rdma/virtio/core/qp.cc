/*
 * virtio-rdma core: queue pairs.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qp.h"

#include <memory>
#include <optional>

#include "core.h"
#include "qp_state.h"
#include "roce/iba.h"

namespace vrdma {

namespace {

constexpr uint32_t kQpAccess =
    VIRTIO_RDMA_ACCESS_LOCAL_WRITE | VIRTIO_RDMA_ACCESS_REMOTE;

bool qp_type_supported(uint8_t type)
{
    switch (type) {
    case VIRTIO_RDMA_QPT_GSI:
    case VIRTIO_RDMA_QPT_RC:
    case VIRTIO_RDMA_QPT_UC:
    case VIRTIO_RDMA_QPT_UD:
        return true;
    default:
        return false; /* SMI: there is no subnet manager on RoCE */
    }
}

/*
 * A free slot of 2..end-1 for a new QP: one at random, so a peer cannot
 * guess the QP numbers in use (without WIRE_QPN the slot is the QP number
 * on the wire); the lowest at seed 0.
 */
std::optional<uint32_t> pick_qp_slot(VrdmaCore &c, uint32_t end)
{
    if (!c.rng.on()) {
        return c.qps.lowest_free(kFirstQpn, end);
    }
    const uint32_t n = c.qps.free_count(kFirstQpn, end);
    if (!n) {
        return std::nullopt;
    }
    return c.qps.nth_free(kFirstQpn, c.rng.below(n), end);
}

/* The primary path's address vector (RoCE: always with a GRH). */
Status check_av(const VrdmaCore &c, const virtio_rdma_ah_attr &ah)
{
    if (!(ah.ah_flags & VIRTIO_RDMA_AH_GRH)) {
        return fail(VRDMA_ERR_BAD_ARG, "attrs.ah_attr.ah_flags", ah.ah_flags,
                    VIRTIO_RDMA_AH_GRH);
    }
    if (ah.port_num != kPortNum) {
        return fail(VRDMA_ERR_BAD_PORT, "attrs.ah_attr.port_num", ah.port_num,
                    kPortNum);
    }
    if (ah.grh.sgid_index >= VRDMA_GID_TABLE_LEN) {
        return fail(VRDMA_ERR_BAD_INDEX, "attrs.ah_attr.grh.sgid_index",
                    ah.grh.sgid_index, VRDMA_GID_TABLE_LEN);
    }
    if (!c.port.gid(ah.grh.sgid_index)) {
        return fail(VRDMA_ERR_BAD_INDEX, "attrs.ah_attr.grh.sgid_index",
                    ah.grh.sgid_index);
    }
    return kOk;
}

/* Value checks of the attributes in @mask for a QP of @type (IBA 11.2.4.2). */
Status check_values(const VrdmaCore &c, uint8_t type, uint32_t mask,
                    const virtio_rdma_qp_attr &a)
{
    struct Bound {
        uint32_t bit;
        const char *field;
        uint64_t value;
        uint64_t max;
    };
    const Bound bounds[] = {
        {VIRTIO_RDMA_QP_EN_SQD_ASYNC_NOTIFY, "attrs.en_sqd_async_notify",
         a.en_sqd_async_notify, 1},
        {VIRTIO_RDMA_QP_RQ_PSN, "attrs.rq_psn", a.rq_psn, roce::kPsnMask},
        {VIRTIO_RDMA_QP_SQ_PSN, "attrs.sq_psn", a.sq_psn, roce::kPsnMask},
        {VIRTIO_RDMA_QP_DEST_QPN, "attrs.dest_qp_num", a.dest_qp_num,
         roce::kQpnMask},
        {VIRTIO_RDMA_QP_TIMEOUT, "attrs.timeout", a.timeout, roce::kTimerMax},
        {VIRTIO_RDMA_QP_RETRY_CNT, "attrs.retry_cnt", a.retry_cnt,
         roce::kRetryMax},
        {VIRTIO_RDMA_QP_RNR_RETRY, "attrs.rnr_retry", a.rnr_retry,
         roce::kRetryMax},
        {VIRTIO_RDMA_QP_MIN_RNR_TIMER, "attrs.min_rnr_timer", a.min_rnr_timer,
         roce::kTimerMax},
        {VIRTIO_RDMA_QP_MAX_QP_RD_ATOMIC, "attrs.max_rd_atomic",
         a.max_rd_atomic, c.caps.max_qp_init_rd_atom},
        {VIRTIO_RDMA_QP_MAX_DEST_RD_ATOMIC, "attrs.max_dest_rd_atomic",
         a.max_dest_rd_atomic, c.caps.max_qp_rd_atom},
    };

    if ((mask & VIRTIO_RDMA_QP_PORT) && a.port_num != kPortNum) {
        return fail(VRDMA_ERR_BAD_PORT, "attrs.port_num", a.port_num,
                    kPortNum);
    }
    if ((mask & VIRTIO_RDMA_QP_PKEY_INDEX) &&
        a.pkey_index >= VRDMA_PKEY_TABLE_LEN) {
        return fail(VRDMA_ERR_BAD_INDEX, "attrs.pkey_index", a.pkey_index,
                    VRDMA_PKEY_TABLE_LEN);
    }
    if ((mask & VIRTIO_RDMA_QP_PATH_MTU) &&
        (a.path_mtu < VIRTIO_RDMA_MTU_256 || a.path_mtu > c.port.active_mtu)) {
        return fail(VRDMA_ERR_BAD_ARG, "attrs.path_mtu", a.path_mtu,
                    c.port.active_mtu);
    }
    /*
     * A Q_Key with bit 31 set is a controlled one (IBA 10.2.5, C10-15): a
     * privileged holder only (Linux: CAP_NET_RAW since 6.4).  The GSI QP's
     * is QP1's, 0x80010000, which the guest's MAD layer sets; with it a UD
     * QP could send as QP1 to any peer's QP1.
     */
    if ((mask & VIRTIO_RDMA_QP_QKEY) && type != VIRTIO_RDMA_QPT_GSI &&
        (a.qkey & roce::kQkeyUseQp)) {
        return fail(VRDMA_ERR_BAD_ARG, "attrs.qkey", a.qkey,
                    roce::kQkeyUseQp - 1);
    }
    if ((mask & VIRTIO_RDMA_QP_ACCESS_FLAGS) &&
        (a.qp_access_flags & ~kQpAccess)) {
        return fail(VRDMA_ERR_BAD_ARG, "attrs.qp_access_flags",
                    a.qp_access_flags, kQpAccess);
    }
    for (const Bound &b : bounds) {
        if ((mask & b.bit) && b.value > b.max) {
            return fail(VRDMA_ERR_BAD_ARG, b.field, b.value, b.max);
        }
    }
    if (mask & VIRTIO_RDMA_QP_AV) {
        return check_av(c, a.ah_attr);
    }
    return kOk;
}

/* Stores the attributes in @mask; all of them were checked. */
void apply(Qp &qp, uint32_t mask, const virtio_rdma_qp_attr &a)
{
    virtio_rdma_qp_attr &q = qp.attr;

    if (mask & VIRTIO_RDMA_QP_EN_SQD_ASYNC_NOTIFY) {
        q.en_sqd_async_notify = a.en_sqd_async_notify;
    }
    if (mask & VIRTIO_RDMA_QP_ACCESS_FLAGS) {
        q.qp_access_flags = a.qp_access_flags;
    }
    if (mask & VIRTIO_RDMA_QP_PKEY_INDEX) {
        q.pkey_index = a.pkey_index;
    }
    if (mask & VIRTIO_RDMA_QP_PORT) {
        q.port_num = a.port_num;
    }
    if (mask & VIRTIO_RDMA_QP_QKEY) {
        q.qkey = a.qkey;
    }
    if (mask & VIRTIO_RDMA_QP_AV) {
        q.ah_attr = a.ah_attr;
    }
    if (mask & VIRTIO_RDMA_QP_PATH_MTU) {
        q.path_mtu = a.path_mtu;
    }
    if (mask & VIRTIO_RDMA_QP_TIMEOUT) {
        q.timeout = a.timeout;
    }
    if (mask & VIRTIO_RDMA_QP_RETRY_CNT) {
        q.retry_cnt = a.retry_cnt;
    }
    if (mask & VIRTIO_RDMA_QP_RNR_RETRY) {
        q.rnr_retry = a.rnr_retry;
    }
    if (mask & VIRTIO_RDMA_QP_RQ_PSN) {
        q.rq_psn = a.rq_psn;
    }
    if (mask & VIRTIO_RDMA_QP_MAX_QP_RD_ATOMIC) {
        q.max_rd_atomic = a.max_rd_atomic;
    }
    if (mask & VIRTIO_RDMA_QP_MIN_RNR_TIMER) {
        q.min_rnr_timer = a.min_rnr_timer;
    }
    if (mask & VIRTIO_RDMA_QP_SQ_PSN) {
        q.sq_psn = a.sq_psn;
    }
    if (mask & VIRTIO_RDMA_QP_MAX_DEST_RD_ATOMIC) {
        q.max_dest_rd_atomic = a.max_dest_rd_atomic;
    }
    if (mask & VIRTIO_RDMA_QP_DEST_QPN) {
        q.dest_qp_num = a.dest_qp_num;
    }
    if (mask & VIRTIO_RDMA_QP_STATE) {
        q.qp_state = a.qp_state;
    }
}

} // namespace

void Qp::reset_attrs()
{
    attr = virtio_rdma_qp_attr{};
    attr.qp_state = VIRTIO_RDMA_QPS_RESET;
    attr.cap = cap;
}

namespace {

/* CREATE_QP_RING's checks of its embedded QP request. */
Status check_create(VrdmaCore &c, const virtio_rdma_cmd_create_qp &req)
{
    const uint32_t qs = max_ring_qp_wr(c.lim);

    if (!c.pds.find(req.pdn)) {
        return fail(VRDMA_ERR_BAD_HANDLE, "pdn", req.pdn);
    }
    if (!qp_type_supported(req.qp_type)) {
        return fail(VRDMA_ERR_BAD_ARG, "qp_type", req.qp_type);
    }
    if (req.sq_sig_type > VIRTIO_RDMA_SIGNAL_REQ_WR) {
        return fail(VRDMA_ERR_BAD_ARG, "sq_sig_type", req.sq_sig_type);
    }
    /*
     * The device keeps a window of each queue, so only the ring's bound
     * limits the depth.  Each refusal shows both sizes of the pair.
     */
    if (req.max_send_wr > qs) {
        return fail(VRDMA_ERR_LIMIT, "max_send_wr", req.max_send_wr,
                    req.max_recv_wr);
    }
    if (req.max_recv_wr > qs) {
        return fail(VRDMA_ERR_LIMIT, "max_recv_wr", req.max_send_wr,
                    req.max_recv_wr);
    }
    if (!req.max_send_wr && !req.max_recv_wr) { /* a QP with no queue */
        return fail(VRDMA_ERR_LIMIT, "max_send_wr+max_recv_wr",
                    req.max_send_wr, req.max_recv_wr);
    }
    if (req.max_send_sge > c.lim.max_sge) {
        return fail(VRDMA_ERR_LIMIT, "max_send_sge", req.max_send_sge,
                    req.max_recv_sge);
    }
    if (req.max_recv_sge > c.lim.max_sge) {
        return fail(VRDMA_ERR_LIMIT, "max_recv_sge", req.max_send_sge,
                    req.max_recv_sge);
    }
    if (!c.cqs.at(req.send_cqn)) {
        return fail(VRDMA_ERR_BAD_HANDLE, "send_cqn", req.send_cqn);
    }
    if (!c.cqs.at(req.recv_cqn)) {
        return fail(VRDMA_ERR_BAD_HANDLE, "recv_cqn", req.recv_cqn);
    }
    if (req.max_inline_data != 0) { /* inline sends are not supported */
        return fail(VRDMA_ERR_LIMIT, "max_inline_data", req.max_inline_data,
                    0);
    }
    return kOk;
}

/*
 * A checked CREATE_QP_RING takes its slot; @rings, @ctx and @srqn (0: none)
 * go with it.
 */
Status commit_create(VrdmaCore &c, const virtio_rdma_cmd_create_qp &req,
                     uint32_t ctx, std::unique_ptr<QpRings> rings,
                     uint32_t srqn, virtio_rdma_rsp_create_qp_wire &rsp)
{
    uint32_t qpn;
    if (req.qp_type == VIRTIO_RDMA_QPT_GSI) {
        if (c.qps.at(kGsiQpn)) { /* there is one GSI QP */
            return fail(VRDMA_ERR_IN_USE, "qp_type", kGsiQpn);
        }
        qpn = kGsiQpn;
    } else {
        const auto free = pick_qp_slot(c, c.lim.max_qp);
        if (!free) {
            return fail(VRDMA_ERR_TABLE_FULL, "qpn", c.lim.max_qp);
        }
        qpn = *free;
    }

    auto qp = std::make_unique<Qp>();
    qp->type = req.qp_type;
    qp->sq_sig_type = req.sq_sig_type;
    qp->pd_index = req.pdn & kHandleIndexMask;
    qp->send_cqn = req.send_cqn;
    qp->recv_cqn = req.recv_cqn;
    qp->cap = virtio_rdma_qp_cap{
        .max_send_wr = req.max_send_wr,
        .max_recv_wr = req.max_recv_wr,
        .max_send_sge = req.max_send_sge,
        .max_recv_sge = req.max_recv_sge,
        .max_inline_data = req.max_inline_data,
    };
    qp->reset_attrs();
    qp->index = qpn;
    qp->ctx = ctx;
    qp->rings = std::move(rings);
    if (srqn) {
        qp->srqn = srqn;
        qp->srq_max_sge = c.srqs.at(srqn)->max_sge;
        qp->srq_pd_index = c.srqs.at(srqn)->pd_index;
    }
    Qp *live = c.qps.insert(qpn, std::move(qp));
    if (Status s = backend::qp_created(c, *live); !s.ok()) {
        c.qps.erase(qpn);
        return s;
    }
    c.pds.at(live->pd_index)->refs++;
    c.cqs.at(live->send_cqn)->refs++;
    c.cqs.at(live->recv_cqn)->refs++;
    if (srqn) {
        c.srqs.at(srqn)->refs++;
    }
    c.wires.insert(live->wire_qpn, qpn);
    c.contexts.ref(ctx);
    rsp.qpn = qpn;
    rsp.wire_qpn = live->wire_qpn;
    return kOk;
}

} // namespace

Status cmd_create_qp_ring(VrdmaCore &c,
                          const virtio_rdma_cmd_create_qp_ring &req,
                          virtio_rdma_rsp_create_qp_wire &rsp)
{
    const virtio_rdma_cmd_create_qp &q = req.qp;
    if (Status s = check_create(c, q); !s.ok()) {
        return s; /* the fields of the embedded request, named as there */
    }
    if (!c.contexts.live(req.ctx)) {
        return fail(VRDMA_ERR_BAD_HANDLE, "ctx", req.ctx);
    }
    /* A process completes only on its own CQs. */
    const Cq *scq = c.cqs.at(q.send_cqn);
    const Cq *rcq = c.cqs.at(q.recv_cqn);
    if (scq->ctx != req.ctx) {
        return fail(VRDMA_ERR_BAD_ARG, "qp.send_cqn", q.send_cqn, req.ctx);
    }
    if (rcq->ctx != req.ctx) {
        return fail(VRDMA_ERR_BAD_ARG, "qp.recv_cqn", q.recv_cqn, req.ctx);
    }
    if (req.flags) {
        return fail(VRDMA_ERR_UNSUPPORTED, "flags", req.flags, 0);
    }
    if (req.srqn) { /* its receives come from the SRQ: it has no RQ */
        const Srq *srq = c.srqs.at(req.srqn);
        if (!srq) {
            return fail(VRDMA_ERR_BAD_HANDLE, "srqn", req.srqn);
        }
        if (srq->ctx != req.ctx) {
            return fail(VRDMA_ERR_BAD_ARG, "srqn", req.srqn, req.ctx);
        }
        if (q.qp_type == VIRTIO_RDMA_QPT_GSI || q.max_recv_wr ||
            q.max_recv_sge) {
            return fail(VRDMA_ERR_BAD_ARG, "srqn", req.srqn, q.max_recv_wr);
        }
    }
    auto rings = std::make_unique<QpRings>();
    const uint64_t sq_bytes = sizeof(virtio_rdma_sq_req) +
                              uint64_t{q.max_send_sge} * sizeof(virtio_rdma_sge);
    const uint64_t rq_bytes = sizeof(virtio_rdma_rq_req) +
                              uint64_t{q.max_recv_sge} * sizeof(virtio_rdma_sge);
    if (Status s = map_wq_ring(c, req.sq, q.max_send_wr, sq_bytes,
                               kSqRingNames, rings->sq);
        !s.ok()) {
        return s;
    }
    if (Status s = map_wq_ring(c, req.rq, q.max_recv_wr, rq_bytes,
                               kRqRingNames, rings->rq);
        !s.ok()) {
        return s;
    }
    return commit_create(c, q, req.ctx, std::move(rings), req.srqn, rsp);
}

Status cmd_modify_qp(VrdmaCore &c, const virtio_rdma_cmd_modify_qp &req,
                     NoPayload &)
{
    Qp *qp = c.qps.at(req.qpn);
    if (!qp) {
        return fail(VRDMA_ERR_BAD_HANDLE, "qpn", req.qpn);
    }
    const virtio_rdma_qp_attr &a = req.attrs;
    if (Status s = qp_check_modify(qp->state(), qp->type, req.attr_mask,
                                   a.qp_state, a.cur_qp_state);
        !s.ok()) {
        return s;
    }
    if (Status s = check_values(c, qp->type, req.attr_mask, a); !s.ok()) {
        return s;
    }
    /*
     * The backend's host device may refuse what the core let through, or
     * take its time (then the rest is modify_apply() when it is done).
     */
    if (Status s = backend::qp_modifying(c, *qp, req.attr_mask, a);
        s.deferred) {
        c.pending = VrdmaCore::Pending{};
        c.pending.active = true;
        c.pending.cmd = VIRTIO_RDMA_CMD_MODIFY_QP;
        c.pending.seq = c.pending_seq;
        c.pending.qpn = req.qpn;
        c.pending.mask = req.attr_mask;
        c.pending.attrs = a;
        return s;
    } else if (!s.ok()) {
        return s;
    }
    modify_apply(c, req.qpn, req.attr_mask, a);
    return kOk;
}

void modify_apply(VrdmaCore &c, uint32_t qpn, uint32_t mask,
                  const virtio_rdma_qp_attr &a)
{
    Qp *qp = c.qps.at(qpn);
    const uint32_t old_state = qp->state();
    if ((mask & VIRTIO_RDMA_QP_STATE) && a.qp_state == VIRTIO_RDMA_QPS_RESET) {
        qp->reset_attrs(); /* IBA 10.3.1: RESET forgets the attributes */
    } else {
        apply(*qp, mask, a);
    }
    backend::qp_modified(c, *qp, old_state, mask);
    if (qp->state() == VIRTIO_RDMA_QPS_RESET &&
        old_state != VIRTIO_RDMA_QPS_RESET) {
        c.qp_instance_ended(qpn); /* its old work is gone with it */
        qp_rings_reset(c, *qp);
    }
}

void qp_enter_error(VrdmaCore &c, Qp &qp)
{
    if (qp.state() == VIRTIO_RDMA_QPS_ERR) {
        return;
    }
    qp.attr.qp_state = VIRTIO_RDMA_QPS_ERR;
    backend::qp_error_flush(c, qp);
}

Status cmd_query_qp(VrdmaCore &c, const virtio_rdma_cmd_query_qp &req,
                    virtio_rdma_qp_attr &rsp)
{
    const Qp *qp = c.qps.at(req.qpn);
    if (!qp) {
        return fail(VRDMA_ERR_BAD_HANDLE, "qpn", req.qpn);
    }
    if (req.attr_mask & ~kQpAttrKnown) {
        return fail(VRDMA_ERR_BAD_MASK, "attr_mask", req.attr_mask,
                    req.attr_mask & ~kQpAttrKnown);
    }
    rsp = qp->attr;
    rsp.cur_qp_state = qp->state();
    rsp.cap = qp->cap;
    return kOk;
}

Status cmd_destroy_qp(VrdmaCore &c, const virtio_rdma_cmd_destroy_qp &req,
                      NoPayload &)
{
    Qp *qp = c.qps.at(req.qpn);
    if (!qp) {
        return fail(VRDMA_ERR_BAD_HANDLE, "qpn", req.qpn);
    }
    backend::qp_destroyed(c, *qp); /* outstanding work is dropped */
    qp_rings_destroyed(c, *qp);
    c.contexts.unref(qp->ctx);
    c.wires.release(qp->wire_qpn);
    c.pds.at(qp->pd_index)->refs--;
    c.cqs.at(qp->send_cqn)->refs--;
    c.cqs.at(qp->recv_cqn)->refs--;
    if (qp->srqn) {
        c.srqs.at(qp->srqn)->refs--;
    }
    c.qps.erase(req.qpn);
    c.qp_instance_ended(req.qpn);
    return kOk;
}

} // namespace vrdma

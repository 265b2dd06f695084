/*
 * virtio-rdma ibverbs backend: work requests posted by the driver, to the
 * host QP.
 *
 * The request comes read, checked and parsed by the core (../admit.h), as
 * the soft engine's does; then every SGE's lkey must name an MR of the QP's
 * PD (the core's key, swapped for the host MR's), and the request becomes
 * one ibv_send_wr / ibv_recv_wr.  SGE addresses pass unchanged: a host MR
 * is registered at the guest's IOVA (window.h), or for a DMA MR at the
 * guest-physical address (dma_mr.cc).  The host device checks
 * bounds, rkeys and everything on the wire.
 *
 * A request refused here completes at once with its status (as the soft
 * engine's immediate errors do), ahead of work the host still holds; one
 * the QP took (RTS, SQD) but cannot execute -- a failed check, or the
 * host refusing the post -- also puts the QP in ERR, as an error
 * completion does, and the host then flushes the rest.  UD
 * requests reach the host through an address handle per destination, kept
 * per PD (at most max_ah; one more destination is refused).  Making one
 * resolves the destination's MAC, which can take a second: it is made on
 * the host's worker thread, and the QP's sends wait behind it, in order.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <memory>

#include "../admit.h"
#include "../core.h"
#include "../wqe.h"
#include "../wr_opcode.h"
#include "state.h"

namespace vrdma::ib {

static_assert(same_value(VIRTIO_RDMA_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE) &&
              same_value(VIRTIO_RDMA_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_WRITE_WITH_IMM) &&
              same_value(VIRTIO_RDMA_WR_SEND, IBV_WR_SEND) &&
              same_value(VIRTIO_RDMA_WR_SEND_WITH_IMM, IBV_WR_SEND_WITH_IMM) &&
              same_value(VIRTIO_RDMA_WR_RDMA_READ, IBV_WR_RDMA_READ) &&
              same_value(VIRTIO_RDMA_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_CMP_AND_SWP) &&
              same_value(VIRTIO_RDMA_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_ATOMIC_FETCH_AND_ADD) &&
              same_value(VIRTIO_RDMA_WR_SEND_WITH_INV, IBV_WR_SEND_WITH_INV));
static_assert(same_value(VIRTIO_RDMA_SEND_FENCE, IBV_SEND_FENCE) &&
              same_value(VIRTIO_RDMA_SEND_SIGNALED, IBV_SEND_SIGNALED) &&
              same_value(VIRTIO_RDMA_SEND_SOLICITED, IBV_SEND_SOLICITED));

namespace {

constexpr unsigned kHostSendFlags =
    IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED;

/* Which opcodes go to the host as they are (no fast registration here). */
bool host_opcode(uint32_t opcode)
{
    switch (opcode) {
    case VIRTIO_RDMA_WR_RDMA_WRITE:
    case VIRTIO_RDMA_WR_RDMA_WRITE_WITH_IMM:
    case VIRTIO_RDMA_WR_SEND:
    case VIRTIO_RDMA_WR_SEND_WITH_IMM:
    case VIRTIO_RDMA_WR_RDMA_READ:
    case VIRTIO_RDMA_WR_ATOMIC_CMP_AND_SWP:
    case VIRTIO_RDMA_WR_ATOMIC_FETCH_AND_ADD:
    case VIRTIO_RDMA_WR_SEND_WITH_INV:
        return true;
    default:
        return false; /* LOCAL_INV, REG_MR: no fast-reg MR exists */
    }
}

} // namespace

uint8_t Backend::host_sges(VrdmaCore &c, uint32_t pd, const Sge *s,
                           uint32_t n, ibv_sge *out, uint32_t *bad_lkey) const
{
    for (uint32_t i = 0; i < n; i++) {
        uint32_t lkey;
        if (!host_lkey(c, pd, s[i], &lkey)) {
            if (bad_lkey) {
                *bad_lkey = s[i].lkey;
            }
            return VIRTIO_RDMA_WC_LOC_PROT_ERR;
        }
        out[i] = ibv_sge{s[i].addr, s[i].length, lkey};
    }
    return VIRTIO_RDMA_WC_SUCCESS;
}

void Backend::post_send(VrdmaCore &c, Qp &qp, const SendReq &r)
{
    const uint32_t wc_opcode = r.op->wc_opcode;
    QpState *qs = std::get_if<QpState>(&qp.backend);
    if (!qs || (!qs->qp && !qs->gsi)) {
        complete_now(c, qp, qp.send_cqn, r.wr_id, wc_opcode,
                     VIRTIO_RDMA_WC_LOC_QP_OP_ERR);
        return;
    }
    if (qs->gsi) {
        gsi_send(c, qp, r);
        return;
    }
    /*
     * Whatever the core's later checks said: this status won over them
     * before the core made them (the header's checks give the same).
     */
    uint8_t status = host_opcode(r.opcode) ? r.status
                                           : uint8_t{VIRTIO_RDMA_WC_LOC_QP_OP_ERR};
    std::array<ibv_sge, VRDMA_MAX_SGE> sg;
    if (status == VIRTIO_RDMA_WC_SUCCESS) {
        status = host_sges(c, qp.pd_index, r.sge.s, r.num_sge, sg.data());
    }
    ibv_send_wr wr{};
    if (status == VIRTIO_RDMA_WC_SUCCESS) {
        wr.wr_id = r.wr_id;
        wr.sg_list = sg.data();
        wr.num_sge = static_cast<int>(r.num_sge);
        wr.opcode = static_cast<ibv_wr_opcode>(r.opcode);
        wr.send_flags = r.flags & kHostSendFlags;
        if (r.op->has(kWrImm)) {
            wr.imm_data = r.ex; /* big-endian as the driver wrote it */
        } else if (r.opcode == VIRTIO_RDMA_WR_SEND_WITH_INV) {
            wr.invalidate_rkey = le(r.ex);
        }
        switch (r.op->args) {
        case WrArgs::kRdma:
            wr.wr.rdma.remote_addr = r.remote_addr;
            wr.wr.rdma.rkey = r.rkey;
            break;
        case WrArgs::kAtomic:
            wr.wr.atomic.remote_addr = r.remote_addr;
            wr.wr.atomic.compare_add = r.compare_add;
            wr.wr.atomic.swap = r.swap;
            wr.wr.atomic.rkey = r.rkey;
            break;
        case WrArgs::kReg:
        case WrArgs::kNone:
            break;
        }
    }
    if (qp.type == VIRTIO_RDMA_QPT_UD) {
        HeldSend u{wr, sg, r.av, wc_opcode, status};
        u.wr.wr_id = r.wr_id; /* also for a refused one */
        u.wr.wr.ud.remote_qpn = r.remote_qpn;
        /* The rule for a controlled Q_Key applied here, not by the host. */
        u.wr.wr.ud.remote_qkey =
            ud_send_qkey(qp.type, qp.attr.qkey, r.remote_qkey);
        if (!qs->held.empty()) {
            /* Behind a send whose address handle is being made: in order. */
            if (qs->held.size() >= qp.cap.max_send_wr) {
                complete_now(c, qp, qp.send_cqn, r.wr_id, wc_opcode,
                             VIRTIO_RDMA_WC_LOC_QP_OP_ERR);
                return;
            }
            qs->held.push_back(u);
            return;
        }
        ibv_ah *ah = nullptr;
        if (status == VIRTIO_RDMA_WC_SUCCESS) {
            status = ud_ah(c, qp, u.av, &ah);
        }
        if (status == kAhPending) {
            qs->held.push_back(u);
            return;
        }
        ud_post(c, qp, *qs, u, status, ah);
        return;
    }
    if (status != VIRTIO_RDMA_WC_SUCCESS) {
        /*
         * A request the QP took but cannot execute is an error completion
         * of the QP's, as the soft engine's requester makes it: the QP goes
         * to ERR (the host's too, which flushes what it holds).
         */
        qp_enter_error(c, qp);
        complete_now(c, qp, qp.send_cqn, r.wr_id, wc_opcode, status);
        return;
    }
    ibv_send_wr *bad = nullptr;
    if (verbs().post_send(qs->qp.get(), &wr, &bad)) {
        /*
         * The host's queue is full (more than max_send_wr outstanding) or
         * its QP failed: the ring entry is taken, so this is an error
         * completion of a request the QP took, as for a failed check --
         * left in RTS, later requests would run past the lost one.
         */
        qp_enter_error(c, qp);
        complete_now(c, qp, qp.send_cqn, r.wr_id, wc_opcode,
                     VIRTIO_RDMA_WC_LOC_QP_OP_ERR);
    }
}

void Backend::post_recv(VrdmaCore &c, Qp &qp, const RecvReq &r)
{
    QpState *qs = std::get_if<QpState>(&qp.backend);
    if (!qs || (!qs->qp && !qs->gsi)) {
        complete_now(c, qp, qp.recv_cqn, r.wr_id, VIRTIO_RDMA_WC_RECV,
                     VIRTIO_RDMA_WC_LOC_QP_OP_ERR);
        return;
    }
    if (qs->gsi) {
        gsi_recv(c, qp, r);
        return;
    }
    std::array<ibv_sge, VRDMA_MAX_SGE> sg;
    const uint8_t status =
        host_sges(c, qp.pd_index, r.sge.s, r.num_sge, sg.data());
    if (status != VIRTIO_RDMA_WC_SUCCESS) {
        complete_now(c, qp, qp.recv_cqn, r.wr_id, VIRTIO_RDMA_WC_RECV, status);
        return;
    }
    ibv_recv_wr wr{};
    wr.wr_id = r.wr_id;
    wr.sg_list = sg.data();
    wr.num_sge = static_cast<int>(r.num_sge);
    ibv_recv_wr *bad = nullptr;
    if (verbs().post_recv(qs->qp.get(), &wr, &bad)) {
        /* As a refused send (post_send): the QP took it, so ERR. */
        qp_enter_error(c, qp);
        complete_now(c, qp, qp.recv_cqn, r.wr_id, VIRTIO_RDMA_WC_RECV,
                     VIRTIO_RDMA_WC_LOC_QP_OP_ERR);
    }
}

void Backend::ud_post(VrdmaCore &c, Qp &qp, QpState &s, HeldSend &u,
                      uint8_t status, ibv_ah *ah)
{
    const uint64_t wr_id = u.wr.wr_id;
    if (send_queue_admits(qp.state()) == Admit::kFlush) {
        /* The QP went to ERR while the send waited. */
        complete_now(c, qp, qp.send_cqn, wr_id, u.wc_opcode,
                     VIRTIO_RDMA_WC_WR_FLUSH_ERR);
        return;
    }
    if (status != VIRTIO_RDMA_WC_SUCCESS) {
        /* As for any request the QP took but cannot execute (post_send). */
        qp_enter_error(c, qp);
        complete_now(c, qp, qp.send_cqn, wr_id, u.wc_opcode, status);
        return;
    }
    u.wr.sg_list = u.sge.data();
    u.wr.wr.ud.ah = ah;
    ibv_send_wr *bad = nullptr;
    if (verbs().post_send(s.qp.get(), &u.wr, &bad)) {
        qp_enter_error(c, qp); /* as in post_send */
        complete_now(c, qp, qp.send_cqn, wr_id, u.wc_opcode,
                     VIRTIO_RDMA_WC_LOC_QP_OP_ERR);
    }
}

void Backend::release_held(VrdmaCore &c, Qp &qp, QpState &s)
{
    while (!s.held.empty()) {
        HeldSend &u = s.held.front();
        uint8_t status = u.status;
        ibv_ah *ah = nullptr;
        /*
         * A QP in ERR flushes what waits without asking the host anything
         * (ud_post): no address is resolved for a send that cannot go.
         */
        if (status == VIRTIO_RDMA_WC_SUCCESS &&
            send_queue_admits(qp.state()) != Admit::kFlush) {
            status = ud_ah(c, qp, u.av, &ah);
            if (status == kAhPending) {
                return; /* the next destination's handle is being made */
            }
        }
        HeldSend next = u;
        s.held.pop_front();
        ud_post(c, qp, s, next, status, ah);
    }
}

/*
 * The address handle of a UD request's address vector, made on first use
 * and kept with the PD.  @returns kAhReady (*out set); kAhPending if it is
 * being made on the host's worker thread for the QP's first held send (the
 * host resolves the destination's MAC: about a second if nobody answers);
 * or LOC_QP_OP_ERR (the source GID is not in the host's table, the host
 * refused, or max_ah are kept or being made).
 */
uint8_t Backend::ud_ah(VrdmaCore &c, Qp &qp, const WrAv &av, ibv_ah **out)
{
    /* Checked before the cache: a cached handle outlives no refusal. */
    const GidEntry *src = source_gid(c, av.gid_index);
    if (!src) {
        return VIRTIO_RDMA_WC_LOC_QP_OP_ERR;
    }
    /*
     * Looked up by what the guest names (its source GID's value, not the
     * host's index for it): a hit costs no host call, per packet.
     */
    ibv_ah_attr a{};
    a.is_global = 1;
    std::memcpy(a.grh.dgid.raw, av.dgid, 16);
    a.grh.hop_limit = av.hop_limit;
    a.grh.traffic_class = av.tclass;
    a.grh.flow_label = av.flow_label;
    a.sl = av.sl;
    a.port_num = static_cast<uint8_t>(dev_->port());
    for (const Ah &e : ahs_) {
        if (e.pd == qp.pd_index && e.sgid == src->gid &&
            std::memcmp(&e.attr, &a, sizeof(a)) == 0) {
            *out = e.ah;
            return kAhReady;
        }
    }
    if (ahs_.size() + ah_jobs_.size() >= c.lim.max_ah) {
        return VIRTIO_RDMA_WC_LOC_QP_OP_ERR;
    }
    if (ah_failed(c, qp.pd_index, src->gid, a)) {
        return VIRTIO_RDMA_WC_LOC_QP_OP_ERR; /* resolved in vain just now */
    }
    const ibv_ah_attr key = a;
    if (!host_gid_index(c, *dev_, av.gid_index, &a.grh.sgid_index)) {
        return VIRTIO_RDMA_WC_LOC_QP_OP_ERR;
    }
    if (c.host.can_defer()) {
        auto *j = new DeferredAh{&c, pds_[qp.pd_index], qp.pd_index,
                                 src->gid, key, a, qp.index,
                                 c.qp_epoch[qp.index], false, nullptr};
        ah_jobs_.push_back(j);
        c.host.defer(DeferredAh::work, DeferredAh::done, j);
        return kAhPending;
    }
    /* A host without a worker thread: here, blocking. */
    ibv_ah *ah = verbs().create_ah(pds_[qp.pd_index], &a);
    if (!ah) {
        return VIRTIO_RDMA_WC_LOC_QP_OP_ERR;
    }
    ahs_.push_back(Ah{qp.pd_index, src->gid, key, ah});
    *out = ah;
    return kAhReady;
}

int DeferredAh::work(void *ctx)
{
    auto *j = static_cast<DeferredAh *>(ctx);
    j->ah = std::get<Backend>(j->core->backend).verbs().create_ah(j->pd,
                                                                 &j->attr);
    return j->ah ? 0 : (errno ? errno : EIO);
}

void DeferredAh::done(void *ctx, int ret)
{
    std::unique_ptr<DeferredAh> j(static_cast<DeferredAh *>(ctx));
    std::get<Backend>(j->core->backend).ah_done(*j->core, *j, ret);
}

bool Backend::ah_failed(const VrdmaCore &c, uint32_t pd,
                        const std::array<uint8_t, 16> &sgid,
                        const ibv_ah_attr &attr) const
{
    if (ah_fails_.empty() || !c.host.has_timer()) {
        return false;
    }
    const uint64_t now = c.host.now_ns();
    return std::any_of(ah_fails_.begin(), ah_fails_.end(),
                       [&](const AhFail &f) {
        return f.pd == pd && f.sgid == sgid && now < f.until_ns &&
               std::memcmp(&f.attr, &attr, sizeof(attr)) == 0;
    });
}

void Backend::ah_done(VrdmaCore &c, DeferredAh &j, int ret)
{
    std::erase(ah_jobs_, &j);
    if (j.pd_gone) {
        /* The PD was destroyed meanwhile (or the device reset). */
        if (j.ah) {
            verbs().destroy_ah(j.ah);
        }
        bury(c);
        return;
    }
    if (!j.ah && c.host.has_timer()) {
        /* Sends to it fail at once for a while (state.h: AhFail). */
        const AhFail f{j.pd_index, j.sgid, j.key,
                       c.host.now_ns() + kAhFailTtlNs};
        if (ah_fails_.size() < kAhFailMax) {
            ah_fails_.push_back(f);
        } else {
            *std::min_element(ah_fails_.begin(), ah_fails_.end(),
                              [](const AhFail &x, const AhFail &y) {
                                  return x.until_ns < y.until_ns;
                              }) = f;
        }
    }
    if (j.ah) {
        /* Another QP's job may have made the same one first. */
        const bool dup = std::any_of(ahs_.begin(), ahs_.end(), [&j](const Ah &e) {
            return e.pd == j.pd_index && e.sgid == j.sgid &&
                   std::memcmp(&e.attr, &j.key, sizeof(j.key)) == 0;
        });
        if (dup) {
            verbs().destroy_ah(j.ah);
        } else {
            ahs_.push_back(Ah{j.pd_index, j.sgid, j.key, j.ah});
        }
    }
    Qp *qp = c.qps.at(j.qpn);
    if (!qp || c.qp_epoch[j.qpn] != j.epoch) {
        return; /* that QP instance ended: its held sends went with it */
    }
    QpState *s = std::get_if<QpState>(&qp->backend);
    if (!s || s->held.empty()) {
        return;
    }
    if (ret) {
        s->held.front().status = VIRTIO_RDMA_WC_LOC_QP_OP_ERR;
    }
    release_held(c, *qp, *s);
}

} // namespace vrdma::ib

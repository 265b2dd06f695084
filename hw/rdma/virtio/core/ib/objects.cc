/*
 * virtio-rdma ibverbs backend: PDs, CQs, QPs and MRs as host objects.
 *
 * The core has checked each command against the device's limits; the host
 * device may still refuse (its own limits, an attribute it rejects), and
 * then the guest gets the refusal, with the host's errno in the trace, and
 * nothing changed.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <vector>

#include "../core.h"
#include "state.h"
#include "window.h"

namespace vrdma::ib {

/* The ABI's values are the verbs' (ib_verbs.h and verbs.h agree). */
static_assert(same_value(VIRTIO_RDMA_QPS_ERR, IBV_QPS_ERR));
static_assert(same_value(VIRTIO_RDMA_QPT_RC, IBV_QPT_RC) &&
              same_value(VIRTIO_RDMA_QPT_UC, IBV_QPT_UC) &&
              same_value(VIRTIO_RDMA_QPT_UD, IBV_QPT_UD));
static_assert(same_value(VIRTIO_RDMA_QP_STATE, IBV_QP_STATE) &&
              same_value(VIRTIO_RDMA_QP_AV, IBV_QP_AV) &&
              same_value(VIRTIO_RDMA_QP_DEST_QPN, IBV_QP_DEST_QPN) &&
              same_value(VIRTIO_RDMA_QP_MAX_DEST_RD_ATOMIC, IBV_QP_MAX_DEST_RD_ATOMIC) &&
              same_value(VIRTIO_RDMA_QP_RATE_LIMIT, IBV_QP_RATE_LIMIT));
static_assert(same_value(VIRTIO_RDMA_ACCESS_LOCAL_WRITE, IBV_ACCESS_LOCAL_WRITE) &&
              same_value(VIRTIO_RDMA_ACCESS_REMOTE_WRITE, IBV_ACCESS_REMOTE_WRITE) &&
              same_value(VIRTIO_RDMA_ACCESS_REMOTE_READ, IBV_ACCESS_REMOTE_READ) &&
              same_value(VIRTIO_RDMA_ACCESS_REMOTE_ATOMIC, IBV_ACCESS_REMOTE_ATOMIC));
static_assert(same_value(VIRTIO_RDMA_GID_TYPE_ROCE_UDP_ENCAP, IBV_GID_TYPE_ROCE_V2));

namespace {

constexpr uint32_t kDataAccess =
    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

/* The MODIFY_QP attributes a host QP takes (the rest the core refuses). */
constexpr uint32_t kHostQpMask =
    IBV_QP_STATE | IBV_QP_CUR_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY |
    IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY |
    IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
    IBV_QP_RNR_RETRY | IBV_QP_RQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC |
    IBV_QP_MIN_RNR_TIMER | IBV_QP_SQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
    IBV_QP_PATH_MIG_STATE | IBV_QP_DEST_QPN | IBV_QP_RATE_LIMIT;

/*
 * Window mappings (VMAs) of every ibverbs device's MRs in this process:
 * vm.max_map_count is the process's, so one cap serves them all (devices
 * in several iothreads: atomic).
 */
std::atomic<uint64_t> process_map_runs{0};

} // namespace

Status host_refused(int err, const char *field, uint64_t b)
{
    switch (err) {
    case ENOMEM:
    case ENOSPC:
        return fail(VRDMA_ERR_TABLE_FULL, field, static_cast<uint64_t>(err), b);
    case EINVAL:
        return fail(VRDMA_ERR_BAD_ARG, field, static_cast<uint64_t>(err), b);
    case EOPNOTSUPP:
        return fail(VRDMA_ERR_UNSUPPORTED, field, static_cast<uint64_t>(err),
                    b);
    default:
        return fail(VRDMA_ERR_HOST, field, static_cast<uint64_t>(err), b);
    }
}

namespace {

/*
 * The host's GID table entry on the backend's port holding @gid (any type
 * when @type is negative), or nullptr; @tab holds the table.
 */
const ibv_gid_entry *host_gid_entry(const HostDevice &dev,
                                    std::vector<ibv_gid_entry> &tab,
                                    const std::array<uint8_t, 16> &gid,
                                    int type)
{
    const size_t n = dev.gid_table_len();
    tab.assign(n ? n : 1, ibv_gid_entry{});
    const ssize_t got = dev.verbs().query_gid_table(dev.context(), tab.data(),
                                                    tab.size(), 0);
    for (ssize_t i = 0; i < got; i++) {
        const ibv_gid_entry &e = tab[i];
        if (e.port_num == dev.port() &&
            (type < 0 || e.gid_type == static_cast<uint32_t>(type)) &&
            std::memcmp(e.gid.raw, gid.data(), 16) == 0) {
            return &e;
        }
    }
    return nullptr;
}

} // namespace

/*
 * The guest's GIDs are its NIC's addresses; the host has them once the
 * management plane added them to the host netdev (RDMA_GID_STATUS_CHANGED).
 */
bool host_gid_index(const VrdmaCore &c, const HostDevice &dev,
                    uint32_t index, uint8_t *out)
{
    const GidEntry *g = source_gid(c, index);
    if (!g) {
        return false;
    }
    std::vector<ibv_gid_entry> tab;
    const ibv_gid_entry *e = host_gid_entry(dev, tab, g->gid,
                                            static_cast<int>(g->type));
    if (!e || e->gid_index > UINT8_MAX) {
        return false;
    }
    *out = static_cast<uint8_t>(e->gid_index);
    return true;
}

/*
 * Without an allow-list the host cannot tell whose address a GID is, but
 * one its GID table holds before the guest adds it is not the guest's: an
 * address of the host's own interfaces, or one management put there for
 * another tenant.  The guest's own appear there only after it added them
 * (management answers RDMA_GID_STATUS_CHANGED).  The same value the guest
 * holds at another index already (RoCE v1 and v2 entries of one address)
 * passed this check when it was first added.
 */
Status Backend::gid_adding(VrdmaCore &c, uint32_t index, const GidEntry &gid)
{
    if (c.lim.allow.n) {
        return kOk; /* the core checked the list: management decided */
    }
    for (uint32_t i = 0; i < VRDMA_GID_TABLE_LEN; i++) {
        const GidEntry *e = c.port.gid(i);
        if (i != index && e && e->gid == gid.gid) {
            return kOk;
        }
    }
    std::vector<ibv_gid_entry> tab;
    if (host_gid_entry(*dev_, tab, gid.gid, -1)) {
        return fail(VRDMA_ERR_NOT_ALLOWED,
                    "gid: the host has it already (no allowed-gids)",
                    gid_half(gid.gid, 0), gid_half(gid.gid, 1));
    }
    return kOk;
}

/* ---- PDs and CQs ---- */

Status Backend::pd_created(VrdmaCore &, uint32_t index)
{
    ibv_pd *pd = verbs().alloc_pd(dev_->context());
    if (!pd) {
        return host_refused(errno, "pdn");
    }
    pds_[index] = pd;
    return kOk;
}

void Backend::release_ahs(uint32_t pd)
{
    std::erase_if(ahs_, [this, pd](const Ah &e) {
        if (e.pd == pd) {
            verbs().destroy_ah(e.ah);
            return true;
        }
        return false;
    });
}

void Backend::pd_destroyed(VrdmaCore &, uint32_t index)
{
    release_ahs(index); /* no QP of the PD is left to use them */
    entomb(pds_[index]);
    pds_[index] = nullptr;
}

bool Backend::pd_in_use(const ibv_pd *pd) const
{
    return std::any_of(ah_jobs_.begin(), ah_jobs_.end(),
                       [pd](const DeferredAh *j) { return j->pd == pd; }) ||
           std::any_of(dma_jobs_.begin(), dma_jobs_.end(),
                       [pd](const DmaJob *j) { return j->pd == pd; });
}

/*
 * A PD goes when nothing uses it: now, or after the last job on it.  Its
 * address-handle jobs are told (pd_gone: they destroy what they made).
 */
void Backend::entomb(ibv_pd *pd)
{
    for (DeferredAh *j : ah_jobs_) {
        if (j->pd == pd) {
            j->pd_gone = true;
        }
    }
    if (pd_in_use(pd) || verbs().dealloc_pd(pd)) {
        tomb_pds_.push_back(pd);
    }
}

/* A CQ a QP still holds (a modify job's): destroyed after the job. */
void Backend::entomb(ibv_cq *cq)
{
    if (verbs().destroy_cq(cq)) {
        tomb_cqs_.push_back(cq);
    }
}

/*
 * After each job (and at the end): what the graveyard holds, in the order
 * the host needs -- MRs, then SRQs and CQs (their QPs are gone), then PDs.
 * Each list is as long as what one reset found busy: bounded by the tables.
 */
void Backend::bury(VrdmaCore &c)
{
    std::vector<TombMr> mrs;
    mrs.swap(tomb_mrs_);
    for (const TombMr &m : mrs) {
        end_host_mr(c, m); /* back in the list if still refused */
    }
    std::erase_if(tomb_srqs_,
                  [this](ibv_srq *srq) { return verbs().destroy_srq(srq) == 0; });
    std::erase_if(tomb_cqs_,
                  [this](ibv_cq *cq) { return verbs().destroy_cq(cq) == 0; });
    std::erase_if(tomb_pds_, [this](ibv_pd *pd) {
        return !pd_in_use(pd) && verbs().dealloc_pd(pd) == 0;
    });
}

Status Backend::cq_created(VrdmaCore &, uint32_t index, Cq &cq)
{
    /* The CQN rides in cq_context: completions.cc finds the guest's CQ. */
    ibv_cq *h = verbs().create_cq(dev_->context(), static_cast<int>(cq.cqe),
                                  reinterpret_cast<void *>(uintptr_t{index}),
                                  channel_, 0);
    if (!h) {
        return host_refused(errno, "cqe", cq.cqe);
    }
    /* Its errno is what it returns: errno is an earlier call's. */
    if (const int e = verbs().req_notify_cq(h, 0)) {
        verbs().destroy_cq(h);
        return host_refused(e, "cqn");
    }
    cqs_[index] = h;
    pending_[index] = false;
    return kOk;
}

void Backend::cq_destroyed(VrdmaCore &, uint32_t index)
{
    verbs().destroy_cq(cqs_[index]);
    cqs_[index] = nullptr;
    pending_[index] = false;
}

/* ---- QPs ---- */

Status Backend::qp_created(VrdmaCore &c, Qp &qp)
{
    /*
     * QP1's MADs are the CM's: they go through rdmacm-mux (mad-chardev=,
     * the host's MAD link), not a host QP.  Peers address it as QP1.
     */
    if (qp.type == VIRTIO_RDMA_QPT_GSI) {
        if (!c.host.has_mad_link()) {
            return fail(VRDMA_ERR_UNSUPPORTED, "qp_type", qp.type);
        }
        qp.backend.emplace<QpState>().gsi = true;
        qp.wire_qpn = kGsiQpn;
        return kOk;
    }
    ibv_qp_init_attr ia{};
    ia.send_cq = cqs_[qp.send_cqn];
    ia.recv_cq = cqs_[qp.recv_cqn];
    ia.cap.max_send_wr = qp.cap.max_send_wr;
    ia.cap.max_recv_wr = qp.cap.max_recv_wr;
    ia.cap.max_send_sge = qp.cap.max_send_sge;
    ia.cap.max_recv_sge = qp.cap.max_recv_sge;
    if (qp.srqn) {
        /*
         * Its receives are the host SRQ's (the core checked that the SRQ
         * is the QP's context's); their CQEs come to its receive CQ.
         */
        ia.srq = host_srq(qp.srqn);
        if (!ia.srq) {
            return fail(VRDMA_ERR_BAD_HANDLE, "srqn", qp.srqn);
        }
        ia.cap.max_recv_wr = 0;
        ia.cap.max_recv_sge = 0;
    }
    ia.qp_type = static_cast<ibv_qp_type>(qp.type);
    ia.sq_sig_all = qp.sq_sig_type == VIRTIO_RDMA_SIGNAL_ALL_WR;
    ibv_qp *h = verbs().create_qp(pds_[qp.pd_index], &ia);
    if (!h) {
        return host_refused(errno, "qp_type", qp.type);
    }
    qp.backend.emplace<QpState>().qp = std::shared_ptr<ibv_qp>(
        h, HostQpDeleter{&verbs()});
    qp.wire_qpn = h->qp_num;
    return kOk;
}

Status Backend::qp_modifying(VrdmaCore &c, Qp &qp, uint32_t mask,
                             const virtio_rdma_qp_attr &a)
{
    ibv_qp_attr h{};
    h.qp_state = static_cast<ibv_qp_state>(a.qp_state);
    h.cur_qp_state = static_cast<ibv_qp_state>(a.cur_qp_state);
    h.path_mtu = static_cast<ibv_mtu>(a.path_mtu);
    h.path_mig_state = static_cast<ibv_mig_state>(a.path_mig_state);
    h.qkey = a.qkey;
    h.rq_psn = a.rq_psn;
    h.sq_psn = a.sq_psn;
    h.dest_qp_num = a.dest_qp_num;
    h.qp_access_flags = a.qp_access_flags & kDataAccess;
    h.pkey_index = 0; /* the one P_Key, the default, as on the host */
    h.en_sqd_async_notify = a.en_sqd_async_notify;
    h.max_rd_atomic = a.max_rd_atomic;
    h.max_dest_rd_atomic = a.max_dest_rd_atomic;
    h.min_rnr_timer = a.min_rnr_timer;
    h.port_num = static_cast<uint8_t>(dev_->port());
    h.timeout = a.timeout;
    h.retry_cnt = a.retry_cnt;
    h.rnr_retry = a.rnr_retry;
    h.rate_limit = a.rate_limit;
    if (mask & VIRTIO_RDMA_QP_AV) {
        const virtio_rdma_global_route &g = a.ah_attr.grh;
        h.ah_attr.is_global = 1;
        std::memcpy(h.ah_attr.grh.dgid.raw, g.dgid, 16);
        h.ah_attr.grh.flow_label = g.flow_label;
        h.ah_attr.grh.hop_limit = g.hop_limit;
        h.ah_attr.grh.traffic_class = g.traffic_class;
        h.ah_attr.sl = a.ah_attr.sl;
        h.ah_attr.port_num = static_cast<uint8_t>(dev_->port());
        if (!source_gid(c, g.sgid_index)) {
            return source_gid_refused(c, g.sgid_index);
        }
        if (!host_gid_index(c, *dev_, g.sgid_index,
                            &h.ah_attr.grh.sgid_index)) {
            return fail(VRDMA_ERR_BAD_INDEX, "attrs.ah_attr.grh.sgid_index",
                        g.sgid_index); /* not (yet) in the host's table */
        }
    }
    QpState *s = std::get_if<QpState>(&qp.backend);
    if (s && s->gsi) {
        /* No host QP: the core's state is the QP's; RESET drops receives. */
        if ((mask & VIRTIO_RDMA_QP_STATE) &&
            a.qp_state == VIRTIO_RDMA_QPS_RESET) {
            gsi_flush(c, qp, *s, false);
        }
        return kOk;
    }
    if (!s || !s->qp) {
        return fail(VRDMA_ERR_UNSUPPORTED, "qpn", qp.index);
    }
    /*
     * With an address the host resolves the destination's MAC, which waits
     * (about a second for an address nobody answers): on a worker thread,
     * the command answered when it is done.
     */
    if ((mask & VIRTIO_RDMA_QP_AV) && c.host.can_defer()) {
        auto *m = new DeferredModify{&c, s->qp, h,
                                     static_cast<int>(mask & kHostQpMask),
                                     mask, c.begin_deferral()};
        modify_jobs++;
        start_cmd_job(c, QueuedJob{DeferredModify::work, DeferredModify::done,
                                   m, [](VrdmaCore &core, void *ctx) {
            delete static_cast<DeferredModify *>(ctx);
            std::get<Backend>(core.backend).modify_jobs--;
        }});
        return kDeferred;
    }
    if (const int e = verbs().modify_qp(s->qp.get(), &h, static_cast<int>(
                                                       mask & kHostQpMask))) {
        return host_refused(e, "attr_mask", mask);
    }
    return kOk;
}

int DeferredModify::work(void *ctx)
{
    auto *m = static_cast<DeferredModify *>(ctx);
    return std::get<Backend>(m->core->backend).verbs().modify_qp(
        m->qp.get(), &m->attr, m->host_mask);
}

void DeferredModify::done(void *ctx, int ret)
{
    std::unique_ptr<DeferredModify> m(static_cast<DeferredModify *>(ctx));
    VrdmaCore &c = *m->core;
    c.resume_pending(m->seq, ret ? host_refused(ret, "attr_mask", m->mask)
                                 : kOk);
    m.reset(); /* a QP a reset left to the job is destroyed here, */
    Backend &b = std::get<Backend>(c.backend);
    b.modify_jobs--;
    b.bury(c); /* and then what it held */
    b.cmd_job_ended(c);
}

void Backend::qp_modified(VrdmaCore &, Qp &qp, uint32_t, uint32_t)
{
    QpState *s = std::get_if<QpState>(&qp.backend);
    if (s && qp.state() == VIRTIO_RDMA_QPS_RESET) {
        s->held.clear(); /* RESET discards outstanding work, uncompleted */
    }
}

void Backend::qp_destroyed(VrdmaCore &c, Qp &qp)
{
    /* Now, not when the core frees the Qp: the CQs may go next. */
    QpState *s = std::get_if<QpState>(&qp.backend);
    if (!s) {
        return;
    }
    const bool host = s->qp != nullptr;
    *s = QpState{};
    if (host) {
        /*
         * The host leaves the QP's CQEs in its CQs (rxe does): they must
         * not reach the guest later, where a new QP may have the number.
         */
        purge_qp_cqes(c, qp.send_cqn, qp.wire_qpn);
        if (qp.recv_cqn != qp.send_cqn) {
            purge_qp_cqes(c, qp.recv_cqn, qp.wire_qpn);
        }
    }
}

/*
 * The QP is in ERR (qp_enter_error): the GSI QP's receives are flushed
 * here, a host QP goes to ERR too and the host flushes what it holds (its
 * CQEs come through completions.cc).  For a host QP already in ERR (an
 * error CQE, a QP event) the host call changes nothing.
 */
void Backend::qp_error_flush(VrdmaCore &c, Qp &qp)
{
    QpState *s = std::get_if<QpState>(&qp.backend);
    if (s && s->gsi) {
        gsi_flush(c, qp, *s, true);
    } else if (s && s->qp) {
        ibv_qp_attr h{};
        h.qp_state = IBV_QPS_ERR;
        verbs().modify_qp(s->qp.get(), &h, IBV_QP_STATE); /* the host flushes */
    }
}

/* ---- MRs ---- */

Status Backend::mr_registered(VrdmaCore &c, uint32_t index, Mr &mr)
{
    if (mr.kind == MrKind::kDma) {
        return dma_mr_registered(c, index, mr);
    }
    /*
     * Fast-registration MRs would be host type-2 memory windows, the only
     * host keys whose low byte the guest picks; rxe oopses when one is
     * invalidated twice, and a peer's SEND_WITH_INV can do that (the
     * device docs; tests/lab/test_rxe_mw.py).
     */
    if (mr.kind != MrKind::kUser) {
        return fail(VRDMA_ERR_UNSUPPORTED, "mr kind",
                    static_cast<uint64_t>(mr.kind));
    }
    if (mr.access & ~kDataAccess) {
        return fail(VRDMA_ERR_UNSUPPORTED, "access_flags", mr.access,
                    kDataAccess);
    }
    /* Refused before the process runs out of mappings, not when it does. */
    const uint32_t runs = window_runs(mr.pages);
    const uint64_t before = process_map_runs.fetch_add(runs);
    if (before + runs > max_map_runs) {
        process_map_runs -= runs;
        return fail(VRDMA_ERR_TABLE_FULL, "pages", before + runs,
                    max_map_runs);
    }
    Window w;
    if (!window_map(mr.pages, &w)) {
        process_map_runs -= runs;
        return host_refused(errno == EINVAL ? EFAULT : errno, "pages",
                            mr.pages.count());
    }
    process_map_runs += w.runs; /* what the window really took */
    process_map_runs -= runs;
    /* The window starts at the page of the MR's first byte. */
    void *start = static_cast<uint8_t *>(w.base) +
                  (mr.iova & (VIRTIO_RDMA_PAGE_SIZE - 1));
    ibv_mr *h = verbs().reg_mr_iova2(pds_[mr.pd_index], start, mr.length,
                                     mr.iova, mr.access);
    if (!h) {
        const int e = errno;
        window_unmap(w.base, w.len);
        process_map_runs -= w.runs;
        return host_refused(e, "access_flags", mr.access);
    }
    mrs_[index] = HostMr{h, w.base, w.len, w.runs, false, 0};
    map_runs += w.runs;
    /* The lkey is the core's (SGEs are checked here first), the rkey the host's. */
    mr.lkey = c.mrs.next_key(index);
    mr.rkey = (mr.access & VIRTIO_RDMA_ACCESS_REMOTE) ? h->rkey : 0;
    return kOk;
}

bool Backend::release_mr(VrdmaCore &c, uint32_t index, bool may_refuse)
{
    HostMr &m = mrs_[index];
    if (m.mr) {
        /* No peer reaches the pages after this: the rkey is dead. */
        if (verbs().dereg_mr(m.mr) == 0) {
            window_unmap(m.window, m.window_len);
            process_map_runs -= m.runs;
        } else if (may_refuse) {
            return false; /* (rxe: a memory window still bound to it) */
        } else {
            tomb_mrs_.push_back(TombMr{m.mr, m.window, m.window_len, false,
                                       m.runs});
        }
        map_runs -= m.runs;
    }
    if (m.dma) {
        dma_unref(c, m.dma_pd);
    }
    m = HostMr{};
    return true;
}

void Backend::end_host_mr(VrdmaCore &c, const TombMr &m)
{
    if (verbs().dereg_mr(m.mr)) {
        tomb_mrs_.push_back(m);
        return;
    }
    if (m.ram) {
        if (!c.ended) { /* else the host dropped its references itself */
            c.host.unmap(m.window, m.len, true);
        }
    } else {
        window_unmap(m.window, m.len);
        process_map_runs -= m.runs;
    }
}

void Backend::mr_revoked(VrdmaCore &c, Mr &mr)
{
    release_mr(c, mr.lkey >> 8); /* the pages are gone: so is the host MR */
    mr.held.clear();
}

/*
 * A host MR the host will not deregister stays registered -- its rkey
 * still works for peers -- so the guest's MR stays too, and DEREG_MR fails.
 */
Status Backend::mr_deregistered(VrdmaCore &c, Mr &mr)
{
    if (!release_mr(c, mr.lkey >> 8, true)) {
        return host_refused(EBUSY, "mrn", mr.lkey >> 8);
    }
    mr.held.clear();
    return kOk;
}

bool Backend::host_lkey(VrdmaCore &c, uint32_t pd, const Sge &s,
                        uint32_t *out) const
{
    const Mr *mr = c.mrs.lookup_lkey(s.lkey);
    if (!mr || mr->pd_index != pd || mr->revoked) {
        return false;
    }
    const HostMr &m = mrs_[s.lkey >> 8];
    if (mr->kind == MrKind::kDma) {
        return m.dma && dma_lkey(m.dma_pd, s.addr, s.length, out);
    }
    if (!m.mr) {
        return false;
    }
    *out = m.mr->lkey;
    return true;
}

} // namespace vrdma::ib

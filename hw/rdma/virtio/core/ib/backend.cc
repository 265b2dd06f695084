/*
 * virtio-rdma ibverbs backend: its life -- made with a core on a host
 * device, its completion channel watched by the host, every host object
 * ended on reset and at the end -- and the C entry point that makes a core
 * with it.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <fcntl.h>

#include <algorithm>
#include <cstdio>
#include <new>

#include "../core.h"
#include "hw/rdma/virtio-rdma-ibverbs.h"
#include "state.h"

namespace vrdma::ib {

namespace {

/* vm.max_map_count: the mappings a process may have (Linux's default 65530). */
uint64_t max_map_count()
{
    unsigned long long n = 65530;
    if (FILE *f = std::fopen("/proc/sys/vm/max_map_count", "r")) {
        if (std::fscanf(f, "%llu", &n) != 1) {
            n = 65530;
        }
        std::fclose(f);
    }
    return n;
}

} // namespace

Backend::Backend(std::unique_ptr<HostDevice> dev, const VrdmaLimits &lim)
    : dev_(std::move(dev)), pds_(lim.max_pd, nullptr),
      cqs_(lim.max_cq, nullptr), srqs_(srq_slots(lim), nullptr),
      mrs_(lim.max_mr),
      pending_(lim.max_cq),
      dma_(lim.max_pd)
{
    max_map_runs = max_map_count() / 2;
    async_ok_ = async_nonblocking();
    channel_ = verbs().create_comp_channel(dev_->context());
    if (channel_) {
        /* Watched by the host's loop: reading it must never block. */
        const int fl = fcntl(channel_->fd, F_GETFL);
        if (fl < 0 || fcntl(channel_->fd, F_SETFL, fl | O_NONBLOCK) < 0) {
            verbs().destroy_comp_channel(channel_);
            channel_ = nullptr;
        }
    }
}

Backend::~Backend()
{
    /*
     * The core's reset (its destructor runs one) released every host
     * object; the host let every job finish first, so the graveyard is
     * empty (a host object the host still refuses to destroy goes with the
     * device's context).
     */
    if (channel_) {
        verbs().destroy_comp_channel(channel_);
    }
}

/*
 * Without waiting for the jobs in flight on the worker thread (a host
 * call may take seconds: an address nobody answers, RAM being pinned):
 * each is orphaned and undoes its own work when it ends; what the host
 * cannot destroy before then (a modify job's QP holds its CQs and PD)
 * waits in the graveyard (bury()).
 */
void Backend::release_all(VrdmaCore &c)
{
    /* The core freed its QPs first (their host QPs went with them). */
    release_srqs();
    for (uint32_t i = 0; i < mrs_.size(); i++) {
        release_mr(c, i);
    }
    for (DmaJob *j : dma_jobs_) {
        if (!j->orphaned) {
            j->orphaned = true;
            *c.mrs.mapped_counter() -= std::min(j->reg.pages,
                                                c.mrs.mapped_pages());
        }
    }
    for (ibv_cq *&cq : cqs_) {
        if (cq) {
            entomb(cq); /* every event was acked when it came */
            cq = nullptr;
        }
    }
    for (const Ah &e : ahs_) {
        verbs().destroy_ah(e.ah);
    }
    ahs_.clear();
    ah_fails_.clear();
    for (ibv_pd *&pd : pds_) {
        if (pd) {
            entomb(pd);
        }
        pd = nullptr;
    }
    pending_.assign(pending_.size(), false);
}

void Backend::reset(VrdmaCore &c)
{
    if (queued_) {
        const QueuedJob j = *queued_;
        queued_.reset();
        j.cancel(c, j.ctx); /* never started: nothing to wait for */
    }
    release_all(c);
}

void Backend::start_cmd_job(VrdmaCore &c, const QueuedJob &j)
{
    if (cmd_jobs) {
        queued_ = j; /* one command at a time: there is no other */
        return;
    }
    cmd_jobs++;
    c.host.defer(j.work, j.done, j.ctx);
}

void Backend::cmd_job_ended(VrdmaCore &c)
{
    cmd_jobs--;
    if (queued_) {
        const QueuedJob j = *queued_;
        queued_.reset();
        start_cmd_job(c, j);
    }
}

void Backend::host_stats(const VrdmaCore &c, VrdmaIbStats &st) const
{
    st = VrdmaIbStats{};
    for (ibv_pd *pd : pds_) {
        st.pds += pd != nullptr;
    }
    for (ibv_cq *cq : cqs_) {
        st.cqs += cq != nullptr;
    }
    for (const HostMr &m : mrs_) {
        st.mrs += m.mr != nullptr || m.dma; /* a DMA MR: its PD's registration */
    }
    c.qps.for_each([&st](uint32_t, const Qp &qp) {
        const QpState *s = std::get_if<QpState>(&qp.backend);
        st.qps += s && s->qp;
    });
    st.ahs = static_cast<uint32_t>(ahs_.size());
    st.map_runs = map_runs;
    st.max_map_runs = max_map_runs;
    st.async_events = async_count;
    st.mads_sent = mads_sent;
    st.mads_received = mads_received;
    st.mads_dropped = mads_dropped;
    for (const DmaReg &r : dma_) {
        st.dma_pages += r.pages;
    }
    st.host_jobs = static_cast<uint32_t>(ah_jobs_.size() + dma_jobs_.size() +
                                         modify_jobs);
    st.graveyard = static_cast<uint32_t>(tomb_mrs_.size() +
                                         tomb_srqs_.size() +
                                         tomb_cqs_.size() + tomb_pds_.size());
    st.purged_cqes = purged_cqes;
}

namespace {

/* The host calls this when the completion channel is readable. */
void completion_ready(void *opaque)
{
    VrdmaCore &c = *static_cast<VrdmaCore *>(opaque);
    if (std::get<Backend>(c.backend).completions(c)) {
        c.host.kick(); /* more than one turn's budget: run() goes on */
    }
}

/* ... and this when the async-event fd is. */
void async_ready(void *opaque)
{
    VrdmaCore &c = *static_cast<VrdmaCore *>(opaque);
    std::get<Backend>(c.backend).async_events(c);
}

} // namespace

void Backend::attach(VrdmaCore &c)
{
    attached_ = true;
    c.host.fd_watch(channel_->fd, completion_ready, &c);
    c.host.fd_watch(dev_->context()->async_fd, async_ready, &c);
    c.port.max_msg_sz = std::min(c.port.max_msg_sz, dev_->max_msg_sz());
}

void Backend::detach(VrdmaCore &c)
{
    /* A core refused at its start (no channel: core_new) was never attached. */
    if (!attached_) {
        return;
    }
    attached_ = false;
    c.host.fd_watch(dev_->context()->async_fd, nullptr, nullptr);
    c.host.fd_watch(channel_->fd, nullptr, nullptr);
}

} // namespace vrdma::ib

extern "C" bool vrdma_core_ib_stats(const VrdmaCore *core, VrdmaIbStats *st)
{
    const auto *b = std::get_if<vrdma::ib::Backend>(&core->backend);
    if (!b) {
        return false;
    }
    b->host_stats(*core, *st);
    return true;
}

VrdmaCore *vrdma::ib::core_new(HostVerbs &verbs, const VrdmaLimits *lim,
                               const VrdmaHostOps *ops, const char *ibdev,
                               unsigned ibport, char *err, size_t errlen)
{
    using vrdma::ib::Backend;
    std::string why;
    auto dev = vrdma::ib::HostDevice::open(verbs, ibdev ? ibdev : "", ibport,
                                           &why);
    if (!dev) {
        std::snprintf(err, errlen, "%s", why.c_str());
        return nullptr;
    }
    if (!ops->loop.fd_watch) {
        std::snprintf(err, errlen, "the host cannot watch the completion "
                      "channel (no loop.fd_watch)");
        return nullptr;
    }
    VrdmaLimits l = *lim;
    dev->clamp(l); /* a no-op after vrdma_ib_probe() on the same device */
    /* CREATE_MR is refused, the guest told so (why: objects.cc). */
    l.no_fast_reg = true;
    if (!vrdma::limits_valid(l) || !ops->mem.map || !ops->mem.unmap ||
        !ops->mem.read) {
        std::snprintf(err, errlen, "the core refused the limits");
        return nullptr;
    }
    auto *c = new (std::nothrow)
        VrdmaCore(l, *ops, std::in_place_type<Backend>, std::move(dev), l);
    if (!c) {
        std::snprintf(err, errlen, "out of memory");
        return nullptr;
    }
    Backend &b = std::get<Backend>(c->backend);
    if (!b.usable()) {
        std::snprintf(err, errlen, "cannot make a completion channel on "
                      "host RDMA device %s", ibdev);
        delete c;
        return nullptr;
    }
    b.attach(*c);
    return c;
}

extern "C" VrdmaCore *vrdma_core_new_ibverbs(const VrdmaLimits *lim,
                                             const VrdmaHostOps *ops,
                                             const char *ibdev,
                                             unsigned ibport, char *err,
                                             size_t errlen)
{
    return vrdma::ib::core_new(vrdma::ib::system_verbs(), lim, ops, ibdev,
                               ibport, err, errlen);
}

/*
 * A fake host RDMA device (fake_host_verbs.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "fake_host_verbs.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace vrdma_test {

namespace {

template <typename M, typename F>
size_t count_if_ctx(const M &m, const ibv_context *ctx, F ctx_of)
{
    return static_cast<size_t>(
        std::count_if(m.begin(), m.end(), [&](const auto &e) {
            return !ctx || ctx_of(*e.second) == ctx;
        }));
}

/* An eventfd: real, so fcntl works; nothing waits on it. */
int event_fd()
{
    return eventfd(0, EFD_CLOEXEC);
}

} // namespace

FakeHostVerbs::FakeHostVerbs(std::vector<std::string> names)
{
    for (const std::string &n : names) {
        auto d = std::make_unique<ibv_device>();
        std::memset(d.get(), 0, sizeof(*d));
        std::snprintf(d->name, sizeof(d->name), "%s", n.c_str());
        d->node_type = IBV_NODE_CA;
        d->transport_type = IBV_TRANSPORT_IB;
        devs_.push_back(std::move(d));
    }
    dev_attr.max_qp = 1024;
    dev_attr.max_qp_wr = 4096;
    dev_attr.max_sge = 16;
    dev_attr.max_cq = 1024;
    dev_attr.max_cqe = 65536;
    dev_attr.max_mr = 4096;
    dev_attr.max_pd = 1024;
    dev_attr.max_ah = 1024;
    dev_attr.max_mr_size = 1ull << 40;
    dev_attr.max_srq = 1024;
    dev_attr.max_srq_wr = 4096;
    dev_attr.max_srq_sge = 16;
    dev_attr.max_qp_rd_atom = 16;
    dev_attr.max_qp_init_rd_atom = 16;
    dev_attr.atomic_cap = IBV_ATOMIC_HCA;
    dev_attr.phys_port_cnt = 1;
    std::snprintf(dev_attr.fw_ver, sizeof(dev_attr.fw_ver), "fake-1.0");
    port_attr.state = IBV_PORT_ACTIVE;
    port_attr.max_mtu = IBV_MTU_4096;
    port_attr.active_mtu = IBV_MTU_1024;
    port_attr.gid_tbl_len = 16;
    port_attr.max_msg_sz = 1u << 30;
    port_attr.link_layer = IBV_LINK_LAYER_ETHERNET;
}

FakeHostVerbs::~FakeHostVerbs()
{
    for (auto &[p, c] : chans_) {
        close(c->ch.fd);
    }
    for (auto &[p, c] : ctxs_) {
        close(c->ctx.async_fd);
    }
}

void FakeHostVerbs::add_gid(const std::array<uint8_t, 16> &gid,
                            uint32_t index, uint32_t type)
{
    ibv_gid_entry e{};
    std::memcpy(e.gid.raw, gid.data(), 16);
    e.gid_index = index;
    e.port_num = 1;
    e.gid_type = type;
    gids_.push_back(e);
}

void FakeHostVerbs::remove_gid(const std::array<uint8_t, 16> &gid)
{
    std::erase_if(gids_, [&gid](const ibv_gid_entry &e) {
        return std::memcmp(e.gid.raw, gid.data(), 16) == 0;
    });
}

void FakeHostVerbs::refuse(Verb v, int err, unsigned skip)
{
    refusals_.push_back(Refusal{v, err, skip});
}

int FakeHostVerbs::enter(Verb v)
{
    calls_[static_cast<int>(v)]++;
    for (auto it = refusals_.begin(); it != refusals_.end(); ++it) {
        if (it->v != v) {
            continue;
        }
        if (it->skip) {
            it->skip--;
            return 0;
        }
        const int err = it->err;
        refusals_.erase(it);
        return err;
    }
    return 0;
}

/* ---- counts ---- */

size_t FakeHostVerbs::pds(const ibv_context *ctx) const
{
    return count_if_ctx(pds_, ctx, [](const ibv_pd &p) { return p.context; });
}
size_t FakeHostVerbs::cqs(const ibv_context *ctx) const
{
    return count_if_ctx(cqs_, ctx, [](const Cq &c) { return c.cq.context; });
}
size_t FakeHostVerbs::qps(const ibv_context *ctx) const
{
    return count_if_ctx(qps_, ctx, [](const Qp &q) { return q.qp.context; });
}
size_t FakeHostVerbs::mrs(const ibv_context *ctx) const
{
    return count_if_ctx(mrs_, ctx, [](const Mr &m) { return m.mr.context; });
}
size_t FakeHostVerbs::srqs(const ibv_context *ctx) const
{
    return count_if_ctx(srqs_, ctx,
                        [](const Srq &s) { return s.srq.context; });
}
size_t FakeHostVerbs::ahs(const ibv_context *ctx) const
{
    return count_if_ctx(ahs_, ctx, [](const ibv_ah &a) { return a.context; });
}

size_t FakeHostVerbs::live() const
{
    return lists_ + ctxs_.size() + chans_.size() + pds_.size() +
           cqs_.size() + qps_.size() + mrs_.size() + srqs_.size() +
           ahs_.size();
}

std::string FakeHostVerbs::leaks() const
{
    return "lists " + std::to_string(lists_) + " contexts " +
           std::to_string(ctxs_.size()) + " channels " +
           std::to_string(chans_.size()) + " pds " +
           std::to_string(pds_.size()) + " cqs " +
           std::to_string(cqs_.size()) + " qps " +
           std::to_string(qps_.size()) + " mrs " +
           std::to_string(mrs_.size()) + " srqs " +
           std::to_string(srqs_.size()) + " ahs " +
           std::to_string(ahs_.size());
}

/* ---- lookups ---- */

FakeHostVerbs::Channel *FakeHostVerbs::channel_of(const ibv_context *ctx)
{
    for (auto &[p, c] : chans_) {
        if (c->ch.context == ctx) {
            return c.get();
        }
    }
    return nullptr;
}

FakeHostVerbs::Qp *FakeHostVerbs::qp(uint32_t qp_num)
{
    for (auto &[p, q] : qps_) {
        if (q->qp.qp_num == qp_num) {
            return q.get();
        }
    }
    return nullptr;
}

FakeHostVerbs::Qp *FakeHostVerbs::qp(const ibv_qp *q)
{
    const auto it = qps_.find(q);
    return it == qps_.end() ? nullptr : it->second.get();
}

FakeHostVerbs::Cq *FakeHostVerbs::cq(const ibv_cq *c)
{
    const auto it = cqs_.find(c);
    return it == cqs_.end() ? nullptr : it->second.get();
}

FakeHostVerbs::Mr *FakeHostVerbs::mr_by_lkey(uint32_t lkey)
{
    for (auto &[p, m] : mrs_) {
        if (m->mr.lkey == lkey) {
            return m.get();
        }
    }
    return nullptr;
}

FakeHostVerbs::Srq *FakeHostVerbs::srq(const ibv_srq *s)
{
    const auto it = srqs_.find(s);
    return it == srqs_.end() ? nullptr : it->second.get();
}

std::vector<FakeHostVerbs::Qp *> FakeHostVerbs::qps_of(const ibv_context *ctx)
{
    std::vector<Qp *> v;
    for (auto &[p, q] : qps_) {
        if (q->qp.context == ctx) {
            v.push_back(q.get());
        }
    }
    return v;
}

std::vector<FakeHostVerbs::Cq *> FakeHostVerbs::cqs_of(const ibv_context *ctx)
{
    std::vector<Cq *> v;
    for (auto &[p, c] : cqs_) {
        if (c->cq.context == ctx) {
            v.push_back(c.get());
        }
    }
    return v;
}

std::vector<FakeHostVerbs::Srq *> FakeHostVerbs::srqs_of(const ibv_context *ctx)
{
    std::vector<Srq *> v;
    for (auto &[p, r] : srqs_) {
        if (r->srq.context == ctx) {
            v.push_back(r.get());
        }
    }
    return v;
}

/* ---- on demand ---- */

void FakeHostVerbs::complete(ibv_cq *c, const ibv_wc &wc)
{
    Cq *f = cq(c);
    if (!f) {
        violations.push_back("complete: no such CQ");
        return;
    }
    f->cqes.push_back(wc);
    if (f->armed && c->channel) {
        f->armed = false;
        chans_.at(c->channel)->events.push_back(c);
        const uint64_t one = 1;
        (void)!write(c->channel->fd, &one, sizeof(one));
    }
}

void FakeHostVerbs::complete_qp(Qp &q, bool send, uint64_t wr_id,
                                ibv_wc_status status, ibv_wc_opcode opcode,
                                uint32_t byte_len)
{
    ibv_wc wc{};
    wc.wr_id = wr_id;
    wc.status = status;
    wc.opcode = opcode;
    wc.byte_len = byte_len;
    wc.qp_num = q.qp.qp_num;
    complete(send ? q.qp.send_cq : q.qp.recv_cq, wc);
}

void FakeHostVerbs::raise(ibv_context *ctx, const ibv_async_event &ev)
{
    ctxs_.at(ctx)->events.push_back(ev);
    const uint64_t one = 1;
    (void)!write(ctx->async_fd, &one, sizeof(one));
}

void FakeHostVerbs::qp_event(Qp &q, ibv_event_type type)
{
    ibv_async_event ev{};
    ev.element.qp = &q.qp;
    ev.event_type = type;
    raise(q.qp.context, ev);
}

void FakeHostVerbs::port_event(ibv_context *ctx, ibv_event_type type,
                               uint8_t port)
{
    ibv_async_event ev{};
    ev.element.port_num = port;
    ev.event_type = type;
    raise(ctx, ev);
}

void FakeHostVerbs::cq_event(Cq &c, ibv_event_type type)
{
    ibv_async_event ev{};
    ev.element.cq = &c.cq;
    ev.event_type = type;
    raise(c.cq.context, ev);
}

void FakeHostVerbs::srq_event(Srq &s, ibv_event_type type)
{
    ibv_async_event ev{};
    ev.element.srq = &s.srq;
    ev.event_type = type;
    raise(s.srq.context, ev);
}

/* ---- the device ---- */

ibv_device **FakeHostVerbs::get_device_list(int *num)
{
    auto **list = new ibv_device *[devs_.size() + 1];
    for (size_t i = 0; i < devs_.size(); i++) {
        list[i] = devs_[i].get();
    }
    list[devs_.size()] = nullptr;
    *num = static_cast<int>(devs_.size());
    lists_++;
    return list;
}

void FakeHostVerbs::free_device_list(ibv_device **list)
{
    delete[] list;
    lists_--;
}

const char *FakeHostVerbs::get_device_name(ibv_device *dev)
{
    return dev->name;
}

ibv_context *FakeHostVerbs::open_device(ibv_device *dev)
{
    if (const int e = enter(Verb::kOpenDevice)) {
        errno = e;
        return nullptr;
    }
    auto c = std::make_unique<Context>();
    c->ctx.device = dev;
    c->ctx.cmd_fd = -1;
    c->ctx.async_fd = event_fd();
    c->ctx.num_comp_vectors = 1;
    ibv_context *p = &c->ctx;
    ctxs_[p] = std::move(c);
    last_ctx_ = p;
    return p;
}

int FakeHostVerbs::close_device(ibv_context *ctx)
{
    if (!ours(ctx)) {
        violations.push_back("close_device: not open");
        return EINVAL;
    }
    const Context &c = *ctxs_.at(ctx);
    if (c.unacked) {
        violations.push_back("close_device: async events not acked");
    }
    /* The kernel frees what is left; here it stays, a leak to report. */
    if (pds(ctx) || cqs(ctx) || qps(ctx) || mrs(ctx) || srqs(ctx) ||
        ahs(ctx) || channel_of(ctx)) {
        violations.push_back("close_device: objects left open");
    }
    close(ctx->async_fd);
    ctxs_.erase(ctx);
    return 0;
}

int FakeHostVerbs::query_device(ibv_context *, ibv_device_attr *attr)
{
    if (const int e = enter(Verb::kQueryDevice)) {
        return e;
    }
    *attr = dev_attr;
    return 0;
}

int FakeHostVerbs::query_port(ibv_context *, uint8_t port,
                              ibv_port_attr *attr)
{
    if (const int e = enter(Verb::kQueryPort)) {
        return e;
    }
    if (port != 1) {
        return EINVAL;
    }
    *attr = port_attr;
    return 0;
}

ssize_t FakeHostVerbs::query_gid_table(ibv_context *, ibv_gid_entry *entries,
                                       size_t max, uint32_t)
{
    const size_t n = std::min(max, gids_.size());
    std::copy_n(gids_.begin(), n, entries);
    return static_cast<ssize_t>(n);
}

/* ---- PDs, CQs, the channel ---- */

ibv_pd *FakeHostVerbs::alloc_pd(ibv_context *ctx)
{
    if (const int e = enter(Verb::kAllocPd)) {
        errno = e;
        return nullptr;
    }
    auto pd = std::make_unique<ibv_pd>();
    pd->context = ctx;
    ibv_pd *p = pd.get();
    pds_[p] = std::move(pd);
    return p;
}

int FakeHostVerbs::dealloc_pd(ibv_pd *pd)
{
    if (const int e = enter(Verb::kDeallocPd)) {
        return e;
    }
    if (!pds_.count(pd)) {
        violations.push_back("dealloc_pd: no such PD");
        return EINVAL;
    }
    /* The kernel refuses a PD something still stands on. */
    const auto on = [pd](const auto &m, auto pd_of) {
        return std::any_of(m.begin(), m.end(), [&](const auto &e) {
            return pd_of(*e.second) == pd;
        });
    };
    const bool used = on(qps_, [](const Qp &q) { return q.qp.pd; }) ||
                      on(mrs_, [](const Mr &m) { return m.mr.pd; }) ||
                      on(srqs_, [](const Srq &r) { return r.srq.pd; }) ||
                      on(ahs_, [](const ibv_ah &h) { return h.pd; });
    if (used) {
        return EBUSY;
    }
    pds_.erase(pd);
    return 0;
}

ibv_comp_channel *FakeHostVerbs::create_comp_channel(ibv_context *ctx)
{
    if (const int e = enter(Verb::kCreateCompChannel)) {
        errno = e;
        return nullptr;
    }
    auto c = std::make_unique<Channel>();
    c->ch.context = ctx;
    c->ch.fd = event_fd();
    ibv_comp_channel *p = &c->ch;
    chans_[p] = std::move(c);
    return p;
}

int FakeHostVerbs::destroy_comp_channel(ibv_comp_channel *ch)
{
    if (!chans_.count(ch)) {
        violations.push_back("destroy_comp_channel: no such channel");
        return EINVAL;
    }
    if (std::any_of(cqs_.begin(), cqs_.end(),
                    [ch](auto &e) { return e.second->cq.channel == ch; })) {
        return EBUSY;
    }
    close(ch->fd);
    chans_.erase(ch);
    return 0;
}

ibv_cq *FakeHostVerbs::create_cq(ibv_context *ctx, int cqe, void *cq_context,
                                 ibv_comp_channel *ch, int)
{
    if (const int e = enter(Verb::kCreateCq)) {
        errno = e;
        return nullptr;
    }
    if (ch && ch->context != ctx) {
        violations.push_back("create_cq: another context's channel");
        errno = EINVAL;
        return nullptr;
    }
    auto c = std::make_unique<Cq>();
    c->cq.context = ctx;
    c->cq.channel = ch;
    c->cq.cq_context = cq_context;
    c->cq.cqe = cqe;
    ibv_cq *p = &c->cq;
    cqs_[p] = std::move(c);
    return p;
}

int FakeHostVerbs::destroy_cq(ibv_cq *cq)
{
    if (const int e = enter(Verb::kDestroyCq)) {
        return e;
    }
    Cq *f = this->cq(cq);
    if (!f) {
        violations.push_back("destroy_cq: no such CQ");
        return EINVAL;
    }
    if (std::any_of(qps_.begin(), qps_.end(), [cq](auto &e) {
            return e.second->qp.send_cq == cq || e.second->qp.recv_cq == cq;
        })) {
        return EBUSY;
    }
    if (f->unacked) {
        /* libibverbs would wait for the acks forever. */
        violations.push_back("destroy_cq: events not acked");
    }
    if (cq->channel) {
        std::erase(chans_.at(cq->channel)->events, cq);
    }
    cqs_.erase(cq);
    return 0;
}

int FakeHostVerbs::req_notify_cq(ibv_cq *cq, int)
{
    if (const int e = enter(Verb::kReqNotifyCq)) {
        return e; /* errno untouched, as libibverbs leaves it */
    }
    Cq *f = this->cq(cq);
    if (!f) {
        violations.push_back("req_notify_cq: no such CQ");
        return EINVAL;
    }
    f->armed = true; /* for the next CQE, not those already there */
    return 0;
}

int FakeHostVerbs::poll_cq(ibv_cq *cq, int num, ibv_wc *wc)
{
    if (const int e = enter(Verb::kPollCq)) {
        return -e;
    }
    Cq *f = this->cq(cq);
    if (!f) {
        violations.push_back("poll_cq: no such CQ");
        return -EINVAL;
    }
    int n = 0;
    while (n < num && !f->cqes.empty()) {
        wc[n++] = f->cqes.front();
        f->cqes.pop_front();
    }
    return n;
}

int FakeHostVerbs::get_cq_event(ibv_comp_channel *ch, ibv_cq **cq,
                                void **cq_context)
{
    auto it = chans_.find(ch);
    if (it == chans_.end() || it->second->events.empty()) {
        errno = EAGAIN;
        return -1;
    }
    ibv_cq *c = it->second->events.front();
    it->second->events.pop_front();
    this->cq(c)->unacked++;
    *cq = c;
    *cq_context = c->cq_context;
    return 0;
}

void FakeHostVerbs::ack_cq_events(ibv_cq *cq, unsigned int n)
{
    Cq *f = this->cq(cq);
    if (!f || f->unacked < n) {
        violations.push_back("ack_cq_events: more than were got");
        return;
    }
    f->unacked -= n;
}

/* ---- QPs ---- */

ibv_qp *FakeHostVerbs::create_qp(ibv_pd *pd, ibv_qp_init_attr *attr)
{
    if (const int e = enter(Verb::kCreateQp)) {
        errno = e;
        return nullptr;
    }
    if (!pds_.count(pd) || !cq(attr->send_cq) || !cq(attr->recv_cq) ||
        (attr->srq && !srq(attr->srq))) {
        violations.push_back("create_qp: no such PD, CQ or SRQ");
        errno = EINVAL;
        return nullptr;
    }
    if (attr->send_cq->context != pd->context ||
        attr->recv_cq->context != pd->context ||
        (attr->srq && attr->srq->context != pd->context)) {
        violations.push_back("create_qp: objects of another context");
        errno = EINVAL;
        return nullptr;
    }
    auto q = std::make_unique<Qp>();
    q->init = *attr;
    q->qp.context = pd->context;
    q->qp.qp_context = attr->qp_context;
    q->qp.pd = pd;
    q->qp.send_cq = attr->send_cq;
    q->qp.recv_cq = attr->recv_cq;
    q->qp.srq = attr->srq;
    q->qp.qp_num = next_qpn_++;
    q->qp.state = IBV_QPS_RESET;
    q->qp.qp_type = attr->qp_type;
    ibv_qp *p = &q->qp;
    qps_[p] = std::move(q);
    return p;
}

int FakeHostVerbs::modify_qp(ibv_qp *qp, ibv_qp_attr *attr, int mask)
{
    if (const int e = enter(Verb::kModifyQp)) {
        return e;
    }
    Qp *f = this->qp(qp);
    if (!f) {
        violations.push_back("modify_qp: no such QP");
        return EINVAL;
    }
    f->attr = *attr;
    f->mask = mask;
    if (mask & IBV_QP_STATE) {
        qp->state = attr->qp_state;
    }
    return 0;
}

int FakeHostVerbs::destroy_qp(ibv_qp *qp)
{
    if (const int e = enter(Verb::kDestroyQp)) {
        return e;
    }
    if (!qps_.erase(qp)) {
        violations.push_back("destroy_qp: no such QP");
        return EINVAL;
    }
    return 0;
}

int FakeHostVerbs::post_send(ibv_qp *qp, ibv_send_wr *wr, ibv_send_wr **bad)
{
    Qp *f = this->qp(qp);
    for (; wr; wr = wr->next) {
        if (const int e = enter(Verb::kPostSend)) {
            *bad = wr;
            return e;
        }
        if (!f) {
            violations.push_back("post_send: no such QP");
            *bad = wr;
            return EINVAL;
        }
        PostedSend s{*wr, std::vector<ibv_sge>(wr->sg_list,
                                               wr->sg_list + wr->num_sge)};
        s.wr.next = nullptr;
        s.wr.sg_list = nullptr;
        f->sends.push_back(s);
    }
    return 0;
}

int FakeHostVerbs::post_recv(ibv_qp *qp, ibv_recv_wr *wr, ibv_recv_wr **bad)
{
    Qp *f = this->qp(qp);
    for (; wr; wr = wr->next) {
        if (const int e = enter(Verb::kPostRecv)) {
            *bad = wr;
            return e;
        }
        if (!f) {
            violations.push_back("post_recv: no such QP");
            *bad = wr;
            return EINVAL;
        }
        PostedRecv r{*wr, std::vector<ibv_sge>(wr->sg_list,
                                               wr->sg_list + wr->num_sge)};
        r.wr.next = nullptr;
        r.wr.sg_list = nullptr;
        f->recvs.push_back(r);
    }
    return 0;
}

/* ---- MRs, SRQs, AHs ---- */

ibv_mr *FakeHostVerbs::reg_mr_iova2(ibv_pd *pd, void *addr, size_t len,
                                    uint64_t iova, unsigned int access)
{
    if (const int e = enter(Verb::kRegMr)) {
        errno = e;
        return nullptr;
    }
    if (!pds_.count(pd)) {
        violations.push_back("reg_mr: no such PD");
        errno = EINVAL;
        return nullptr;
    }
    auto m = std::make_unique<Mr>();
    m->mr.context = pd->context;
    m->mr.pd = pd;
    m->mr.addr = addr;
    m->mr.length = len;
    m->mr.lkey = next_key_++;
    m->mr.rkey = next_key_++ | 0x80000000u;
    m->iova = iova;
    m->access = access;
    ibv_mr *p = &m->mr;
    mrs_[p] = std::move(m);
    return p;
}

int FakeHostVerbs::dereg_mr(ibv_mr *mr)
{
    if (const int e = enter(Verb::kDeregMr)) {
        return e;
    }
    if (!mrs_.erase(mr)) {
        violations.push_back("dereg_mr: no such MR");
        return EINVAL;
    }
    return 0;
}

ibv_srq *FakeHostVerbs::create_srq(ibv_pd *pd, ibv_srq_init_attr *attr)
{
    if (const int e = enter(Verb::kCreateSrq)) {
        errno = e;
        return nullptr;
    }
    if (!pds_.count(pd)) {
        violations.push_back("create_srq: no such PD");
        errno = EINVAL;
        return nullptr;
    }
    auto s = std::make_unique<Srq>();
    s->srq.context = pd->context;
    s->srq.srq_context = attr->srq_context;
    s->srq.pd = pd;
    s->attr = attr->attr;
    ibv_srq *p = &s->srq;
    srqs_[p] = std::move(s);
    return p;
}

int FakeHostVerbs::modify_srq(ibv_srq *srq, ibv_srq_attr *attr, int mask)
{
    if (const int e = enter(Verb::kModifySrq)) {
        return e;
    }
    Srq *f = this->srq(srq);
    if (!f) {
        violations.push_back("modify_srq: no such SRQ");
        return EINVAL;
    }
    if (mask & IBV_SRQ_LIMIT) {
        f->attr.srq_limit = attr->srq_limit;
    }
    return 0;
}

int FakeHostVerbs::destroy_srq(ibv_srq *srq)
{
    if (const int e = enter(Verb::kDestroySrq)) {
        return e;
    }
    if (!this->srq(srq)) {
        violations.push_back("destroy_srq: no such SRQ");
        return EINVAL;
    }
    if (std::any_of(qps_.begin(), qps_.end(),
                    [srq](auto &e) { return e.second->qp.srq == srq; })) {
        return EBUSY;
    }
    srqs_.erase(srq);
    return 0;
}

int FakeHostVerbs::post_srq_recv(ibv_srq *srq, ibv_recv_wr *wr,
                                 ibv_recv_wr **bad)
{
    Srq *f = this->srq(srq);
    for (; wr; wr = wr->next) {
        if (const int e = enter(Verb::kPostSrqRecv)) {
            *bad = wr;
            return e;
        }
        if (!f) {
            violations.push_back("post_srq_recv: no such SRQ");
            *bad = wr;
            return EINVAL;
        }
        PostedRecv r{*wr, std::vector<ibv_sge>(wr->sg_list,
                                               wr->sg_list + wr->num_sge)};
        r.wr.next = nullptr;
        r.wr.sg_list = nullptr;
        f->recvs.push_back(r);
    }
    return 0;
}

ibv_ah *FakeHostVerbs::create_ah(ibv_pd *pd, ibv_ah_attr *)
{
    if (const int e = enter(Verb::kCreateAh)) {
        errno = e;
        return nullptr;
    }
    auto a = std::make_unique<ibv_ah>();
    a->context = pd->context;
    a->pd = pd;
    ibv_ah *p = a.get();
    ahs_[p] = std::move(a);
    return p;
}

int FakeHostVerbs::destroy_ah(ibv_ah *ah)
{
    if (const int e = enter(Verb::kDestroyAh)) {
        return e;
    }
    if (!ahs_.erase(ah)) {
        violations.push_back("destroy_ah: no such AH");
        return EINVAL;
    }
    return 0;
}

/* ---- async events ---- */

int FakeHostVerbs::get_async_event(ibv_context *ctx, ibv_async_event *ev)
{
    auto it = ctxs_.find(ctx);
    if (it == ctxs_.end() || it->second->events.empty()) {
        errno = EAGAIN;
        return -1;
    }
    *ev = it->second->events.front();
    it->second->events.pop_front();
    it->second->unacked++;
    return 0;
}

void FakeHostVerbs::ack_async_event(ibv_async_event *)
{
    /* The event names no context; the one with events out acks. */
    for (auto &[p, c] : ctxs_) {
        if (c->unacked) {
            c->unacked--;
            return;
        }
    }
    violations.push_back("ack_async_event: none was got");
}

} // namespace vrdma_test

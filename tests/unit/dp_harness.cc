/*
 * Data-path test harness (see dp_harness.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "dp_harness.h"

#include <algorithm>
#include <bit>

#include "ring_driver.h"

namespace vrdma_test {

Gid gid_v4(uint8_t a, uint8_t b, uint8_t c, uint8_t d)
{
    Gid g{};
    g[10] = g[11] = 0xFF;
    g[12] = a;
    g[13] = b;
    g[14] = c;
    g[15] = d;
    return g;
}

Gid gid_v6(uint8_t last)
{
    Gid g{};
    g[0] = 0xFD;
    g[1] = 0x00;
    g[15] = last;
    return g;
}

VrdmaLimits dp_limits()
{
    return VrdmaLimits{
        .max_qp = 16,
        .max_cq = 8,
        .max_mr = 32,
        .max_pd = 4,
        .max_ah = 4,
        .max_mr_size = 8ull << 20,
        .max_sge = 4,
        .sys_image_guid = 0x0123456789abcdefull,
        .phys_mtu = 9000, /* active MTU 4096 */
        .mac = {},
        .max_mapped_pages = 0, /* no cap */
        /* random QP numbers and keys, as under QEMU (same every run) */
        .rng_seed = 0x5EED,
        /* the soft engine's capabilities */
        .max_qp_rd_atom = 0,
        .max_qp_init_rd_atom = 0,
        .no_atomics = false,
        .no_fast_reg = false,
        .allow = {},            /* no allowed-gids */
        .max_ctx = 8,
        .max_ring_cqe = 0,      /* the ring bounds it */
        .max_ring_qp_wr = 0,    /* the ring bounds it */
        .max_srq = 16,
        .max_srq_wr = 0,        /* VIRTIO_RDMA_RING_MAX_SRQ_WR */
        .max_srq_sge = 0,       /* max_sge */
    };
}

SendWr &SendWr::imm(uint32_t v)
{
    const uint8_t be[4] = {static_cast<uint8_t>(v >> 24),
                           static_cast<uint8_t>(v >> 16),
                           static_cast<uint8_t>(v >> 8),
                           static_cast<uint8_t>(v)};
    std::memcpy(&hdr.ex, be, 4);
    return *this;
}

SendWr &SendWr::ud(uint32_t qpn, uint32_t qkey, const Gid &dgid,
                   const Mac &dmac, uint8_t gid_index)
{
    hdr.wr.ud.remote_qpn = qpn;
    hdr.wr.ud.remote_qkey = qkey;
    virtio_rdma_av &av = hdr.wr.ud.av;
    av.port = 1;
    std::memcpy(av.dgid, dgid.data(), 16);
    std::memcpy(av.dmac, dmac.data(), 6);
    av.gid_index = gid_index;
    av.hop_limit = 64;
    return *this;
}

Bytes SendWr::bytes() const
{
    virtio_rdma_sq_req h = hdr;
    h.num_sge = static_cast<uint32_t>(sges.size());
    Bytes b(sizeof(h) + sges.size() * sizeof(virtio_rdma_sge));
    std::memcpy(b.data(), &h, sizeof(h));
    if (!sges.empty()) {
        std::memcpy(b.data() + sizeof(h), sges.data(),
                    sges.size() * sizeof(virtio_rdma_sge));
    }
    return b;
}

Bytes recv_bytes(uint64_t wr_id, const std::vector<virtio_rdma_sge> &sges)
{
    virtio_rdma_rq_req h{};
    h.num_sge = static_cast<uint32_t>(sges.size());
    h.wr_id = wr_id;
    Bytes b(sizeof(h) + sges.size() * sizeof(virtio_rdma_sge));
    std::memcpy(b.data(), &h, sizeof(h));
    if (!sges.empty()) {
        std::memcpy(b.data() + sizeof(h), sges.data(),
                    sges.size() * sizeof(virtio_rdma_sge));
    }
    return b;
}

/* ---- Node ---- */

Node::Node(Wire *w, int id_, const VrdmaLimits &lim_in)
    : Node(w, id_, lim_in, CoreMaker{})
{
}

Node::Node(Wire *w, int id_, const VrdmaLimits &lim_in, const CoreMaker &make)
    : wire(w), id(id_), guest(static_cast<bool>(make))
{
    mac = {0x02, 0x00, 0x00, 0x00, 0x00, static_cast<uint8_t>(0x0A + id)};
    gid = gid_v4(10, 0, 0, static_cast<uint8_t>(1 + id));
    VrdmaLimits lim = lim_in;
    std::memcpy(lim.mac, mac.data(), 6);
    ops.opaque = this;
    ops.mem.map = h_map;
    ops.mem.unmap = h_unmap;
    ops.mem.read = h_read;
    ops.mem.write = h_write;
    ops.events.guest_error = h_guest_error;
    ops.events.async_event = h_async_event;
    ops.cq.notify = h_cq_notify;
    ops.time.now_ns = h_now;
    ops.time.timer_mod = h_timer_mod;
    ops.time.kick = h_kick;
    ops.wire.send = h_net_send;
    ops.wire.drop = h_wire_drop;
    if (make) {
        ops.loop.fd_watch = h_fd_watch;
        core = make(lim, ops);
    } else {
        core = vrdma_core_new(&lim, &ops);
    }
    if (core) {
        set_features(kRingFeatures);
    }
    if (wire) {
        wire->nodes.push_back(this);
    }
}

Node::~Node()
{
    vrdma_core_free(core);
    EXPECT_EQ(guest.maps, guest.unmaps) << "leaked guest mappings";
    if (wire) {
        auto &v = wire->nodes;
        v.erase(std::remove(v.begin(), v.end(), this), v.end());
    }
}

void *Node::h_map(void *o, uint64_t gpa, uint64_t len, bool w)
{
    FakeGuest &g = static_cast<Node *>(o)->guest;
    return g.ops().mem.map(g.ops().opaque, gpa, len, w);
}

void Node::h_unmap(void *o, void *host, uint64_t len, bool w)
{
    FakeGuest &g = static_cast<Node *>(o)->guest;
    g.ops().mem.unmap(g.ops().opaque, host, len, w);
}

int Node::h_read(void *o, uint64_t gpa, void *buf, uint64_t len)
{
    FakeGuest &g = static_cast<Node *>(o)->guest;
    return g.ops().mem.read(g.ops().opaque, gpa, buf, len);
}

int Node::h_write(void *o, uint64_t gpa, const void *buf, uint64_t len)
{
    FakeGuest &g = static_cast<Node *>(o)->guest;
    return g.ops().mem.write(g.ops().opaque, gpa, buf, len);
}

void Node::h_net_send(void *o, const void *frame, size_t len)
{
    Node *n = static_cast<Node *>(o);
    if (!n->wire) {
        return;
    }
    const auto send = [&] {
        n->wire->send(n->id, static_cast<const uint8_t *>(frame), len);
        return 0;
    };
    if (n->wire->timed) {
        time_into(&n->wire_ns, send);
    } else {
        send();
    }
}

void Node::h_cq_notify(void *o, uint32_t cqn)
{
    static_cast<Node *>(o)->notifies[cqn]++;
}

void Node::h_fd_watch(void *o, int fd, void (*ready)(void *ctx), void *ctx)
{
    Node *n = static_cast<Node *>(o);
    if (ready) {
        n->fd_watches[fd] = FdWatch{ready, ctx};
    } else {
        n->fd_watches.erase(fd);
    }
}

bool Node::fd_ready(int fd)
{
    const auto it = fd_watches.find(fd);
    if (it == fd_watches.end()) {
        return false;
    }
    it->second.ready(it->second.ctx);
    collect();
    return true;
}

uint64_t Node::h_now(void *o)
{
    Node *n = static_cast<Node *>(o);
    return n->wire ? n->wire->now : 1;
}

void Node::h_timer_mod(void *o, uint64_t deadline)
{
    Node *n = static_cast<Node *>(o);
    n->deadline = deadline;
    n->timer_mods++;
}

void Node::h_kick(void *o)
{
    Node *n = static_cast<Node *>(o);
    n->kicked = true;
    n->kicks++;
}

void Node::h_wire_drop(void *o, const char *why, uint32_t qpn)
{
    static_cast<Node *>(o)->drop_log.emplace_back(why, qpn);
}

void Node::h_guest_error(void *o, uint8_t cmd, VrdmaErr err,
                         const char *field, uint64_t a, uint64_t b)
{
    static_cast<Node *>(o)->errors.push_back({cmd, err, a, b, field});
}

void Node::h_async_event(void *o, uint32_t type, uint32_t handle)
{
    static_cast<Node *>(o)->async_events.push_back({type, handle});
}

uint8_t Node::ctrl_raw(uint8_t cmd, const void *req, size_t len, void *rsp,
                       size_t cap)
{
    /* What the CQs hold first: a driver drains a CQ before it destroys it. */
    collect();
    size_t rsp_len = 0;
    const uint8_t st = vrdma_core_ctrl(core, cmd, req, len, rsp, cap, &rsp_len);
    if (st == VIRTIO_RDMA_OK) {
        track(cmd, req, len);
    }
    collect(); /* e.g. the flush of a QP moved to ERR */
    return st;
}

void Node::track(uint8_t cmd, const void *req, size_t len)
{
    if (cmd == VIRTIO_RDMA_CMD_DESTROY_QP &&
        len == sizeof(virtio_rdma_cmd_destroy_qp)) {
        virtio_rdma_cmd_destroy_qp r;
        std::memcpy(&r, req, sizeof(r));
        ring_qps_.erase(r.qpn);
        wires.erase(r.qpn);
    } else if (cmd == VIRTIO_RDMA_CMD_DESTROY_CQ &&
               len == sizeof(virtio_rdma_cmd_destroy_cq)) {
        virtio_rdma_cmd_destroy_cq r;
        std::memcpy(&r, req, sizeof(r));
        ring_cqs_.erase(r.cqn);
        held_.erase(r.cqn);
    } else if (cmd == VIRTIO_RDMA_CMD_MODIFY_QP &&
               len == sizeof(virtio_rdma_cmd_modify_qp)) {
        /* RESET sets the ring counters to 0; the driver starts over too. */
        virtio_rdma_cmd_modify_qp r;
        std::memcpy(&r, req, sizeof(r));
        const auto q = ring_qps_.find(r.qpn);
        if (q != ring_qps_.end() && (r.attr_mask & VIRTIO_RDMA_QP_STATE) &&
            r.attrs.qp_state == VIRTIO_RDMA_QPS_RESET) {
            q->second->sq_pi = q->second->rq_pi = 0;
        }
    }
}

uint32_t Node::create_pd()
{
    virtio_rdma_rsp_create_pd rsp{};
    uint8_t rb[VRDMA_CTRL_RSP_MAX];
    EXPECT_EQ(ctrl_raw(VIRTIO_RDMA_CMD_CREATE_PD, nullptr, 0, rb, sizeof(rb)),
              VIRTIO_RDMA_OK);
    std::memcpy(&rsp, rb, sizeof(rsp));
    return rsp.pdn;
}

uint32_t Node::create_cq(uint32_t cqe)
{
    const uint32_t entries = std::bit_ceil(std::max(cqe, 1u));
    auto cq = std::make_unique<RingCq>(
        *this, VIRTIO_RDMA_KERNEL_CTX, cqe,
        static_cast<uint8_t>(std::countr_zero(entries)));
    const uint32_t cqn = cq->cqn;
    if (cqn != UINT32_MAX) {
        ring_cqs_[cqn] = std::move(cq);
    }
    return cqn;
}

void Node::add_gid(uint16_t index, const Gid &g)
{
    virtio_rdma_cmd_add_gid r{};
    std::memcpy(r.gid, g.data(), 16);
    r.gid_type = VIRTIO_RDMA_GID_TYPE_ROCE_UDP_ENCAP;
    r.index = index;
    r.port_num = 1;
    EXPECT_EQ(ctrl(VIRTIO_RDMA_CMD_ADD_GID, r), VIRTIO_RDMA_OK);
}

void Node::del_gid(uint16_t index)
{
    virtio_rdma_cmd_del_gid r{};
    r.index = index;
    r.port = 1;
    EXPECT_EQ(ctrl(VIRTIO_RDMA_CMD_DEL_GID, r), VIRTIO_RDMA_OK);
}

void Node::arm_cq(uint32_t cqn, uint32_t flags)
{
    const size_t errors_before = errors.size();
    doorbell(VIRTIO_RDMA_DB(VIRTIO_RDMA_DB_CQ_ARM, cqn, flags));
    EXPECT_EQ(errors.size(), errors_before) << "CQ " << cqn << " not armed";
}

uint64_t Node::alloc(uint64_t len)
{
    const uint64_t size = (len + 4095) & ~uint64_t{4095};
    const uint64_t end0 = FakeGuest::kRam0.base + FakeGuest::kRam0.size;
    if (next_ram_ + size > end0 && next_ram_ <= end0) { /* low RAM is full */
        next_ram_ = FakeGuest::kRam1.base + kTableBytes; /* after tables */
    }
    const uint64_t at = next_ram_;
    next_ram_ += size;
    EXPECT_NE(guest.host(at, size), nullptr) << "test ran out of guest RAM";
    return at;
}

namespace {

/* Writes a two-level page table for [addr, addr + len) at @table. */
uint32_t write_table(FakeGuest &g, uint64_t table, uint64_t addr, uint64_t len)
{
    const uint64_t first = addr & ~uint64_t{4095};
    const uint64_t last = (addr + len - 1) & ~uint64_t{4095};
    const uint32_t n = static_cast<uint32_t>((last - first) / 4096 + 1);
    const uint32_t n_l2 = (n + 511) / 512;
    for (uint32_t i = 0; i < n_l2; i++) {
        const uint64_t l2 = table + (i + 1) * 4096ull;
        g.poke64(table + i * 8, l2);
        for (uint32_t j = 0; j < 512 && i * 512 + j < n; j++) {
            g.poke64(l2 + j * 8, first + (i * 512ull + j) * 4096);
        }
    }
    return n;
}

} // namespace

uint64_t Node::page_table(uint64_t addr, uint64_t len, uint32_t *npages)
{
    const uint64_t table = next_table_;
    *npages = write_table(guest, table, addr, len);
    next_table_ += (1 + (*npages + 511) / 512) * 4096ull;
    EXPECT_LE(next_table_, FakeGuest::kRam1.base + kTableBytes)
        << "test ran out of page-table room";
    return table;
}

MrInfo Node::reg_mr(uint32_t pdn, uint64_t addr, uint64_t len,
                    uint32_t access)
{
    const uint64_t table = next_table_;
    const uint32_t n = write_table(guest, table, addr, len);
    next_table_ += (1 + (n + 511) / 512) * 4096ull;
    virtio_rdma_cmd_reg_user_mr r{};
    r.pdn = pdn;
    r.access_flags = access;
    r.start = addr;
    r.length = len;
    r.virt_addr = addr;
    r.pages = table;
    r.npages = n;
    virtio_rdma_rsp_mr rsp{};
    EXPECT_EQ(ctrl(VIRTIO_RDMA_CMD_REG_USER_MR, r, &rsp), VIRTIO_RDMA_OK);
    return MrInfo{rsp.mrn, rsp.lkey, rsp.rkey, addr, len};
}

MrInfo Node::dma_mr(uint32_t pdn, uint32_t access)
{
    virtio_rdma_rsp_mr rsp{};
    EXPECT_EQ(ctrl(VIRTIO_RDMA_CMD_GET_DMA_MR,
                   virtio_rdma_cmd_get_dma_mr{.pdn = pdn,
                                              .access_flags = access},
                   &rsp),
              VIRTIO_RDMA_OK);
    return MrInfo{rsp.mrn, rsp.lkey, rsp.rkey, 0, UINT64_MAX};
}

MrInfo Node::fast_mr(uint32_t pdn, uint64_t addr, uint64_t len)
{
    const uint64_t table = next_table_;
    const uint32_t n = write_table(guest, table, addr, len);
    next_table_ += (1 + (n + 511) / 512) * 4096ull;
    virtio_rdma_rsp_mr rsp{};
    EXPECT_EQ(ctrl(VIRTIO_RDMA_CMD_CREATE_MR,
                   virtio_rdma_cmd_create_mr{.pdn = pdn, .access_flags = 0,
                                             .max_num_sg = n},
                   &rsp),
              VIRTIO_RDMA_OK);
    virtio_rdma_cmd_map_mr_sg m{};
    m.mrn = rsp.mrn;
    m.npages = n;
    m.start = addr;
    m.length = len;
    m.pages = table;
    virtio_rdma_rsp_map_mr_sg mr{};
    EXPECT_EQ(ctrl(VIRTIO_RDMA_CMD_MAP_MR_SG, m, &mr), VIRTIO_RDMA_OK);
    return MrInfo{rsp.mrn, rsp.lkey, rsp.rkey, addr, len};
}

uint8_t Node::dereg_mr(uint32_t mrn)
{
    return ctrl(VIRTIO_RDMA_CMD_DEREG_MR, virtio_rdma_cmd_dereg_mr{.mrn = mrn});
}

uint32_t Node::create_qp(uint32_t pdn, uint8_t type, uint32_t scq,
                         uint32_t rcq, uint32_t max_sge, uint8_t sig)
{
    return create_qp(
        qp_request(pdn, type, scq, rcq, kNodeQpLogDepth, max_sge, sig));
}

uint32_t Node::create_qp(const virtio_rdma_cmd_create_qp &q)
{
    auto qp = std::make_unique<RingQp>(*this, VIRTIO_RDMA_KERNEL_CTX, q);
    const uint32_t qpn = qp->qpn;
    if (qpn != UINT32_MAX) {
        ring_qps_[qpn] = std::move(qp);
    }
    return qpn;
}

void Node::set_features(uint64_t f)
{
    features = f;
    vrdma_core_set_features(core, f);
}

void Node::reset()
{
    vrdma_core_reset(core);
    ring_cqs_.clear();
    ring_qps_.clear();
    held_.clear();
    wires.clear();
    turn_more = false;
    set_features(features);
}

uint8_t Node::destroy_qp(uint32_t qpn)
{
    return ctrl(VIRTIO_RDMA_CMD_DESTROY_QP,
                virtio_rdma_cmd_destroy_qp{.qpn = qpn});
}

uint8_t Node::modify(uint32_t qpn, uint32_t mask, const virtio_rdma_qp_attr &a)
{
    virtio_rdma_cmd_modify_qp m{};
    m.qpn = qpn;
    m.attr_mask = mask;
    m.attrs = a;
    return ctrl(VIRTIO_RDMA_CMD_MODIFY_QP, m);
}

uint8_t Node::to_state(uint32_t qpn, uint32_t state)
{
    virtio_rdma_qp_attr a{};
    a.qp_state = state;
    return modify(qpn, VIRTIO_RDMA_QP_STATE, a);
}

uint32_t Node::qp_state(uint32_t qpn)
{
    virtio_rdma_qp_attr rsp{};
    EXPECT_EQ(ctrl(VIRTIO_RDMA_CMD_QUERY_QP,
                   virtio_rdma_cmd_query_qp{.qpn = qpn, .attr_mask = 0}, &rsp),
              VIRTIO_RDMA_OK);
    return rsp.qp_state;
}

void Node::ud_up(uint32_t qpn, uint32_t qkey, uint32_t sq_psn)
{
    virtio_rdma_qp_attr a{};
    a.qp_state = VIRTIO_RDMA_QPS_INIT;
    a.qkey = qkey;
    a.port_num = 1;
    const bool gsi = qpn == 1;
    ASSERT_EQ(modify(qpn,
                     VIRTIO_RDMA_QP_STATE | VIRTIO_RDMA_QP_PKEY_INDEX |
                         VIRTIO_RDMA_QP_QKEY |
                         (gsi ? 0u : VIRTIO_RDMA_QP_PORT),
                     a),
              VIRTIO_RDMA_OK);
    a.qp_state = VIRTIO_RDMA_QPS_RTR;
    ASSERT_EQ(modify(qpn, VIRTIO_RDMA_QP_STATE, a), VIRTIO_RDMA_OK);
    a.qp_state = VIRTIO_RDMA_QPS_RTS;
    a.sq_psn = sq_psn;
    ASSERT_EQ(modify(qpn, VIRTIO_RDMA_QP_STATE | VIRTIO_RDMA_QP_SQ_PSN, a),
              VIRTIO_RDMA_OK);
}

bool Node::post_send(uint32_t qpn, const SendWr &wr)
{
    return post(qpn, false, wr.bytes());
}

bool Node::post_send_raw(uint32_t qpn, const Bytes &b)
{
    return post(qpn, false, b);
}

bool Node::post_recv(uint32_t qpn, uint64_t wr_id,
                     const std::vector<virtio_rdma_sge> &sges)
{
    return post(qpn, true, recv_bytes(wr_id, sges));
}

bool Node::post_recv_raw(uint32_t qpn, const Bytes &b)
{
    return post(qpn, true, b);
}

bool Node::post(uint32_t qpn, bool is_rq, const Bytes &b)
{
    const uint8_t type = is_rq ? VIRTIO_RDMA_DB_RQ : VIRTIO_RDMA_DB_SQ;
    const auto it = ring_qps_.find(qpn);
    if (it == ring_qps_.end()) { /* a number the driver never got */
        doorbell(VIRTIO_RDMA_DB(type, qpn, 1));
        return false;
    }
    RingQp &q = *it->second;
    const RingMem &ring = is_rq ? q.rq : q.sq;
    uint32_t &pi = is_rq ? q.rq_pi : q.sq_pi;
    if (!ring.gpa) { /* no such queue (max_recv_wr 0, an SRQ) */
        doorbell(VIRTIO_RDMA_DB(type, qpn, pi + 1));
        return false;
    }
    if (!ring.has_room(*this, pi)) {
        ring_full++;
        return false;
    }
    ring.put(*this, pi, b);
    pi++;
    doorbell(VIRTIO_RDMA_DB(type, qpn, pi));
    return true;
}

bool Node::doorbell(uint64_t value)
{
    const auto ring = [&] {
        return vrdma_core_doorbell(core, VIRTIO_RDMA_KERNEL_CTX, value);
    };
    const bool waits = wire ? wire->call(this, ring) : ring();
    if (waits) {
        turn();
    }
    return waits;
}

void Node::turn()
{
    const auto once = [&] { return vrdma_core_rings_turn(core); };
    turn_more = wire ? wire->call(this, once) : once();
    collect();
}

bool Node::receive(const Bytes &frame)
{
    const bool ours = vrdma_core_net_receive(core, frame.data(), frame.size());
    collect();
    return ours;
}

VrdmaDpStats Node::stats() const
{
    VrdmaDpStats s;
    vrdma_core_get_dp_stats(core, &s);
    return s;
}

static uint8_t pattern(uint32_t seed, uint64_t i)
{
    uint64_t x = (uint64_t{seed} << 32) ^ i;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 29;
    return static_cast<uint8_t>(x);
}

void Node::fill(uint64_t gpa, uint64_t len, uint32_t seed)
{
    uint8_t *p = mem(gpa, len);
    for (uint64_t i = 0; i < len; i++) {
        p[i] = pattern(seed, i);
    }
}

bool Node::check(uint64_t gpa, uint64_t len, uint32_t seed)
{
    const uint8_t *p = mem(gpa, len);
    for (uint64_t i = 0; i < len; i++) {
        if (p[i] != pattern(seed, i)) {
            ADD_FAILURE() << "byte " << i << " of " << len << " at 0x"
                          << std::hex << gpa + i << ": 0x" << int(p[i])
                          << " != 0x" << int(pattern(seed, i));
            return false;
        }
    }
    return true;
}

std::deque<virtio_rdma_cq_req> &Node::cq(uint32_t cqn)
{
    collect();
    return cqes[cqn];
}

virtio_rdma_cq_req Node::pop_cqe(uint32_t cqn)
{
    auto &q = cq(cqn);
    if (q.empty()) {
        ADD_FAILURE() << "node " << id << ": no CQE on CQ " << cqn;
        virtio_rdma_cq_req none{};
        none.wr_id = ~0ull;
        none.status = 0xFFFF;
        return none;
    }
    virtio_rdma_cq_req c = q.front();
    q.pop_front();
    return c;
}

void Node::collect()
{
    for (auto &[cqn, ring] : ring_cqs_) {
        if (held_.count(cqn)) {
            continue;
        }
        while (const auto c = ring->poll()) {
            cqe_count++;
            if (c->status != VIRTIO_RDMA_WC_SUCCESS) {
                bad_cqe_count++;
                last_bad_status = c->status;
            }
            if (keep_cqes) {
                cqes[cqn].push_back(*c); /* little-endian host: as is */
            }
        }
    }
}

void Node::hold_cq(uint32_t cqn, bool hold)
{
    if (hold) {
        collect(); /* what came before the hold is the driver's */
        held_.insert(cqn);
    } else {
        held_.erase(cqn);
    }
}

RingCq *Node::ring_cq(uint32_t cqn)
{
    const auto it = ring_cqs_.find(cqn);
    return it == ring_cqs_.end() ? nullptr : it->second.get();
}

RingQp *Node::ring_qp(uint32_t qpn)
{
    const auto it = ring_qps_.find(qpn);
    return it == ring_qps_.end() ? nullptr : it->second.get();
}

/* ---- Wire ---- */

bool Wire::chance(double p)
{
    return p > 0 && std::uniform_real_distribution<double>(0, 1)(rng) < p;
}

Bytes Wire::take_buffer(const uint8_t *p, size_t len)
{
    Bytes b;
    if (!spare_.empty()) {
        b = std::move(spare_.back());
        spare_.pop_back();
    }
    b.assign(p, p + len);
    return b;
}

void Wire::send(int src, const uint8_t *p, size_t len)
{
    frames++;
    int dst = -1;
    for (size_t i = 0; i < nodes.size(); i++) {
        if (len >= 6 && std::memcmp(p, nodes[i]->mac.data(), 6) == 0) {
            dst = static_cast<int>(i);
        }
    }
    if (capture) {
        captured.push_back(Frame{src, dst, Bytes(p, p + len)});
    }
    if (dst < 0) {
        unroutable++; /* not even copied: a sink for one-node benchmarks */
        return;
    }
    Frame f{src, dst, take_buffer(p, len)};
    if (tap && !tap(f)) {
        lost++;
        return;
    }
    if (chance(faults.loss)) {
        lost++;
        return;
    }
    if (chance(faults.corrupt)) {
        const size_t bit = std::uniform_int_distribution<size_t>(
            0, f.data.size() * 8 - 1)(rng);
        f.data[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
        corrupted++;
    }
    const int copies = chance(faults.dup) ? 2 : 1;
    duplicated += copies - 1;
    for (int i = 0; i < copies; i++) {
        Frame c = i + 1 < copies ? f : std::move(f);
        if (!q.empty() && chance(faults.reorder)) {
            const size_t back = std::min<size_t>(
                q.size(), std::uniform_int_distribution<size_t>(1, 8)(rng));
            q.insert(q.end() - static_cast<long>(back), std::move(c));
            reordered++;
        } else {
            q.push_back(std::move(c));
        }
    }
}

bool Wire::step()
{
    steps++;
    /* A timer that is due fires first, even with frames in flight. */
    for (Node *n : nodes) {
        if (n->deadline <= now) {
            n->deadline = UINT64_MAX;
            call(n, [&] {
                vrdma_core_timer(n->core);
                return 0;
            });
            n->collect();
            return true;
        }
    }
    if (!q.empty()) {
        Frame f = std::move(q.front());
        q.pop_front();
        now += ns_per_frame;
        Node *n = nodes[f.dst];
        if (!call(n, [&] {
                return vrdma_core_net_receive(n->core, f.data.data(),
                                              f.data.size());
            })) {
            n->not_ours.push_back(std::move(f.data));
        } else {
            spare_.push_back(std::move(f.data));
        }
        n->collect();
        return true;
    }
    for (size_t i = 0; i < nodes.size(); i++) {
        Node *n = nodes[(steps + i) % nodes.size()];
        if (n->turn_more) {
            n->turn(); /* polls */
            return true;
        }
        if (n->kicked || n->run_more) {
            n->kicked = false;
            n->run_more = call(n, [&] { return vrdma_core_run(n->core); });
            n->collect();
            return true;
        }
    }
    uint64_t next = UINT64_MAX;
    for (Node *n : nodes) {
        next = std::min(next, n->deadline);
    }
    if (next == UINT64_MAX) {
        return false;
    }
    now = std::max(now, next);
    for (Node *n : nodes) {
        if (n->deadline <= now) {
            n->deadline = UINT64_MAX;
            call(n, [&] {
                vrdma_core_timer(n->core);
                return 0;
            });
            n->collect();
        }
    }
    return true;
}

bool Wire::pump(uint64_t max_steps)
{
    for (uint64_t i = 0; i < max_steps; i++) {
        if (!step()) {
            return true;
        }
    }
    return false;
}

bool Wire::pump_until(const std::function<bool()> &done, uint64_t max_steps)
{
    for (uint64_t i = 0; i < max_steps; i++) {
        if (done()) {
            return true;
        }
        if (!step()) {
            return done();
        }
    }
    return done();
}

/* ---- DpTest ---- */

void DpTest::SetUp()
{
    a = std::make_unique<Node>(&wire, 0);
    b = std::make_unique<Node>(&wire, 1);
    for (Node *n : {a.get(), b.get()}) {
        n->add_gid(0, n->gid);
    }
    pd_a = a->create_pd();
    pd_b = b->create_pd();
    cq_a = a->create_cq();
    cq_b = b->create_cq();
}

void DpTest::TearDown()
{
    b.reset();
    a.reset();
}

void DpTest::connect_pair(Node &x, uint32_t qx, Node &y, uint32_t qy,
                          uint8_t type, const Conn &conn, bool x_is_a)
{
    const bool rc = type == VIRTIO_RDMA_QPT_RC;
    virtio_rdma_qp_attr a{};
    a.qp_state = VIRTIO_RDMA_QPS_INIT;
    a.port_num = 1;
    a.qp_access_flags = conn.access;
    ASSERT_EQ(x.modify(qx,
                       VIRTIO_RDMA_QP_STATE | VIRTIO_RDMA_QP_PKEY_INDEX |
                           VIRTIO_RDMA_QP_PORT | VIRTIO_RDMA_QP_ACCESS_FLAGS,
                       a),
              VIRTIO_RDMA_OK);
    a.qp_state = VIRTIO_RDMA_QPS_RTR;
    a.path_mtu = conn.mtu;
    a.dest_qp_num = y.wire_qpn(qy);
    a.rq_psn = x_is_a ? conn.psn_b : conn.psn_a;
    a.max_dest_rd_atomic = conn.max_dest_rd_atomic;
    a.min_rnr_timer = conn.min_rnr_timer;
    a.ah_attr.ah_flags = VIRTIO_RDMA_AH_GRH;
    a.ah_attr.port_num = 1;
    a.ah_attr.grh.sgid_index = conn.sgid_index;
    a.ah_attr.grh.hop_limit = 64;
    const Gid &dgid = conn.sgid_index ? gid_v6(static_cast<uint8_t>(y.id + 1))
                                      : y.gid;
    std::memcpy(a.ah_attr.grh.dgid, dgid.data(), 16);
    std::memcpy(a.ah_attr.dmac, y.mac.data(), 6);
    uint32_t mask = VIRTIO_RDMA_QP_STATE | VIRTIO_RDMA_QP_AV |
                    VIRTIO_RDMA_QP_PATH_MTU | VIRTIO_RDMA_QP_DEST_QPN |
                    VIRTIO_RDMA_QP_RQ_PSN;
    if (rc) {
        mask |= VIRTIO_RDMA_QP_MAX_DEST_RD_ATOMIC |
                VIRTIO_RDMA_QP_MIN_RNR_TIMER;
    }
    ASSERT_EQ(x.modify(qx, mask, a), VIRTIO_RDMA_OK);
    a.qp_state = VIRTIO_RDMA_QPS_RTS;
    a.sq_psn = x_is_a ? conn.psn_a : conn.psn_b;
    a.timeout = conn.timeout;
    a.retry_cnt = conn.retry_cnt;
    a.rnr_retry = conn.rnr_retry;
    a.max_rd_atomic = conn.max_rd_atomic;
    mask = VIRTIO_RDMA_QP_STATE | VIRTIO_RDMA_QP_SQ_PSN;
    if (rc) {
        mask |= VIRTIO_RDMA_QP_TIMEOUT | VIRTIO_RDMA_QP_RETRY_CNT |
                VIRTIO_RDMA_QP_RNR_RETRY | VIRTIO_RDMA_QP_MAX_QP_RD_ATOMIC;
    }
    ASSERT_EQ(x.modify(qx, mask, a), VIRTIO_RDMA_OK);
}

std::pair<uint32_t, uint32_t> DpTest::connect(uint8_t type, const Conn &conn,
                                              uint32_t max_sge)
{
    const uint32_t qa = a->create_qp(pd_a, type, cq_a, cq_a, max_sge);
    const uint32_t qb = b->create_qp(pd_b, type, cq_b, cq_b, max_sge);
    connect_pair(*a, qa, *b, qb, type, conn, true);
    connect_pair(*b, qb, *a, qa, type, conn, false);
    return {qa, qb};
}

} // namespace vrdma_test

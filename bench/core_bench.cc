/*
 * Benchmarks of the virtio-rdma C++ core (Google Benchmark), no QEMU.
 *
 *   RcWrite        RC RDMA WRITE of 64 KiB messages between two cores on an
 *                  in-memory Ethernet wire (one thread runs both), path MTU
 *                  4096 (also 1024 for comparison), D messages in flight;
 *                  bytes/s of payload delivered into the responder's memory.
 *   Memcpy         single-thread memcpy of the same sizes, in the same run:
 *                  the yardstick of RcWrite (the ratio is printed at the end).
 *   UdSendTx       64-byte UD SENDs transmitted by one core (post, build,
 *                  ICRC, hand to the host): packets/s.
 *   UdSendRx       64-byte UD SENDs received by one core (parse, ICRC check,
 *                  copy, CQE; one receive WQE posted per packet): packets/s.
 *   RcSend         64-byte RC SENDs between two cores, receive WQEs posted,
 *                  ACKs included: messages/s and packets/s (both cores).
 *   Icrc           the ICRC of one 4 KiB-payload RC WRITE MIDDLE packet
 *                  (IPv4 and IPv6), and the raw CRC-32 of its 4096 bytes.
 *
 * The harness below is this file's own (the unit tests' one is for
 * checking, not for speed): guest RAM is one flat buffer, the wire is a ring
 * of preallocated frame buffers, CQEs are counted, not kept, and now_ns()
 * is CLOCK_MONOTONIC as in QEMU.  Every benchmark checks its own outcome
 * (completions, statuses, drops) and reports an error instead of a number
 * if the core did not do the work.  Nothing here fails on a target: the
 * summary at the end prints the measured ratios next to the targets.
 *
 *   build-unit/bench/core-bench [--benchmark_min_time=2] [--benchmark_filter=...]
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

#include "hw/rdma/virtio-rdma-core.h"
#include "roce/frame.h"
#include "roce/icrc.h"
#include "roce/opcode.h"

namespace {

constexpr uint64_t kPage = 4096;
constexpr uint32_t kMsg = 64 * 1024;     /* RcWrite message size */
constexpr uint32_t kSmall = 64;          /* UdSend / RcSend payload */
constexpr uint32_t kQueue = 1024;        /* queue_size: SQ/RQ/CQ depth */
constexpr uint32_t kQkey = 0x11111111;

constexpr uint32_t kAccessAll =
    VIRTIO_RDMA_ACCESS_LOCAL_WRITE | VIRTIO_RDMA_ACCESS_REMOTE_WRITE |
    VIRTIO_RDMA_ACCESS_REMOTE_READ | VIRTIO_RDMA_ACCESS_REMOTE_ATOMIC;

uint64_t mono_ns()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

/* ---- the wire: a FIFO of frames in preallocated buffers ------------------ */

class Node;

class Wire {
public:
    static constexpr size_t kSlotBytes = 9216;

    void push(int dst, const void *p, size_t len)
    {
        if (len > kSlotBytes) {
            oversize++;
            return;
        }
        if (count_ == slots_.size()) {
            grow();
        }
        Slot &s = slots_[(head_ + count_) & (slots_.size() - 1)];
        std::memcpy(s.buf.get(), p, len);
        s.len = static_cast<uint32_t>(len);
        s.dst = dst;
        count_++;
        frames++;
        bytes += len;
    }
    bool empty() const { return count_ == 0; }
    /* Delivers the oldest frame; may queue new ones. */
    void deliver_one();
    /*
     * One round: every queued frame (and those the deliveries queue), then
     * a run() of every core that asked for one; a due timer fires.
     * @returns false if there was nothing to do at all.
     */
    bool step();

    /* Calls @f, adding the time it takes to @n's busy_ns if timed. */
    template <typename F>
    auto call(Node *n, F f);

    std::vector<Node *> nodes;
    bool timed = false;
    uint64_t frames = 0, bytes = 0, unroutable = 0, oversize = 0,
             not_taken = 0, timers = 0;

private:
    struct Slot {
        std::unique_ptr<uint8_t[]> buf{new uint8_t[kSlotBytes]};
        uint32_t len = 0;
        int dst = -1;
    };
    void grow()
    {
        std::vector<Slot> n(std::max<size_t>(256, slots_.size() * 2));
        for (size_t i = 0; i < count_; i++) {
            n[i] = std::move(slots_[(head_ + i) & (slots_.size() - 1)]);
        }
        slots_ = std::move(n);
        head_ = 0;
    }
    std::vector<Slot> slots_;
    size_t head_ = 0, count_ = 0;
};

/* ---- one core over its own flat guest RAM --------------------------------- */

struct MrInfo {
    uint32_t lkey = 0, rkey = 0;
    uint64_t addr = 0;
};

class Node {
public:
    static constexpr uint64_t kRamBase = 1ull << 20;
    static constexpr uint64_t kRamSize = 16ull << 20;

    /* @wire: frames go there; nullptr: frames are counted and dropped. */
    Node(Wire *wire, int id) : wire_(wire), id_(id), ram_(kRamSize)
    {
        mac = {0x02, 0, 0, 0, 0, static_cast<uint8_t>(0x10 + id)};
        gid = gid_v4(10, 0, 0, static_cast<uint8_t>(1 + id));
        VrdmaLimits lim{};
        lim.max_qp = 16;
        lim.max_cq = 8;
        lim.max_mr = 32;
        lim.max_pd = 4;
        lim.max_ah = 4;
        lim.max_mr_size = 8ull << 20;
        lim.queue_size = kQueue;
        lim.max_sge = 4;
        lim.sys_image_guid = 0x0123456789abcdefull + id;
        lim.phys_mtu = 9000; /* active MTU 4096 */
        std::memcpy(lim.mac, mac.data(), 6);

        ops_.opaque = this;
        ops_.map = [](void *o, uint64_t gpa, uint64_t len, bool) -> void * {
            return static_cast<Node *>(o)->host(gpa, len);
        };
        ops_.unmap = [](void *, void *, uint64_t, bool) {};
        ops_.read = [](void *o, uint64_t gpa, void *buf, uint64_t len) {
            uint8_t *p = static_cast<Node *>(o)->host(gpa, len);
            if (!p) {
                return -1;
            }
            std::memcpy(buf, p, len);
            return 0;
        };
        ops_.write = [](void *o, uint64_t gpa, const void *buf, uint64_t len) {
            uint8_t *p = static_cast<Node *>(o)->host(gpa, len);
            if (!p) {
                return -1;
            }
            std::memcpy(p, buf, len);
            return 0;
        };
        ops_.gid_changed = [](void *, uint32_t, uint32_t, const uint8_t *,
                              uint32_t, bool) {};
        ops_.guest_error = [](void *o, uint8_t, VrdmaErr, uint64_t, uint64_t) {
            static_cast<Node *>(o)->guest_errors++;
        };
        ops_.net_send = [](void *o, const void *frame, size_t len) {
            static_cast<Node *>(o)->net_send(frame, len);
        };
        ops_.cq_push = [](void *o, uint32_t, const virtio_rdma_cq_req *c) {
            Node *n = static_cast<Node *>(o);
            n->cqes++;
            if (c->status != VIRTIO_RDMA_WC_SUCCESS) {
                n->bad_cqes++;
                n->last_bad_status = c->status;
            }
            return 0;
        };
        ops_.cq_notify = [](void *, uint32_t) {};
        ops_.now_ns = [](void *) { return mono_ns(); };
        ops_.timer_mod = [](void *o, uint64_t deadline) {
            static_cast<Node *>(o)->deadline = deadline;
        };
        ops_.kick = [](void *o) { static_cast<Node *>(o)->kicked = true; };
        ops_.wire_drop = [](void *, const char *, uint32_t) {};
        core = vrdma_core_new(&lim, &ops_);
        if (wire_) {
            wire_->nodes.push_back(this);
        }
    }
    ~Node() { vrdma_core_free(core); }
    Node(const Node &) = delete;
    Node &operator=(const Node &) = delete;

    static std::array<uint8_t, 16> gid_v4(uint8_t a, uint8_t b, uint8_t c,
                                          uint8_t d)
    {
        std::array<uint8_t, 16> g{};
        g[10] = g[11] = 0xFF;
        g[12] = a;
        g[13] = b;
        g[14] = c;
        g[15] = d;
        return g;
    }

    uint8_t *host(uint64_t gpa, uint64_t len)
    {
        if (gpa < kRamBase || len > kRamSize || gpa - kRamBase > kRamSize - len) {
            return nullptr;
        }
        return ram_.data() + (gpa - kRamBase);
    }

    /* ---- control path (any failure is remembered in ok) ---- */
    template <typename Req, typename Rsp = uint8_t>
    void ctrl(uint8_t cmd, const Req *req, size_t req_len, Rsp *out = nullptr)
    {
        uint8_t rsp[VRDMA_CTRL_RSP_MAX] = {};
        size_t rsp_len = 0;
        if (vrdma_core_ctrl(core, cmd, req, req_len, rsp, sizeof(rsp),
                            &rsp_len) != VIRTIO_RDMA_OK) {
            ok = false;
            std::fprintf(stderr, "core-bench: node %d: %s failed\n", id_,
                         vrdma_cmd_name(cmd));
        }
        if (out) {
            std::memcpy(out, rsp, sizeof(*out));
        }
    }
    uint32_t create_pd()
    {
        virtio_rdma_rsp_create_pd rsp{};
        ctrl<uint8_t>(VIRTIO_RDMA_CMD_CREATE_PD, nullptr, 0, &rsp);
        return rsp.pdn;
    }
    uint32_t create_cq(uint32_t n)
    {
        virtio_rdma_cmd_create_cq r{.cqe = n};
        virtio_rdma_rsp_create_cq rsp{};
        ctrl(VIRTIO_RDMA_CMD_CREATE_CQ, &r, sizeof(r), &rsp);
        return rsp.cqn;
    }
    void add_gid()
    {
        virtio_rdma_cmd_add_gid r{};
        std::memcpy(r.gid, gid.data(), 16);
        r.gid_type = VIRTIO_RDMA_GID_TYPE_ROCE_UDP_ENCAP;
        r.index = 0;
        r.port_num = 1;
        ctrl(VIRTIO_RDMA_CMD_ADD_GID, &r, sizeof(r));
    }
    uint64_t alloc(uint64_t len)
    {
        const uint64_t at = next_;
        next_ += (len + kPage - 1) & ~(kPage - 1);
        if (next_ > kRamBase + kRamSize) {
            ok = false;
            std::fprintf(stderr, "core-bench: out of guest RAM\n");
            return kRamBase;
        }
        return at;
    }
    /* A region of @len bytes registered with REG_USER_MR (iova = gpa). */
    MrInfo reg_mr(uint32_t pdn, uint64_t len, uint32_t access = kAccessAll)
    {
        const uint64_t addr = alloc(len);
        const uint32_t n = static_cast<uint32_t>((len + kPage - 1) / kPage);
        const uint32_t n_l2 = (n + 511) / 512;
        const uint64_t table = alloc((1 + n_l2) * kPage);
        for (uint32_t i = 0; i < n_l2; i++) {
            const uint64_t l2 = table + (i + 1) * kPage;
            poke64(table + i * 8, l2);
            for (uint32_t j = 0; j < 512 && i * 512 + j < n; j++) {
                poke64(l2 + j * 8, addr + (i * 512ull + j) * kPage);
            }
        }
        virtio_rdma_cmd_reg_user_mr r{};
        r.pdn = pdn;
        r.access_flags = access;
        r.start = addr;
        r.length = len;
        r.virt_addr = addr;
        r.pages = table;
        r.npages = n;
        virtio_rdma_rsp_mr rsp{};
        ctrl(VIRTIO_RDMA_CMD_REG_USER_MR, &r, sizeof(r), &rsp);
        return MrInfo{rsp.lkey, rsp.rkey, addr};
    }
    uint32_t create_qp(uint32_t pdn, uint8_t type, uint32_t cqn)
    {
        virtio_rdma_cmd_create_qp r{};
        r.pdn = pdn;
        r.qp_type = type;
        r.sq_sig_type = VIRTIO_RDMA_SIGNAL_REQ_WR;
        r.max_send_wr = kQueue;
        r.max_send_sge = 1;
        r.send_cqn = cqn;
        r.max_recv_wr = kQueue;
        r.max_recv_sge = 1;
        r.recv_cqn = cqn;
        virtio_rdma_rsp_create_qp rsp{};
        ctrl(VIRTIO_RDMA_CMD_CREATE_QP, &r, sizeof(r), &rsp);
        return rsp.qpn;
    }
    void modify(uint32_t qpn, uint32_t mask, const virtio_rdma_qp_attr &a)
    {
        virtio_rdma_cmd_modify_qp m{};
        m.qpn = qpn;
        m.attr_mask = mask;
        m.attrs = a;
        ctrl(VIRTIO_RDMA_CMD_MODIFY_QP, &m, sizeof(m));
    }
    /* RC QP @qpn to RTS towards @peer's QP @peer_qpn. */
    void rc_connect(uint32_t qpn, const Node &peer, uint32_t peer_qpn,
                    uint32_t mtu, uint32_t sq_psn, uint32_t rq_psn)
    {
        virtio_rdma_qp_attr a{};
        a.qp_state = VIRTIO_RDMA_QPS_INIT;
        a.port_num = 1;
        a.qp_access_flags = kAccessAll;
        modify(qpn, VIRTIO_RDMA_QP_STATE | VIRTIO_RDMA_QP_PKEY_INDEX |
                        VIRTIO_RDMA_QP_PORT | VIRTIO_RDMA_QP_ACCESS_FLAGS,
               a);
        a.qp_state = VIRTIO_RDMA_QPS_RTR;
        a.path_mtu = mtu;
        a.dest_qp_num = peer_qpn;
        a.rq_psn = rq_psn;
        a.max_dest_rd_atomic = 16;
        a.min_rnr_timer = 1;
        a.ah_attr.ah_flags = VIRTIO_RDMA_AH_GRH;
        a.ah_attr.port_num = 1;
        a.ah_attr.grh.sgid_index = 0;
        a.ah_attr.grh.hop_limit = 64;
        std::memcpy(a.ah_attr.grh.dgid, peer.gid.data(), 16);
        std::memcpy(a.ah_attr.dmac, peer.mac.data(), 6);
        modify(qpn, VIRTIO_RDMA_QP_STATE | VIRTIO_RDMA_QP_AV |
                        VIRTIO_RDMA_QP_PATH_MTU | VIRTIO_RDMA_QP_DEST_QPN |
                        VIRTIO_RDMA_QP_RQ_PSN |
                        VIRTIO_RDMA_QP_MAX_DEST_RD_ATOMIC |
                        VIRTIO_RDMA_QP_MIN_RNR_TIMER,
               a);
        a.qp_state = VIRTIO_RDMA_QPS_RTS;
        a.sq_psn = sq_psn;
        a.timeout = 14; /* 67 ms: never expires on this lossless wire */
        a.retry_cnt = 7;
        a.rnr_retry = 7;
        a.max_rd_atomic = 16;
        modify(qpn, VIRTIO_RDMA_QP_STATE | VIRTIO_RDMA_QP_SQ_PSN |
                        VIRTIO_RDMA_QP_TIMEOUT | VIRTIO_RDMA_QP_RETRY_CNT |
                        VIRTIO_RDMA_QP_RNR_RETRY |
                        VIRTIO_RDMA_QP_MAX_QP_RD_ATOMIC,
               a);
    }
    void ud_ready(uint32_t qpn)
    {
        virtio_rdma_qp_attr a{};
        a.qp_state = VIRTIO_RDMA_QPS_INIT;
        a.qkey = kQkey;
        a.port_num = 1;
        modify(qpn, VIRTIO_RDMA_QP_STATE | VIRTIO_RDMA_QP_PKEY_INDEX |
                        VIRTIO_RDMA_QP_QKEY | VIRTIO_RDMA_QP_PORT,
               a);
        a.qp_state = VIRTIO_RDMA_QPS_RTR;
        modify(qpn, VIRTIO_RDMA_QP_STATE, a);
        a.qp_state = VIRTIO_RDMA_QPS_RTS;
        a.sq_psn = 0;
        modify(qpn, VIRTIO_RDMA_QP_STATE | VIRTIO_RDMA_QP_SQ_PSN, a);
    }

    /* run() until the core has nothing queued (sink nodes). */
    void run_all()
    {
        while (kicked || run_more) {
            kicked = false;
            run_more = vrdma_core_run(core);
        }
    }
    VrdmaDpStats stats() const
    {
        VrdmaDpStats s;
        vrdma_core_get_dp_stats(core, &s);
        return s;
    }

    std::array<uint8_t, 6> mac{};
    std::array<uint8_t, 16> gid{};
    VrdmaCore *core = nullptr;
    bool ok = true;
    bool kicked = false;
    bool run_more = false;
    uint64_t deadline = UINT64_MAX;
    uint64_t cqes = 0, bad_cqes = 0, guest_errors = 0;
    uint64_t busy_ns = 0; /* in this core's calls (when the wire times them) */
    uint32_t last_bad_status = 0;
    /* Sink mode: frames counted; the first one kept (UdSendRx replays it). */
    uint64_t sunk = 0;
    std::vector<uint8_t> first_frame;

private:
    void net_send(const void *frame, size_t len);
    void poke64(uint64_t gpa, uint64_t v)
    {
        uint8_t *p = host(gpa, 8);
        for (int i = 0; i < 8; i++) {
            p[i] = static_cast<uint8_t>(v >> (8 * i));
        }
    }

    Wire *wire_;
    int id_;
    std::vector<uint8_t> ram_;
    uint64_t next_ = kRamBase;
    VrdmaHostOps ops_{};
};

void Node::net_send(const void *frame, size_t len)
{
    if (!wire_) {
        if (sunk++ == 0) {
            first_frame.assign(static_cast<const uint8_t *>(frame),
                               static_cast<const uint8_t *>(frame) + len);
        }
        return;
    }
    for (size_t i = 0; i < wire_->nodes.size(); i++) {
        if (std::memcmp(frame, wire_->nodes[i]->mac.data(), 6) == 0) {
            wire_->push(static_cast<int>(i), frame, len);
            return;
        }
    }
    wire_->unroutable++;
}

template <typename F>
auto Wire::call(Node *n, F f)
{
    if (!timed) {
        return f();
    }
    const uint64_t t0 = mono_ns();
    auto r = f();
    n->busy_ns += mono_ns() - t0;
    return r;
}

void Wire::deliver_one()
{
    /*
     * The slot stays taken while the core looks at it, so the replies it
     * queues go elsewhere; if they make the ring grow, the buffers move with
     * their bytes (and the one delivered becomes slot 0 = head_).
     */
    const Slot &s = slots_[head_];
    const uint8_t *p = s.buf.get();
    const uint32_t len = s.len;
    Node *n = nodes[s.dst];
    if (!call(n, [&] { return vrdma_core_net_receive(n->core, p, len); })) {
        not_taken++;
    }
    head_ = (head_ + 1) & (slots_.size() - 1);
    count_--;
}

bool Wire::step()
{
    bool did = false;
    while (!empty()) {
        deliver_one();
        did = true;
    }
    for (Node *n : nodes) {
        if (n->kicked || n->run_more) {
            n->kicked = false;
            n->run_more = call(n, [&] { return vrdma_core_run(n->core); });
            did = true;
        }
    }
    if (did) {
        return true;
    }
    /* Idle: a timer is all that is left (a retransmit: counted). */
    uint64_t next = UINT64_MAX;
    for (Node *n : nodes) {
        next = std::min(next, n->deadline);
    }
    if (next == UINT64_MAX) {
        return false;
    }
    while (mono_ns() < next) {
    }
    for (Node *n : nodes) {
        if (n->deadline <= mono_ns()) {
            n->deadline = UINT64_MAX;
            timers++;
            call(n, [&] {
                vrdma_core_timer(n->core);
                return true;
            });
        }
    }
    return true;
}

/* ---- WQE bytes -------------------------------------------------------------- */

struct SendWqe {
    virtio_rdma_sq_req hdr{};
    virtio_rdma_sge sge{};
};
static_assert(sizeof(SendWqe) == sizeof(virtio_rdma_sq_req) +
                                     sizeof(virtio_rdma_sge));

struct RecvWqe {
    virtio_rdma_rq_req hdr{};
    virtio_rdma_sge sge{};
};
static_assert(sizeof(RecvWqe) == sizeof(virtio_rdma_rq_req) +
                                     sizeof(virtio_rdma_sge));

/* ---- (a) RC WRITE between two cores ------------------------------------- */

/*
 * Two cores, one RC QP each, connected at path MTU @mtu (enum); node a
 * writes @msg-byte messages from its MR into b's, @depth in flight, every
 * one signaled.  With @split, each core's calls are timed: req_share is the
 * requester's part of the time spent in the two cores (the rest is the
 * responder's), which tells what each side would sustain on a CPU of its
 * own (two QEMU processes).  The timing costs a little: the headline
 * number is the run without it.
 */
void BM_RcWrite(benchmark::State &state)
{
    const uint32_t depth = static_cast<uint32_t>(state.range(0));
    const uint32_t mtu = static_cast<uint32_t>(state.range(1));
    const bool split = state.range(2) != 0;
    const uint32_t msg = kMsg;

    Wire wire;
    wire.timed = split;
    Node a(&wire, 0), b(&wire, 1);
    a.add_gid();
    b.add_gid();
    const uint32_t pa = a.create_pd(), pb = b.create_pd();
    const uint32_t ca = a.create_cq(kQueue), cb = b.create_cq(kQueue);
    const uint32_t qa = a.create_qp(pa, VIRTIO_RDMA_QPT_RC, ca);
    const uint32_t qb = b.create_qp(pb, VIRTIO_RDMA_QPT_RC, cb);
    a.rc_connect(qa, b, qb, mtu, 0x100, 0xabc);
    b.rc_connect(qb, a, qa, mtu, 0xabc, 0x100);
    const MrInfo src = a.reg_mr(pa, msg);
    const MrInfo dst = b.reg_mr(pb, msg);
    std::memset(a.host(src.addr, msg), 0x5a, msg);
    if (!a.ok || !b.ok) {
        state.SkipWithError("set-up failed");
        return;
    }

    SendWqe w{};
    w.hdr.num_sge = 1;
    w.hdr.opcode = VIRTIO_RDMA_WR_RDMA_WRITE;
    w.hdr.send_flags = VIRTIO_RDMA_SEND_SIGNALED;
    w.hdr.wr.rdma.remote_addr = dst.addr;
    w.hdr.wr.rdma.rkey = dst.rkey;
    w.sge = {src.addr, msg, src.lkey};

    uint64_t posted = 0;
    bool hung = false;
    auto wait_below = [&](uint64_t limit) {
        while (posted - a.cqes > limit) {
            if (!wire.step()) {
                hung = true;
                return;
            }
        }
    };
    const VrdmaDpStats s0a = a.stats(), s0b = b.stats();
    for (auto _ : state) {
        wait_below(depth - 1);
        if (hung) {
            break;
        }
        w.hdr.wr_id = posted++;
        wire.call(&a, [&] {
            vrdma_core_post_send(a.core, qa, &w, sizeof(w));
            return true;
        });
    }
    wait_below(0);
    while (wire.step()) {
    }
    const VrdmaDpStats sa = a.stats(), sb = b.stats();
    if (hung || a.bad_cqes || b.bad_cqes || a.cqes != posted) {
        state.SkipWithError(hung ? "stalled: no completion"
                                 : "missing or failed completions");
        return;
    }
    if (std::memcmp(b.host(dst.addr, msg), a.host(src.addr, msg), msg) != 0) {
        state.SkipWithError("data not delivered");
        return;
    }
    state.SetBytesProcessed(int64_t(posted) * msg);
    state.counters["pkts"] = benchmark::Counter(
        double(sa.tx_packets - s0a.tx_packets + sb.tx_packets - s0b.tx_packets),
        benchmark::Counter::kIsRate);
    state.counters["acks/msg"] = double(sb.tx_packets - s0b.tx_packets) /
                                 double(std::max<uint64_t>(posted, 1));
    state.counters["retx"] = double(sa.retransmits - s0a.retransmits);
    state.counters["drops"] = double(sa.drops - s0a.drops + sb.drops - s0b.drops);
    if (split) {
        state.counters["req_share"] =
            double(a.busy_ns) / double(std::max<uint64_t>(a.busy_ns + b.busy_ns, 1));
    }
}
BENCHMARK(BM_RcWrite)
    ->ArgNames({"depth", "mtu", "split"})
    ->Args({16, VIRTIO_RDMA_MTU_4096, 0})
    ->Args({1, VIRTIO_RDMA_MTU_4096, 0})
    ->Args({16, VIRTIO_RDMA_MTU_1024, 0})
    ->Args({16, VIRTIO_RDMA_MTU_4096, 1});

/* The yardstick: one thread copying the same sizes, buffers in cache too. */
void BM_Memcpy(benchmark::State &state)
{
    const size_t n = static_cast<size_t>(state.range(0));
    std::vector<uint8_t> src(n + 4096, 0x5a), dst(n + 4096);
    /* Page-aligned, like guest pages. */
    uint8_t *s = src.data() + (-reinterpret_cast<uintptr_t>(src.data()) & 4095);
    uint8_t *d = dst.data() + (-reinterpret_cast<uintptr_t>(dst.data()) & 4095);
    for (auto _ : state) {
        std::memcpy(d, s, n);
        benchmark::DoNotOptimize(d);
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(n));
}
BENCHMARK(BM_Memcpy)->Arg(kMsg)->Arg(4096);

/* ---- (b) 64-byte SENDs ------------------------------------------------------ */

/*
 * One UD QP on a core whose frames go to a sink: post, build, ICRC, hand
 * to the host.  One WQE in 64 is signaled; run() is called after every 64
 * posts (the device's BH runs after a kick of many WQEs the same way).
 */
void BM_UdSendTx(benchmark::State &state)
{
    Node a(nullptr, 0);
    Node peer(nullptr, 1); /* only for its MAC and GID */
    a.add_gid();
    const uint32_t pd = a.create_pd();
    const uint32_t cq = a.create_cq(kQueue);
    const uint32_t qp = a.create_qp(pd, VIRTIO_RDMA_QPT_UD, cq);
    a.ud_ready(qp);
    const MrInfo buf = a.reg_mr(pd, kPage);
    if (!a.ok) {
        state.SkipWithError("set-up failed");
        return;
    }
    SendWqe w{};
    w.hdr.num_sge = 1;
    w.hdr.opcode = VIRTIO_RDMA_WR_SEND;
    w.hdr.wr.ud.remote_qpn = 2;
    w.hdr.wr.ud.remote_qkey = kQkey;
    w.hdr.wr.ud.av.port = 1;
    std::memcpy(w.hdr.wr.ud.av.dgid, peer.gid.data(), 16);
    std::memcpy(w.hdr.wr.ud.av.dmac, peer.mac.data(), 6);
    w.hdr.wr.ud.av.hop_limit = 64;
    w.sge = {buf.addr, kSmall, buf.lkey};

    const VrdmaDpStats s0 = a.stats();
    uint64_t posted = 0, signaled = 0;
    for (auto _ : state) {
        const bool sig = (posted & 63) == 63;
        w.hdr.wr_id = posted++;
        w.hdr.send_flags = sig ? VIRTIO_RDMA_SEND_SIGNALED : 0;
        signaled += sig;
        vrdma_core_post_send(a.core, qp, &w, sizeof(w));
        if (sig) {
            a.run_all();
        }
    }
    a.run_all();
    const VrdmaDpStats s = a.stats();
    if (a.bad_cqes || a.cqes != signaled || s.tx_packets - s0.tx_packets != posted) {
        state.SkipWithError("not every SEND went out");
        return;
    }
    state.counters["pps"] = benchmark::Counter(double(posted),
                                               benchmark::Counter::kIsRate);
    state.counters["frame_B"] = double(a.first_frame.size());
}
BENCHMARK(BM_UdSendTx);

/*
 * The frames of BM_UdSendTx, received by one core: a receive WQE posted
 * per packet (as a driver refills its RQ), then the frame; every packet
 * completes (UD receives are always signaled).
 */
void BM_UdSendRx(benchmark::State &state)
{
    /* Make one frame with a sender towards b. */
    Node a(nullptr, 0);
    Node b(nullptr, 1);
    a.add_gid();
    b.add_gid();
    const uint32_t pa = a.create_pd(), pb = b.create_pd();
    const uint32_t ca = a.create_cq(kQueue), cb = b.create_cq(kQueue);
    const uint32_t qa = a.create_qp(pa, VIRTIO_RDMA_QPT_UD, ca);
    const uint32_t qb = b.create_qp(pb, VIRTIO_RDMA_QPT_UD, cb);
    a.ud_ready(qa);
    b.ud_ready(qb);
    const MrInfo sbuf = a.reg_mr(pa, kPage);
    const MrInfo rbuf = b.reg_mr(pb, kPage);
    SendWqe w{};
    w.hdr.num_sge = 1;
    w.hdr.opcode = VIRTIO_RDMA_WR_SEND;
    w.hdr.send_flags = VIRTIO_RDMA_SEND_SIGNALED;
    w.hdr.wr.ud.remote_qpn = qb;
    w.hdr.wr.ud.remote_qkey = kQkey;
    w.hdr.wr.ud.av.port = 1;
    std::memcpy(w.hdr.wr.ud.av.dgid, b.gid.data(), 16);
    std::memcpy(w.hdr.wr.ud.av.dmac, b.mac.data(), 6);
    w.hdr.wr.ud.av.hop_limit = 64;
    w.sge = {sbuf.addr, kSmall, sbuf.lkey};
    vrdma_core_post_send(a.core, qa, &w, sizeof(w));
    a.run_all();
    if (!a.ok || !b.ok || a.first_frame.empty()) {
        state.SkipWithError("set-up failed");
        return;
    }
    const std::vector<uint8_t> frame = a.first_frame;

    RecvWqe r{};
    r.hdr.num_sge = 1;
    r.sge = {rbuf.addr, 40 + kSmall, rbuf.lkey}; /* GRH area + payload */
    const VrdmaDpStats s0 = b.stats();
    uint64_t n = 0, taken = 0;
    for (auto _ : state) {
        r.hdr.wr_id = n++;
        vrdma_core_post_recv(b.core, qb, &r, sizeof(r));
        taken += vrdma_core_net_receive(b.core, frame.data(), frame.size());
    }
    b.run_all();
    const VrdmaDpStats s = b.stats();
    if (taken != n || b.bad_cqes || b.cqes != n || s.drops != s0.drops) {
        state.SkipWithError("not every SEND was received");
        return;
    }
    state.counters["pps"] = benchmark::Counter(double(n),
                                               benchmark::Counter::kIsRate);
    state.counters["frame_B"] = double(frame.size());
}
BENCHMARK(BM_UdSendRx);

/*
 * 64-byte RC SENDs from a to b on the wire, @depth in flight, a receive WQE
 * posted on b per message; requests, ACKs, both cores' completions -- all on
 * one thread.  pkts counts the frames of both directions.
 */
void BM_RcSend(benchmark::State &state)
{
    const uint32_t depth = static_cast<uint32_t>(state.range(0));
    Wire wire;
    Node a(&wire, 0), b(&wire, 1);
    a.add_gid();
    b.add_gid();
    const uint32_t pa = a.create_pd(), pb = b.create_pd();
    const uint32_t ca = a.create_cq(kQueue), cb = b.create_cq(kQueue);
    const uint32_t qa = a.create_qp(pa, VIRTIO_RDMA_QPT_RC, ca);
    const uint32_t qb = b.create_qp(pb, VIRTIO_RDMA_QPT_RC, cb);
    a.rc_connect(qa, b, qb, VIRTIO_RDMA_MTU_4096, 0x100, 0xabc);
    b.rc_connect(qb, a, qa, VIRTIO_RDMA_MTU_4096, 0xabc, 0x100);
    const MrInfo sbuf = a.reg_mr(pa, kPage);
    const MrInfo rbuf = b.reg_mr(pb, kPage);
    if (!a.ok || !b.ok) {
        state.SkipWithError("set-up failed");
        return;
    }
    SendWqe w{};
    w.hdr.num_sge = 1;
    w.hdr.opcode = VIRTIO_RDMA_WR_SEND;
    w.hdr.send_flags = VIRTIO_RDMA_SEND_SIGNALED;
    w.sge = {sbuf.addr, kSmall, sbuf.lkey};
    RecvWqe r{};
    r.hdr.num_sge = 1;
    r.sge = {rbuf.addr, kSmall, rbuf.lkey};

    uint64_t posted = 0;
    bool hung = false;
    auto wait_below = [&](uint64_t limit) {
        while (posted - a.cqes > limit) {
            if (!wire.step()) {
                hung = true;
                return;
            }
        }
    };
    const VrdmaDpStats s0a = a.stats(), s0b = b.stats();
    for (auto _ : state) {
        wait_below(depth - 1);
        if (hung) {
            break;
        }
        r.hdr.wr_id = posted;
        vrdma_core_post_recv(b.core, qb, &r, sizeof(r));
        w.hdr.wr_id = posted++;
        vrdma_core_post_send(a.core, qa, &w, sizeof(w));
    }
    wait_below(0);
    while (wire.step()) {
    }
    const VrdmaDpStats sa = a.stats(), sb = b.stats();
    if (hung || a.bad_cqes || b.bad_cqes || a.cqes != posted ||
        b.cqes != posted) {
        state.SkipWithError(hung ? "stalled: no completion"
                                 : "missing or failed completions");
        return;
    }
    state.counters["msgs"] = benchmark::Counter(double(posted),
                                                benchmark::Counter::kIsRate);
    state.counters["pkts"] = benchmark::Counter(
        double(sa.tx_packets - s0a.tx_packets + sb.tx_packets - s0b.tx_packets),
        benchmark::Counter::kIsRate);
    state.counters["acks/msg"] = double(sb.tx_packets - s0b.tx_packets) /
                                 double(std::max<uint64_t>(posted, 1));
}
BENCHMARK(BM_RcSend)->ArgName("depth")->Arg(64);

/* ---- (c) ICRC ----------------------------------------------------------------- */

/* One RC WRITE MIDDLE packet with 4096 bytes of payload: ICRC of it. */
void BM_Icrc(benchmark::State &state)
{
    const bool v6 = state.range(0) != 0;
    namespace r = vrdma::roce;
    r::FrameAddr fa{};
    fa.dmac = {0x02, 0, 0, 0, 0, 0x11};
    fa.smac = {0x02, 0, 0, 0, 0, 0x10};
    if (v6) {
        fa.sgid = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
        fa.dgid = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
    } else {
        fa.sgid = Node::gid_v4(10, 0, 0, 1);
        fa.dgid = Node::gid_v4(10, 0, 0, 2);
    }
    std::vector<uint8_t> buf(8192);
    r::TxFrame f;
    if (r::frame_begin(buf, fa, r::kRcWriteMiddle, 4096, &f) !=
        r::BuildError::kNone) {
        state.SkipWithError("frame_begin failed");
        return;
    }
    for (size_t i = 0; i < f.payload().size(); i++) {
        f.payload()[i] = static_cast<uint8_t>(i * 7);
    }
    r::frame_finish(f);
    /* What the ICRC covers: IP header to the end of the pad. */
    const std::span<const uint8_t> l3 =
        std::span<const uint8_t>(f.frame).subspan(
            f.l3_off, f.frame.size() - f.l3_off - r::kIcrcBytes);
    for (auto _ : state) {
        benchmark::DoNotOptimize(r::icrc_compute(l3, v6));
    }
    state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(l3.size()));
    state.counters["frame_B"] = double(f.frame.size());
}
BENCHMARK(BM_Icrc)->ArgName("ipv6")->Arg(0)->Arg(1);

/* The CRC-32 alone over 4096 bytes (ISA-L crc32_gzip_refl). */
void BM_Crc32_4k(benchmark::State &state)
{
    std::vector<uint8_t> buf(4096);
    for (size_t i = 0; i < buf.size(); i++) {
        buf[i] = static_cast<uint8_t>(i * 13);
    }
    for (auto _ : state) {
        benchmark::DoNotOptimize(vrdma::roce::crc32_refl(0, buf));
    }
    state.SetBytesProcessed(int64_t(state.iterations()) * 4096);
}
BENCHMARK(BM_Crc32_4k);

/* ---- the summary ------------------------------------------------------------------ */

/* The console output as usual, and each result kept for the summary. */
class SummaryReporter : public benchmark::ConsoleReporter {
public:
    SummaryReporter()
        : ConsoleReporter(isatty(STDOUT_FILENO) ? OO_ColorTabular : OO_Tabular)
    {
    }

    struct Result {
        double real_ns = 0; /* per iteration, wall clock */
        double cpu_ns = 0;  /* per iteration, CPU time of the thread */
        std::map<std::string, double> counters;
        bool error = false;
    };

    void ReportRuns(const std::vector<Run> &runs) override
    {
        ConsoleReporter::ReportRuns(runs);
        for (const Run &run : runs) {
            /* With repetitions: the median; without: the one run. */
            if (run.run_type == Run::RT_Aggregate &&
                run.aggregate_name != "median") {
                continue;
            }
            Result &r = results[run.run_name.str()];
            r.error = run.error_occurred;
            r.real_ns = run.GetAdjustedRealTime() * unit_ns(run.time_unit);
            r.cpu_ns = run.GetAdjustedCPUTime() * unit_ns(run.time_unit);
            r.counters.clear();
            for (const auto &[name, c] : run.counters) {
                r.counters[name] = c.value;
            }
        }
    }

    const Result *get(const std::string &name) const
    {
        auto it = results.find(name);
        return it == results.end() || it->second.error ? nullptr : &it->second;
    }
    double counter(const std::string &name, const std::string &c) const
    {
        const Result *r = get(name);
        if (!r) {
            return -1;
        }
        auto it = r->counters.find(c);
        return it == r->counters.end() ? -1 : it->second;
    }

    std::map<std::string, Result> results;

private:
    static double unit_ns(benchmark::TimeUnit u)
    {
        switch (u) {
        case benchmark::kNanosecond: return 1;
        case benchmark::kMicrosecond: return 1e3;
        case benchmark::kMillisecond: return 1e6;
        case benchmark::kSecond: return 1e9;
        }
        return 1;
    }
};

/*
 * Rates are per CPU second of the benchmark thread (Google Benchmark's
 * default), which a shared machine disturbs least; the wall-clock ratio is
 * printed too.
 */
void print_summary(const SummaryReporter &rep)
{
    const std::string rc = "BM_RcWrite/depth:16/mtu:5/split:0";
    const std::string rc_split = "BM_RcWrite/depth:16/mtu:5/split:1";
    const std::string mc = "BM_Memcpy/65536";
    std::printf("\n== core-bench summary (targets are printed, not enforced; "
                "rates per CPU second)\n");

    const SummaryReporter::Result *r = rep.get(rc), *m = rep.get(mc);
    if (r && m) {
        const double rc_bps = kMsg / r->cpu_ns * 1e9;
        const double mc_bps = kMsg / m->cpu_ns * 1e9;
        std::printf("rc-write-64k      %8.0f MB/s  memcpy-64k %.0f MB/s  "
                    "ratio %.3f  (target >= 0.5; wall-clock ratio %.3f)\n",
                    rc_bps / 1e6, mc_bps / 1e6, rc_bps / mc_bps,
                    m->real_ns / r->real_ns);
        const double share = rep.counter(rc_split, "req_share");
        const SummaryReporter::Result *rs = rep.get(rc_split);
        if (rs && share > 0 && share < 1) {
            const double bps = kMsg / rs->cpu_ns * 1e9;
            const double req = bps / share, resp = bps / (1 - share);
            std::printf("  one CPU per side: requester %.0f MB/s, responder "
                        "%.0f MB/s -> ratio %.3f (requester share %.2f)\n",
                        req / 1e6, resp / 1e6, std::min(req, resp) / mc_bps,
                        share);
        }
    } else {
        std::printf("rc-write-64k      (not measured)\n");
    }
    const double tx = rep.counter("BM_UdSendTx", "pps");
    const double rx = rep.counter("BM_UdSendRx", "pps");
    if (tx > 0) {
        std::printf("ud-send-64 tx     %8.2f Mpps on one core  ratio to "
                    "target %.3f  (target >= 5 Mpps)\n", tx / 1e6, tx / 5e6);
    }
    if (rx > 0) {
        std::printf("ud-send-64 rx     %8.2f Mpps on one core  ratio to "
                    "target %.3f  (target >= 5 Mpps)\n", rx / 1e6, rx / 5e6);
    }
    const double rcs = rep.counter("BM_RcSend/depth:64", "msgs");
    const double rcp = rep.counter("BM_RcSend/depth:64", "pkts");
    if (rcs > 0) {
        std::printf("rc-send-64        %8.2f M msgs/s, %.2f M pkts/s "
                    "(requests + ACKs, both cores on one thread)\n",
                    rcs / 1e6, rcp / 1e6);
    }
    const struct {
        const char *label, *name;
    } icrc[] = {{"icrc-4k ipv4", "BM_Icrc/ipv6:0"},
                {"icrc-4k ipv6", "BM_Icrc/ipv6:1"},
                {"crc32-4k only", "BM_Crc32_4k"}};
    for (const auto &i : icrc) {
        if (const SummaryReporter::Result *x = rep.get(i.name)) {
            std::printf("%-17s %8.0f ns per 4 KiB packet (%.2f GB/s)\n",
                        i.label, x->cpu_ns,
                        rep.counter(i.name, "bytes_per_second") / 1e9);
        }
    }
    std::fflush(stdout);
}

} // namespace

int main(int argc, char **argv)
{
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) {
        return 1;
    }
    SummaryReporter rep;
    benchmark::RunSpecifiedBenchmarks(&rep);
    print_summary(rep);
    benchmark::Shutdown();
    return 0;
}

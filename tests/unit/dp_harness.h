/*
 * Data-path test harness: cores ("nodes") on an in-memory Ethernet wire.
 *
 * Each Node is a core over its own FakeGuest, driven as a guest driver
 * drives the rings data path (VIRTIO_RDMA_F_RINGS, negotiated by default
 * with WIRE_QPN and EVENT_QUEUE): create_cq() and create_qp() make ring
 * CQs and QPs in context 0 (ring_driver.h); post_send() and post_recv()
 * write the next ring entry and ring its doorbell, and when the doorbell
 * says work waits, the node runs a ring turn at once, as the host's bottom
 * half would before the driver looks again.  Completions are polled from
 * the CQ rings into per-CQ queues after every core call the harness makes
 * (and before a test reads them), so a test reads cq(cqn) or pop_cqe().
 * A CQ can be held (hold_cq): nobody consumes its ring, which fills up and
 * overruns.  Host-ops record the rest: frames sent go on the Wire,
 * notifications, async events, wire drops, kicks and the timer deadline.
 *
 * The Wire delivers frames to the node whose MAC they are for and keeps a
 * fake clock: pump() delivers frames, runs kicked cores and the ring turns
 * they still owe and, when nothing else is left, advances the clock to the
 * earliest timer -- bounded by a step limit, never by wall time.  Faults
 * (loss, duplication, reordering, bit flips) are drawn from a seeded
 * generator, so every run is the same.
 *
 * The core benchmark (bench/core_bench.cc) drives its cores with this
 * harness too, so it only adds what a measurement needs and costs nothing
 * when off: CQEs can be counted without being kept (keep_cqes), frame
 * buffers are reused instead of allocated per frame, and with Wire::timed
 * the wall time spent inside each node's core calls (doorbells and turns
 * included; the ring writes and polls, the driver's work, not) adds up in
 * busy_ns.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef TESTS_UNIT_DP_HARNESS_H
#define TESTS_UNIT_DP_HARNESS_H

#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "driver_features.h"
#include "fake_guest.h"
#include "hw/rdma/virtio-rdma-core.h"

namespace vrdma_test {

using Bytes = std::vector<uint8_t>;
using Mac = std::array<uint8_t, 6>;
using Gid = std::array<uint8_t, 16>;

class Wire;
class RingCq;
class RingQp;

/*
 * The depth of a Node's queues.  The harness polls after every core call,
 * so a CQ overruns only if one call completes more than its ring holds:
 * 1024 entries are eight QPs' windows of both queues (64 each) flushed at
 * once.  SQ and RQ rings of 256, what a QP's virtqueues held before.
 */
inline constexpr uint32_t kNodeCqDepth = 1024;
inline constexpr uint8_t kNodeQpLogDepth = 8;

/* A GID for IPv4 a.b.c.d (::ffff:a.b.c.d). */
Gid gid_v4(uint8_t a, uint8_t b, uint8_t c, uint8_t d);
Gid gid_v6(uint8_t last);

VrdmaLimits dp_limits();

/* Every access right an MR can have. */
inline constexpr uint32_t kAllAccess =
    VIRTIO_RDMA_ACCESS_LOCAL_WRITE | VIRTIO_RDMA_ACCESS_REMOTE_WRITE |
    VIRTIO_RDMA_ACCESS_REMOTE_READ | VIRTIO_RDMA_ACCESS_REMOTE_ATOMIC;

/* @f(), its wall time added to *@acc (ns). */
template <typename F>
auto time_into(uint64_t *acc, F f)
{
    const auto t0 = std::chrono::steady_clock::now();
    auto r = f();
    *acc += static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(
            std::chrono::steady_clock::now() - t0)
            .count());
    return r;
}

struct MrInfo {
    uint32_t mrn = 0;
    uint32_t lkey = 0;
    uint32_t rkey = 0;
    uint64_t addr = 0; /* guest address of the first byte (= iova) */
    uint64_t len = 0;
};

/* A send work request as the driver writes it. */
struct SendWr {
    virtio_rdma_sq_req hdr{};
    std::vector<virtio_rdma_sge> sges;

    SendWr &op(uint32_t opcode)
    {
        hdr.opcode = opcode;
        return *this;
    }
    SendWr &id(uint64_t wr_id)
    {
        hdr.wr_id = wr_id;
        return *this;
    }
    SendWr &flags(uint32_t f)
    {
        hdr.send_flags = f;
        return *this;
    }
    SendWr &sge(uint64_t addr, uint32_t len, uint32_t lkey)
    {
        sges.push_back(virtio_rdma_sge{addr, len, lkey});
        return *this;
    }
    SendWr &rdma(uint64_t raddr, uint32_t rkey)
    {
        hdr.wr.rdma.remote_addr = raddr;
        hdr.wr.rdma.rkey = rkey;
        return *this;
    }
    /* imm_data: big-endian on the wire, stored as the 4 bytes. */
    SendWr &imm(uint32_t v);
    SendWr &inv(uint32_t rkey)
    {
        hdr.ex = rkey;
        return *this;
    }
    SendWr &atomic(uint64_t raddr, uint32_t rkey, uint64_t compare_add,
                   uint64_t swap)
    {
        hdr.wr.atomic.remote_addr = raddr;
        hdr.wr.atomic.rkey = rkey;
        hdr.wr.atomic.compare_add = compare_add;
        hdr.wr.atomic.swap = swap;
        return *this;
    }
    SendWr &ud(uint32_t qpn, uint32_t qkey, const Gid &dgid, const Mac &dmac,
               uint8_t gid_index = 0);
    SendWr &reg(uint32_t mrn, uint32_t key, uint32_t access)
    {
        hdr.wr.reg.mrn = mrn;
        hdr.wr.reg.key = key;
        hdr.wr.reg.access = access;
        return *this;
    }
    Bytes bytes() const;
};

Bytes recv_bytes(uint64_t wr_id, const std::vector<virtio_rdma_sge> &sges);

/* RC/UC connection parameters. */
struct Conn {
    uint32_t mtu = VIRTIO_RDMA_MTU_1024;
    uint8_t timeout = 14;     /* 67 ms */
    uint8_t retry_cnt = 7;
    uint8_t rnr_retry = 7;
    uint8_t min_rnr_timer = 1; /* 10 us */
    uint8_t max_rd_atomic = 16;
    uint8_t max_dest_rd_atomic = 16;
    uint32_t access = VIRTIO_RDMA_ACCESS_LOCAL_WRITE |
                      VIRTIO_RDMA_ACCESS_REMOTE_WRITE |
                      VIRTIO_RDMA_ACCESS_REMOTE_READ |
                      VIRTIO_RDMA_ACCESS_REMOTE_ATOMIC;
    uint32_t psn_a = 0x100;   /* first PSN a sends */
    uint32_t psn_b = 0xFFFFF0; /* first PSN b sends: wraps */
    uint8_t sgid_index = 0;
};

class Node {
public:
    Node(Wire *wire, int id, const VrdmaLimits &lim = dp_limits());
    /*
     * A node whose core @make makes (a core on a host device: the guest's
     * RAM is shared, and the host ops watch fds, see fd_watches); the
     * core may be refused (nullptr).
     */
    using CoreMaker =
        std::function<VrdmaCore *(const VrdmaLimits &, const VrdmaHostOps &)>;
    Node(Wire *wire, int id, const VrdmaLimits &lim, const CoreMaker &make);
    ~Node();
    Node(const Node &) = delete;
    Node &operator=(const Node &) = delete;

    /* ---- control path ---- */
    /* A command; the harness follows what it did to the queues it made. */
    uint8_t ctrl_raw(uint8_t cmd, const void *req, size_t len, void *rsp,
                     size_t cap);
    template <typename Req>
    uint8_t ctrl(uint8_t cmd, const Req &req)
    {
        uint8_t rsp[VRDMA_CTRL_RSP_MAX];
        return ctrl_raw(cmd, &req, sizeof(req), rsp, sizeof(rsp));
    }
    template <typename Req, typename Rsp>
    uint8_t ctrl(uint8_t cmd, const Req &req, Rsp *out)
    {
        uint8_t rsp[VRDMA_CTRL_RSP_MAX];
        const uint8_t st = ctrl_raw(cmd, &req, sizeof(req), rsp, sizeof(rsp));
        std::memcpy(out, rsp, sizeof(*out));
        return st;
    }
    uint32_t create_pd();
    /* CREATE_CQ_RING in context 0; the ring has @cqe entries, rounded up
     * to a power of two. */
    uint32_t create_cq(uint32_t cqe = kNodeCqDepth);
    void add_gid(uint16_t index, const Gid &g);
    void del_gid(uint16_t index);
    /* Arms CQ @cqn by its doorbell (VIRTIO_RDMA_DB_CQ_ARM). */
    void arm_cq(uint32_t cqn, uint32_t flags);
    /* Guest memory, page-aligned, from the node's RAM (bump allocator). */
    uint64_t alloc(uint64_t len);
    /* A page table of [addr, addr + len)'s pages; *@npages says how many. */
    uint64_t page_table(uint64_t addr, uint64_t len, uint32_t *npages);
    /* REG_USER_MR over [addr, addr + len) (identity iova). */
    MrInfo reg_mr(uint32_t pdn, uint64_t addr, uint64_t len, uint32_t access);
    MrInfo dma_mr(uint32_t pdn, uint32_t access);
    /* CREATE_MR + MAP_MR_SG over [addr, addr + len). */
    MrInfo fast_mr(uint32_t pdn, uint64_t addr, uint64_t len);
    uint8_t dereg_mr(uint32_t mrn);
    /*
     * CREATE_QP_RING in context 0 on CQs of create_cq(): SQ and RQ rings
     * of 2^kNodeQpLogDepth entries, max_send_wr and max_recv_wr as deep.
     */
    uint32_t create_qp(uint32_t pdn, uint8_t type, uint32_t scq, uint32_t rcq,
                       uint32_t max_sge = 4, uint8_t sig = VIRTIO_RDMA_SIGNAL_REQ_WR);
    /* The same for any CREATE_QP fields: rings as deep as the queues. */
    uint32_t create_qp(const virtio_rdma_cmd_create_qp &q);
    uint8_t destroy_qp(uint32_t qpn);
    /* Negotiated device features (vrdma_core_set_features). */
    void set_features(uint64_t f);
    /* vrdma_core_reset: the queues are gone, the features negotiated again. */
    void reset();
    /* What peers address QP @qpn by: its wire QPN (the queue index without
     * VIRTIO_RDMA_F_WIRE_QPN). */
    uint32_t wire_qpn(uint32_t qpn) const
    {
        const auto it = wires.find(qpn);
        return it == wires.end() ? qpn : it->second;
    }
    uint8_t modify(uint32_t qpn, uint32_t mask, const virtio_rdma_qp_attr &a);
    uint8_t to_state(uint32_t qpn, uint32_t state);
    uint32_t qp_state(uint32_t qpn);
    /* UD/GSI QP to RTS with @qkey. */
    void ud_up(uint32_t qpn, uint32_t qkey, uint32_t sq_psn = 0);

    /* ---- data path ---- */
    /*
     * The request as the next entry of QP @qpn's SQ (RQ) ring, then its
     * doorbell.  @returns false if nothing was written: the ring is full
     * as the driver sees it (device_idx; counted in ring_full), or the
     * node made no such ring -- then only the doorbell goes out, as from
     * a driver that names a queue it has not got.  Raw bytes fill the
     * entry from its start, the rest is zeroed, bytes past the entry's
     * stride are cut (RingMem::put).
     */
    bool post_send(uint32_t qpn, const SendWr &wr);
    bool post_send_raw(uint32_t qpn, const Bytes &b);
    bool post_recv(uint32_t qpn, uint64_t wr_id,
                   const std::vector<virtio_rdma_sge> &sges);
    bool post_recv_raw(uint32_t qpn, const Bytes &b);
    /* vrdma_core_doorbell in context 0, then the turn it asks for. */
    bool doorbell(uint64_t value);
    /* One vrdma_core_rings_turn; the wire runs the next if it asks. */
    void turn();
    bool receive(const Bytes &frame); /* straight into the core */
    VrdmaDpStats stats() const;
    uint64_t drops(VrdmaDrop why) const { return stats().drop[why]; }

    uint8_t *mem(uint64_t gpa, uint64_t len = 1) { return guest.host(gpa, len); }
    void fill(uint64_t gpa, uint64_t len, uint32_t seed);
    bool check(uint64_t gpa, uint64_t len, uint32_t seed);

    /* The CQEs of @cqn not yet taken, oldest first (polled first). */
    std::deque<virtio_rdma_cq_req> &cq(uint32_t cqn);
    virtio_rdma_cq_req pop_cqe(uint32_t cqn);
    size_t cq_size(uint32_t cqn) { return cq(cqn).size(); }
    /* Polls every CQ ring the node made but the held ones into cqes. */
    void collect();
    /* The driver stops (@hold) or resumes consuming CQ @cqn's ring. */
    void hold_cq(uint32_t cqn, bool hold = true);
    /* The rings behind create_cq() / create_qp() (nullptr: none). */
    RingCq *ring_cq(uint32_t cqn);
    RingQp *ring_qp(uint32_t qpn);

    Wire *wire;
    int id;
    Mac mac{};
    Gid gid{};
    FakeGuest guest;
    VrdmaHostOps ops{};
    VrdmaCore *core = nullptr;

    std::map<uint32_t, std::deque<virtio_rdma_cq_req>> cqes;
    uint64_t features = 0;
    std::map<uint32_t, uint32_t> wires; /* queue index -> wire QPN */
    /* Every CQE polled is counted; with keep_cqes false, not kept. */
    bool keep_cqes = true;
    uint64_t cqe_count = 0;
    uint64_t bad_cqe_count = 0; /* status other than SUCCESS */
    uint32_t last_bad_status = 0;
    uint64_t ring_full = 0; /* posts refused: no free ring entry */
    uint64_t busy_ns = 0; /* in this node's core calls, when Wire::timed */
    /* Of busy_ns: in the wire's send (its copy of the frame: QEMU's net
     * layer in a deployment, not the engine's work), when Wire::timed. */
    uint64_t wire_ns = 0;
    std::map<uint32_t, unsigned> notifies;
    std::vector<std::pair<std::string, uint32_t>> drop_log;
    std::vector<Bytes> not_ours; /* frames net_receive gave back */
    std::vector<GuestError> errors; /* guest_error() calls */
    std::vector<AsyncEvent> async_events;
    /* The fds the core asked the host to watch (loop.fd_watch). */
    struct FdWatch {
        void (*ready)(void *ctx);
        void *ctx;
    };
    std::map<int, FdWatch> fd_watches;
    /* The host's loop saw @fd readable: its watch runs, then the CQs are polled. */
    bool fd_ready(int fd);
    bool kicked = false;
    bool run_more = false;
    bool turn_more = false; /* the last ring turn left work waiting */
    uint64_t deadline = UINT64_MAX;
    uint64_t kicks = 0;
    uint64_t timer_mods = 0;

private:
    bool post(uint32_t qpn, bool is_rq, const Bytes &b);
    /* Follows what a command that succeeded did to the node's queues. */
    void track(uint8_t cmd, const void *req, size_t len);

    static void *h_map(void *o, uint64_t gpa, uint64_t len, bool w);
    static void h_unmap(void *o, void *host, uint64_t len, bool w);
    static int h_read(void *o, uint64_t gpa, void *buf, uint64_t len);
    static int h_write(void *o, uint64_t gpa, const void *buf, uint64_t len);
    static void h_net_send(void *o, const void *frame, size_t len);
    static void h_cq_notify(void *o, uint32_t cqn);
    static uint64_t h_now(void *o);
    static void h_timer_mod(void *o, uint64_t deadline);
    static void h_kick(void *o);
    static void h_wire_drop(void *o, const char *why, uint32_t qpn);
    static void h_guest_error(void *o, uint8_t cmd, VrdmaErr err,
                              const char *field, uint64_t a, uint64_t b);
    static void h_async_event(void *o, uint32_t type, uint32_t handle);
    static void h_fd_watch(void *o, int fd, void (*ready)(void *ctx),
                           void *ctx);

    std::map<uint32_t, std::unique_ptr<RingCq>> ring_cqs_;
    std::map<uint32_t, std::unique_ptr<RingQp>> ring_qps_;
    std::set<uint32_t> held_; /* CQs nobody consumes */

    uint64_t next_ram_ = FakeGuest::kRam0.base + 0x1000;
    /* Page tables: the first kTableBytes of high RAM; data after them. */
    static constexpr uint64_t kTableBytes = 32ull << 20;
    uint64_t next_table_ = FakeGuest::kRam1.base;
};

struct Faults {
    double loss = 0;
    double dup = 0;
    double reorder = 0;  /* the frame overtakes up to 8 queued frames */
    double corrupt = 0;  /* one random bit flips */
};

class Wire {
public:
    explicit Wire(uint64_t seed = 1) : rng(seed) {}

    /* A frame a node sent. */
    void send(int src, const uint8_t *p, size_t len);
    /*
     * One unit of work: deliver a frame, or run a ring turn a core still
     * owes, or a kicked core, or advance the clock to the earliest timer
     * and fire it; then the node polls its CQs.  @returns false when there
     * is nothing left to do.
     */
    bool step();
    /* Steps until idle; false if @max_steps was reached (a hang). */
    bool pump(uint64_t max_steps = 2000000);
    /* Steps while @busy() holds, at most @max_steps. */
    bool pump_until(const std::function<bool()> &done,
                    uint64_t max_steps = 2000000);

    /* @f(), a call into @n's core; with timed, its wall time goes to busy_ns. */
    template <typename F>
    auto call(Node *n, F f)
    {
        return timed ? time_into(&n->busy_ns, f) : f();
    }

    uint64_t now = 1000000000; /* ns; never 0 */
    uint64_t ns_per_frame = 0; /* clock advance per frame delivered */
    std::vector<Node *> nodes;
    struct Frame {
        int src;
        int dst;
        Bytes data;
    };
    std::deque<Frame> q;
    Faults faults;
    std::mt19937_64 rng;
    /* Sees (and may change) every frame; return false to lose it. */
    std::function<bool(Frame &)> tap;
    /* Every frame sent, before faults (when capture is on). */
    bool capture = false;
    std::vector<Frame> captured;
    bool timed = false;
    uint64_t frames = 0, lost = 0, duplicated = 0, reordered = 0,
             corrupted = 0, unroutable = 0, steps = 0;

private:
    bool chance(double p);
    Bytes take_buffer(const uint8_t *p, size_t len);

    std::vector<Bytes> spare_; /* buffers of delivered frames, for reuse */
};

/* Two nodes on one wire, each with a PD, a CQ, GID 0 and a data region. */
class DpTest : public ::testing::Test {
protected:
    void SetUp() override;
    void TearDown() override;

    /* RC (or UC) QPs a<->b, both in RTS. */
    std::pair<uint32_t, uint32_t> connect(uint8_t type = VIRTIO_RDMA_QPT_RC,
                                          const Conn &conn = Conn{},
                                          uint32_t max_sge = 4);

public:
    /* QP @qx of @x to RTS towards QP @qy of @y (x_is_a: x sends psn_a). */
    static void connect_pair(Node &x, uint32_t qx, Node &y, uint32_t qy,
                             uint8_t type, const Conn &conn, bool x_is_a);

protected:
    /* A registered buffer of @len bytes. */
    static MrInfo buffer(Node &n, uint32_t pdn, uint64_t len,
                         uint32_t access = kAllAccess)
    {
        return n.reg_mr(pdn, n.alloc(len), len, access);
    }

    Wire wire{12345};
    std::unique_ptr<Node> a, b;
    uint32_t pd_a = 0, pd_b = 0, cq_a = 0, cq_b = 0;
};

} // namespace vrdma_test

#endif

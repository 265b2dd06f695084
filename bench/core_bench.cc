/*
 * Benchmarks of the virtio-rdma C++ core (Google Benchmark), no QEMU.
 *
 *   RcWrite        RC RDMA WRITE of 64 KiB messages between two cores on an
 *                  in-memory Ethernet wire (one thread runs both), path MTU
 *                  4096 (also 1024 for comparison), D messages in flight;
 *                  bytes/s of payload delivered into the responder's memory.
 *                  With split, each core's calls are timed: the requester
 *                  side alone (WQEs -> frames incl. ICRC, ACKs in) and the
 *                  responder side alone (frames -> guest memory incl. the
 *                  ICRC check, ACKs out), as two QEMU processes would run
 *                  them on two CPUs.
 *   Memcpy         single-thread memcpy of the same sizes, in the same run:
 *                  the yardstick of RcWrite (the ratio is printed at the end).
 *   UdSendTx       64-byte UD SENDs transmitted by one core (doorbell, ring
 *                  turn, build, ICRC, hand to the host): packets/s.
 *   UdSendRx       64-byte UD SENDs received by one core (parse, ICRC check,
 *                  copy, CQE; one receive posted per packet: its entry,
 *                  doorbell and ring turn): packets/s.
 *   RcSend         64-byte RC SENDs between two cores, receive WQEs posted,
 *                  ACKs included: messages/s and packets/s (both cores); with
 *                  split, each side alone as for RcWrite.
 *   Icrc           the ICRC of one RC WRITE MIDDLE packet with 4 KiB of
 *                  payload (IPv4 and IPv6) or 64 bytes, and the raw CRC-32
 *                  of 4096 bytes.
 *
 * The cores run on the unit tests' harness (tests/unit/dp_harness.h): fake
 * guests, an in-memory wire whose frame buffers are reused, a fake clock
 * (a timer fires only when nothing else is left to do), CQEs counted, not
 * kept.  Work requests go the rings data path (VIRTIO_RDMA_F_RINGS): each
 * is written into its SQ or RQ ring and announced by its own doorbell,
 * which the harness follows with a ring turn; completions are polled from
 * the CQ ring.  The one-thread figures are the benchmark thread's CPU time
 * and so include that driver work (ring writes, CQ polls) and the wire's
 * copy of each frame (QEMU's net layer in a deployment); the per-side
 * figures count only the time inside each core's calls (doorbells, turns,
 * frames, timers, run), without the wire's copy.  Every benchmark
 * checks its own outcome (completions, statuses, drops) and reports an
 * error instead of a number if the core did not do the work.  Nothing here
 * fails on a target: the summary at the end prints the measured ratios next
 * to the targets.
 *
 *   build/bench/bench/core-bench [--benchmark_min_time=2] [--benchmark_filter=...]
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

#include "dp_harness.h"
#include "hw/rdma/virtio-rdma-core.h"
#include "ring_driver.h"
#include "roce/frame.h"
#include "roce/icrc.h"
#include "roce/opcode.h"

namespace {

using vrdma_test::Bytes;
using vrdma_test::Conn;
using vrdma_test::DpTest;
using vrdma_test::MrInfo;
using vrdma_test::Node;
using vrdma_test::RingMem;
using vrdma_test::RingQp;
using vrdma_test::Wire;
using vrdma_test::kAllAccess;

constexpr uint32_t kMsg = 64 * 1024;     /* RcWrite message size */
constexpr uint32_t kSmall = 64;          /* UdSend / RcSend payload */
constexpr uint32_t kQkey = 0x11111111;

/* ---- WQE bytes, built once and written into the rings as they are ------- */

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

/* ---- set-up on the harness ----------------------------------------------- */

/* GoogleTest failures outside a test (the harness's checks) so far. */
int harness_failures()
{
    return ::testing::UnitTest::GetInstance()
        ->ad_hoc_test_result()
        .total_part_count();
}

/* A node for benchmarking: GID 0, a PD and a CQ; CQEs counted only. */
struct Bnode {
    Bnode(Wire *w, int id) : n(w, id)
    {
        n.keep_cqes = false;
        n.add_gid(0, n.gid);
        pd = n.create_pd();
        cq = n.create_cq();
    }
    MrInfo buffer(uint64_t len) { return n.reg_mr(pd, n.alloc(len), len, kAllAccess); }
    uint32_t qp(uint8_t type) { return n.create_qp(pd, type, cq, cq, 1); }

    /*
     * @wqe as the next entry of QP @qpn's SQ (RQ) ring and its doorbell,
     * which runs the ring turn it asks for and polls the CQ (Node::doorbell).
     * The driver writes only the request's bytes: the rest of the entry is
     * ignored.  @returns false if the ring had no free entry.
     */
    template <typename Wqe>
    bool post(uint32_t qpn, bool is_rq, const Wqe &wqe)
    {
        RingQp &q = *n.ring_qp(qpn);
        const RingMem &ring = is_rq ? q.rq : q.sq;
        uint32_t &pi = is_rq ? q.rq_pi : q.sq_pi;
        if (sizeof(wqe) > ring.stride() || !ring.has_room(n, pi)) {
            return false;
        }
        std::memcpy(ring.slot(n, pi), &wqe, sizeof(wqe));
        pi++;
        n.doorbell(VIRTIO_RDMA_DB(is_rq ? VIRTIO_RDMA_DB_RQ : VIRTIO_RDMA_DB_SQ,
                                  qpn, pi));
        return true;
    }

    Node n;
    uint32_t pd = 0, cq = 0;
};

/* Two nodes on one wire with an RC QP each, connected at path MTU @mtu. */
struct RcPair {
    explicit RcPair(uint32_t mtu) : a(&wire, 0), b(&wire, 1)
    {
        qa = a.qp(VIRTIO_RDMA_QPT_RC);
        qb = b.qp(VIRTIO_RDMA_QPT_RC);
        Conn conn;
        conn.mtu = mtu;
        DpTest::connect_pair(a.n, qa, b.n, qb, VIRTIO_RDMA_QPT_RC, conn, true);
        DpTest::connect_pair(b.n, qb, a.n, qa, VIRTIO_RDMA_QPT_RC, conn, false);
    }
    /* Steps the wire until fewer than @limit of a's WQEs are incomplete. */
    bool wait_below(uint64_t posted, uint64_t limit)
    {
        while (posted - a.n.cqe_count > limit) {
            if (!wire.step()) {
                return false; /* nothing left to do: a hang */
            }
        }
        return true;
    }
    /* The doorbell and turn are timed (Node::doorbell), the ring write not. */
    bool post_send(const SendWqe &w) { return a.post(qa, false, w); }
    bool post_recv(const RecvWqe &r) { return b.post(qb, true, r); }

    Wire wire;
    Bnode a, b;
    uint32_t qa = 0, qb = 0;
};

/* ---- (a) RC WRITE between two cores ------------------------------------- */

/*
 * Node a writes @msg-byte messages from its MR into b's, @depth in flight,
 * every one signaled.  With @split, the wall time inside each core's calls
 * is summed (two clock reads per call, included): req_ns/msg and
 * resp_ns/msg say what each side costs on a CPU of its own.  The timing
 * costs a little: the one-thread headline is the run without it.
 */
void BM_RcWrite(benchmark::State &state)
{
    const uint32_t depth = static_cast<uint32_t>(state.range(0));
    const uint32_t mtu = static_cast<uint32_t>(state.range(1));
    const bool split = state.range(2) != 0;
    const uint32_t msg = kMsg;

    const int failures = harness_failures();
    RcPair p(mtu);
    Node &a = p.a.n, &b = p.b.n;
    const MrInfo src = p.a.buffer(msg);
    const MrInfo dst = p.b.buffer(msg);
    if (harness_failures() != failures) {
        state.SkipWithError("set-up failed");
        return;
    }
    std::memset(a.mem(src.addr, msg), 0x5a, msg);
    p.wire.timed = split;

    SendWqe w{};
    w.hdr.num_sge = 1;
    w.hdr.opcode = VIRTIO_RDMA_WR_RDMA_WRITE;
    w.hdr.send_flags = VIRTIO_RDMA_SEND_SIGNALED;
    w.hdr.wr.rdma.remote_addr = dst.addr;
    w.hdr.wr.rdma.rkey = dst.rkey;
    w.sge = {src.addr, msg, src.lkey};

    uint64_t posted = 0;
    bool hung = false;
    const VrdmaDpStats s0a = a.stats(), s0b = b.stats();
    for (auto _ : state) {
        if (!p.wait_below(posted, depth - 1)) {
            hung = true;
            break;
        }
        w.hdr.wr_id = posted++;
        if (!p.post_send(w)) {
            hung = true; /* no ring entry free: the depth is wrong */
            break;
        }
    }
    hung = hung || !p.wait_below(posted, 0);
    p.wire.pump();
    const VrdmaDpStats sa = a.stats(), sb = b.stats();
    if (hung || a.bad_cqe_count || b.bad_cqe_count || a.cqe_count != posted) {
        state.SkipWithError(hung ? "stalled: no completion"
                                 : "missing or failed completions");
        return;
    }
    if (std::memcmp(b.mem(dst.addr, msg), a.mem(src.addr, msg), msg) != 0) {
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
        const double n = double(std::max<uint64_t>(posted, 1));
        state.counters["req_ns/msg"] = double(a.busy_ns - a.wire_ns) / n;
        state.counters["resp_ns/msg"] = double(b.busy_ns - b.wire_ns) / n;
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

/* A UD SEND of kSmall bytes from @buf to QP @qpn of @peer. */
SendWqe ud_send(const Node &peer, uint32_t qpn, const MrInfo &buf)
{
    SendWqe w{};
    w.hdr.num_sge = 1;
    w.hdr.opcode = VIRTIO_RDMA_WR_SEND;
    w.hdr.wr.ud.remote_qpn = qpn;
    w.hdr.wr.ud.remote_qkey = kQkey;
    w.hdr.wr.ud.av.port = 1;
    std::memcpy(w.hdr.wr.ud.av.dgid, peer.gid.data(), 16);
    std::memcpy(w.hdr.wr.ud.av.dmac, peer.mac.data(), 6);
    w.hdr.wr.ud.av.hop_limit = 64;
    w.sge = {buf.addr, kSmall, buf.lkey};
    return w;
}

/*
 * One UD QP on a core alone on its wire: its frames are counted and
 * dropped (no copy).  Post (entry, doorbell, turn), build, ICRC, hand to
 * the host.  One WQE in 64 is signaled; the wire runs the core after every
 * 64 posts (the device's BH runs after a kick of many WQEs the same way),
 * which keeps the ring's 64-request window from filling.
 */
void BM_UdSendTx(benchmark::State &state)
{
    const int failures = harness_failures();
    Wire sink;
    Bnode a(&sink, 0);
    const Node peer(nullptr, 1); /* only for its MAC and GID */
    const uint32_t qp = a.qp(VIRTIO_RDMA_QPT_UD);
    a.n.ud_up(qp, kQkey);
    const MrInfo buf = a.buffer(4096);
    if (harness_failures() != failures) {
        state.SkipWithError("set-up failed");
        return;
    }
    SendWqe w = ud_send(peer, 2, buf);

    const VrdmaDpStats s0 = a.n.stats();
    uint64_t posted = 0, signaled = 0;
    for (auto _ : state) {
        const bool sig = (posted & 63) == 63;
        w.hdr.wr_id = posted++;
        w.hdr.send_flags = sig ? VIRTIO_RDMA_SEND_SIGNALED : 0;
        signaled += sig;
        if (!a.post(qp, false, w)) {
            state.SkipWithError("no free SQ entry");
            return;
        }
        if (sig) {
            sink.pump();
        }
    }
    sink.pump();
    const VrdmaDpStats s = a.n.stats();
    if (a.n.bad_cqe_count || a.n.cqe_count != signaled ||
        s.tx_packets - s0.tx_packets != posted) {
        state.SkipWithError("not every SEND went out");
        return;
    }
    state.counters["pps"] = benchmark::Counter(double(posted),
                                               benchmark::Counter::kIsRate);
    state.counters["frame_B"] = double(s.tx_bytes - s0.tx_bytes) /
                                double(std::max<uint64_t>(posted, 1));
}
BENCHMARK(BM_UdSendTx);

/*
 * The frames of BM_UdSendTx, received by one core: a receive posted per
 * packet (as a driver refills its RQ: the entry, a doorbell, the ring
 * turn), then the frame; every packet completes (UD receives are always
 * signaled), polled from the CQ ring at the next post.
 */
void BM_UdSendRx(benchmark::State &state)
{
    const int failures = harness_failures();
    /* One frame from a sender towards b, captured on a's wire. */
    Wire sink;
    Bnode a(&sink, 0), b(nullptr, 1);
    const uint32_t qa = a.qp(VIRTIO_RDMA_QPT_UD), qb = b.qp(VIRTIO_RDMA_QPT_UD);
    a.n.ud_up(qa, kQkey);
    b.n.ud_up(qb, kQkey);
    const MrInfo sbuf = a.buffer(4096), rbuf = b.buffer(4096);
    SendWqe w = ud_send(b.n, b.n.wire_qpn(qb), sbuf);
    w.hdr.send_flags = VIRTIO_RDMA_SEND_SIGNALED;
    sink.capture = true;
    a.post(qa, false, w);
    sink.pump();
    if (harness_failures() != failures || sink.captured.size() != 1) {
        state.SkipWithError("set-up failed");
        return;
    }
    const Bytes frame = sink.captured[0].data;

    RecvWqe r{};
    r.hdr.num_sge = 1;
    r.sge = {rbuf.addr, 40 + kSmall, rbuf.lkey}; /* GRH area + payload */
    const VrdmaDpStats s0 = b.n.stats();
    uint64_t n = 0, taken = 0;
    for (auto _ : state) {
        r.hdr.wr_id = n++;
        if (!b.post(qb, true, r)) {
            state.SkipWithError("no free RQ entry");
            return;
        }
        taken += vrdma_core_net_receive(b.n.core, frame.data(), frame.size());
    }
    b.n.collect(); /* the last completion (each post polls the ones before) */
    const VrdmaDpStats s = b.n.stats();
    if (taken != n || b.n.bad_cqe_count || b.n.cqe_count != n ||
        s.drops != s0.drops) {
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
 * one thread.  pkts counts the frames of both directions.  With @split, each
 * side's calls are timed as in BM_RcWrite (the receive WQE posts are b's).
 */
void BM_RcSend(benchmark::State &state)
{
    const uint32_t depth = static_cast<uint32_t>(state.range(0));
    const bool split = state.range(1) != 0;
    const int failures = harness_failures();
    RcPair p(VIRTIO_RDMA_MTU_4096);
    Node &a = p.a.n, &b = p.b.n;
    const MrInfo sbuf = p.a.buffer(4096), rbuf = p.b.buffer(4096);
    if (harness_failures() != failures) {
        state.SkipWithError("set-up failed");
        return;
    }
    p.wire.timed = split;
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
    const VrdmaDpStats s0a = a.stats(), s0b = b.stats();
    for (auto _ : state) {
        if (!p.wait_below(posted, depth - 1)) {
            hung = true;
            break;
        }
        r.hdr.wr_id = posted;
        w.hdr.wr_id = posted++;
        if (!p.post_recv(r) || !p.post_send(w)) {
            hung = true; /* no ring entry free: the depth is wrong */
            break;
        }
    }
    hung = hung || !p.wait_below(posted, 0);
    p.wire.pump();
    const VrdmaDpStats sa = a.stats(), sb = b.stats();
    if (hung || a.bad_cqe_count || b.bad_cqe_count || a.cqe_count != posted ||
        b.cqe_count != posted) {
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
    if (split) {
        const double n = double(std::max<uint64_t>(posted, 1));
        state.counters["req_ns/msg"] = double(a.busy_ns - a.wire_ns) / n;
        state.counters["resp_ns/msg"] = double(b.busy_ns - b.wire_ns) / n;
    }
}
BENCHMARK(BM_RcSend)->ArgNames({"depth", "split"})->Args({64, 0})->Args({64, 1});

/* ---- (c) ICRC ----------------------------------------------------------------- */

/* One RC WRITE MIDDLE packet with @payload bytes of payload: ICRC of it. */
void BM_Icrc(benchmark::State &state)
{
    const bool v6 = state.range(0) != 0;
    const size_t payload = static_cast<size_t>(state.range(1));
    namespace r = vrdma::roce;
    r::FrameAddr fa{};
    fa.dmac = {0x02, 0, 0, 0, 0, 0x11};
    fa.smac = {0x02, 0, 0, 0, 0, 0x10};
    if (v6) {
        fa.sgid = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
        fa.dgid = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
    } else {
        fa.sgid = vrdma_test::gid_v4(10, 0, 0, 1);
        fa.dgid = vrdma_test::gid_v4(10, 0, 0, 2);
    }
    std::vector<uint8_t> buf(8192);
    r::TxFrame f;
    if (r::frame_begin(buf, fa, r::kRcWriteMiddle, payload, &f) !=
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
BENCHMARK(BM_Icrc)
    ->ArgNames({"ipv6", "payload"})
    ->Args({0, 4096})
    ->Args({1, 4096})
    ->Args({0, 64});

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
        /* With repetitions the console shows the aggregates only. */
        std::vector<Run> shown;
        for (const Run &run : runs) {
            if (run.run_type == Run::RT_Aggregate) {
                shown.push_back(run);
            }
        }
        ConsoleReporter::ReportRuns(shown.empty() ? runs : shown);
        repeated = repeated || !shown.empty();
        for (const Run &run : runs) {
            const std::string name = run.run_name.str();
            if (run.run_type == Run::RT_Iteration) {
                /* The least disturbed repetition: the lowest CPU time. */
                const Result r = result_of(run);
                auto it = best.find(name);
                if (!r.error && (it == best.end() || r.cpu_ns < it->second.cpu_ns)) {
                    best[name] = r;
                }
            }
            /* With repetitions: the median; without: the one run. */
            if (run.run_type == Run::RT_Aggregate &&
                run.aggregate_name != "median") {
                continue;
            }
            results[name] = result_of(run);
        }
    }

    /* Results of the medians, or with use_best of the best repetitions. */
    const Result *get(const std::string &name) const
    {
        const auto &m = use_best ? best : results;
        auto it = m.find(name);
        return it == m.end() || it->second.error ? nullptr : &it->second;
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
    std::map<std::string, Result> best;
    bool repeated = false; /* --benchmark_repetitions above 1 */
    bool use_best = false;

private:
    static Result result_of(const Run &run)
    {
        Result r;
        r.error = run.error_occurred;
        r.real_ns = run.GetAdjustedRealTime() * unit_ns(run.time_unit);
        r.cpu_ns = run.GetAdjustedCPUTime() * unit_ns(run.time_unit);
        for (const auto &[name, c] : run.counters) {
            r.counters[name] = c.value;
        }
        return r;
    }

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
 * One-thread rates are per CPU second of the benchmark thread (Google
 * Benchmark's default), which a shared machine disturbs least; the
 * wall-clock ratio is printed too.  Per-side rates are per second of wall
 * time inside that side's core calls (the split runs).
 */
void print_summary(const SummaryReporter &rep)
{
    const std::string rc = "BM_RcWrite/depth:16/mtu:5/split:0";
    const std::string rc_split = "BM_RcWrite/depth:16/mtu:5/split:1";
    const std::string mc = "BM_Memcpy/65536";
    const std::string rs = "BM_RcSend/depth:64/split:0";
    const std::string rs_split = "BM_RcSend/depth:64/split:1";
    std::printf("\n== core-bench summary, %s (targets are printed, not "
                "enforced)\n", rep.use_best
                    ? "best repetition of each: the least disturbed run"
                    : "medians");

    const SummaryReporter::Result *r = rep.get(rc), *m = rep.get(mc);
    const double mc_bps = m ? kMsg / m->cpu_ns * 1e9 : -1;
    if (m) {
        std::printf("%-38s %8.0f MB/s    (the "
                    "yardstick of rc-write-64k)\n", "memcpy-64k, one thread", mc_bps / 1e6);
    }
    if (r && m) {
        const double rc_bps = kMsg / r->cpu_ns * 1e9;
        std::printf("%-38s %8.0f MB/s    ratio "
                    "%.3f  (target >= 0.5; wall-clock ratio %.3f)\n",
                    "rc-write-64k, both sides on one thread", rc_bps / 1e6, rc_bps / mc_bps, m->real_ns / r->real_ns);
    } else {
        std::printf("rc-write-64k      (not measured)\n");
    }
    const struct {
        const char *label, *counter, *what;
    } sides[] = {
        {"requester side alone", "req_ns/msg",
         "WQE -> frames incl. ICRC, ACKs in"},
        {"responder side alone", "resp_ns/msg",
         "frames -> guest memory incl. ICRC check, ACKs out"},
    };
    for (const auto &sd : sides) {
        const double ns = rep.counter(rc_split, sd.counter);
        if (ns > 0 && m) {
            const double bps = kMsg / ns * 1e9;
            std::printf("rc-write-64k, %-24s %8.0f MB/s    ratio %.3f  "
                        "(target >= 0.5; %s)\n",
                        sd.label, bps / 1e6, bps / mc_bps, sd.what);
        }
    }
    const double tx = rep.counter("BM_UdSendTx", "pps");
    const double rx = rep.counter("BM_UdSendRx", "pps");
    if (tx > 0) {
        std::printf("%-38s %8.2f Mpps    ratio to "
                    "target %.3f  (target >= 5 Mpps; doorbell, ring turn -> "
                    "frame incl. ICRC)\n", "ud-send-64 tx, one core", tx / 1e6, tx / 5e6);
    }
    if (rx > 0) {
        std::printf("%-38s %8.2f Mpps    ratio to "
                    "target %.3f  (target >= 5 Mpps; receive posted, frame "
                    "incl. ICRC check -> guest memory, CQE)\n", "ud-send-64 rx, one core", rx / 1e6,
                    rx / 5e6);
    }
    const double rcs = rep.counter(rs, "msgs");
    const double rcp = rep.counter(rs, "pkts");
    if (rcs > 0) {
        std::printf("%-38s %8.2f M msgs/s  "
                    "(%.2f M pkts/s: requests + ACKs)\n",
                    "rc-send-64, both sides on one thread", rcs / 1e6, rcp / 1e6);
    }
    for (const auto &sd : sides) {
        const double ns = rep.counter(rs_split, sd.counter);
        if (ns > 0) {
            const double pps = 1e9 / ns;
            std::printf("rc-send-64, %-26s %8.2f M msgs/s  ratio to target "
                        "%.3f  (target >= 5 M; one request packet per "
                        "message)\n", sd.label, pps / 1e6, pps / 5e6);
        }
    }
    const struct {
        const char *label, *name;
    } icrc[] = {{"icrc-4k ipv4", "BM_Icrc/ipv6:0/payload:4096"},
                {"icrc-4k ipv6", "BM_Icrc/ipv6:1/payload:4096"},
                {"crc32-4k only", "BM_Crc32_4k"},
                {"icrc-64 ipv4", "BM_Icrc/ipv6:0/payload:64"}};
    for (const auto &i : icrc) {
        if (const SummaryReporter::Result *x = rep.get(i.name)) {
            std::printf("%-38s %8.0f ns per packet (%.2f GB/s)\n", i.label,
                        x->cpu_ns,
                        rep.counter(i.name, "bytes_per_second") / 1e9);
        }
    }
    /*
     * What this CPU allows rc-write-64k at best: every payload byte is
     * CRCed and copied once per side (twice each on one thread, plus the
     * wire's copy).  Measured rates of this run, nothing else counted.
     */
    const SummaryReporter::Result *crc = rep.get("BM_Crc32_4k");
    if (crc && m) {
        const double x = (4096 / crc->cpu_ns * 1e9) / mc_bps;
        std::printf("%-38s %8.3f          (crc32-4k rate / memcpy-64k rate)\n",
                    "ceiling: crc32 / memcpy", x);
        std::printf("%-38s %8.3f          (one CRC + one copy per byte: "
                    "1 / (1 + 1/x))\n", "ceiling: rc-write-64k, one side",
                    1 / (1 + 1 / x));
        std::printf("%-38s %8.3f          (two CRCs + three copies per "
                    "byte: 1 / (3 + 2/x))\n",
                    "ceiling: rc-write-64k, one thread", 1 / (3 + 2 / x));
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
    if (rep.repeated) {
        /*
         * On a shared machine a neighbour only ever adds time: the best
         * repetition is what this CPU can do, the median what it did.
         */
        rep.use_best = true;
        print_summary(rep);
    }
    benchmark::Shutdown();
    return 0;
}

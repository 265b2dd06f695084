/*
 * virtio-rdma-bench: throughput of the soft-RoCE engine between two QEMU
 * processes, and of the loopback path it runs over, in the same run.
 *
 *  1. Two QEMUs (-M pc, qtest accelerator: no guest code runs; this process
 *     drives the devices through libqos, like virtio-rdma-dp-test) whose
 *     virtio-net NICs are joined by -netdev dgram over 127.0.0.1; the NICs
 *     have host_mtu=9000, so the active MTU is 4096.  A posts RC RDMA WRITEs
 *     of 1 MiB from its MR into B's, a few in flight, for a fixed time (or a
 *     fixed number of messages); every one is signaled and must complete
 *     successfully, and B's memory must hold A's bytes at the end.
 *     Throughput: message bytes / wall time, in MB/s (10^6 bytes).
 *  2. Two UDP sockets on 127.0.0.1, a sender thread and a receiver thread,
 *     for the same time, datagrams of the size A's request frames had on
 *     average (the device's tx-bytes / tx-packets): what the same loopback
 *     path carries with nothing else in the way.
 *  3. The ratio of the two (payload rates: the raw one is counted as if each
 *     datagram carried the same payload as an engine frame).  The target
 *     (0.8) is printed next to it; nothing fails on a number.
 *
 * All of it twice: the engine in QEMU's main loop, then in an iothread.
 *
 * And what QEMU spends per QP (/virtio-rdma/bench/qp-memory): QEMU's
 * VmRSS before and after creating VRDMA_BENCH_QPS (default 16384) ring
 * QPs of 1024 WRs and 4 SGEs each way (all on one pair of SQ/RQ ring
 * pages: the guest's memory is not what is measured), and in the same run
 * the same for as many virtqueue-path QPs of that depth as a device's
 * virtqueues allow (a second QEMU without VIRTIO_RDMA_F_RINGS).
 *
 * Also printed: the devices' data-path counters over the run (packets,
 * retransmits, NAKs, drops) and the CPU used by each QEMU, by this driver
 * and by the two UDP threads, which say what the time went to.
 *
 *   QTEST_QEMU_BINARY=./qemu-system-x86_64 ./tests/qtest/virtio-rdma-bench
 *
 * Knobs (environment): VRDMA_BENCH_SECONDS (default 10), VRDMA_BENCH_ITERS
 * (a number of messages instead of a time), VRDMA_BENCH_MSG_KIB (default
 * 1024), VRDMA_BENCH_DEPTH (messages in flight, default 4), VRDMA_BENCH_MTU
 * (path MTU in bytes, 1024 or 4096; default 4096).
 *
 * Not run by the test suite (scripts/bench.sh runs it).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include <sys/resource.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include "libqtest.h"
#include "qemu/bswap.h"
#include "qobject/qdict.h"
#include "qobject/qlist.h"
#include "libqos/libqos-pc.h"
#include "libqos/virtio-rdma.h"
#include "libqos/virtio-rdma-dp.h"
#include "libqos/virtio-rdma-ring.h"

#define MAC_A       "52:54:00:12:34:56"
#define MAC_B       "52:54:00:12:34:57"
#define RDMA_OPTS   ""
#define VA_A        0x7f0000000000ull
#define VA_B        0x7f4000000000ull

/* Under a TAP harness the lines go out as TAP comments. */
static const char *line_prefix = "";

static void G_GNUC_PRINTF(1, 2) out(const char *fmt, ...)
{
    va_list ap;

    fputs(line_prefix, stdout);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fflush(stdout);
}

static uint64_t env_u64(const char *name, uint64_t dflt)
{
    const char *s = g_getenv(name);

    return s && *s ? g_ascii_strtoull(s, NULL, 0) : dflt;
}

/* ---- bring-up ------------------------------------------------------------- */

typedef struct Side {
    const char *name;
    QVrdmaDev *d;
    uint32_t pdn;
    QVrdmaCq *cq;
    QVrdmaQp *qp;
    QVrdmaPageTable pt;
    struct virtio_rdma_rsp_mr mr;
    uint64_t va;
    uint8_t gid[16];
    uint32_t sq_psn;
} Side;

static void side_init(Side *s, const char *name, QVrdmaDev *d, uint64_t va,
                      uint32_t sq_psn, uint32_t len, uint8_t gid_last)
{
    uint32_t access = VIRTIO_RDMA_ACCESS_LOCAL_WRITE |
                      VIRTIO_RDMA_ACCESS_REMOTE_WRITE |
                      VIRTIO_RDMA_ACCESS_REMOTE_READ;
    uint32_t npages = DIV_ROUND_UP(len, 4096);
    uint8_t st;

    memset(s, 0, sizeof(*s));
    s->name = name;
    s->d = d;
    s->va = va;
    s->sq_psn = sq_psn;
    st = qvrdma_create_pd(&d->r, &s->pdn);
    g_assert_cmpstr(qvrdma_status_name(st), ==, "OK");
    s->cq = qvrdma_dp_cq_create(d, 64);
    s->qp = qvrdma_dp_qp_create(d, s->pdn, VIRTIO_RDMA_QPT_RC, s->cq, s->cq,
                                1, VIRTIO_RDMA_SIGNAL_REQ_WR);
    qvrdma_pt_build(&d->r, &s->pt, npages, NULL);
    st = qvrdma_reg_user_mr(&d->r, s->pdn, access, va, len, va, s->pt.l1,
                            npages, &s->mr);
    g_assert_cmpstr(qvrdma_status_name(st), ==, "OK");
    qvrdma_gid_ipv4(s->gid, 10, 0, 0, gid_last);
    qvrdma_dp_add_gid(d, 0, s->gid);
}

static void side_connect(Side *s, Side *peer, uint32_t path_mtu,
                         uint8_t timeout)
{
    QVrdmaPath p = {
        .dest_qpn = peer->qp->wire_qpn,
        .rq_psn = peer->sq_psn,
        .sq_psn = s->sq_psn,
        .path_mtu = path_mtu,
        .timeout = timeout,
        .retry_cnt = 7,
        .rnr_retry = 7,
    };

    memcpy(p.dgid, peer->gid, 16);
    memcpy(p.dmac, peer->d->mac, 6);
    qvrdma_dp_rc_connect(s->d, s->qp, &p);
    g_assert_cmpuint(qvrdma_dp_qp_state(s->d, s->qp), ==,
                     VIRTIO_RDMA_QPS_RTS);
}

static void side_free(Side *s)
{
    qvrdma_dp_qp_free(s->qp);
    qvrdma_dp_cq_free(s->cq);
    qvrdma_pt_free(&s->d->r, &s->pt);
    qvrdma_dev_quit(s->d);
}

/* ---- measurements ------------------------------------------------------------ */

typedef struct DpCounters {
    uint64_t tx_packets, tx_bytes, rx_packets, rx_bytes;
    uint64_t retransmits, retry_timeouts, naks_sent, naks_received;
    uint64_t rnr_naks_sent, duplicates, completions, drops;
} DpCounters;

static DpCounters query_dp(QTestState *qts)
{
    QDict *rsp = qtest_qmp(qts, "{'execute': 'query-virtio-rdma'}");
    QList *list;
    QDict *dp;
    DpCounters c;

    g_assert_true(qdict_haskey(rsp, "return"));
    list = qdict_get_qlist(rsp, "return");
    g_assert_false(qlist_empty(list));
    dp = qdict_get_qdict(qobject_to(QDict, qlist_peek(list)), "data-path");
    c = (DpCounters) {
        .tx_packets = qdict_get_int(dp, "tx-packets"),
        .tx_bytes = qdict_get_int(dp, "tx-bytes"),
        .rx_packets = qdict_get_int(dp, "rx-packets"),
        .rx_bytes = qdict_get_int(dp, "rx-bytes"),
        .retransmits = qdict_get_int(dp, "retransmits"),
        .retry_timeouts = qdict_get_int(dp, "retry-timeouts"),
        .naks_sent = qdict_get_int(dp, "naks-sent"),
        .naks_received = qdict_get_int(dp, "naks-received"),
        .rnr_naks_sent = qdict_get_int(dp, "rnr-naks-sent"),
        .duplicates = qdict_get_int(dp, "duplicates"),
        .completions = qdict_get_int(dp, "completions"),
        .drops = qdict_get_int(dp, "drops"),
    };
    qobject_unref(rsp);
    return c;
}

/* "reason count, ..." of every drop since the device was created. */
static char *drop_reasons(QTestState *qts)
{
    QDict *rsp = qtest_qmp(qts, "{'execute': 'query-virtio-rdma'}");
    QDict *dp = qdict_get_qdict(
        qobject_to(QDict, qlist_peek(qdict_get_qlist(rsp, "return"))),
        "data-path");
    GString *s = g_string_new("");
    QListEntry *e;

    QLIST_FOREACH_ENTRY(qdict_get_qlist(dp, "drop-reasons"), e) {
        QDict *r = qobject_to(QDict, qlist_entry_obj(e));

        g_string_append_printf(s, "%s%s %" PRId64, s->len ? ", " : "",
                               qdict_get_str(r, "reason"),
                               qdict_get_int(r, "count"));
    }
    qobject_unref(rsp);
    if (!s->len) {
        g_string_append(s, "none");
    }
    return g_string_free(s, false);
}

static DpCounters dp_delta(DpCounters a, DpCounters b)
{
    return (DpCounters) {
        .tx_packets = b.tx_packets - a.tx_packets,
        .tx_bytes = b.tx_bytes - a.tx_bytes,
        .rx_packets = b.rx_packets - a.rx_packets,
        .rx_bytes = b.rx_bytes - a.rx_bytes,
        .retransmits = b.retransmits - a.retransmits,
        .retry_timeouts = b.retry_timeouts - a.retry_timeouts,
        .naks_sent = b.naks_sent - a.naks_sent,
        .naks_received = b.naks_received - a.naks_received,
        .rnr_naks_sent = b.rnr_naks_sent - a.rnr_naks_sent,
        .duplicates = b.duplicates - a.duplicates,
        .completions = b.completions - a.completions,
        .drops = b.drops - a.drops,
    };
}

/* CPU time (user + system) of process @pid so far, in seconds. */
static double proc_cpu_s(pid_t pid)
{
    g_autofree char *path = g_strdup_printf("/proc/%d/stat", (int)pid);
    g_autofree char *text = NULL;
    unsigned long utime = 0, stime = 0;
    const char *p;

    if (!g_file_get_contents(path, &text, NULL, NULL)) {
        return 0;
    }
    /* Fields after "(comm)": state is field 3; utime, stime are 14, 15. */
    p = strrchr(text, ')');
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
                     "%lu %lu", &utime, &stime) != 2) {
        return 0;
    }
    return (double)(utime + stime) / sysconf(_SC_CLK_TCK);
}

/*
 * UDP datagrams the kernel dropped because a socket's receive buffer was
 * full (/proc/net/snmp Udp: RcvbufErrors; the whole network namespace).
 */
static uint64_t udp_rcvbuf_errors(void)
{
    g_autofree char *text = NULL;
    g_auto(GStrv) lines = NULL;
    uint64_t v = 0;
    int i, j;

    if (!g_file_get_contents("/proc/net/snmp", &text, NULL, NULL)) {
        return 0;
    }
    lines = g_strsplit(text, "\n", -1);
    for (i = 0; lines[i] && lines[i + 1]; i++) {
        if (g_str_has_prefix(lines[i], "Udp: ") &&
            g_str_has_prefix(lines[i + 1], "Udp: ")) {
            g_auto(GStrv) names = g_strsplit(lines[i], " ", -1);
            g_auto(GStrv) vals = g_strsplit(lines[i + 1], " ", -1);

            for (j = 0; names[j] && vals[j]; j++) {
                if (!strcmp(names[j], "RcvbufErrors")) {
                    v = g_ascii_strtoull(vals[j], NULL, 10);
                }
            }
            break;
        }
    }
    return v;
}

static double self_cpu_s(int who)
{
    struct rusage ru;

    getrusage(who, &ru);
    return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
           ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static double now_s(void)
{
    return g_get_monotonic_time() / 1e6;
}

/* ---- the raw loopback path ------------------------------------------------------ */

typedef struct Raw {
    int tx_fd, rx_fd;
    size_t frame;
    double seconds;
    volatile bool stop;         /* receiver: the sender is done */
    uint64_t sent, send_errors;
    uint64_t received, received_bytes;
    double tx_cpu, rx_cpu;      /* thread CPU seconds */
    double rx_first, rx_last;   /* first and last datagram */
} Raw;

static gpointer raw_sender(gpointer opaque)
{
    Raw *r = opaque;
    g_autofree uint8_t *buf = g_malloc(r->frame);
    double t0 = self_cpu_s(RUSAGE_THREAD);
    double end = now_s() + r->seconds;
    unsigned n = 0;

    memset(buf, 0x5a, r->frame);
    for (;;) {
        /* Look at the clock every 64 datagrams. */
        if ((n++ & 63) == 0 && now_s() >= end) {
            break;
        }
        if (send(r->tx_fd, buf, r->frame, 0) == (ssize_t)r->frame) {
            r->sent++;
        } else {
            r->send_errors++;
        }
    }
    r->tx_cpu = self_cpu_s(RUSAGE_THREAD) - t0;
    return NULL;
}

static gpointer raw_receiver(gpointer opaque)
{
    Raw *r = opaque;
    g_autofree uint8_t *buf = g_malloc(65536);
    double t0 = self_cpu_s(RUSAGE_THREAD);

    for (;;) {
        ssize_t n = recv(r->rx_fd, buf, 65536, 0);

        if (n > 0) {
            r->rx_last = now_s();
            if (!r->received++) {
                r->rx_first = r->rx_last;
            }
            r->received_bytes += n;
        } else if (r->stop) {
            break;              /* timed out after the sender finished */
        }
    }
    r->rx_cpu = self_cpu_s(RUSAGE_THREAD) - t0;
    return NULL;
}

/*
 * A sender and a receiver thread on two connected UDP sockets on 127.0.0.1,
 * default socket buffers (as the dgram netdev has), @frame-byte datagrams
 * for @seconds.
 */
static void raw_run(Raw *r, size_t frame, double seconds)
{
    struct sockaddr_in a = { .sin_family = AF_INET,
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    struct sockaddr_in b = a;
    struct timeval tv = { .tv_sec = 0, .tv_usec = 200 * 1000 };
    int pa, pb;
    GThread *tx, *rx;

    memset(r, 0, sizeof(*r));
    r->frame = frame;
    r->seconds = seconds;
    qvrdma_free_udp_ports(&pa, &pb);
    a.sin_port = htons(pa);
    b.sin_port = htons(pb);
    r->tx_fd = socket(AF_INET, SOCK_DGRAM, 0);
    r->rx_fd = socket(AF_INET, SOCK_DGRAM, 0);
    g_assert_cmpint(r->tx_fd, >=, 0);
    g_assert_cmpint(r->rx_fd, >=, 0);
    g_assert_cmpint(bind(r->tx_fd, (struct sockaddr *)&a, sizeof(a)), ==, 0);
    g_assert_cmpint(bind(r->rx_fd, (struct sockaddr *)&b, sizeof(b)), ==, 0);
    g_assert_cmpint(connect(r->tx_fd, (struct sockaddr *)&b, sizeof(b)), ==, 0);
    g_assert_cmpint(setsockopt(r->rx_fd, SOL_SOCKET, SO_RCVTIMEO, &tv,
                               sizeof(tv)), ==, 0);

    rx = g_thread_new("raw-rx", raw_receiver, r);
    tx = g_thread_new("raw-tx", raw_sender, r);
    g_thread_join(tx);
    r->stop = true;
    g_thread_join(rx);
    close(r->tx_fd);
    close(r->rx_fd);
}

/* ---- the benchmark ------------------------------------------------------------- */

static void bench_rc_write(void)
{
    const double seconds = env_u64("VRDMA_BENCH_SECONDS", 10);
    const uint64_t iters = env_u64("VRDMA_BENCH_ITERS", 0);
    const uint32_t msg = env_u64("VRDMA_BENCH_MSG_KIB", 1024) * 1024;
    const uint32_t depth = MAX(env_u64("VRDMA_BENCH_DEPTH", 4), 1);
    const uint32_t mtu_bytes = env_u64("VRDMA_BENCH_MTU", 4096);
    const uint32_t path_mtu = mtu_bytes == 1024 ? VIRTIO_RDMA_MTU_1024
                                                : VIRTIO_RDMA_MTU_4096;
    /* Local ACK timeout 4.096 us * 2^timeout; 14 (67 ms) as perftest. */
    const uint8_t timeout = MIN(MAX(env_u64("VRDMA_BENCH_TIMEOUT", 14), 1), 31);
    const char *nic_opts = path_mtu == VIRTIO_RDMA_MTU_4096 ?
                           ",host_mtu=9000" : "";
    g_autofree char *na = NULL, *nb = NULL, *amount = NULL;
    g_autofree char *drops_a = NULL, *drops_b = NULL;
    g_autofree uint8_t *pattern = NULL, *got = NULL;
    Side a, b;
    int pa, pb;
    uint32_t i;
    uint64_t posted = 0, done = 0;
    DpCounters a0, b0, da, db;
    double qa0, qb0, self0, t0, t1, qa_cpu, qb_cpu, self_cpu, elapsed;
    double rdma_Bps, avg_frame, payload_per_frame, raw_Bps, raw_payload_Bps;
    uint64_t first_tx, rcvbuf0, rcvbuf_rdma, rcvbuf_raw;
    bool failed = false;
    Raw raw;
    struct virtio_rdma_cq_req cqe;
    struct virtio_rdma_sq_req req;
    struct virtio_rdma_sge sge;

    g_assert_cmpuint(msg, >, 0);
    g_assert_true(mtu_bytes == 1024 || mtu_bytes == 4096);

    qvrdma_free_udp_ports(&pa, &pb);
    na = qvrdma_dgram_netdev(pa, pb);
    nb = qvrdma_dgram_netdev(pb, pa);
    /* The guest driver's data path: queues in guest memory. */
    side_init(&a, "A", qvrdma_dev_boot_full(na, MAC_A, nic_opts, RDMA_OPTS,
                                            QVRDMA_RING_FEATURES),
              VA_A, 0x100, msg, 1);
    side_init(&b, "B", qvrdma_dev_boot_full(nb, MAC_B, nic_opts, RDMA_OPTS,
                                            QVRDMA_RING_FEATURES),
              VA_B, 0xabcde, msg, 2);
    side_connect(&a, &b, path_mtu, timeout);
    side_connect(&b, &a, path_mtu, timeout);

    /* A's bytes, known, to be found in B's memory at the end. */
    pattern = g_malloc(msg);
    for (i = 0; i < msg; i++) {
        pattern[i] = (i * 2654435761u) >> 24;
    }
    qtest_bufwrite(a.d->qts, a.pt.data, pattern, msg);

    req = qvrdma_wr_rdma(VIRTIO_RDMA_WR_RDMA_WRITE, 0, cpu_to_le64(b.va),
                         cpu_to_le32(b.mr.rkey));
    sge = (struct virtio_rdma_sge) {
        .addr = cpu_to_le64(a.va),
        .length = cpu_to_le32(msg),
        .lkey = cpu_to_le32(a.mr.lkey),
    };

    amount = iters ? g_strdup_printf("%" PRIu64 " messages", iters)
                   : g_strdup_printf("%.0f s", seconds);
    out("virtio-rdma-bench: RC WRITE of %u KiB messages A -> B, path MTU %u, "
        "%u in flight, ACK timeout %u (%.1f ms), %s; two QEMUs on -netdev "
        "dgram over 127.0.0.1; engine in %s\n", msg / 1024, mtu_bytes, depth,
        timeout, 4.096e-3 * (1ull << timeout), amount,
        qvrdma_dp_want_iothread() ? "an iothread" : "the main loop");
    g_assert_cmpint(qvrdma_dp_engine_in_iothread(a.d), ==,
                    qvrdma_dp_want_iothread());

    /* Warm-up: one message end to end (connection, caches, ARP-free path). */
    req.wr_id = cpu_to_le64(~0ull);
    qvrdma_dp_post_send(a.qp, &req, &sge, 1);
    qvrdma_dp_wait_cqe(a.cq, &cqe);
    g_assert_cmpstr(qvrdma_wc_status_name(le32_to_cpu(cqe.status)), ==,
                    "SUCCESS");

    a0 = query_dp(a.d->qts);
    b0 = query_dp(b.d->qts);
    qa0 = proc_cpu_s(qtest_pid(a.d->qts));
    qb0 = proc_cpu_s(qtest_pid(b.d->qts));
    self0 = self_cpu_s(RUSAGE_SELF);
    rcvbuf0 = udp_rcvbuf_errors();
    t0 = now_s();
    for (;;) {
        while (posted - done < depth &&
               (iters ? posted < iters : now_s() - t0 < seconds)) {
            req.wr_id = cpu_to_le64(posted++);
            qvrdma_dp_post_send(a.qp, &req, &sge, 1);
        }
        if (posted == done) {
            break;
        }
        qvrdma_dp_wait_cqe(a.cq, &cqe);
        if (le32_to_cpu(cqe.status) != VIRTIO_RDMA_WC_SUCCESS ||
            le64_to_cpu(cqe.wr_id) != done) {
            g_autofree char *s = qvrdma_cqe_str(&cqe);

            /* A real failure (not a missed target): report, then fail. */
            out("rdma:   FAILED: message %" PRIu64 " completed %s\n", done, s);
            failed = true;
            break;
        }
        done++;
    }
    t1 = now_s();
    rcvbuf_rdma = udp_rcvbuf_errors() - rcvbuf0;
    self_cpu = self_cpu_s(RUSAGE_SELF) - self0;
    qa_cpu = proc_cpu_s(qtest_pid(a.d->qts)) - qa0;
    qb_cpu = proc_cpu_s(qtest_pid(b.d->qts)) - qb0;
    da = dp_delta(a0, query_dp(a.d->qts));
    db = dp_delta(b0, query_dp(b.d->qts));

    drops_a = drop_reasons(a.d->qts);
    drops_b = drop_reasons(b.d->qts);
    if (!failed) {
        got = g_malloc(msg);
        qtest_bufread(b.d->qts, b.pt.data, got, msg);
        g_assert_true(memcmp(got, pattern, msg) == 0);
    }
    side_free(&b);
    side_free(&a);

    elapsed = t1 - t0;
    rdma_Bps = (double)done * msg / elapsed;
    avg_frame = da.tx_packets ? (double)da.tx_bytes / da.tx_packets : 0;
    /* First transmissions only: message bytes per request frame. */
    first_tx = da.tx_packets - MIN(da.retransmits, da.tx_packets);
    payload_per_frame = first_tx ? (double)done * msg / first_tx : 0;

    out("rdma:   %" PRIu64 " messages in %.2f s: %.1f MB/s (%.0f messages/s)\n",
        done, elapsed, rdma_Bps / 1e6, done / elapsed);
    out("        A sent %" PRIu64 " frames (%.0f/s, avg %.0f bytes), received "
        "%" PRIu64 "; B sent %" PRIu64 " (ACKs), received %" PRIu64 "\n",
        da.tx_packets, da.tx_packets / elapsed, avg_frame, da.rx_packets,
        db.tx_packets, db.rx_packets);
    out("        retransmits %" PRIu64 ", retry timeouts %" PRIu64
        ", NAKs sent by B %" PRIu64 ", duplicates at B %" PRIu64
        ", drops A/B %" PRIu64 "/%" PRIu64 "\n",
        da.retransmits, da.retry_timeouts, db.naks_sent, db.duplicates,
        da.drops, db.drops);
    out("        drop reasons since boot: A: %s; B: %s\n", drops_a, drops_b);
    out("        UDP datagrams dropped on a full socket receive buffer: %"
        PRIu64 " (kernel RcvbufErrors, system-wide)\n", rcvbuf_rdma);
    out("        CPU: QEMU A %.0f%%, QEMU B %.0f%%, this driver %.0f%% "
        "(of one CPU, over %.2f s)\n", 100 * qa_cpu / elapsed,
        100 * qb_cpu / elapsed, 100 * self_cpu / elapsed, elapsed);

    /* The same path, raw, for as long, with frames of the same size. */
    rcvbuf0 = udp_rcvbuf_errors();
    raw_run(&raw, MAX((size_t)(avg_frame + 0.5), 64), elapsed);
    rcvbuf_raw = udp_rcvbuf_errors() - rcvbuf0;
    raw_Bps = raw.received_bytes / raw.seconds;
    raw_payload_Bps = avg_frame ? raw_Bps * payload_per_frame / avg_frame : 0;
    out("udp:    %zu-byte datagrams for %.2f s: sent %" PRIu64 " (%.0f/s), "
        "received %" PRIu64 " (%.0f/s, %.1f MB/s; %.1f%% lost)\n",
        raw.frame, raw.seconds, raw.sent, raw.sent / raw.seconds,
        raw.received, raw.received / raw.seconds, raw_Bps / 1e6,
        raw.sent ? 100.0 * (raw.sent - raw.received) / raw.sent : 0);
    out("        CPU: sender thread %.0f%%, receiver thread %.0f%%; dropped on "
        "a full receive buffer: %" PRIu64 "\n", 100 * raw.tx_cpu / raw.seconds,
        100 * raw.rx_cpu / raw.seconds, rcvbuf_raw);
    out("ratio:  rdma %.1f MB/s / udp %.1f MB/s of the same payload per frame "
        "= %.3f (target >= 0.8); first-transmission frames/s ratio %.3f\n",
        rdma_Bps / 1e6, raw_payload_Bps / 1e6,
        raw_payload_Bps > 0 ? rdma_Bps / raw_payload_Bps : 0,
        raw.received ? (first_tx / elapsed) / (raw.received / raw.seconds)
                     : 0);
    /*
     * What one data frame costs each side in CPU time, next to the raw
     * threads' cost per datagram; and the ratio each QEMU would allow if
     * it had a CPU of its own at that cost (the busier one bounds the run).
     */
    if (da.tx_packets && db.rx_packets && raw.sent && raw.received) {
        const double a_us = 1e6 * qa_cpu / da.tx_packets;
        const double b_us = 1e6 * qb_cpu / db.rx_packets;
        const double tx_us = 1e6 * raw.tx_cpu / raw.sent;
        const double rx_us = 1e6 * raw.rx_cpu / raw.received;
        const double cap = payload_per_frame / MAX(a_us, b_us) * 1e6;

        out("cost:   CPU per data frame: QEMU A %.2f us (sends it, ACKs in), "
            "QEMU B %.2f us (receives it, ACKs out); raw sender %.2f us, raw "
            "receiver %.2f us per datagram\n", a_us, b_us, tx_us, rx_us);
        out("        at these costs, one CPU per QEMU: at most %.1f MB/s, "
            "ratio %.3f\n", cap / 1e6,
            raw_payload_Bps > 0 ? cap / raw_payload_Bps : 0);
    }
    if (failed) {
        g_test_fail();
    }
}

/* The engine in the main loop, then in an iothread (libqos boots it so). */
static void bench_rc_write_main_loop(void)
{
    g_setenv("QVRDMA_IOTHREAD", "0", true);
    bench_rc_write();
}

/* QEMU's resident set, KiB (VmRSS of /proc/PID/status). */
static uint64_t proc_rss_kib(pid_t pid)
{
    g_autofree char *path = g_strdup_printf("/proc/%d/status", (int)pid);
    g_autofree char *text = NULL;
    const char *at;

    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    at = strstr(text, "VmRSS:");
    g_assert_nonnull(at);
    return g_ascii_strtoull(at + strlen("VmRSS:"), NULL, 10);
}

static void bench_qp_memory(void)
{
    const char *env = g_getenv("VRDMA_BENCH_QPS");
    uint32_t nqps = env ? atoi(env) : 16384, i, wire, pdn;
    /* Each QP maps its rings' 98 pages again: room for all of them. */
    g_autofree char *opts = g_strdup_printf("max-qp=%u,"
                                            "max-mapped-pages=%u", nqps + 2,
                                            100 * (nqps + 2));
    g_autofree uint32_t *qpns = g_new(uint32_t, nqps);
    QVrdmaRingDev *rd = qvrdma_ring_dev_boot(MAC_A, opts);
    QVirtioRdma *r = &rd->d->r;
    pid_t pid = qtest_pid(rd->d->qts);
    QVrdmaRingCq *cq;
    QVrdmaGRing sq, rq;
    struct virtio_rdma_cmd_create_qp_ring req;
    uint64_t rss0, rss1;
    double t0, t;

    g_assert_cmpuint(qvrdma_create_pd(r, &pdn), ==, VIRTIO_RDMA_OK);
    cq = qvrdma_ring_cq_create(rd, 0, 4, 2);
    /* 1024 entries of 88 + 4 * 16 bytes (SQ) and 16 + 4 * 16 (RQ) */
    qvrdma_gring_alloc(r, &sq, 10, 8);
    qvrdma_gring_alloc(r, &rq, 10, 7);
    req = qvrdma_ring_qp_req(0, pdn, cq->cqn, cq->cqn, 1024, 4, &sq, &rq);
    rss0 = proc_rss_kib(pid);
    t0 = g_get_monotonic_time() / 1e6;
    for (i = 0; i < nqps; i++) {
        g_assert_cmpuint(qvrdma_create_qp_ring(r, &req, &qpns[i], &wire), ==,
                         VIRTIO_RDMA_OK);
    }
    t = g_get_monotonic_time() / 1e6 - t0;
    rss1 = proc_rss_kib(pid);

    out("virtio-rdma-bench: QEMU's memory per QP, 1024 WRs x 4 SGEs each way\n");
    out("  %u QPs in %.1f s, VmRSS %" PRIu64 " -> %" PRIu64
        " KiB: %.1f KiB per QP\n", nqps, t, rss0, rss1,
        (double)(rss1 - rss0) / nqps);

    for (i = 0; i < nqps; i++) {
        g_assert_cmpuint(qvrdma_destroy_qp(r, qpns[i]), ==, VIRTIO_RDMA_OK);
    }
    qvrdma_gring_free(r, &sq);
    qvrdma_gring_free(r, &rq);
    qvrdma_ring_cq_destroy(cq);
    qvrdma_ring_cq_free(cq);
    qvrdma_ring_dev_quit(rd);
}

static void bench_rc_write_iothread(void)
{
    g_setenv("QVRDMA_IOTHREAD", "1", true);
    bench_rc_write();
    g_unsetenv("QVRDMA_IOTHREAD");
}

int main(int argc, char **argv)
{
    int i;

    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--tap")) {
            line_prefix = "# ";
        }
    }
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/virtio-rdma/bench/rc-write", bench_rc_write_main_loop);
    qtest_add_func("/virtio-rdma/bench/rc-write-iothread",
                   bench_rc_write_iothread);
    qtest_add_func("/virtio-rdma/bench/qp-memory", bench_qp_memory);
    return g_test_run();
}

/*
 * virtio-rdma-lab-peer: our device as the far end of unmodified rdma-core /
 * perftest tools running on Linux rxe (the lab tier, tests/lab).
 *
 * One QEMU (qtest accelerator) with the virtio-net / virtio-rdma pair whose
 * netdev is a -netdev dgram link to a lab guest's rxe netdev, driven through
 * the libqos driver the way a guest driver drives it: its CQ and QP are
 * queues in guest memory (VIRTIO_RDMA_F_RINGS).  The tools' out-of-band
 * exchanges go over TCP on 127.0.0.1 (the guest reaches us through QEMU's
 * user network: 10.0.2.2, or we reach it through a hostfwd):
 *
 *   rc_pingpong, ud_pingpong   "lid:qpn:psn:gid" (52 bytes), then "done";
 *   write_bw, read_bw,         perftest 4.5: version (16 bytes), two 4-byte
 *   send_bw, atomic_bw         words and the MTU (2 bytes), four 108-byte
 *                              "lid:out_reads:qpn:psn:rkey:vaddr:gid:srqn"
 *                              handshakes, the test, the client's BW report
 *                              (5 big-endian 8-byte fields; not for send_bw),
 *                              one more handshake, "done";
 *   rping                      no TCP: RDMA-CM MADs through the device's GSI
 *                              QP and rdmacm-mux (QVRDMA_MAD_SOCKET), then
 *                              rping's 16-byte buffer messages; as client,
 *                              --tcp is the server's address.
 *
 * The peer prints figures in the tools' own formats (so one parser reads
 * both) and checks data where the tool makes it knowable:
 *   pingpong: every received payload is the pattern the tools use with
 *             --chk (0x7b, 0 at each page start; UD: 0x7b);
 *   read_bw client: two reads of the guest's buffer agree;
 *   atomic_bw client: fetch-and-add results step by the added value;
 *   atomic_bw server: our words grew by iterations * (the guest's add);
 *   write_bw server: our buffer was written.
 *
 * usage (QTEST_QEMU_BINARY set):
 *   virtio-rdma-lab-peer --tool T --role server|client --port N
 *       --wire LOCAL:REMOTE --mac OUR_MAC --peer-mac GUEST_MAC
 *       --ip4 A.B.C.D --ip6 ADDR --gid 4|6 [--size N] [--iters N]
 *       [--tcp ADDR]
 * --tcp: the guest's tools are at ADDR (connect there; listen on every
 * address), not behind 127.0.0.1.  With QVRDMA_IBDEV=<host RDMA device>
 * (libqos) the device is backend=ibverbs on it: the lab runs the peer so,
 * nested in a guest with rxe, against the tools in another guest; the
 * wire options then name nothing (the host device moves the data).
 * Exit status 0 and "PEER: PASS" on success.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <poll.h>
#include "libqtest.h"
#include "qemu/bswap.h"
#include "libqos/libqos-pc.h"
#include "libqos/virtio-rdma.h"
#include "libqos/virtio-rdma-dp.h"
#include "libqos/virtio-rdma-ring.h"

#define MR_PAGES        64
#define MR_LEN          (MR_PAGES * 4096)
#define MR_VA           0x7f1200000000ull
#define REGION(i)       ((uint32_t)(i) * 65536u)    /* 4 regions of 64 KiB */
#define UD_QKEY         0x11111111u
#define MAX_OUT         8       /* outstanding sends / posted receives */
#define IO_TIMEOUT_MS   120000
#define OUR_OUT_READS   4       /* the helper's max_rd_atomic / max_dest */

static struct {
    const char *tool, *role, *mac, *peer_mac, *ip4, *ip6, *tcp;
    int port, lport, rport, gid_family;
    uint32_t size, iters;
} opt = { .gid_family = 4, .iters = 200 };

typedef struct Peer {
    QVrdmaDev *d;
    uint32_t pdn;
    QVrdmaCq *cq;
    QVrdmaQp *qp;
    QVrdmaPageTable pt;
    struct virtio_rdma_rsp_mr mr;
    uint8_t gid[16];            /* ours, at sgid_index */
    uint8_t sgid_index;
    uint8_t peer_mac[6];
    uint32_t psn;
    uint64_t next_wr;
    uint32_t sends_out, recvs_posted;
    uint32_t recv_len;          /* of each posted receive */
    uint32_t recv_off;          /* region receives land in */
    /* the guest's side */
    uint32_t rqpn, rpsn, rrkey, rout_reads;
    uint64_t rvaddr;
    uint8_t rgid[16];
} Peer;

static gint64 t0;
static bool failed;

static void say(const char *fmt, ...) G_GNUC_PRINTF(1, 2);
static void say(const char *fmt, ...)
{
    va_list ap;

    printf("[%7.3f] ", (g_get_monotonic_time() - t0) / 1e6);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
}

static void fail(const char *fmt, ...) G_GNUC_PRINTF(1, 2);
static void fail(const char *fmt, ...)
{
    va_list ap;
    g_autofree char *s = NULL;

    va_start(ap, fmt);
    s = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    say("PEER: FAIL: %s", s);
    failed = true;
}

static void parse_mac(const char *s, uint8_t mac[6])
{
    unsigned v[6];
    int i;

    g_assert_cmpint(sscanf(s, "%x:%x:%x:%x:%x:%x", &v[0], &v[1], &v[2],
                           &v[3], &v[4], &v[5]), ==, 6);
    for (i = 0; i < 6; i++) {
        mac[i] = v[i];
    }
}

/* ---- TCP ------------------------------------------------------------------ */

static bool wait_fd(int fd, short ev, int ms)
{
    struct pollfd p = { .fd = fd, .events = ev };

    return poll(&p, 1, ms) == 1;
}

/* Reads exactly @n bytes; false on EOF, error or timeout. */
static bool xread(int fd, void *buf, size_t n)
{
    size_t got = 0;

    while (got < n) {
        ssize_t r;

        if (!wait_fd(fd, POLLIN, IO_TIMEOUT_MS)) {
            return false;
        }
        r = read(fd, (char *)buf + got, n - got);
        if (r <= 0) {
            return false;
        }
        got += r;
    }
    return true;
}

static bool xwrite(int fd, const void *buf, size_t n)
{
    return write(fd, buf, n) == (ssize_t)n;
}

/* Whatever the other side still says before closing (up to 2 s). */
static void drain(int fd)
{
    char buf[256];

    while (wait_fd(fd, POLLIN, 2000) && read(fd, buf, sizeof(buf)) > 0) {
    }
}

/* Where the tools are: --tcp's address, or 127.0.0.1. */
static struct in_addr tcp_addr(void)
{
    struct in_addr a = { .s_addr = htonl(INADDR_LOOPBACK) };

    if (opt.tcp && inet_pton(AF_INET, opt.tcp, &a) != 1) {
        fail("--tcp %s: not an IPv4 address", opt.tcp);
    }
    return a;
}

static int tcp_listen_accept(int port)
{
    struct sockaddr_in sa = {
        .sin_family = AF_INET, .sin_port = htons(port),
        .sin_addr.s_addr = opt.tcp ? htonl(INADDR_ANY)
                                   : htonl(INADDR_LOOPBACK),
    };
    int one = 1, ls = socket(AF_INET, SOCK_STREAM, 0), fd;

    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(ls, (struct sockaddr *)&sa, sizeof(sa)) || listen(ls, 1)) {
        fail("listen on 127.0.0.1:%d: %s", port, strerror(errno));
        return -1;
    }
    say("listening on 127.0.0.1:%d", port);
    if (!wait_fd(ls, POLLIN, IO_TIMEOUT_MS)) {
        fail("nobody connected to 127.0.0.1:%d", port);
        close(ls);
        return -1;
    }
    fd = accept(ls, NULL, NULL);
    close(ls);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    say("connection accepted");
    return fd;
}

/*
 * Connects to the guest's server through the hostfwd and exchanges the first
 * message: @out is written, @in_len bytes read.  The forwarder accepts even
 * while the guest does not listen yet, and then closes: that is retried.
 */
static int tcp_connect_first(int port, const void *out, size_t out_len,
                             void *in, size_t in_len)
{
    gint64 end = g_get_monotonic_time() + IO_TIMEOUT_MS * 1000ll;
    int tries = 0, one = 1;

    while (g_get_monotonic_time() < end) {
        struct sockaddr_in sa = {
            .sin_family = AF_INET, .sin_port = htons(port),
            .sin_addr = tcp_addr(),
        };
        int fd = socket(AF_INET, SOCK_STREAM, 0);

        tries++;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
            xwrite(fd, out, out_len) && wait_fd(fd, POLLIN, IO_TIMEOUT_MS) &&
            xread(fd, in, in_len)) {
            say("connected to 127.0.0.1:%d after %d tries", port, tries);
            return fd;
        }
        close(fd);
        g_usleep(500 * 1000);
    }
    fail("no server at 127.0.0.1:%d (%d tries)", port, tries);
    return -1;
}

/* ---- the device side -------------------------------------------------------- */

static void peer_boot(Peer *p, uint8_t qp_type)
{
    g_autofree char *nd = g_strdup_printf(
        "dgram,id=n0,local.type=inet,local.host=127.0.0.1,local.port=%d,"
        "remote.type=inet,remote.host=127.0.0.1,remote.port=%d",
        opt.lport, opt.rport);
    uint32_t access = VIRTIO_RDMA_ACCESS_LOCAL_WRITE |
                      VIRTIO_RDMA_ACCESS_REMOTE_WRITE |
                      VIRTIO_RDMA_ACCESS_REMOTE_READ |
                      VIRTIO_RDMA_ACCESS_REMOTE_ATOMIC;
    uint8_t gid6[16], st;
    unsigned a, b, c, dd;

    memset(p, 0, sizeof(*p));
    parse_mac(opt.peer_mac, p->peer_mac);
    /*
     * Queues in guest memory, as the guest driver has them (libqos makes
     * the CQ and QP rings); on a host device the wire options name nothing.
     */
    p->d = qvrdma_dev_boot_features(qvrdma_dp_ibverbs() ? "user,id=n0" : nd,
                                    opt.mac, "",
                                    QVRDMA_RING_FEATURES);
    /* QVRDMA_IOTHREAD=1: the engine runs in an iothread (the lab's interop part, v6). */
    if (qvrdma_dp_engine_in_iothread(p->d) != qvrdma_dp_want_iothread()) {
        fail("the engine is not where QVRDMA_IOTHREAD asked");
    }
    say("PEER: engine in %s", qvrdma_dp_want_iothread() ? "an iothread"
                                                        : "the main loop");
    /* Both GIDs first: a RoCE frame for a GID we lack would stall the wire. */
    g_assert_cmpint(sscanf(opt.ip4, "%u.%u.%u.%u", &a, &b, &c, &dd), ==, 4);
    qvrdma_gid_ipv4(p->gid, a, b, c, dd);
    qvrdma_dp_add_gid(p->d, 0, p->gid);
    g_assert_cmpint(inet_pton(AF_INET6, opt.ip6, gid6), ==, 1);
    qvrdma_dp_add_gid(p->d, 1, gid6);
    if (opt.gid_family == 6) {
        memcpy(p->gid, gid6, 16);
        p->sgid_index = 1;
    }

    st = qvrdma_create_pd(&p->d->r, &p->pdn);
    g_assert_cmpstr(qvrdma_status_name(st), ==, "OK");
    p->cq = qvrdma_dp_cq_create(p->d, 64);
    p->qp = qvrdma_dp_qp_create(p->d, p->pdn, qp_type, p->cq, p->cq, 1,
                                VIRTIO_RDMA_SIGNAL_ALL_WR);
    qvrdma_pt_build(&p->d->r, &p->pt, MR_PAGES, NULL);
    st = qvrdma_reg_user_mr(&p->d->r, p->pdn, access, MR_VA, MR_LEN, MR_VA,
                            p->pt.l1, MR_PAGES, &p->mr);
    g_assert_cmpstr(qvrdma_status_name(st), ==, "OK");
    qtest_memset(p->d->qts, p->pt.data, 0xa5, MR_LEN);
    p->psn = g_random_int() & 0xffffff;
    p->next_wr = 1;
    say("device up: qpn %u, mr lkey/rkey 0x%x, gid index %u, psn 0x%06x",
        p->qp->wire_qpn, p->mr.rkey, p->sgid_index, p->psn);
}

/*
 * The kernel's view of our QEMU's end of the wire: bytes waiting in its
 * receive queue show a QEMU that stopped reading it, "drops" a full one.
 */
static void print_wire_socket(int lport)
{
    g_autofree char *text = NULL;
    g_auto(GStrv) lines = NULL;
    g_autofree char *local = g_strdup_printf("0100007F:%04X", lport);

    if (!g_file_get_contents("/proc/net/udp", &text, NULL, NULL)) {
        return;
    }
    lines = g_strsplit(text, "\n", -1);
    for (char **l = lines; *l; l++) {
        if (l == lines || strstr(*l, local)) {
            printf("wire socket: %s\n", g_strstrip(*l));
        }
    }
}

static void peer_down(Peer *p)
{
    /* The device's own account of what happened (counters, drops). */
    g_autofree char *info = qtest_hmp(p->d->qts, "info rdma");

    print_wire_socket(opt.lport);
    printf("---- info rdma (device) ----\n%s----\n", info);
    qvrdma_dp_qp_free(p->qp);
    qvrdma_dp_cq_free(p->cq);
    qvrdma_pt_free(&p->d->r, &p->pt);
    qvrdma_dev_quit(p->d);
}

static void rc_connect(Peer *p)
{
    QVrdmaPath path = {
        .dest_qpn = p->rqpn,
        .sgid_index = p->sgid_index,
        .rq_psn = p->rpsn,
        .sq_psn = p->psn,
        /*
         * perftest's retry_cnt, but a local ACK timeout of 537 ms instead
         * of its 67 ms (14): the peer is a TCG guest, whose host may stop
         * it for longer than 8 x 67 ms.  Our requester then runs out of
         * retries (RETRY_EXC_ERR, as IBA says), where rxe's -- which
         * takes a retry_cnt of 7 to mean "for ever" -- keeps waiting.
         */
        .timeout = 17,
        .retry_cnt = 7,
        .rnr_retry = 7,
        .min_rnr_timer = 12,
    };

    memcpy(path.dgid, p->rgid, 16);
    memcpy(path.dmac, p->peer_mac, 6);
    qvrdma_dp_rc_connect(p->d, p->qp, &path);
}

static struct virtio_rdma_sge sge_at(Peer *p, uint32_t off, uint32_t len)
{
    g_assert_cmpuint(off + len, <=, MR_LEN);
    return (struct virtio_rdma_sge) {
        .addr = MR_VA + off, .length = len, .lkey = p->mr.lkey,
    };
}

static void post_recvs(Peer *p, uint32_t want)
{
    while (p->recvs_posted < want) {
        struct virtio_rdma_sge s = sge_at(p, p->recv_off, p->recv_len);

        qvrdma_dp_post_recv(p->qp, 0x8000000000000000ull | p->next_wr++,
                            &s, 1);
        p->recvs_posted++;
    }
}

static void post_wr(Peer *p, struct virtio_rdma_sq_req *wr,
                    struct virtio_rdma_sge *s)
{
    wr->wr_id = p->next_wr++;
    qvrdma_dp_post_send(p->qp, wr, s, 1);
    p->sends_out++;
}

/*
 * Takes one completion; counts it.  @returns false (and fails) on a bad
 * status or timeout.
 */
static bool take_cqe(Peer *p, struct virtio_rdma_cq_req *c)
{
    if (!qvrdma_dp_poll_cq(p->cq, c, 30 * 1000 * 1000)) {
        fail("no completion within 30 s (%u sends out, %u receives posted)",
             p->sends_out, p->recvs_posted);
        return false;
    }
    if (c->status != VIRTIO_RDMA_WC_SUCCESS) {
        g_autofree char *s = qvrdma_cqe_str(c);

        fail("completion with error: %s", s);
        return false;
    }
    if (c->opcode & VIRTIO_RDMA_WC_RECV) {
        p->recvs_posted--;
    } else {
        p->sends_out--;
    }
    return true;
}

/* ---- pingpong -------------------------------------------------------------- */

/* What ibv_*_pingpong exchange with --chk: 0x7b, 0 at each page start (RC). */
static void pp_pattern(uint8_t *buf, uint32_t len, bool page_zero)
{
    uint32_t i;

    memset(buf, 0x7b, len);
    for (i = 0; page_zero && i < len; i += 4096) {
        buf[i] = 0;
    }
}

static void pp_msg(Peer *p, char msg[52])
{
    char gid[33];
    int i;

    for (i = 0; i < 16; i++) {
        sprintf(gid + 2 * i, "%02x", p->gid[i]);
    }
    memset(msg, 0, 52);
    snprintf(msg, 52, "%04x:%06x:%06x:%s", 0, p->qp->wire_qpn, p->psn, gid);
}

static bool pp_parse(Peer *p, const char *msg)
{
    unsigned lid, qpn, psn;
    char gid[33] = "";
    int i;

    if (sscanf(msg, "%x:%x:%x:%32s", &lid, &qpn, &psn, gid) != 4 ||
        strlen(gid) != 32) {
        fail("bad pingpong message '%.52s'", msg);
        return false;
    }
    p->rqpn = qpn;
    p->rpsn = psn;
    for (i = 0; i < 16; i++) {
        unsigned v;

        sscanf(gid + 2 * i, "%2x", &v);
        p->rgid[i] = v;
    }
    say("guest: qpn 0x%06x psn 0x%06x gid %s", qpn, psn, gid);
    return true;
}

static void run_pingpong(bool ud)
{
    bool server = !strcmp(opt.role, "server");
    uint32_t size = opt.size ? opt.size : (ud ? 512 : 4096);
    uint32_t grh = ud ? 40 : 0, bad = 0;
    g_autofree uint8_t *pat = g_malloc(size);
    g_autofree uint8_t *got = g_malloc(size + grh);
    char msg[52], in[52];
    gint64 start = 0;
    Peer p;
    int fd;

    peer_boot(&p, ud ? VIRTIO_RDMA_QPT_UD : VIRTIO_RDMA_QPT_RC);
    if (ud) {
        qvrdma_dp_ud_ready(p.d, p.qp, UD_QKEY, p.psn);
    }
    pp_pattern(pat, size, !ud);
    qtest_memwrite(p.d->qts, p.pt.data + REGION(0), pat, size);
    p.recv_off = REGION(1);
    p.recv_len = size + grh;
    if (ud) {
        post_recvs(&p, MAX_OUT);
    }
    pp_msg(&p, msg);

    if (server) {
        fd = tcp_listen_accept(opt.port);
        if (fd < 0 || !xread(fd, in, sizeof(in))) {
            fail("no pingpong message from the guest");
            goto out;
        }
        if (!pp_parse(&p, in)) {
            goto out;
        }
        if (!ud) {
            rc_connect(&p);
            post_recvs(&p, MAX_OUT);
        }
        if (!xwrite(fd, msg, sizeof(msg))) {
            fail("write to the guest");
            goto out;
        }
        /* The client's "done" (not waited for by every version). */
        drain(fd);
    } else {
        fd = tcp_connect_first(opt.port, msg, sizeof(msg), in, sizeof(in));
        if (fd < 0 || !pp_parse(&p, in)) {
            goto out;
        }
        xwrite(fd, "done", 5);
        if (!ud) {
            rc_connect(&p);
            post_recvs(&p, MAX_OUT);
        }
    }
    close(fd);

    /* rc_pingpong's own loop: a new SEND once both the last one and a
     * receive have completed; the client starts. */
    {
        uint32_t scnt = 0, rcnt = 0;
        bool pend_recv = true, pend_send = false;
        struct virtio_rdma_sq_req wr = qvrdma_wr_send(0);
        struct virtio_rdma_sge s = sge_at(&p, REGION(0), size);
        struct virtio_rdma_cq_req c;

        if (ud) {
            wr.wr.ud.remote_qpn = p.rqpn;
            wr.wr.ud.remote_qkey = UD_QKEY;
            wr.wr.ud.av.port = 1;
            wr.wr.ud.av.pdn = p.pdn;
            memcpy(wr.wr.ud.av.dgid, p.rgid, 16);
            wr.wr.ud.av.gid_index = p.sgid_index;
            wr.wr.ud.av.hop_limit = 64;
            memcpy(wr.wr.ud.av.dmac, p.peer_mac, 6);
        }
        if (!server) {
            start = g_get_monotonic_time();
            post_wr(&p, &wr, &s);
            pend_send = true;
        }
        while ((rcnt < opt.iters || scnt < opt.iters) && take_cqe(&p, &c)) {
            if (c.opcode & VIRTIO_RDMA_WC_RECV) {
                if (!start) {
                    start = g_get_monotonic_time();
                }
                if (c.byte_len != size + grh) {
                    fail("receive %u: %u bytes, expected %u", rcnt,
                         c.byte_len, size + grh);
                    break;
                }
                qtest_memread(p.d->qts, p.pt.data + REGION(1), got,
                              size + grh);
                if (memcmp(got + grh, pat, size)) {
                    bad++;
                }
                rcnt++;
                post_recvs(&p, MAX_OUT);
                pend_recv = false;
            } else {
                scnt++;
                pend_send = false;
            }
            if (scnt < opt.iters && !pend_recv && !pend_send) {
                post_wr(&p, &wr, &s);
                pend_recv = pend_send = true;
            }
        }
    }
    if (!failed) {
        double usec = (g_get_monotonic_time() - start);
        long long bytes = (long long)size * opt.iters * 2;

        printf("%lld bytes in %.2f seconds = %.2f Mbit/sec\n", bytes,
               usec / 1e6, bytes * 8. / usec);
        printf("%u iters in %.2f seconds = %.2f usec/iter\n", opt.iters,
               usec / 1e6, usec / opt.iters);
        if (bad) {
            fail("%u of %u received payloads differ from the tools' pattern",
                 bad, opt.iters);
        } else {
            say("all %u received payloads are the tools' pattern", opt.iters);
        }
    }
out:
    peer_down(&p);
}

/* ---- perftest --------------------------------------------------------------- */

#define PT_MSG 108

static void pt_msg(Peer *p, char msg[PT_MSG], uint32_t out_reads)
{
    char *s = msg;
    int i;

    memset(msg, 0, PT_MSG);
    s += sprintf(s, "%04x:%04x:%06x:%06x:%08x:%016" PRIx64 ":", 0, out_reads,
                 p->qp->wire_qpn, p->psn, p->mr.rkey, (uint64_t)MR_VA);
    for (i = 0; i < 16; i++) {
        s += sprintf(s, "%02x:", p->gid[i]);
    }
    sprintf(s, "%08x:", 0);
}

static bool pt_parse(Peer *p, const char *msg)
{
    unsigned v[16], lid, reads, qpn, psn, rkey;
    uint64_t va;
    int i;

    if (sscanf(msg, "%x:%x:%x:%x:%x:%" SCNx64 ":%x:%x:%x:%x:%x:%x:%x:%x:%x:%x:"
               "%x:%x:%x:%x:%x:%x:", &lid, &reads, &qpn, &psn, &rkey, &va,
               &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8],
               &v[9], &v[10], &v[11], &v[12], &v[13], &v[14], &v[15]) != 22) {
        fail("bad perftest message '%.108s'", msg);
        return false;
    }
    p->rqpn = qpn;
    p->rpsn = psn;
    p->rrkey = rkey;
    p->rvaddr = va;
    p->rout_reads = reads;
    for (i = 0; i < 16; i++) {
        p->rgid[i] = v[i];
    }
    return true;
}

/* One exchange of @n bytes: the client writes first, the server reads first. */
static bool pt_xchg(int fd, bool server, const void *mine, void *theirs,
                    size_t n)
{
    if (server) {
        return xread(fd, theirs, n) && xwrite(fd, mine ? mine : theirs, n);
    }
    return xwrite(fd, mine, n) && xread(fd, theirs, n);
}

static uint64_t be_double(double d)
{
    uint64_t u;

    memcpy(&u, &d, 8);
    return cpu_to_be64(u);
}

static void run_perftest(const char *tool)
{
    bool server = !strcmp(opt.role, "server");
    bool is_write = !strcmp(tool, "write_bw"), is_read = !strcmp(tool, "read_bw");
    bool is_send = !strcmp(tool, "send_bw"), is_atomic = !strcmp(tool, "atomic_bw");
    uint32_t size = is_atomic ? 8 : (opt.size ? opt.size : 65536);
    uint32_t out_reads = (is_read || is_atomic) ? OUR_OUT_READS : 1;
    uint32_t window = MAX_OUT, done = 0, posted = 0, i;
    static const uint8_t w4a[4] = { 0, 0, 0x10, 0 }, w4b[4] = { 0, 0, 0, 0x40 };
    char version[16] = "6.06", vin[16], mtu[2] = "3", min[2];
    uint8_t w4in[4];
    char msg[PT_MSG], in[PT_MSG];
    uint64_t atomic_before = 0, last_fetch = 0;
    double usec = 0;
    gint64 start;
    Peer p;
    int fd, k;

    peer_boot(&p, VIRTIO_RDMA_QPT_RC);
    if (is_atomic) {
        atomic_before = 0x1000;
        qtest_writeq(p.d->qts, p.pt.data, atomic_before);
    }
    pt_msg(&p, msg, out_reads);
    p.recv_off = REGION(1);
    p.recv_len = size;

    if (server) {
        fd = tcp_listen_accept(opt.port);
        if (fd < 0 || !xread(fd, vin, 16) || !xwrite(fd, version, 16)) {
            fail("version exchange");
            goto out;
        }
    } else {
        fd = tcp_connect_first(opt.port, version, 16, vin, 16);
        if (fd < 0) {
            goto out;
        }
    }
    say("guest perftest version '%.16s'", vin);
    if (!pt_xchg(fd, server, server ? NULL : w4a, w4in, 4) ||
        !pt_xchg(fd, server, server ? NULL : w4b, w4in, 4) ||
        !pt_xchg(fd, server, mtu, min, 2)) {
        fail("parameter exchange");
        goto out;
    }
    if (min[0] != '3') {
        fail("guest MTU index '%c' (want 3: 1024)", min[0]);
        goto out;
    }
    for (k = 0; k < 4; k++) {
        if (!pt_xchg(fd, server, msg, in, PT_MSG)) {
            fail("handshake %d", k + 1);
            goto out;
        }
        if (k == 0) {
            if (!pt_parse(&p, in)) {
                goto out;
            }
            say("guest: qpn 0x%06x psn 0x%06x rkey 0x%x vaddr 0x%" PRIx64
                " out_reads %u", p.rqpn, p.rpsn, p.rrkey, p.rvaddr,
                p.rout_reads);
            rc_connect(&p);
            if (is_send && server) {
                post_recvs(&p, MAX_OUT);
            }
        }
    }

    start = g_get_monotonic_time();
    if (!server) {
        /* The requester: the guest is passive (send_bw: receives). */
        if (is_read || is_atomic) {
            window = MIN(window, MIN(p.rout_reads, OUR_OUT_READS));
        }
        while (done < opt.iters && !failed) {
            struct virtio_rdma_cq_req c;

            while (posted < opt.iters && p.sends_out < window) {
                struct virtio_rdma_sq_req wr;
                struct virtio_rdma_sge s;

                if (is_write) {
                    wr = qvrdma_wr_rdma(VIRTIO_RDMA_WR_RDMA_WRITE, 0,
                                        p.rvaddr, p.rrkey);
                    s = sge_at(&p, REGION(0), size);
                } else if (is_read) {
                    wr = qvrdma_wr_rdma(VIRTIO_RDMA_WR_RDMA_READ, 0,
                                        p.rvaddr, p.rrkey);
                    s = sge_at(&p, REGION(1), size);
                } else if (is_atomic) {
                    wr = qvrdma_wr_atomic(VIRTIO_RDMA_WR_ATOMIC_FETCH_AND_ADD,
                                          0, p.rvaddr, p.rrkey, 1, 0);
                    s = sge_at(&p, REGION(3) + 8 * (posted % 64), 8);
                } else {
                    wr = qvrdma_wr_send(0);
                    s = sge_at(&p, REGION(0), size);
                }
                post_wr(&p, &wr, &s);
                posted++;
            }
            if (!take_cqe(&p, &c)) {
                break;
            }
            if (is_atomic) {
                uint64_t v = qtest_readq(p.d->qts, p.pt.data + REGION(3) +
                                         8 * (done % 64));

                if (done && v != last_fetch + 1) {
                    fail("fetch-and-add %u returned 0x%" PRIx64 ", previous "
                         "0x%" PRIx64 " (+1 expected)", done, v, last_fetch);
                }
                last_fetch = v;
            }
            done++;
        }
        usec = g_get_monotonic_time() - start;
        /*
         * write_bw: the guest's QP grants REMOTE_WRITE only (a read-back is
         * NAKed "invalid request", as IBA wants): its buffer is unknowable.
         */
        if (!failed && is_read) {
            /* A second read of the (static) buffer must give the same. */
            g_autofree uint8_t *a = g_malloc(size), *b = g_malloc(size);
            struct virtio_rdma_sq_req wr = qvrdma_wr_rdma(
                VIRTIO_RDMA_WR_RDMA_READ, 0, p.rvaddr, p.rrkey);
            struct virtio_rdma_sge s = sge_at(&p, REGION(2), size);
            struct virtio_rdma_cq_req c;

            post_wr(&p, &wr, &s);
            if (take_cqe(&p, &c)) {
                qtest_memread(p.d->qts, p.pt.data + REGION(1), a, size);
                qtest_memread(p.d->qts, p.pt.data + REGION(2), b, size);
                if (memcmp(a, b, size)) {
                    fail("two reads of the guest's buffer differ");
                } else {
                    say("data check: two reads of the guest's %u bytes agree",
                        size);
                }
            }
        } else if (!failed && is_atomic) {
            say("data check: %u fetch-and-adds returned consecutive values "
                "(last 0x%" PRIx64 ")", done, last_fetch);
        }
        if (!failed) {
            /* perftest's units: MB = 2^20 bytes, Mpps = 1e6 / s */
            double bw = (double)size * done / usec * 1e6 / 1048576.0;
            double rate = done / usec;                  /* Mpps */
            uint64_t rep[5] = {
                cpu_to_be64(size), cpu_to_be64(opt.iters), be_double(bw),
                be_double(bw), be_double(rate),
            };
            uint64_t their;

            printf(" #bytes     #iterations    BW peak[MB/sec]    "
                   "BW average[MB/sec]   MsgRate[Mpps]\n");
            printf(" %-10u %-10u     %-18.2f %-20.2f %-.6f\n", size,
                   opt.iters, bw, bw, rate);
            if (!is_send) {
                for (k = 0; k < 5; k++) {
                    if (!pt_xchg(fd, false, &rep[k], &their, 8)) {
                        fail("report exchange");
                        goto out;
                    }
                }
            }
        }
    } else {
        /* The responder: only send_bw needs us; the others wait for the report. */
        if (is_send) {
            struct virtio_rdma_cq_req c;

            while (done < opt.iters && take_cqe(&p, &c)) {
                if (c.byte_len != size) {
                    g_autofree char *cs = qvrdma_cqe_str(&c);

                    fail("receive %u: %u bytes, expected %u (%s)", done,
                         c.byte_len, size, cs);
                    break;
                }
                if (done == 0) {
                    start = g_get_monotonic_time();
                }
                done++;
                post_recvs(&p, MAX_OUT);
            }
            usec = g_get_monotonic_time() - start;
            if (!failed) {
                printf(" #bytes     #iterations    BW peak[MB/sec]    "
                       "BW average[MB/sec]   MsgRate[Mpps]\n");
                printf(" %-10u %-10u     %-18.2f %-20.2f %-.6f\n", size,
                       opt.iters, (double)size * done / usec * 1e6 / 1048576.0,
                       (double)size * done / usec * 1e6 / 1048576.0,
                       done / usec);
                say("received %u SENDs of %u bytes", done, size);
            }
        } else {
            uint64_t rep[5], zero = 0;

            for (k = 0; k < 5; k++) {
                if (!pt_xchg(fd, true, &zero, &rep[k], 8)) {
                    fail("report exchange (the guest client failed?)");
                    goto out;
                }
            }
            say("guest's report: %" PRIu64 " bytes x %" PRIu64 " iterations",
                be64_to_cpu(rep[0]), be64_to_cpu(rep[1]));
            if (is_atomic) {
                /*
                 * perftest walks its atomics over the buffer: the sum of
                 * every 8-byte word's growth is iterations * the add value.
                 */
                g_autofree uint64_t *w = g_malloc(MR_LEN);
                uint64_t delta = 0, words = 0;
                uint32_t j;

                qtest_memread(p.d->qts, p.pt.data, w, MR_LEN);
                for (j = 0; j < MR_LEN / 8; j++) {
                    uint64_t init = j ? 0xa5a5a5a5a5a5a5a5ull : atomic_before;

                    if (w[j] != init) {
                        delta += w[j] - init;
                        words++;
                    }
                }
                if (!delta || delta % opt.iters) {
                    fail("our words grew by %" PRIu64 " in all after %u "
                         "fetch-and-adds", delta, opt.iters);
                } else {
                    say("data check: %" PRIu64 " of our words grew by %" PRIu64
                        " in all = %u x %" PRIu64, words, delta, opt.iters,
                        delta / opt.iters);
                }
            } else if (is_write) {
                g_autofree uint8_t *a = g_malloc(size);

                qtest_memread(p.d->qts, p.pt.data, a, size);
                for (i = 0; i < size && a[i] == 0xa5; i++) {
                }
                if (i == size) {
                    fail("our buffer was not written");
                } else {
                    say("data check: our buffer was written");
                }
            }
        }
    }
    if (!failed) {
        if (!pt_xchg(fd, server, msg, in, PT_MSG)) {
            fail("final handshake");
            goto out;
        }
        xwrite(fd, "done", 5);
        drain(fd);
    }
out:
    if (fd >= 0) {
        close(fd);
    }
    peer_down(&p);
}

/* ---- rping: RDMA-CM through the GSI QP and rdmacm-mux -------------------------- */

/*
 * The device as an rping client (librdmacm's example) against "rping -s" in
 * the guest: the connection is made by CM MADs on our GSI QP (the device's
 * MAD link to rdmacm-mux; QVRDMA_MAD_SOCKET), answered by the guest's
 * kernel CM and rdma_cm; then rping's exchange on the RC QP.  IBA 12.6
 * (REQ, REP, RTU, REJ, DREQ, DREP), offsets counted from the MAD's start;
 * the REQ carries rdma_cm's IP header in its private data.
 */
#define CM_CLASS        0x07
#define CM_ATTR_REQ     0x0010
#define CM_ATTR_REJ     0x0012
#define CM_ATTR_REP     0x0013
#define CM_ATTR_RTU     0x0014
#define CM_ATTR_DREQ    0x0015
#define CM_ATTR_DREP    0x0016
#define CM_DATA         24          /* the CM message after the MAD header */
#define GSI_QKEY        0x80010000u
#define RDMA_PS_TCP     0x0106
#define GSI_RECVS       4
#define GSI_REGION      REGION(3)   /* MAD out, then GSI_RECVS receive slots */
#define GSI_SLOT        512         /* 40-byte GRH + 256-byte MAD, rounded */
#define RP_INFO         16          /* rping's buf (be64), rkey, size (be32) */

typedef struct Cm {
    QVrdmaCq *cq;
    QVrdmaQp *qp;
    uint32_t comm_id, remote_comm_id;
    uint64_t tid;
    unsigned next_slot;
} Cm;

static void put_be16(uint8_t *p, uint16_t v) { stw_be_p(p, v); }
static void put_be32(uint8_t *p, uint32_t v) { stl_be_p(p, v); }

/* A CM Send MAD's header: base version 1, class CM v2, method Send. */
static void cm_mad(uint8_t *mad, uint16_t attr, uint64_t tid)
{
    memset(mad, 0, 256);
    mad[0] = 1;
    mad[1] = CM_CLASS;
    mad[2] = 2;
    mad[3] = 0x03;
    stq_be_p(mad + 8, tid);
    put_be16(mad + 16, attr);
}

static void cm_post_recv(Peer *p, Cm *cm)
{
    uint32_t off = GSI_REGION + GSI_SLOT * (1 + cm->next_slot++ % GSI_RECVS);
    struct virtio_rdma_sge s = sge_at(p, off, 40 + 256);

    qvrdma_dp_post_recv(cm->qp, off, &s, 1);
}

/* One MAD to QP1 at the guest's GID; waits for its send completion. */
static bool cm_send(Peer *p, Cm *cm, const uint8_t *mad)
{
    struct virtio_rdma_sge s = sge_at(p, GSI_REGION, 256);
    struct virtio_rdma_sq_req wr = qvrdma_wr_send(p->next_wr++);
    struct virtio_rdma_cq_req c;

    qtest_memwrite(p->d->qts, p->pt.data + GSI_REGION, mad, 256);
    wr.wr.ud.remote_qpn = 1;
    wr.wr.ud.remote_qkey = GSI_QKEY;
    wr.wr.ud.av.port = 1;
    wr.wr.ud.av.pdn = p->pdn;
    memcpy(wr.wr.ud.av.dgid, p->rgid, 16);
    wr.wr.ud.av.gid_index = p->sgid_index;
    wr.wr.ud.av.hop_limit = 64;
    qvrdma_dp_post_send(cm->qp, &wr, &s, 1);
    if (!qvrdma_dp_poll_cq(cm->cq, &c, 10 * 1000 * 1000) ||
        c.status != VIRTIO_RDMA_WC_SUCCESS || c.opcode & VIRTIO_RDMA_WC_RECV) {
        fail("the GSI QP did not complete a MAD send");
        return false;
    }
    return true;
}

/* rdma_cm's service ID of TCP port --port: what a REQ connects to. */
static uint64_t cm_service_id(void)
{
    return (uint64_t)RDMA_PS_TCP << 16 | (uint16_t)opt.port;
}

static const char *cm_attr_name(uint16_t attr)
{
    switch (attr) {
    case CM_ATTR_REQ: return "REQ";
    case CM_ATTR_REJ: return "REJ";
    case CM_ATTR_REP: return "REP";
    case CM_ATTR_RTU: return "RTU";
    case CM_ATTR_DREQ: return "DREQ";
    case CM_ATTR_DREP: return "DREP";
    }
    return "MAD";
}

/*
 * The next CM MAD for us (attribute @want, or a REJ), within @ms.  @returns
 * its attribute, 0 on timeout.  Others (duplicates, MRAs) are skipped.
 */
static uint16_t cm_recv(Peer *p, Cm *cm, uint16_t want, uint8_t *mad, int ms)
{
    gint64 end = g_get_monotonic_time() + ms * 1000ll;
    struct virtio_rdma_cq_req c;

    while (g_get_monotonic_time() < end) {
        uint16_t attr;

        if (!qvrdma_dp_poll_cq(cm->cq, &c, 100 * 1000)) {
            continue;
        }
        if (c.status != VIRTIO_RDMA_WC_SUCCESS || !(c.opcode & VIRTIO_RDMA_WC_RECV) ||
            c.byte_len != 40 + 256 || c.src_qp != 1) {
            g_autofree char *s = qvrdma_cqe_str(&c);

            fail("GSI QP: unexpected completion %s", s);
            return 0;
        }
        qtest_memread(p->d->qts, p->pt.data + c.wr_id + 40, mad, 256);
        cm_post_recv(p, cm);
        attr = lduw_be_p(mad + 16);
        say("CM: %s in (attribute 0x%04x)", cm_attr_name(attr), attr);
        if (mad[1] != CM_CLASS || (attr != want && attr != CM_ATTR_REJ)) {
            continue;
        }
        /* A REQ names the service (our port); the others our comm ID. */
        if (attr == CM_ATTR_REQ
            ? ldq_be_p(mad + CM_DATA + 8) == cm_service_id()
            : (uint32_t)ldl_be_p(mad + CM_DATA + 4) == cm->comm_id) {
            return attr;
        }
    }
    return 0;
}

/* Until the mux accepted the device and routes at least one of its GIDs. */
static bool mad_link_up(Peer *p)
{
    if (qvrdma_dp_wait_mad_link(p->d, 1, 1, 30)) {
        return true;
    }
    fail("the device's MAD link did not come up (QVRDMA_MAD_SOCKET set? "
         "rdmacm-mux running?)");
    return false;
}

/* REQ until REP (or the deadline: a REJ while rping is not listening yet). */
static bool cm_connect(Peer *p, Cm *cm)
{
    gint64 end = g_get_monotonic_time() + IO_TIMEOUT_MS * 1000ll;
    uint8_t mad[256], *d = mad + CM_DATA, *pd = d + 140;
    struct in_addr ours, theirs = tcp_addr();
    int tries = 0;

    g_assert_cmpint(inet_pton(AF_INET, opt.ip4, &ours), ==, 1);
    while (g_get_monotonic_time() < end) {
        uint16_t attr;

        cm->comm_id = g_random_int() | 1;
        cm->tid = ((uint64_t)g_random_int() << 32) | g_random_int();
        cm_mad(mad, CM_ATTR_REQ, cm->tid);
        put_be32(d + 0, cm->comm_id);
        stq_be_p(d + 8, cm_service_id());
        memcpy(d + 16, p->d->mac, 6);               /* local CA GUID */
        put_be32(d + 32, p->qp->wire_qpn << 8 | OUR_OUT_READS);
        put_be32(d + 36, OUR_OUT_READS);            /* initiator depth */
        d[43] = 20 << 3;                            /* RC, response 4 s */
        put_be32(d + 44, p->psn << 8 | 20 << 3 | 7);  /* retry count 7 */
        put_be16(d + 48, 0xffff);                   /* P_Key */
        d[50] = VIRTIO_RDMA_MTU_1024 << 4 | 7;      /* MTU, RNR retry 7 */
        d[51] = 15 << 4;                            /* max CM retries */
        put_be16(d + 52, 0xffff);                   /* LIDs: RoCE */
        put_be16(d + 54, 0xffff);
        memcpy(d + 56, p->gid, 16);
        memcpy(d + 72, p->rgid, 16);
        d[93] = 64;                                 /* hop limit */
        d[95] = 17 << 3;                            /* local ACK timeout */
        /* rdma_cm's header: version 0, IPv4, source port, both addresses. */
        pd[0] = 0;
        pd[1] = 4 << 4;
        put_be16(pd + 2, 0x8000 | (g_random_int() & 0x7fff));
        memcpy(pd + 4 + 12, &ours, 4);
        memcpy(pd + 20 + 12, &theirs, 4);
        tries++;
        if (!cm_send(p, cm, mad)) {
            return false;
        }
        attr = cm_recv(p, cm, CM_ATTR_REP, mad, 3000);
        if (attr == CM_ATTR_REP) {
            cm->remote_comm_id = ldl_be_p(d + 0);
            p->rqpn = (uint32_t)ldl_be_p(d + 12) >> 8;
            /*
             * Each side's starting PSN is the one it receives from (Linux's
             * CM sets its RTR rq_psn to the PSN it sent; captured on rxe:
             * a SEND at our REQ's PSN is NAKed with the REP's): we send
             * from the REP's, the guest from our REQ's.
             */
            p->rpsn = p->psn;
            p->psn = (uint32_t)ldl_be_p(d + 20) >> 8;
            say("CM: REP after %d REQs: the guest's QPN %u, our send PSN "
                "0x%06x, responder resources %u", tries, p->rqpn, p->psn,
                d[24]);
            return !failed;
        }
        if (attr == CM_ATTR_REJ) {
            say("CM: REJ reason %u (rping not listening yet?)",
                lduw_be_p(d + 10));
        }
        if (failed) {
            return false;
        }
        g_usleep(500 * 1000);
    }
    fail("no REP from rping at %s port %d (%d REQs)", opt.tcp, opt.port, tries);
    return false;
}

/* One of rping's 16-byte messages: our buffer at @off for the server. */
static bool rp_send_info(Peer *p, uint32_t off)
{
    uint8_t info[RP_INFO];
    struct virtio_rdma_sge s = sge_at(p, REGION(2), RP_INFO);
    struct virtio_rdma_sge r = sge_at(p, REGION(2) + 64, RP_INFO);
    struct virtio_rdma_sq_req wr = qvrdma_wr_send(0);
    struct virtio_rdma_cq_req c;
    int i;

    stq_be_p(info, MR_VA + off);
    put_be32(info + 8, p->mr.rkey);
    put_be32(info + 12, opt.size);
    qtest_memwrite(p->d->qts, p->pt.data + REGION(2), info, RP_INFO);
    /* The server's answer comes after its RDMA: receive it first. */
    qvrdma_dp_post_recv(p->qp, 0x8000000000000000ull | p->next_wr++, &r, 1);
    p->recvs_posted++;
    post_wr(p, &wr, &s);
    for (i = 0; i < 2; i++) {
        if (!take_cqe(p, &c)) {
            return false;
        }
    }
    return true;
}

static void rping_client(Peer *p, Cm *cm);
static void rping_server(Peer *p, Cm *cm);

static void run_rping(void)
{
    Peer p;
    Cm cm = { 0 };
    uint32_t i, size = opt.size ? opt.size : 4096;
    bool client = !strcmp(opt.role, "client");

    opt.size = size;
    if ((client && !opt.tcp) || opt.gid_family != 4 || size > 65536) {
        fail("rping: --gid 4 only, a --size up to 64 KiB; "
             "as client: --tcp <server IPv4>");
        return;
    }
    peer_boot(&p, VIRTIO_RDMA_QPT_RC);
    cm.cq = qvrdma_dp_cq_create(p.d, 16);
    cm.qp = qvrdma_dp_qp_create(p.d, p.pdn, VIRTIO_RDMA_QPT_GSI, cm.cq, cm.cq,
                                GSI_RECVS, VIRTIO_RDMA_SIGNAL_ALL_WR);
    qvrdma_dp_ud_ready(p.d, cm.qp, GSI_QKEY, 0);
    for (i = 0; i < GSI_RECVS; i++) {
        cm_post_recv(&p, &cm);
    }
    if (mad_link_up(&p)) {
        if (client) {
            rping_client(&p, &cm);
        } else {
            rping_server(&p, &cm);
        }
    }
    qvrdma_dp_qp_free(cm.qp);
    qvrdma_dp_cq_free(cm.cq);
    peer_down(&p);
}

/* The device as "rping -c": REQ, then rping's client steps. */
static void rping_client(Peer *p, Cm *cm)
{
    uint8_t mad[256], *d = mad + CM_DATA;
    uint32_t n, i, size = opt.size;
    g_autofree uint8_t *start = g_malloc(size), *echo = g_malloc(size);

    g_assert_cmpint(inet_pton(AF_INET, opt.tcp, p->rgid + 12), ==, 1);
    p->rgid[10] = p->rgid[11] = 0xff;
    if (!cm_connect(p, cm)) {
        return;
    }
    rc_connect(p);
    cm_mad(mad, CM_ATTR_RTU, cm->tid);
    put_be32(d + 0, cm->comm_id);
    put_be32(d + 4, cm->remote_comm_id);
    if (!cm_send(p, cm, mad)) {
        return;
    }
    /*
     * rping's server takes a message that beats its ESTABLISHED event for
     * a protocol error: give the RTU time to be processed there.
     */
    g_usleep(300 * 1000);
    say("CM: RTU sent; rping: %u pings of %u bytes", opt.iters, size);
    for (n = 0; n < opt.iters && !failed; n++) {
        int cc = snprintf((char *)start, size, "rdma-ping-%u: ", n);

        for (i = cc; i < size; i++) {
            start[i] = 'A' + (n + i) % 58;
        }
        start[size - 1] = 0;
        qtest_memwrite(p->d->qts, p->pt.data + REGION(0), start, size);
        qtest_memset(p->d->qts, p->pt.data + REGION(1), 0, size);
        /* The server reads our start buffer, then writes its copy back. */
        if (!rp_send_info(p, REGION(0)) || !rp_send_info(p, REGION(1))) {
            fail("ping %u", n);
            break;
        }
        qtest_memread(p->d->qts, p->pt.data + REGION(1), echo, size);
        if (memcmp(start, echo, size)) {
            fail("ping %u: the server's RDMA WRITE differs from what its "
                 "RDMA READ got", n);
        }
    }
    if (!failed) {
        say("rping: %u pings verified (the server READ our buffer and "
            "WROTE it back, byte-exact)", n);
    }
    /* DREQ: rping's server ends on the disconnect. */
    cm_mad(mad, CM_ATTR_DREQ, cm->tid + 1);
    put_be32(d + 0, cm->comm_id);
    put_be32(d + 4, cm->remote_comm_id);
    put_be32(d + 8, p->rqpn << 8);
    if (cm_send(p, cm, mad) &&
        cm_recv(p, cm, CM_ATTR_DREP, mad, 5000) != CM_ATTR_DREP) {
        fail("no DREP");
    }
}

/* Takes completions until a receive; sends completing meanwhile count. */
static bool rp_next_recv(Peer *p, struct virtio_rdma_cq_req *c)
{
    while (take_cqe(p, c)) {
        if (c->opcode & VIRTIO_RDMA_WC_RECV) {
            if (c->byte_len != RP_INFO) {
                fail("rping: a %u-byte message (rping's are %u)", c->byte_len,
                     RP_INFO);
                return false;
            }
            return true;
        }
    }
    return false;
}

/* Until every send is complete; no message may arrive meanwhile. */
static bool rp_sends_done(Peer *p)
{
    struct virtio_rdma_cq_req c;

    while (p->sends_out) {
        if (!take_cqe(p, &c)) {
            return false;
        }
        if (c.opcode & VIRTIO_RDMA_WC_RECV) {
            fail("rping: a message before our go-ahead");
            return false;
        }
    }
    return true;
}

/*
 * One RDMA READ or WRITE of opt.size bytes between our buffer and the one
 * the message just received names; then its completion.
 */
static bool rp_rdma(Peer *p, uint32_t opcode)
{
    uint8_t info[RP_INFO];
    struct virtio_rdma_sge s = sge_at(p, REGION(0), opt.size);
    struct virtio_rdma_sq_req wr;
    uint32_t len;

    qtest_memread(p->d->qts, p->pt.data + REGION(2), info, RP_INFO);
    len = ldl_be_p(info + 12);
    if (len != opt.size) {
        fail("rping: the client's buffer is %u bytes, --size %u", len,
             opt.size);
        return false;
    }
    wr = qvrdma_wr_rdma(opcode, 0, ldq_be_p(info), ldl_be_p(info + 8));
    post_wr(p, &wr, &s);
    return rp_sends_done(p);
}

/* rping's go-ahead: a 16-byte SEND (its content is not looked at). */
static void rp_go_ahead(Peer *p)
{
    struct virtio_rdma_sge s = sge_at(p, REGION(2) + 64, RP_INFO);
    struct virtio_rdma_sq_req wr = qvrdma_wr_send(0);

    post_wr(p, &wr, &s);
}

/*
 * The device as rping's server, "rping -c" in the guest: our GSI QP takes
 * the guest's REQ for --port and answers REP, starting PSN = the REQ's
 * (then both sides send from and expect that PSN, whichever of the two
 * messages' PSNs each side takes for its own: see cm_connect), and waits
 * for RTU.  Then rping's server steps per ping: the client's SEND names its
 * start buffer, which we READ; a go-ahead; its next SEND names its sink
 * buffer, which we WRITE with what we read; a go-ahead.  We check the READ
 * got rping's "rdma-ping-N: " message; the client (-V) compares the echo.
 * The client ends with DREQ: DREP.
 */
static void rping_server(Peer *p, Cm *cm)
{
    uint8_t mad[256], *d = mad + CM_DATA;
    struct virtio_rdma_cq_req c;
    g_autofree char *got = g_malloc0(opt.size + 1);
    uint32_t n;
    uint16_t attr;
    uint8_t depth;

    if (cm_recv(p, cm, CM_ATTR_REQ, mad, IO_TIMEOUT_MS) != CM_ATTR_REQ) {
        fail("no REQ for port %d from rping -c", opt.port);
        return;
    }
    cm->tid = ldq_be_p(mad + 8);
    cm->remote_comm_id = ldl_be_p(d + 0);
    cm->comm_id = g_random_int() | 1;
    p->rqpn = (uint32_t)ldl_be_p(d + 32) >> 8;
    p->psn = p->rpsn = (uint32_t)ldl_be_p(d + 44) >> 8;
    memcpy(p->rgid, d + 56, 16);
    /* Our READs in flight: no more than the client's responder resources. */
    depth = MIN(d[35], OUR_OUT_READS);
    say("CM: REQ from QPN %u, PSN 0x%06x, its responder resources %u, "
        "initiator depth %u", p->rqpn, p->psn, d[35], d[39]);
    /* Ready before the REP: the client's first message may follow RTU. */
    p->recv_off = REGION(2);
    p->recv_len = RP_INFO;
    rc_connect(p);
    post_recvs(p, 1);

    cm_mad(mad, CM_ATTR_REP, cm->tid);
    put_be32(d + 0, cm->comm_id);
    put_be32(d + 4, cm->remote_comm_id);
    put_be32(d + 12, p->qp->wire_qpn << 8);
    put_be32(d + 20, p->psn << 8);
    d[24] = OUR_OUT_READS;                  /* responder resources */
    d[25] = depth;                          /* initiator depth */
    d[26] = 15 << 3;                        /* target ACK delay */
    d[27] = 7 << 5;                         /* RNR retry count */
    memcpy(d + 28, p->d->mac, 6);           /* local CA GUID */
    if (!cm_send(p, cm, mad)) {
        return;
    }
    attr = cm_recv(p, cm, CM_ATTR_RTU, mad, 10000);
    if (attr != CM_ATTR_RTU) {
        fail("no RTU after our REP%s", attr == CM_ATTR_REJ ? " (REJ)" : "");
        return;
    }
    say("CM: established; rping: %u pings of %u bytes", opt.iters, opt.size);
    for (n = 0; n < opt.iters && !failed; n++) {
        g_autofree char *want = g_strdup_printf("rdma-ping-%u: ", n);

        if (!rp_next_recv(p, &c) || !rp_rdma(p, VIRTIO_RDMA_WR_RDMA_READ)) {
            break;
        }
        post_recvs(p, 1);   /* the message is read: its buffer is free */
        qtest_memread(p->d->qts, p->pt.data + REGION(0), got, opt.size);
        if (strncmp(got, want, strlen(want))) {
            fail("ping %u: READ \"%.20s\", not rping's \"%s\"", n, got,
                 want);
            break;
        }
        rp_go_ahead(p);
        if (!rp_next_recv(p, &c) || !rp_rdma(p, VIRTIO_RDMA_WR_RDMA_WRITE)) {
            break;
        }
        post_recvs(p, 1);
        rp_go_ahead(p);
    }
    if (failed || !rp_sends_done(p)) {
        return;
    }
    say("rping: %u pings served (READ the client's buffer, checked, WROTE "
        "it back)", n);
    /* rping -c disconnects at the end. */
    if (cm_recv(p, cm, CM_ATTR_DREQ, mad, 10000) != CM_ATTR_DREQ) {
        fail("no DREQ from rping -c");
        return;
    }
    cm->tid = ldq_be_p(mad + 8);
    cm_mad(mad, CM_ATTR_DREP, cm->tid);
    put_be32(d + 0, cm->comm_id);
    put_be32(d + 4, cm->remote_comm_id);
    cm_send(p, cm, mad);
}

/* ---- main -------------------------------------------------------------------- */

static void run(void)
{
    if (!strcmp(opt.tool, "rc_pingpong")) {
        run_pingpong(false);
    } else if (!strcmp(opt.tool, "ud_pingpong")) {
        run_pingpong(true);
    } else if (!strcmp(opt.tool, "rping")) {
        run_rping();
    } else {
        run_perftest(opt.tool);
    }
}

int main(int argc, char **argv)
{
    GOptionEntry entries[] = {
        { "tool", 0, 0, G_OPTION_ARG_STRING, &opt.tool, "tool", NULL },
        { "role", 0, 0, G_OPTION_ARG_STRING, &opt.role, "server|client", NULL },
        { "port", 0, 0, G_OPTION_ARG_INT, &opt.port, "TCP port", NULL },
        { "lport", 0, 0, G_OPTION_ARG_INT, &opt.lport, "wire: our UDP port", NULL },
        { "rport", 0, 0, G_OPTION_ARG_INT, &opt.rport, "wire: the guest's", NULL },
        { "mac", 0, 0, G_OPTION_ARG_STRING, &opt.mac, "our MAC", NULL },
        { "peer-mac", 0, 0, G_OPTION_ARG_STRING, &opt.peer_mac, "guest MAC", NULL },
        { "ip4", 0, 0, G_OPTION_ARG_STRING, &opt.ip4, "our IPv4", NULL },
        { "ip6", 0, 0, G_OPTION_ARG_STRING, &opt.ip6, "our IPv6", NULL },
        { "gid", 0, 0, G_OPTION_ARG_INT, &opt.gid_family, "4|6", NULL },
        { "size", 0, 0, G_OPTION_ARG_INT, &opt.size, "message size", NULL },
        { "iters", 0, 0, G_OPTION_ARG_INT, &opt.iters, "iterations", NULL },
        { "tcp", 0, 0, G_OPTION_ARG_STRING, &opt.tcp, "the tools' IPv4", NULL },
        { NULL },
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new("- virtio-rdma lab peer");
    g_autoptr(GError) err = NULL;

    t0 = g_get_monotonic_time();
    if (argc == 1) {
        /* Run bare (meson's qtest suite): nothing to do without a guest. */
        printf("# SKIP virtio-rdma-lab-peer is driven by tests/lab/test_interop.py\n");
        return 77;
    }
    g_option_context_add_main_entries(ctx, entries, NULL);
    if (!g_option_context_parse(ctx, &argc, &argv, &err) || !opt.tool ||
        !opt.role || !opt.port || !opt.lport || !opt.rport || !opt.mac ||
        !opt.peer_mac || !opt.ip4 || !opt.ip6) {
        fprintf(stderr, "virtio-rdma-lab-peer: %s\n",
                err ? err->message : "missing option (see --help)");
        return 2;
    }
    g_test_init(&argc, &argv, NULL);
    say("%s as %s, GID family IPv%d, port %d, wire %d->%d", opt.tool,
        opt.role, opt.gid_family, opt.port, opt.lport, opt.rport);
    run();
    say("PEER: %s", failed ? "FAIL" : "PASS");
    return failed ? 1 : 0;
}

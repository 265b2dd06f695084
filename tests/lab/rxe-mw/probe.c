/*
 * What the lab guest's kernel rxe does with memory windows, the host
 * objects fast registration on backend=ibverbs would need (a guest MR's
 * rkey = a type-2 MW's index | the guest's key byte; REG_MR = a bind,
 * LOCAL_INV and remote invalidation = the MW's).  tests/lab/test_rxe_mw.py
 * runs it; each finding is one line "PASS|FAIL NAME details", PASS
 * when rxe still behaves as docs/system/devices/virtio-rdma.rst says.
 *
 *   probe facts            the bind, keys and completions
 *   probe double-local     LOCAL_INV of a window twice   } the second one
 *   probe double-remote    SEND_WITH_INV of it twice     } oopses the kernel
 *                                                          (checked by the host)
 * One process, two RC QPs on rxe0 connected to each other through its own
 * IPv4 RoCEv2 GID; a fresh pair after every error (an error leaves a QP in
 * ERR).  Guest RAM as QEMU has it: a memfd, seen through a second mapping.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#define _GNU_SOURCE
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

enum { kPage = 4096, kWindowPages = 4 };

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static union ibv_gid gid;
static int gid_index = -1;
static struct ibv_qp *qa, *qb;          /* the current pair */
static uint8_t *ram, *local;            /* the window's pages; a local buffer */
static struct ibv_mr *local_mr;
static const uint64_t kIova = 0x7f0000001000ull;

static void verdict(int ok, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void verdict(int ok, const char *name, const char *fmt, ...)
{
    va_list ap;

    printf("%s %s ", ok ? "PASS" : "FAIL", name);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
}

static void die(const char *what)
{
    verdict(0, "setup", "%s: %s", what, strerror(errno));
    exit(1);
}

static double now(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/* The next completion; none in 5 s: wr_id 0 and kNoCompletion. */
enum { kNoCompletion = 0xff };
static struct ibv_wc wait_wc(void)
{
    struct ibv_wc wc = { 0 };
    double t0 = now();

    while (ibv_poll_cq(cq, 1, &wc) == 0) {
        if (now() - t0 > 5) {
            wc.status = (enum ibv_wc_status)kNoCompletion;
            break;
        }
    }
    return wc;
}

static struct ibv_qp *make_qp(void)
{
    struct ibv_qp_init_attr ia = {
        .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
        .cap = { .max_send_wr = 16, .max_recv_wr = 16,
                 .max_send_sge = 1, .max_recv_sge = 1 },
    };
    struct ibv_qp_attr a = {
        .qp_state = IBV_QPS_INIT, .port_num = 1,
        .qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
    };
    struct ibv_qp *qp = ibv_create_qp(pd, &ia);

    if (!qp || ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                             IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
        die("QP to INIT");
    }
    return qp;
}

static void to_rts(struct ibv_qp *qp, uint32_t dest)
{
    struct ibv_qp_attr r = {
        .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
        .dest_qp_num = dest, .max_dest_rd_atomic = 1, .min_rnr_timer = 12,
        .ah_attr = { .is_global = 1, .port_num = 1,
                     .grh = { .dgid = gid, .sgid_index = gid_index,
                              .hop_limit = 64 } },
    };
    struct ibv_qp_attr s = {
        .qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7,
        .rnr_retry = 7, .max_rd_atomic = 1,
    };

    if (ibv_modify_qp(qp, &r, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
                      IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                      IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) ||
        ibv_modify_qp(qp, &s, IBV_QP_STATE | IBV_QP_TIMEOUT |
                      IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                      IBV_QP_MAX_QP_RD_ATOMIC)) {
        die("QP to RTS");
    }
}

/* A fresh pair qa <-> qb (the old one is left to the process's end). */
static void fresh_pair(void)
{
    qa = make_qp();
    qb = make_qp();
    to_rts(qa, qb->qp_num);
    to_rts(qb, qa->qp_num);
}

static int post(struct ibv_qp *qp, struct ibv_send_wr *wr)
{
    struct ibv_send_wr *bad;

    wr->send_flags |= IBV_SEND_SIGNALED;
    return ibv_post_send(qp, wr, &bad) ? -1 : (int)wait_wc().status;
}

/* A type-2 bind of @mw on @qp over [kIova + off, + len) of @mr, key @rkey. */
static int bind(struct ibv_qp *qp, struct ibv_mw *mw, uint32_t rkey,
                struct ibv_mr *mr, uint64_t off, uint64_t len)
{
    struct ibv_send_wr wr = { .opcode = IBV_WR_BIND_MW };
    int st;

    wr.bind_mw.mw = mw;
    wr.bind_mw.rkey = rkey;
    wr.bind_mw.bind_info.mr = mr;
    wr.bind_mw.bind_info.addr = kIova + off;
    wr.bind_mw.bind_info.length = len;
    wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE |
        IBV_ACCESS_REMOTE_READ | IBV_ACCESS_LOCAL_WRITE;
    st = post(qp, &wr);
    return st;
}

static int rdma(struct ibv_qp *qp, enum ibv_wr_opcode op, size_t loff,
                uint32_t len, uint64_t raddr, uint32_t rkey)
{
    struct ibv_sge sge = { (uintptr_t)local + loff, len, local_mr->lkey };
    struct ibv_send_wr wr = { .opcode = op, .sg_list = &sge, .num_sge = 1 };

    wr.wr.rdma.remote_addr = raddr;
    wr.wr.rdma.rkey = rkey;
    return post(qp, &wr);
}

static int local_inv(struct ibv_qp *qp, uint32_t rkey)
{
    struct ibv_send_wr wr = { .opcode = IBV_WR_LOCAL_INV };

    wr.invalidate_rkey = rkey;
    return post(qp, &wr);
}

/*
 * SEND_WITH_INV of @rkey from qb to qa: the receive's completion in *rwc,
 * the send's status returned.
 */
static int remote_inv(uint32_t rkey, struct ibv_wc *rwc)
{
    struct ibv_sge rs = { (uintptr_t)local + 2 * kPage, 64, local_mr->lkey };
    struct ibv_recv_wr rw = { .wr_id = 1, .sg_list = &rs, .num_sge = 1 };
    struct ibv_recv_wr *bad;
    struct ibv_sge ss = { (uintptr_t)local, 16, local_mr->lkey };
    struct ibv_send_wr sw = { .wr_id = 2, .opcode = IBV_WR_SEND_WITH_INV,
                              .send_flags = IBV_SEND_SIGNALED,
                              .sg_list = &ss, .num_sge = 1,
                              .invalidate_rkey = rkey };
    struct ibv_send_wr *sbad;
    struct ibv_wc a, b;

    if (ibv_post_recv(qa, &rw, &bad) || ibv_post_send(qb, &sw, &sbad)) {
        return -1;
    }
    a = wait_wc();
    b = wait_wc();
    *rwc = a.wr_id == 1 ? a : b;
    return (int)(a.wr_id == 2 ? a.status : b.status);
}

static struct ibv_mr *window_mr(void)
{
    struct ibv_mr *mr = ibv_reg_mr_iova2(pd, ram, kWindowPages * kPage, kIova,
                                         IBV_ACCESS_LOCAL_WRITE |
                                         IBV_ACCESS_MW_BIND);
    if (!mr) {
        die("window MR");
    }
    return mr;
}

static void setup(void)
{
    struct ibv_device **list;
    int n, fd, i;

    list = ibv_get_device_list(&n);
    if (!list || n < 1 || !(ctx = ibv_open_device(list[0]))) {
        die("rxe0");
    }
    for (i = 0; i < 16 && gid_index < 0; i++) {
        struct ibv_gid_entry e;

        if (!ibv_query_gid_ex(ctx, 1, i, &e, 0) &&
            e.gid_type == IBV_GID_TYPE_ROCE_V2 &&
            e.gid.raw[10] == 0xff && e.gid.raw[11] == 0xff) {
            gid_index = i;
            gid = e.gid;
        }
    }
    if (gid_index < 0) {
        errno = ENOENT;
        die("an IPv4 RoCEv2 GID");
    }
    pd = ibv_alloc_pd(ctx);
    cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
    fd = memfd_create("guest-ram", 0);
    if (!pd || !cq || fd < 0 || ftruncate(fd, kWindowPages * kPage)) {
        die("PD, CQ or RAM");
    }
    ram = mmap(NULL, kWindowPages * kPage, PROT_READ | PROT_WRITE,
               MAP_SHARED, fd, 0);
    local = aligned_alloc(kPage, 4 * kPage);
    if (ram == MAP_FAILED || !local) {
        die("mappings");
    }
    memset(ram, 0, kWindowPages * kPage);
    local_mr = ibv_reg_mr(pd, local, 4 * kPage, IBV_ACCESS_LOCAL_WRITE);
    if (!local_mr) {
        die("local MR");
    }
}

static struct ibv_mw *type2_mw(void)
{
    struct ibv_mw *mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);

    if (!mw) {
        die("type-2 MW");
    }
    return mw;
}

/* @rkey with its key byte (the guest's part, ib_inc_rkey()) moved by @n. */
static uint32_t key_plus(uint32_t rkey, int n)
{
    return (rkey & ~0xffu) | ((rkey + n) & 0xff);
}

/* Case @name: a WRITE to @raddr with @rkey is refused; then a fresh pair. */
static void write_refused(const char *name, const char *what, uint64_t raddr,
                          uint32_t rkey)
{
    int st = rdma(qb, IBV_WR_RDMA_WRITE, 0, 8, raddr, rkey);

    verdict(st == IBV_WC_REM_ACCESS_ERR, name, "WRITE %s: status %d (%s)",
            what, st, ibv_wc_status_str(st));
    fresh_pair();
}

static void facts(void)
{
    struct ibv_mr *win = window_mr();
    struct ibv_mw *mw = type2_mw();
    uint32_t key, stale;
    struct ibv_wc rwc;
    int st, r;

    /* The guest picks the key byte; the index is the host's. */
    key = key_plus(mw->rkey, 1);
    fresh_pair();
    st = bind(qa, mw, key, win, kPage, 2 * kPage);
    memset(local, 0xab, 256);
    if (st == IBV_WC_SUCCESS) {
        mw->rkey = key; /* see provider-rkey below */
        st = rdma(qb, IBV_WR_RDMA_WRITE, 0, 256, kIova + kPage + 100, key);
    }
    verdict(st == IBV_WC_SUCCESS && ram[kPage + 100] == 0xab &&
            ram[kPage + 355] == 0xab && ram[kPage + 356] == 0,
            "bind-guest-key", "bind with key byte 0x%02x, WRITE through rkey "
            "0x%08x: status %d, bytes %s", key & 0xff, key, st,
            ram[kPage + 100] == 0xab ? "landed" : "missing");
    write_refused("window-mr-closed", "through the window MR's own rkey "
                  "(LOCAL_WRITE|MW_BIND)", kIova + kPage, win->rkey);
    write_refused("bound-range", "below the bound range", kIova, key);
    r = ibv_dereg_mr(win);
    verdict(r == EINVAL, "dereg-while-bound",
            "dereg of the window MR while the MW is bound: %s",
            r ? strerror(r) : "done");
    /* LOCAL_INV from another QP than the bind's, then the key is dead. */
    st = local_inv(qb, key);
    verdict(st == IBV_WC_SUCCESS, "local-inv-any-qp",
            "LOCAL_INV from a QP other than the bind's: status %d", st);
    write_refused("invalidated", "after LOCAL_INV", kIova + kPage, key);
    r = ibv_dereg_mr(win);
    verdict(r == 0, "dereg-after-inv", "dereg after the invalidation: %s",
            r ? strerror(r) : "done");
    win = window_mr();
    /*
     * The provider does not update ibv_mw.rkey after a bind posted as a
     * work request, and rxe checks it: the caller must keep it.
     */
    stale = mw->rkey;
    mw->rkey = key_plus(stale, -1);
    st = bind(qa, mw, key_plus(stale, 1), win, 0, kPage);
    verdict(st == IBV_WC_MW_BIND_ERR || st == IBV_WC_WR_FLUSH_ERR ||
            st == IBV_WC_LOC_QP_OP_ERR, "provider-rkey",
            "a bind naming the MW by another rkey than its last: status %d "
            "(%s)", st, ibv_wc_status_str(st));
    mw->rkey = stale;
    fresh_pair();
    /* Remote invalidation: how the receiver's completion says so. */
    key = key_plus(stale, 2);
    st = bind(qa, mw, key, win, 0, kPage);
    if (st == IBV_WC_SUCCESS) {
        mw->rkey = key;
        st = remote_inv(key, &rwc);
    }
    verdict(st == IBV_WC_SUCCESS && rwc.status == IBV_WC_SUCCESS &&
            !(rwc.wc_flags & IBV_WC_WITH_INV) && (rwc.wc_flags & 4),
            "recv-inv-flag", "SEND_WITH_INV received: status %d, wc_flags "
            "0x%x (IBV_WC_WITH_INV is 0x%x; 0x4 is IBV_WC_IP_CSUM_OK's value "
            "and the kernel's IB_WC_WITH_INVALIDATE), ex 0x%08x",
            rwc.status, rwc.wc_flags, IBV_WC_WITH_INV, rwc.invalidated_rkey);
    fresh_pair();
    write_refused("remote-invalidated", "after the remote invalidation", kIova,
                  key);
    /* Bound, then deallocated: the MR is free again. */
    key = key_plus(key, 1);
    st = bind(qa, mw, key, win, 0, kPage);
    r = ibv_dealloc_mw(mw);
    verdict(st == IBV_WC_SUCCESS && r == 0 && ibv_dereg_mr(win) == 0,
            "dealloc-unbinds", "bind %d, dealloc of the bound MW %s, then "
            "the window MR's dereg works", st, r ? strerror(r) : "done");
}

/* Invalidates a bound window twice; rxe oopses on the second (host-checked). */
static void twice(int remote)
{
    struct ibv_mr *win = window_mr();
    struct ibv_mw *mw = type2_mw();
    uint32_t key;
    struct ibv_wc rwc;
    int i, st;

    key = key_plus(mw->rkey, 1);
    fresh_pair();
    if (bind(qa, mw, key, win, 0, kPage) != IBV_WC_SUCCESS) {
        verdict(0, "setup", "bind failed");
        exit(1);
    }
    for (i = 1; i <= 2; i++) {
        printf("invalidation %d of rkey 0x%08x\n", i, key);
        fflush(stdout);
        st = remote ? remote_inv(key, &rwc) : local_inv(qa, key);
        printf("invalidation %d: status %d (%s)\n", i, st,
               ibv_wc_status_str(st));
        fflush(stdout);
        fresh_pair();
    }
    printf("survived\n");
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "facts";

    setup();
    if (!strcmp(mode, "facts")) {
        facts();
    } else if (!strcmp(mode, "double-local")) {
        twice(0);
    } else if (!strcmp(mode, "double-remote")) {
        twice(1);
    } else {
        fprintf(stderr, "usage: %s facts|double-local|double-remote\n",
                argv[0]);
        return 2;
    }
    return 0;
}

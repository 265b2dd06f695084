/*
 * virtio-rdma-mem-test: guest memory as virtio-rdma-pci reaches it
 * (hw/rdma/virtio/virtio-rdma-mem.c): RAM only, and never past the time
 * the RAM is guest memory at the registered address.
 *
 *   ram-gone/bar-off   an MR over an ivshmem-plain BAR (RAM: a memory
 *                      backend), then the BAR's memory decoding switched off:
 *                      an RDMA WRITE to the MR fails with REM_ACCESS_ERR
 *                      and does not reach the RAM, its pages are unmapped at
 *                      once (mapped-pages), DEREG_MR still works;
 *   ram-gone/bar-moved the same with the BAR moved to another address (the
 *                      RAM is guest memory again, but not where the MR's
 *                      page table said);
 *   mmio/...           a level-2 page-table page, a local SGE of a DMA MR
 *                      and the remote address of an RDMA READ through a DMA
 *                      MR aimed at MMIO, another device's (the IOAPIC) and
 *                      the device's own device-config window: EFAULT,
 *                      LOC_PROT_ERR and REM_ACCESS_ERR, no hang, nothing
 *                      mapped.
 * Each test ends with a valid registration and an RDMA WRITE that succeeds.
 *
 * A plain qtest (no qos graph):
 *   QTEST_QEMU_BINARY=./qemu-system-x86_64 ./tests/qtest/virtio-rdma-mem-test
 * QVRDMA_IOTHREAD=1 runs the engine in an iothread.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "libqtest.h"
#include "qemu/bswap.h"
#include "hw/pci/pci_regs.h"
#include "qobject/qdict.h"
#include "qobject/qlist.h"
#include "libqos/libqos-pc.h"
#include "libqos/pci.h"
#include "libqos/virtio-rdma.h"
#include "libqos/virtio-rdma-dp.h"

#define MAC         "52:54:00:12:34:56"
#define SHM_SIZE    (1 << 20)
/*
 * virtio-net-pci's options end at the space: the ivshmem-plain at 05.0
 * whose BAR 2 is the RAM of a memory backend rides along.
 */
#define IVSHMEM     " -object memory-backend-ram,id=shm0,size=1M" \
                    " -device ivshmem-plain,id=iv0,memdev=shm0,addr=05.0"
#define IOAPIC_BASE 0xfec00000ull

#define VA_SRC      0x7f0000100000ull
#define VA_DST      0x7f0000200000ull
#define MSG_LEN     256
#define DST_OFF     0x100

typedef struct Env {
    QVrdmaDev *d;
    QPCIDevice *iv;             /* ivshmem-plain */
    uint64_t shm;               /* its BAR 2: RAM */
    uint32_t pdn;
    QVrdmaCq *cq;
    uint8_t gid[16];
    QVrdmaQp *a, *b;            /* RC, connected to each other */
    uint64_t ring_pages;        /* the CQ's and QPs' rings' mapped pages */
} Env;

typedef struct Mr {
    QVrdmaPageTable pt;
    struct virtio_rdma_rsp_mr mr;
    uint64_t va;
    uint64_t gpa;               /* of the first page */
} Mr;

static void conn_reset(Env *e);
static uint64_t mapped_pages(Env *e);

static void env_boot(Env *e)
{
    QPCIBar bar;
    uint64_t size;

    e->d = qvrdma_dev_boot_nic("user,id=n0", MAC, IVSHMEM,
                               "");
    e->iv = qpci_device_find(e->d->qs->pcibus, QPCI_DEVFN(5, 0));
    g_assert_nonnull(e->iv);
    bar = qpci_iomap(e->iv, 2, &size);
    g_assert_cmpuint(size, ==, SHM_SIZE);
    e->shm = bar.addr;
    qpci_device_enable(e->iv);
    g_assert_cmpstr(qvrdma_status_name(qvrdma_create_pd(&e->d->r, &e->pdn)),
                    ==, "OK");
    e->cq = qvrdma_dp_cq_create(e->d, 64);
    qvrdma_gid_ipv4(e->gid, 10, 0, 0, 1);
    qvrdma_dp_add_gid(e->d, 0, e->gid);
    /*
     * One pair for the whole test, reset after an error: a QP number that
     * is destroyed and handed out again keeps its virtqueues' indices.
     */
    e->a = qvrdma_dp_qp_create(e->d, e->pdn, VIRTIO_RDMA_QPT_RC, e->cq, e->cq,
                               1, VIRTIO_RDMA_SIGNAL_ALL_WR);
    e->b = qvrdma_dp_qp_create(e->d, e->pdn, VIRTIO_RDMA_QPT_RC, e->cq, e->cq,
                               1, VIRTIO_RDMA_SIGNAL_ALL_WR);
    conn_reset(e);
    e->ring_pages = 0;
    e->ring_pages = mapped_pages(e);    /* no MR yet */
}

static void qp_destroy(Env *e, QVrdmaQp *qp)
{
    g_assert_cmpstr(qvrdma_status_name(qvrdma_destroy_qp(&e->d->r, qp->qpn)),
                    ==, "OK");
    qvrdma_dp_qp_free(qp);
}

static void env_quit(Env *e)
{
    qp_destroy(e, e->b);
    qp_destroy(e, e->a);
    qvrdma_dp_cq_free(e->cq);
    g_free(e->iv);
    qvrdma_dev_quit(e->d);
}

/* The device's mapped pages beyond the rings': the MRs'. */
static uint64_t mapped_pages(Env *e)
{
    QDict *rsp = qtest_qmp(e->d->qts, "{'execute': 'query-virtio-rdma'}");
    QList *list = qdict_get_qlist(rsp, "return");
    uint64_t n;

    g_assert_nonnull(list);
    n = qdict_get_int(qobject_to(QDict, qlist_peek(list)), "mapped-pages");
    qobject_unref(rsp);
    g_assert_cmpuint(n, >=, e->ring_pages);
    return n - e->ring_pages;
}

/* RESET, then the pair connected to each other again (loopback). */
static void conn_reset(Env *e)
{
    QVrdmaPath p = { .sgid_index = 0, .retry_cnt = 7, .rnr_retry = 7 };
    struct virtio_rdma_qp_attr reset = { .qp_state = VIRTIO_RDMA_QPS_RESET };

    g_assert_cmpstr(qvrdma_status_name(qvrdma_modify_qp(&e->d->r, e->a->qpn,
                    VIRTIO_RDMA_QP_STATE, &reset)), ==, "OK");
    g_assert_cmpstr(qvrdma_status_name(qvrdma_modify_qp(&e->d->r, e->b->qpn,
                    VIRTIO_RDMA_QP_STATE, &reset)), ==, "OK");
    memcpy(p.dgid, e->gid, 16);
    memcpy(p.dmac, e->d->mac, 6);
    p.dest_qpn = e->b->wire_qpn;
    p.sq_psn = 0x100;
    p.rq_psn = 0x200;
    qvrdma_dp_rc_connect(e->d, e->a, &p);
    p.dest_qpn = e->a->wire_qpn;
    p.sq_psn = 0x200;
    p.rq_psn = 0x100;
    qvrdma_dp_rc_connect(e->d, e->b, &p);
}

/* REG_USER_MR of @npages at @va: @pages, or fresh guest RAM if NULL. */
static uint8_t mr_reg(Env *e, Mr *m, uint32_t npages, const uint64_t *pages,
                      uint64_t va, uint32_t access)
{
    qvrdma_pt_build(&e->d->r, &m->pt, npages, pages);
    m->va = va;
    m->gpa = pages ? pages[0] : m->pt.data;
    return qvrdma_reg_user_mr(&e->d->r, e->pdn, access, va,
                              (uint64_t)npages * 4096, va, m->pt.l1, npages,
                              &m->mr);
}

static void mr_dereg(Env *e, Mr *m)
{
    g_assert_cmpstr(qvrdma_status_name(qvrdma_dereg_mr(&e->d->r, m->mr.mrn)),
                    ==, "OK");
    qvrdma_pt_free(&e->d->r, &m->pt);
}

/* Posts @wr with one SGE on @qp; @returns its completion's status. */
static uint32_t post_wait(Env *e, QVrdmaQp *qp, struct virtio_rdma_sq_req *wr,
                          struct virtio_rdma_sge sge, const char *what)
{
    struct virtio_rdma_cq_req c;
    g_autofree char *str = NULL;

    qvrdma_dp_post_send(qp, wr, &sge, 1);
    qvrdma_dp_wait_cqe(e->cq, &c);
    str = qvrdma_cqe_str(&c);
    g_test_message("%s: %s", what, str);
    g_assert_cmphex(le64_to_cpu(c.wr_id), ==, le64_to_cpu(wr->wr_id));
    g_assert_cmpuint(le32_to_cpu(c.qp_num), ==, qp->wire_qpn);
    return le32_to_cpu(c.status);
}

static void expect_status(uint32_t got, uint32_t want, const char *what)
{
    if (got != want) {
        g_error("%s: completed %s, expected %s", what,
                qvrdma_wc_status_name(got), qvrdma_wc_status_name(want));
    }
}

static struct virtio_rdma_sge sge(uint64_t addr, uint32_t len, uint32_t lkey)
{
    return (struct virtio_rdma_sge) {
        .addr = cpu_to_le64(addr),
        .length = cpu_to_le32(len),
        .lkey = cpu_to_le32(lkey),
    };
}

/* RDMA WRITE of MSG_LEN bytes from @src (offset 0) to @dst + DST_OFF. */
static uint32_t rdma_write(Env *e, QVrdmaQp *qp, Mr *src, Mr *dst,
                           uint64_t wr_id, const char *what)
{
    struct virtio_rdma_sq_req wr =
        qvrdma_wr_rdma(VIRTIO_RDMA_WR_RDMA_WRITE, wr_id, dst->va + DST_OFF,
                       dst->mr.rkey);

    return post_wait(e, qp, &wr, sge(src->va, MSG_LEN, src->mr.lkey), what);
}

static void fill(Env *e, uint64_t gpa, uint8_t *buf, size_t len)
{
    size_t i;

    for (i = 0; i < len; i++) {
        buf[i] = g_test_rand_int_range(0, 256);
    }
    qtest_memwrite(e->d->qts, gpa, buf, len);
}

static void expect_mem(Env *e, uint64_t gpa, const uint8_t *want, size_t len,
                       const char *what)
{
    g_autofree uint8_t *got = g_malloc(len);

    qtest_memread(e->d->qts, gpa, got, len);
    if (memcmp(got, want, len)) {
        g_error("%s: guest memory at 0x%" PRIx64 " is not what it should be",
                what, gpa);
    }
}

/* After the test proper: a valid registration and transfer still work. */
static void check_still_works(Env *e)
{
    uint32_t rw = VIRTIO_RDMA_ACCESS_LOCAL_WRITE |
                  VIRTIO_RDMA_ACCESS_REMOTE_WRITE;
    uint8_t data[MSG_LEN];
    Mr src, dst;

    conn_reset(e);
    g_assert_cmpstr(qvrdma_status_name(mr_reg(e, &src, 1, NULL, VA_SRC + 0x10000,
                                              rw)), ==, "OK");
    g_assert_cmpstr(qvrdma_status_name(mr_reg(e, &dst, 1, NULL, VA_DST + 0x10000,
                                              rw)), ==, "OK");
    fill(e, src.gpa, data, sizeof(data));
    expect_status(rdma_write(e, e->a, &src, &dst, 0xf00, "WRITE afterwards"),
                  VIRTIO_RDMA_WC_SUCCESS, "WRITE afterwards");
    expect_mem(e, dst.gpa + DST_OFF, data, sizeof(data), "WRITE afterwards");
    mr_dereg(e, &dst);
    mr_dereg(e, &src);
    g_assert_cmpuint(mapped_pages(e), ==, 0);
}

/* ---- RAM that stops being guest memory at the MR's address ---------------- */

static void test_ram_gone(const void *opaque)
{
    const bool move = GPOINTER_TO_INT(opaque);
    uint32_t rw = VIRTIO_RDMA_ACCESS_LOCAL_WRITE |
                  VIRTIO_RDMA_ACCESS_REMOTE_WRITE |
                  VIRTIO_RDMA_ACCESS_REMOTE_READ;
    uint8_t before[MSG_LEN], after[MSG_LEN];
    uint64_t shm_pages[2];
    uint64_t seen = 0;
    uint16_t cmd;
    uint32_t st;
    Mr src, dst;
    Env e;

    env_boot(&e);
    shm_pages[0] = e.shm;
    shm_pages[1] = e.shm + 4096;
    g_assert_cmpstr(qvrdma_status_name(mr_reg(&e, &src, 1, NULL, VA_SRC, rw)),
                    ==, "OK");
    g_assert_cmpstr(qvrdma_status_name(mr_reg(&e, &dst, 2, shm_pages, VA_DST,
                                              rw)), ==, "OK");
    g_assert_cmpuint(mapped_pages(&e), ==, 3);

    /* While the BAR is guest memory, the MR over it works. */
    fill(&e, src.gpa, before, sizeof(before));
    expect_status(rdma_write(&e, e.a, &src, &dst, 0x100, "WRITE to the BAR"),
                  VIRTIO_RDMA_WC_SUCCESS, "WRITE to the BAR");
    expect_mem(&e, e.shm + DST_OFF, before, sizeof(before), "WRITE to the BAR");

    cmd = qpci_config_readw(e.iv, PCI_COMMAND);
    g_assert_true(cmd & PCI_COMMAND_MEMORY);
    if (move) {
        QPCIBus *bus = e.d->qs->pcibus;

        seen = QEMU_ALIGN_UP(bus->mmio_alloc_ptr, SHM_SIZE);
        g_assert_cmpuint(seen + SHM_SIZE, <=, bus->mmio_limit);
        bus->mmio_alloc_ptr = seen + SHM_SIZE;
        qpci_config_writel(e.iv, PCI_BASE_ADDRESS_2,
                           seen | PCI_BASE_ADDRESS_MEM_TYPE_64);
        qpci_config_writel(e.iv, PCI_BASE_ADDRESS_2 + 4, seen >> 32);
        g_test_message("BAR 2 moved from 0x%" PRIx64 " to 0x%" PRIx64,
                       e.shm, seen);
    } else {
        qpci_config_writew(e.iv, PCI_COMMAND, cmd & ~PCI_COMMAND_MEMORY);
    }

    /* Its pages went when the RAM left that address, not at DEREG_MR. */
    fill(&e, src.gpa, after, sizeof(after));
    st = rdma_write(&e, e.a, &src, &dst, 0x101, "WRITE after the BAR went");
    if (st == VIRTIO_RDMA_WC_SUCCESS) {
        g_error("WRITE to an MR whose RAM is no longer guest memory at its "
                "address completed SUCCESS: it reached memory the guest does "
                "not see there (expected REM_ACCESS_ERR)");
    }
    expect_status(st, VIRTIO_RDMA_WC_REM_ACCESS_ERR, "WRITE after the BAR went");
    g_assert_cmpuint(mapped_pages(&e), ==, 1);

    /* The RAM itself still holds what the first WRITE put there. */
    if (!move) {
        qpci_config_writew(e.iv, PCI_COMMAND, cmd);
        seen = e.shm;
    }
    expect_mem(&e, seen + DST_OFF, before, sizeof(before),
               "the BAR's RAM after the failed WRITE");

    mr_dereg(&e, &dst);
    mr_dereg(&e, &src);
    g_assert_cmpuint(mapped_pages(&e), ==, 0);

    /* An MR over the BAR where it is now registers and works again. */
    shm_pages[0] = seen;
    shm_pages[1] = seen + 4096;
    g_assert_cmpstr(qvrdma_status_name(mr_reg(&e, &dst, 2, shm_pages, VA_DST,
                                              rw)), ==, "OK");
    g_assert_cmpuint(mapped_pages(&e), ==, 2);
    mr_dereg(&e, &dst);

    check_still_works(&e);
    env_quit(&e);
}

/* ---- MMIO aimed at by every kind of guest pointer ------------------------- */

typedef struct Target {
    const char *name;
    uint64_t gpa;
} Target;

static void test_mmio(const void *opaque)
{
    uint32_t rw = VIRTIO_RDMA_ACCESS_LOCAL_WRITE |
                  VIRTIO_RDMA_ACCESS_REMOTE_WRITE;
    Target targets[2];
    uint8_t data[MSG_LEN];
    unsigned i;
    Env e;

    env_boot(&e);
    targets[0] = (Target) { "the IOAPIC", IOAPIC_BASE };
    targets[1] = (Target) { "its own device config",
                            e.d->vpci->bar.addr + e.d->vpci->device_cfg_offset };

    for (i = 0; i < ARRAY_SIZE(targets); i++) {
        const Target *t = &targets[i];
        g_autofree char *what = NULL;
        struct virtio_rdma_rsp_mr dma;
        struct virtio_rdma_sq_req wr;
        Mr m, dst;
        uint8_t st;

        g_assert_cmphex(t->gpa & 4095, ==, 0);

        /* A level-2 table page in MMIO: EFAULT, nothing mapped. */
        qvrdma_pt_build(&e.d->r, &m.pt, 1, NULL);
        qvrdma_pt_set_l1(&e.d->r, &m.pt, 0, t->gpa);
        st = qvrdma_reg_user_mr(&e.d->r, e.pdn, rw, VA_DST, 4096, VA_DST,
                                m.pt.l1, 1, &m.mr);
        what = g_strdup_printf("REG_USER_MR with a table page in %s", t->name);
        g_test_message("%s: %s", what, qvrdma_status_name(st));
        g_assert_cmpstr(qvrdma_status_name(st), ==, "EFAULT");
        g_assert_cmpuint(mapped_pages(&e), ==, 0);
        qvrdma_pt_free(&e.d->r, &m.pt);

        /* A DMA MR's local SGE in MMIO: LOC_PROT_ERR. */
        conn_reset(&e);
        g_assert_cmpstr(qvrdma_status_name(mr_reg(&e, &dst, 1, NULL, VA_DST,
                                                  rw)), ==, "OK");
        st = qvrdma_get_dma_mr(&e.d->r, e.pdn,
                               VIRTIO_RDMA_ACCESS_LOCAL_WRITE |
                               VIRTIO_RDMA_ACCESS_REMOTE_READ, &dma);
        g_assert_cmpstr(qvrdma_status_name(st), ==, "OK");
        g_free(what);
        what = g_strdup_printf("WRITE from a DMA MR SGE in %s", t->name);
        wr = qvrdma_wr_rdma(VIRTIO_RDMA_WR_RDMA_WRITE, 0x200 + i,
                            dst.va + DST_OFF, dst.mr.rkey);
        expect_status(post_wait(&e, e.a, &wr, sge(t->gpa, 8, dma.lkey), what),
                      VIRTIO_RDMA_WC_LOC_PROT_ERR, what);

        /* The remote address of a READ through a DMA MR in MMIO. */
        conn_reset(&e);
        g_free(what);
        what = g_strdup_printf("READ of a DMA MR at %s", t->name);
        wr = qvrdma_wr_rdma(VIRTIO_RDMA_WR_RDMA_READ, 0x300 + i, t->gpa,
                            dma.rkey);
        expect_status(post_wait(&e, e.a, &wr,
                                sge(dst.va + DST_OFF, 8, dst.mr.lkey), what),
                      VIRTIO_RDMA_WC_REM_ACCESS_ERR, what);

        g_assert_cmpstr(qvrdma_status_name(qvrdma_dereg_mr(&e.d->r, dma.mrn)),
                        ==, "OK");
        mr_dereg(&e, &dst);
    }

    /* The data path reads guest RAM through a DMA MR as before. */
    {
        struct virtio_rdma_rsp_mr dma;
        struct virtio_rdma_sq_req wr;
        Mr src, dst;

        g_assert_cmpstr(qvrdma_status_name(mr_reg(&e, &src, 1, NULL, VA_SRC,
                                                  rw)), ==, "OK");
        g_assert_cmpstr(qvrdma_status_name(mr_reg(&e, &dst, 1, NULL, VA_DST,
                                                  rw)), ==, "OK");
        g_assert_cmpstr(qvrdma_status_name(
            qvrdma_get_dma_mr(&e.d->r, e.pdn, VIRTIO_RDMA_ACCESS_LOCAL_WRITE,
                              &dma)), ==, "OK");
        fill(&e, src.gpa, data, sizeof(data));
        conn_reset(&e);
        wr = qvrdma_wr_rdma(VIRTIO_RDMA_WR_RDMA_WRITE, 0x400, dst.va + DST_OFF,
                            dst.mr.rkey);
        expect_status(post_wait(&e, e.a, &wr, sge(src.gpa, MSG_LEN, dma.lkey),
                                "WRITE from a DMA MR SGE in RAM"),
                      VIRTIO_RDMA_WC_SUCCESS, "WRITE from a DMA MR SGE in RAM");
        expect_mem(&e, dst.gpa + DST_OFF, data, sizeof(data),
                   "WRITE from a DMA MR SGE in RAM");
        g_assert_cmpstr(qvrdma_status_name(qvrdma_dereg_mr(&e.d->r, dma.mrn)),
                        ==, "OK");
        mr_dereg(&e, &dst);
        mr_dereg(&e, &src);
    }

    check_still_works(&e);
    env_quit(&e);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_data_func("/virtio-rdma-mem/ram-gone/bar-off",
                        GINT_TO_POINTER(false), test_ram_gone);
    qtest_add_data_func("/virtio-rdma-mem/ram-gone/bar-moved",
                        GINT_TO_POINTER(true), test_ram_gone);
    qtest_add_data_func("/virtio-rdma-mem/mmio", NULL, test_mmio);
    return g_test_run();
}

/*
 * virtio-rdma-demo: drives the control path of one virtio-rdma-pci device
 * the way a guest driver brings up an RC connection, printing one line per
 * step.  A plain qtest (no qos graph), built on the libqos PCI helpers, the
 * virtio-rdma driver in libqos/virtio-rdma.c and its rings in guest memory
 * (libqos/virtio-rdma-ring.c).
 *
 *   QTEST_QEMU_BINARY=./qemu-system-x86_64 ./tests/qtest/virtio-rdma-demo
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "libqtest.h"
#include "qemu/bswap.h"
#include "qobject/qdict.h"
#include "libqos/libqos-pc.h"
#include "libqos/virtio-rdma.h"
#include "libqos/virtio-rdma-ring.h"

#define DEMO_ARGS "-M pc -netdev user,id=net0 " \
    "-device virtio-net-pci,netdev=net0,addr=04.0,multifunction=on," \
    "mac=52:54:00:12:34:56 -device virtio-rdma-pci,addr=04.1"

/* fe80::5054:ff:fe12:3456: the link-local GID of the NIC's MAC. */
static const uint8_t demo_gid[16] = {
    0xfe, 0x80, 0, 0, 0, 0, 0, 0,
    0x50, 0x54, 0x00, 0xff, 0xfe, 0x12, 0x34, 0x56,
};

/*
 * Under a TAP harness (meson passes --tap) the lines go out as TAP comments;
 * run by hand, they are plain.
 */
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

static const char *port_state_name(uint32_t state)
{
    switch (state) {
    case VIRTIO_RDMA_PORT_DOWN: return "DOWN";
    case VIRTIO_RDMA_PORT_ACTIVE: return "ACTIVE";
    }
    return "?";
}

static const char *qp_state_name(uint32_t state)
{
    static const char *const names[] = {
        "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR",
    };

    return state < ARRAY_SIZE(names) ? names[state] : "?";
}

static unsigned mtu_bytes(uint32_t mtu)
{
    return mtu >= 1 && mtu <= 5 ? 128u << mtu : 0;
}

/* One line per step; a step that fails ends the demo. */
static void G_GNUC_PRINTF(4, 5) step(uint8_t cmd, const char *args,
                                     uint8_t status, const char *fmt, ...)
{
    g_autofree char *detail = NULL;
    va_list ap;

    va_start(ap, fmt);
    detail = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    out("%-13s %-34s -> %-6s %s\n", qvrdma_cmd_name(cmd), args,
        qvrdma_status_name(status), status ? "" : detail);
    g_assert_cmpuint(status, ==, VIRTIO_RDMA_OK);
}

static void print_info_rdma(QTestState *qts)
{
    g_autofree char *text = qtest_hmp(qts, "info rdma");
    g_auto(GStrv) lines = NULL;
    char **l;

    g_strdelimit(text, "\r", '\n');       /* the monitor ends lines \r\n */
    lines = g_strsplit(text, "\n", -1);
    out("(qemu) info rdma\n");
    for (l = lines; *l; l++) {
        if (**l) {
            out("%s\n", *l);
        }
    }
}

static void demo(void)
{
    QOSState *qs = qtest_pc_boot(DEMO_ARGS);
    QPCIAddress addr = { .devfn = QPCI_DEVFN(QVRDMA_SLOT, 1) };
    QVirtioPCIDevice *vpci = virtio_pci_new(qs->pcibus, &addr);
    QVirtioRdma r = { 0 };
    struct virtio_rdma_config cfg;
    struct virtio_rdma_port_attr port;
    struct virtio_rdma_rsp_mr dma_mr, user_mr;
    struct virtio_rdma_cmd_create_qp_ring qreq;
    struct virtio_rdma_ring cq_desc;
    QVrdmaGRing cq_ring, sq_ring, rq_ring;
    struct virtio_rdma_qp_attr attr;
    QVrdmaPageTable pt;
    const uint64_t va = 0x7f0000100000ull;
    uint32_t pdn, cqn, qpn, wire, mask;
    uint16_t pkey;
    uint8_t guid[8];
    uint8_t st;
    QDict *ev;
    static const uint32_t to_state[] = {
        VIRTIO_RDMA_QPS_INIT, VIRTIO_RDMA_QPS_RTR, VIRTIO_RDMA_QPS_RTS,
    };
    unsigned i;

    g_assert_nonnull(vpci);
    qvirtio_pci_device_enable(vpci);
    qvirtio_start_device(&vpci->vdev);
    r.want_features = QVRDMA_RING_FEATURES;     /* all the device accepts */
    qvrdma_init(&r, &vpci->vdev, qs->qts, &qs->alloc);

    qvrdma_read_config(&r, &cfg);
    memcpy(guid, (uint8_t *)&cfg +
           offsetof(struct virtio_rdma_config, sys_image_guid), 8);
    out("virtio-rdma-pci at 00:%02x.1 (virtio-net-pci at 00:%02x.0): "
        "node guid %02x%02x:%02x%02x:%02x%02x:%02x%02x\n",
        QVRDMA_SLOT, QVRDMA_SLOT, guid[0], guid[1], guid[2], guid[3],
        guid[4], guid[5], guid[6], guid[7]);
    out("ABI version %u; limits: qp %u cq %u mr %u pd %u, wr %u cqe %u, "
        "sge %u\n", le32_to_cpu(cfg.hw_ver), le32_to_cpu(cfg.max_ring_qp),
        le32_to_cpu(cfg.max_ring_cq), le32_to_cpu(cfg.max_mr),
        le32_to_cpu(cfg.max_pd), le32_to_cpu(cfg.max_ring_qp_wr),
        le32_to_cpu(cfg.max_ring_cqe), le32_to_cpu(cfg.max_send_sge));

    st = qvrdma_query_port(&r, 1, &port);
    step(VIRTIO_RDMA_CMD_QUERY_PORT, "port 1", st,
         "state %s, active_mtu %u, gid_tbl_len %u, pkey_tbl_len %u",
         port_state_name(le32_to_cpu(port.state)),
         mtu_bytes(le32_to_cpu(port.active_mtu)),
         le32_to_cpu(port.gid_tbl_len), le16_to_cpu(port.pkey_tbl_len));

    st = qvrdma_query_pkey(&r, 1, 0, &pkey);
    step(VIRTIO_RDMA_CMD_QUERY_PKEY, "port 1 index 0", st, "pkey 0x%04x",
         pkey);

    st = qvrdma_add_gid(&r, demo_gid, VIRTIO_RDMA_GID_TYPE_ROCE_UDP_ENCAP, 0,
                        1);
    step(VIRTIO_RDMA_CMD_ADD_GID, "index 0 fe80::5054:ff:fe12:3456", st,
         "type RoCEv2");
    ev = qvrdma_next_gid_event(qs->qts);
    g_assert_nonnull(ev);
    {
        QDict *d = qdict_get_qdict(ev, "data");

        out("  event RDMA_GID_STATUS_CHANGED: netdev %s, gid-status %s, "
            "subnet-prefix 0x%" PRIx64 ", interface-id 0x%" PRIx64 "\n",
            qdict_get_str(d, "netdev"),
            qdict_get_bool(d, "gid-status") ? "true" : "false",
            (uint64_t)qdict_get_int(d, "subnet-prefix"),
            (uint64_t)qdict_get_int(d, "interface-id"));
        g_assert_cmpstr(qdict_get_str(d, "netdev"), ==, "net0");
    }
    qobject_unref(ev);

    st = qvrdma_create_pd(&r, &pdn);
    step(VIRTIO_RDMA_CMD_CREATE_PD, "", st, "pdn 0x%x", pdn);

    /* A CQ is a ring of 64-byte entries in guest memory, zeroed. */
    qvrdma_gring_alloc(&r, &cq_ring, 6, VIRTIO_RDMA_CQE_LOG_STRIDE);
    cq_desc = qvrdma_gring_desc(&cq_ring);
    st = qvrdma_create_cq_ring(&r, VIRTIO_RDMA_KERNEL_CTX, 64, &cq_desc, &cqn);
    step(VIRTIO_RDMA_CMD_CREATE_CQ_RING, "cqe 64, 64-entry ring", st,
         "cqn %u", cqn);

    st = qvrdma_get_dma_mr(&r, pdn, VIRTIO_RDMA_ACCESS_LOCAL_WRITE, &dma_mr);
    step(VIRTIO_RDMA_CMD_GET_DMA_MR, "access LOCAL_WRITE", st,
         "mrn 0x%x lkey 0x%x rkey 0x%x", dma_mr.mrn, dma_mr.lkey,
         dma_mr.rkey);

    qvrdma_pt_build(&r, &pt, 4, NULL);
    st = qvrdma_reg_user_mr(&r, pdn, VIRTIO_RDMA_ACCESS_LOCAL_WRITE |
                            VIRTIO_RDMA_ACCESS_REMOTE_WRITE |
                            VIRTIO_RDMA_ACCESS_REMOTE_READ,
                            va, 4 * 4096, va, pt.l1, 4, &user_mr);
    step(VIRTIO_RDMA_CMD_REG_USER_MR, "4 pages, remote read/write", st,
         "mrn 0x%x lkey 0x%x rkey 0x%x (data at gpa 0x%" PRIx64 ")",
         user_mr.mrn, user_mr.lkey, user_mr.rkey, pt.data);

    qvrdma_gring_alloc(&r, &sq_ring, 4, qvrdma_gring_log_stride(
                           sizeof(struct virtio_rdma_sq_req) +
                           sizeof(struct virtio_rdma_sge)));
    qvrdma_gring_alloc(&r, &rq_ring, 4, qvrdma_gring_log_stride(
                           sizeof(struct virtio_rdma_rq_req) +
                           sizeof(struct virtio_rdma_sge)));
    qreq = qvrdma_ring_qp_req(VIRTIO_RDMA_KERNEL_CTX, pdn, cqn, cqn, 16, 1,
                              &sq_ring, &rq_ring);
    st = qvrdma_create_qp_ring(&r, &qreq, &qpn, &wire);
    step(VIRTIO_RDMA_CMD_CREATE_QP_RING, "RC, 16 WRs, 1 SGE", st,
         "qpn %u (wire QPN 0x%06x)", qpn, wire);

    /* A loopback connection: the QP is its own peer. */
    for (i = 0; i < ARRAY_SIZE(to_state); i++) {
        g_autofree char *args = g_strdup_printf("qpn %u %s -> %s", qpn,
                                                qp_state_name(to_state[i] - 1),
                                                qp_state_name(to_state[i]));

        qvrdma_rc_attr(to_state[i], wire, 0, demo_gid, &attr, &mask);
        st = qvrdma_modify_qp(&r, qpn, mask, &attr);
        step(VIRTIO_RDMA_CMD_MODIFY_QP, args, st, "attr_mask 0x%x", mask);
    }

    st = qvrdma_query_qp(&r, qpn, 0x1fffff, &attr);
    step(VIRTIO_RDMA_CMD_QUERY_QP, "", st,
         "state %s, dest_qpn %u, path_mtu %u, sq_psn 0x%x, rq_psn 0x%x",
         qp_state_name(attr.qp_state), attr.dest_qp_num,
         mtu_bytes(attr.path_mtu), attr.sq_psn, attr.rq_psn);
    g_assert_cmpuint(attr.qp_state, ==, VIRTIO_RDMA_QPS_RTS);

    print_info_rdma(qs->qts);

    st = qvrdma_destroy_qp(&r, qpn);
    step(VIRTIO_RDMA_CMD_DESTROY_QP, "", st, "qpn %u", qpn);
    st = qvrdma_dereg_mr(&r, user_mr.mrn);
    step(VIRTIO_RDMA_CMD_DEREG_MR, "user MR", st, "mrn 0x%x", user_mr.mrn);
    st = qvrdma_dereg_mr(&r, dma_mr.mrn);
    step(VIRTIO_RDMA_CMD_DEREG_MR, "DMA MR", st, "mrn 0x%x", dma_mr.mrn);
    st = qvrdma_destroy_cq(&r, cqn);
    step(VIRTIO_RDMA_CMD_DESTROY_CQ, "", st, "cqn %u", cqn);
    st = qvrdma_destroy_pd(&r, pdn);
    step(VIRTIO_RDMA_CMD_DESTROY_PD, "", st, "pdn 0x%x", pdn);
    st = qvrdma_del_gid(&r, 0, 1);
    step(VIRTIO_RDMA_CMD_DEL_GID, "index 0", st, "deleted");

    print_info_rdma(qs->qts);

    qvrdma_pt_free(&r, &pt);
    qvrdma_gring_free(&r, &sq_ring);
    qvrdma_gring_free(&r, &rq_ring);
    qvrdma_gring_free(&r, &cq_ring);
    qvrdma_cleanup(&r);
    qvirtio_pci_destructor(&vpci->obj);
    g_free(vpci);
    qtest_shutdown(qs);
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
    qtest_add_func("/virtio-rdma/demo", demo);
    return g_test_run();
}

/*
 * libqos data-path helpers for virtio-rdma-pci (see virtio-rdma-dp.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include "../libqtest.h"
#include "qemu/bswap.h"
#include "qobject/qdict.h"
#include "qobject/qlist.h"
#include "qobject/qnum.h"
#include "standard-headers/linux/virtio_ring.h"
#include "pci.h"
#include "virtio-pci.h"
#include "hw/rdma/virtio-rdma-names.h"
#include "virtio-rdma-dp.h"
#include "virtio-rdma-ring.h"

#define QVRDMA_DP_POLL_US       200
/* The least entries of a QP's rings. */
#define QVRDMA_DP_WQ_SLOTS      64u

/* ---- bring-up ------------------------------------------------------------ */

static void qvrdma_parse_mac(const char *s, uint8_t mac[6])
{
    unsigned v[6];
    int i;

    g_assert_cmpint(sscanf(s, "%x:%x:%x:%x:%x:%x", &v[0], &v[1], &v[2],
                           &v[3], &v[4], &v[5]), ==, 6);
    for (i = 0; i < 6; i++) {
        mac[i] = v[i];
    }
}

QVrdmaDev *qvrdma_dev_boot(const char *netdev_opts, const char *mac,
                           const char *rdma_opts)
{
    return qvrdma_dev_boot_nic(netdev_opts, mac, "", rdma_opts);
}

QVrdmaDev *qvrdma_dev_boot_nic(const char *netdev_opts, const char *mac,
                               const char *nic_opts, const char *rdma_opts)
{
    return qvrdma_dev_boot_full(netdev_opts, mac, nic_opts, rdma_opts,
                                QVRDMA_RING_FEATURES);
}

QVrdmaDev *qvrdma_dev_boot_features(const char *netdev_opts, const char *mac,
                                    const char *rdma_opts, uint64_t features)
{
    return qvrdma_dev_boot_full(netdev_opts, mac, "", rdma_opts, features);
}

QVrdmaDev *qvrdma_dev_boot_full(const char *netdev_opts, const char *mac,
                                const char *nic_opts, const char *rdma_opts,
                                uint64_t features)
{
    QVrdmaBoot b = {
        .netdev = netdev_opts, .mac = mac, .nic_opts = nic_opts,
        .rdma_opts = rdma_opts, .features = features,
    };

    return qvrdma_dev_boot_with(&b);
}

QVrdmaDev *qvrdma_dev_boot_with(const QVrdmaBoot *b)
{
    QVrdmaDev *d = g_new0(QVrdmaDev, 1);
    QPCIAddress addr = { .devfn = QPCI_DEVFN(QVRDMA_SLOT, 1) };
    const char *rdma_opts = b->rdma_opts, *ram_path = b->ram_path;
    bool extra = rdma_opts && *rdma_opts;
    /* 0: what the device requires (the only features it accepts). */
    uint64_t features = b->features ? b->features : QVRDMA_RING_FEATURES;

    bool io = b->iothread || qvrdma_dp_want_iothread();
    /* QVRDMA_IOEVENTFD=off: kicks as trapped writes (default: eventfds). */
    const char *ioeventfd = g_getenv("QVRDMA_IOEVENTFD");
    const char *ib = qvrdma_dp_ibverbs();
    /*
     * QVRDMA_RAM_MB: guest RAM with backend=ibverbs (default 128);
     * QVRDMA_RAM_PREALLOC=1: allocated at start (prealloc=on).
     */
    const char *ram_mb = g_getenv("QVRDMA_RAM_MB");
    g_autofree char *ram = ram_path ? g_strdup_printf(
        "-object memory-backend-file,id=vrdma-ram,size=128M,mem-path=%s,"
        "share=on -machine memory-backend=vrdma-ram -m 128M ", ram_path) :
        g_strdup_printf(
        "-object memory-backend-memfd,id=vrdma-ram,size=%sM%s "
        "-machine memory-backend=vrdma-ram -m %sM ",
        ram_mb ? ram_mb : "128",
        g_strcmp0(g_getenv("QVRDMA_RAM_PREALLOC"), "1") ? "" : ",prealloc=on",
        ram_mb ? ram_mb : "128");

    /*
     * QVRDMA_MAD_SOCKET (with backend=ibverbs): the MAD link to the
     * rdmacm-mux listening there, reconnecting every 200 ms if it goes.
     */
    const char *mad_sock = ib ? g_getenv("QVRDMA_MAD_SOCKET") : NULL;
    /*
     * QVRDMA_UUID: the VM's -uuid, which names the owner of its claims at
     * the mux (without it each QEMU is a new owner, as a VM without one).
     */
    const char *uuid = g_getenv("QVRDMA_UUID");
    g_autofree char *uuid_arg = uuid ? g_strdup_printf("-uuid %s ", uuid)
                                     : g_strdup("");
    const char *allow = !ib ? NULL : b->allowed_gids ? b->allowed_gids :
                        g_getenv("QVRDMA_ALLOWED_GIDS");
    g_autofree char *mad = NULL, *nic = NULL, *rdma = NULL, *allowed = NULL;

    if (mad_sock && !*mad_sock) {
        mad_sock = NULL; /* set but empty: none */
    }
    mad = mad_sock ? g_strdup_printf("-chardev socket,id=vrdma-mad,path=%s,"
                                     "reconnect-ms=200 ", mad_sock)
                   : g_strdup("");

    /* Quoted: the command line goes through sh, and the list has ';'. */
    allowed = allow && *allow ? g_strdup_printf(",allowed-gids='%s'", allow)
                              : g_strdup("");
    qvrdma_parse_mac(b->mac, d->mac);
    nic = g_strdup_printf("-device virtio-net-pci,id=nic0,netdev=n0,addr=04.0,"
                          "multifunction=on,mac=%s%s ", b->mac,
                          b->nic_opts ? b->nic_opts : "");
    rdma = g_strdup_printf("-device virtio-rdma-pci,id=rdma0,addr=04.1%s%s%s"
                           "%s%s%s%s%s%s ",
                           io ? ",iothread=vrdma-io0" : "",
                           ioeventfd ? ",ioeventfd=" : "",
                           ioeventfd ? ioeventfd : "",
                           extra ? "," : "", extra ? rdma_opts : "",
                           ib ? ",backend=ibverbs,ibdev=" : "", ib ? ib : "",
                           mad_sock ? ",mad-chardev=vrdma-mad" : "",
                           allowed);
    /* A host RDMA device maps guest RAM from its fd: shared memfd RAM. */
    d->qs = qtest_pc_boot("-M pc %s%s%s-netdev %s %s%s%s", uuid_arg,
                          ib || ram_path ? ram : "", mad, b->netdev,
                          io ? "-object iothread,id=vrdma-io0 " : "",
                          b->rdma_first ? rdma : nic,
                          b->rdma_first ? nic : rdma);
    qvrdma_dp_attach(d, addr.devfn, features);
    return d;
}

void qvrdma_dp_attach(QVrdmaDev *d, int devfn, uint64_t features)
{
    QPCIAddress addr = { .devfn = devfn };

    d->qts = d->qs->qts;
    d->vpci = virtio_pci_new(d->qs->pcibus, &addr);
    g_assert_nonnull(d->vpci);
    qvirtio_pci_device_enable(d->vpci);
    /* Reset first: a virtio reset forgets every MSI-X vector assignment. */
    qvirtio_start_device(&d->vpci->vdev);
    qpci_msix_enable(d->vpci->pdev);
    d->msix_entries = qpci_msix_table_size(d->vpci->pdev);
    d->r.want_features = features;
    qvrdma_init(&d->r, &d->vpci->vdev, d->qts, &d->qs->alloc);
    g_assert_cmphex(d->r.features, ==, features);
    qvrdma_read_config(&d->r, &d->cfg);
    d->max_cq = le32_to_cpu(d->cfg.max_ring_cq);
    d->max_qp = le32_to_cpu(d->cfg.max_ring_qp);
    d->cq_fired = g_hash_table_new(NULL, NULL);
    d->rd = g_new0(QVrdmaRingDev, 1);
    d->rd->d = d;
    d->rd->max_ctx = le32_to_cpu(d->cfg.max_ctx);
    qvrdma_ring_map_doorbells(d->rd);

    /*
     * The proxy has 3 vectors: configuration, control, events.  The
     * control queue's shows the MSI-X path works at all.
     */
    if (d->msix_entries >= 1 + VIRTIO_RDMA_NUM_VQS) {
        QVirtQueuePCI *vqpci = container_of(d->r.ctrl, QVirtQueuePCI, vq);

        qvirtqueue_pci_msix_setup(d->vpci, vqpci, &d->qs->alloc,
                                  1 + VIRTIO_RDMA_VQ_CTRL);
        qtest_writel(d->qts, vqpci->msix_addr, 0);
        d->ctrl_msix = true;
    }
}

bool qvrdma_dp_ctrl_irq(QVrdmaDev *d)
{
    QVirtioDevice *vdev = &d->vpci->vdev;

    g_assert_true(d->ctrl_msix);
    return vdev->bus->get_queue_isr_status(vdev, d->r.ctrl);
}

void qvrdma_free_udp_ports(int *p1, int *p2)
{
    int fd[2], i;
    int *port[2] = { p1, p2 };

    for (i = 0; i < 2; i++) {
        struct sockaddr_in sa = {
            .sin_family = AF_INET,
            .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
        };
        socklen_t len = sizeof(sa);

        fd[i] = socket(AF_INET, SOCK_DGRAM, 0);
        g_assert_cmpint(fd[i], >=, 0);
        g_assert_cmpint(bind(fd[i], (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
        g_assert_cmpint(getsockname(fd[i], (struct sockaddr *)&sa, &len), ==,
                        0);
        *port[i] = ntohs(sa.sin_port);
    }
    close(fd[0]);
    close(fd[1]);
}

void qvrdma_dev_kill(QVrdmaDev *d)
{
    qtest_kill_qemu(d->qts);
}

char *qvrdma_dgram_netdev(int local, int remote)
{
    return g_strdup_printf("dgram,id=n0,local.type=inet,local.host=127.0.0.1,"
                           "local.port=%d,remote.type=inet,"
                           "remote.host=127.0.0.1,remote.port=%d",
                           local, remote);
}

uint16_t qvrdma_ip_checksum(const uint8_t *p, size_t len)
{
    uint32_t sum = 0;
    size_t i;

    for (i = 0; i + 1 < len; i += 2) {
        sum += (p[i] << 8) | p[i + 1];
    }
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return ~sum & 0xffff;
}

void qvrdma_dp_detach(QVrdmaDev *d)
{
    if (d->ctrl_msix) {
        guest_free(&d->qs->alloc,
                   container_of(d->r.ctrl, QVirtQueuePCI, vq)->msix_addr);
    }
    qvrdma_cleanup(&d->r);
    qvirtio_pci_destructor(&d->vpci->obj);
    g_free(d->vpci);
    g_hash_table_destroy(d->cq_fired);
    g_free(d->rd);
}

void qvrdma_dev_quit(QVrdmaDev *d)
{
    qvrdma_dp_detach(d);
    qtest_shutdown(d->qs);
    g_free(d);
}

/* ---- the event queue's virtqueue ------------------------------------------- */

static QVirtQueuePCI *ring_vqpci(QVrdmaRing *ring)
{
    return container_of(ring->vq, QVirtQueuePCI, vq);
}

static void ring_init(QVrdmaRing *ring, QVrdmaDev *d, uint16_t index,
                      uint32_t nslots, uint32_t slot)
{
    memset(ring, 0, sizeof(*ring));
    ring->dev = d;
    ring->vq = qvirtqueue_setup(&d->vpci->vdev, &d->qs->alloc, index);
    g_assert_cmpuint(ring->vq->size, >=, 2);
    ring->n = MIN(nslots, ring->vq->size);
    ring->slot = slot;
    ring->busy = g_new0(bool, ring->n);
    ring->bufs = guest_alloc(&d->qs->alloc, (size_t)ring->n * slot);
}

static void ring_free(QVrdmaRing *ring)
{
    QVrdmaDev *d = ring->dev;
    QVirtQueuePCI *vqpci;

    if (!ring->vq) {
        return;
    }
    vqpci = ring_vqpci(ring);
    if (vqpci->msix_addr) {
        guest_free(&d->qs->alloc, vqpci->msix_addr);
    }
    guest_free(&d->qs->alloc, ring->bufs);
    qvirtqueue_cleanup(d->vpci->vdev.bus, ring->vq, &d->qs->alloc);
    g_free(ring->busy);
    memset(ring, 0, sizeof(*ring));
}

static uint64_t ring_buf(QVrdmaRing *ring, uint32_t i)
{
    return ring->bufs + (uint64_t)i * ring->slot;
}

/* Descriptor @i -> its buffer slot, @len bytes, one descriptor, no chain. */
static void ring_write_desc(QVrdmaRing *ring, uint32_t i, uint32_t len,
                            bool write)
{
    QTestState *qts = ring->dev->qts;
    uint64_t desc = ring->vq->desc + 16ull * i;

    qtest_writeq(qts, desc, ring_buf(ring, i));
    qtest_writel(qts, desc + 8, len);
    qtest_writew(qts, desc + 12, write ? VRING_DESC_F_WRITE : 0);
    qtest_writew(qts, desc + 14, 0);
}

/* Makes descriptor @i available (the avail index is published separately). */
static void ring_add_avail(QVrdmaRing *ring, uint32_t i)
{
    qtest_writew(ring->dev->qts,
                 ring->vq->avail + 4 + 2 * (ring->avail_idx % ring->vq->size),
                 i);
    ring->avail_idx++;
    ring->in_flight++;
}

static void ring_publish_and_kick(QVrdmaRing *ring)
{
    QVirtioDevice *vdev = &ring->dev->vpci->vdev;

    qtest_writew(ring->dev->qts, ring->vq->avail + 2, ring->avail_idx);
    vdev->bus->virtqueue_kick(vdev, ring->vq);
}

static uint16_t ring_used_idx(QVrdmaRing *ring)
{
    return qtest_readw(ring->dev->qts, ring->vq->used + 2);
}

/* The next used element; the caller checked there is one. */
static void ring_take_used(QVrdmaRing *ring, uint32_t *id, uint32_t *len)
{
    QTestState *qts = ring->dev->qts;
    uint64_t elem = ring->vq->used + 4 +
                    8ull * (ring->used_idx % ring->vq->size);

    *id = qtest_readl(qts, elem);
    *len = qtest_readl(qts, elem + 4);
    g_assert_cmpuint(*id, <, ring->n);
    g_assert_true(ring->busy[*id]);
    g_assert_cmpuint(ring->in_flight, >, 0);
    ring->used_idx++;
    ring->in_flight--;
}

/* ---- CQs and QPs ----------------------------------------------------------- */

/* The least n with 2^n >= @v. */
static uint8_t log2_at_least(uint32_t v)
{
    uint8_t n = 0;

    while ((1ull << n) < v) {
        n++;
    }
    return n;
}

QVrdmaCq *qvrdma_dp_cq_create(QVrdmaDev *d, uint32_t cqe)
{
    QVrdmaCq *cq = g_new0(QVrdmaCq, 1);

    cq->rcq = qvrdma_ring_cq_create(d->rd, VIRTIO_RDMA_KERNEL_CTX, cqe,
                                    log2_at_least(cqe));
    cq->cqn = cq->rcq->cqn;
    cq->cqe = cqe;
    cq->dev = d;
    return cq;
}

QVrdmaQp *qvrdma_dp_qp_create(QVrdmaDev *d, uint32_t pdn, uint8_t type,
                              QVrdmaCq *send_cq, QVrdmaCq *recv_cq,
                              uint32_t max_sge, uint8_t sq_sig_type)
{
    return qvrdma_dp_qp_create_wr(d, pdn, type, send_cq, recv_cq, max_sge,
                                  sq_sig_type, 0);
}

QVrdmaQp *qvrdma_dp_qp_create_wr(QVrdmaDev *d, uint32_t pdn, uint8_t type,
                                 QVrdmaCq *send_cq, QVrdmaCq *recv_cq,
                                 uint32_t max_sge, uint8_t sq_sig_type,
                                 uint32_t max_wr)
{
    QVrdmaQp *qp = g_new0(QVrdmaQp, 1);
    struct virtio_rdma_cmd_create_qp req =
        qvrdma_qp_req(pdn, type, send_cq->cqn);
    const uint32_t slots = MAX(max_wr, QVRDMA_DP_WQ_SLOTS);

    if (max_wr) {
        req.max_send_wr = max_wr;
        req.max_recv_wr = max_wr;
    }
    req.recv_cqn = recv_cq->cqn;
    req.sq_sig_type = sq_sig_type;
    req.max_send_sge = max_sge;
    req.max_recv_sge = max_sge;
    qp->rqp = qvrdma_ring_qp_create_req(d->rd, VIRTIO_RDMA_KERNEL_CTX, &req,
                                        log2_at_least(slots));
    qp->qpn = qp->rqp->vq.qpn;
    qp->wire_qpn = qp->rqp->vq.wire_qpn;
    qp->type = type;
    qp->max_send_sge = max_sge;
    qp->max_recv_sge = max_sge;
    qp->sq = (QVrdmaWq) { .dev = d, .rqp = qp->rqp };
    qp->rq = (QVrdmaWq) { .dev = d, .rqp = qp->rqp, .rq = true };
    return qp;
}

void qvrdma_dp_cq_free(QVrdmaCq *cq)
{
    qvrdma_ring_cq_free(cq->rcq);
    g_free(cq);
}

void qvrdma_dp_qp_free(QVrdmaQp *qp)
{
    qvrdma_ring_qp_free(qp->rqp);
    g_free(qp);
}

/* ---- work requests --------------------------------------------------------- */

void qvrdma_dp_batch_begin(QVrdmaWq *ring)
{
    g_assert_false(ring->batch);
    ring->batch = true;
}

/* The queue's doorbell with the producer counter. */
static void ring_qp_doorbell(QVrdmaWq *ring)
{
    if (ring->rq) {
        qvrdma_ring_rq_doorbell(ring->rqp);
    } else {
        qvrdma_ring_sq_doorbell(ring->rqp);
    }
}

void qvrdma_dp_batch_end(QVrdmaWq *ring)
{
    g_assert_true(ring->batch);
    ring->batch = false;
    ring_qp_doorbell(ring);
}

void qvrdma_dp_batch_publish(QVrdmaWq *ring)
{
    g_assert_true(ring->batch);
    ring->batch = false;    /* in the ring; the device learns by doorbell */
}

uint32_t qvrdma_dp_ring_in_flight(QVrdmaWq *ring)
{
    const QVrdmaGRing *g = ring->rq ? &ring->rqp->rq : &ring->rqp->sq;

    /* Posted, not yet copied out by the device. */
    return (ring->rq ? ring->rqp->rq_prod : ring->rqp->sq_prod) -
           qvrdma_gring_device_idx(g);
}

void qvrdma_dp_wait_ring_idle(QVrdmaWq *ring)
{
    gint64 start = g_get_monotonic_time();

    while (qvrdma_dp_ring_in_flight(ring)) {
        g_assert_cmpint(g_get_monotonic_time() - start, <=,
                        QVRDMA_DP_TIMEOUT_US);
        g_usleep(QVRDMA_DP_POLL_US);
    }
}

void qvrdma_dp_post_send(QVrdmaQp *qp, const struct virtio_rdma_sq_req *req,
                         const struct virtio_rdma_sge *sge, uint32_t n_sge)
{
    qvrdma_ring_write_send(qp->rqp, req, sge, n_sge);
    if (!qp->sq.batch) {
        qvrdma_ring_sq_doorbell(qp->rqp);
    }
}

void qvrdma_dp_post_recv(QVrdmaQp *qp, uint64_t wr_id,
                         const struct virtio_rdma_sge *sge, uint32_t n_sge)
{
    qvrdma_ring_write_recv(qp->rqp, wr_id, sge, n_sge);
    if (!qp->rq.batch) {
        qvrdma_ring_rq_doorbell(qp->rqp);
    }
}

struct virtio_rdma_sq_req qvrdma_wr_send(uint64_t wr_id)
{
    return (struct virtio_rdma_sq_req) {
        .opcode = VIRTIO_RDMA_WR_SEND,
        .send_flags = VIRTIO_RDMA_SEND_SIGNALED,
        .wr_id = wr_id,
    };
}

struct virtio_rdma_sq_req qvrdma_wr_rdma(uint32_t opcode, uint64_t wr_id,
                                         uint64_t remote_addr, uint32_t rkey)
{
    struct virtio_rdma_sq_req req = {
        .opcode = opcode,
        .send_flags = VIRTIO_RDMA_SEND_SIGNALED,
        .wr_id = wr_id,
    };

    req.wr.rdma.remote_addr = remote_addr;
    req.wr.rdma.rkey = rkey;
    return req;
}

struct virtio_rdma_sq_req qvrdma_wr_atomic(uint32_t opcode, uint64_t wr_id,
                                           uint64_t remote_addr, uint32_t rkey,
                                           uint64_t compare_add,
                                           uint64_t swap)
{
    struct virtio_rdma_sq_req req = {
        .opcode = opcode,
        .send_flags = VIRTIO_RDMA_SEND_SIGNALED,
        .wr_id = wr_id,
    };

    req.wr.atomic.remote_addr = remote_addr;
    req.wr.atomic.rkey = rkey;
    req.wr.atomic.compare_add = compare_add;
    req.wr.atomic.swap = swap;
    return req;
}

/* ---- completions ------------------------------------------------------------ */

uint16_t qvrdma_dp_cq_pending(QVrdmaCq *cq)
{
    struct virtio_rdma_cqe e;
    uint32_t n = 0;

    while (n < qvrdma_gring_entries(&cq->rcq->ring) &&
           qvrdma_ring_cq_peek(cq->rcq, cq->rcq->cons + n, &e)) {
        n++;
    }
    return n;
}

bool qvrdma_dp_poll_cq(QVrdmaCq *cq, struct virtio_rdma_cq_req *cqe,
                       gint64 timeout_us)
{
    if (!qvrdma_ring_cq_poll(cq->rcq, cqe, timeout_us)) {
        return false;
    }
    cq->taken++;
    cq->taken_errors += cqe->status != 0;
    return true;
}

void qvrdma_dp_wait_cqe(QVrdmaCq *cq, struct virtio_rdma_cq_req *cqe)
{
    if (!qvrdma_dp_poll_cq(cq, cqe, QVRDMA_DP_TIMEOUT_US)) {
        g_error("virtio-rdma: no completion on CQ %u within %d s "
                "(device status 0x%x)", cq->cqn,
                QVRDMA_DP_TIMEOUT_US / 1000000,
                qvrdma_status(&cq->dev->r));
    }
}

void qvrdma_dp_assert_cq_empty(QVrdmaCq *cq, gint64 quiet_us)
{
    struct virtio_rdma_cq_req cqe;

    if (qvrdma_dp_poll_cq(cq, &cqe, quiet_us)) {
        g_autofree char *s = qvrdma_cqe_str(&cqe);

        g_error("virtio-rdma: unexpected completion on CQ %u: %s", cq->cqn,
                s);
    }
}

/* ---- the event queue ---------------------------------------------------------- */

QVrdmaEq *qvrdma_dp_eq_create(QVrdmaDev *d, uint32_t nbufs, uint32_t len,
                              uint32_t post)
{
    QVrdmaEq *eq = g_new0(QVrdmaEq, 1);
    QVrdmaRing *ring = &eq->ring;
    uint16_t entry = 1 + VIRTIO_RDMA_VQ_EVENT;
    uint32_t i;

    ring_init(ring, d, VIRTIO_RDMA_VQ_EVENT, nbufs, len);
    if (d->msix_entries && entry < d->msix_entries) {
        qvirtqueue_pci_msix_setup(d->vpci, ring_vqpci(ring), &d->qs->alloc,
                                  entry);
        qtest_writel(d->qts, ring_vqpci(ring)->msix_addr, 0);
        eq->has_msix = true;
    }
    qtest_memset(d->qts, ring->bufs, 0xa5, (size_t)ring->n * ring->slot);
    for (i = 0; i < ring->n; i++) {
        ring_write_desc(ring, i, len, true);
    }
    for (i = 0; i < MIN(post, ring->n); i++) {
        ring->busy[i] = true;
        ring_add_avail(ring, i);
    }
    ring_publish_and_kick(ring);
    if (!d->eq) {
        d->eq = eq;     /* CQs' notifications: qvrdma_dp_cq_irq() */
    }
    return eq;
}

void qvrdma_dp_eq_post_all(QVrdmaEq *eq)
{
    QVrdmaRing *ring = &eq->ring;
    uint32_t i;

    for (i = 0; i < ring->n; i++) {
        if (!ring->busy[i]) {
            ring->busy[i] = true;
            ring_add_avail(ring, i);
        }
    }
    ring_publish_and_kick(ring);
}

bool qvrdma_dp_eq_poll(QVrdmaEq *eq, struct virtio_rdma_event *ev,
                       gint64 timeout_us)
{
    QVrdmaRing *ring = &eq->ring;
    QTestState *qts = ring->dev->qts;
    gint64 start = g_get_monotonic_time();
    uint32_t id, len;

    while (ring_used_idx(ring) == ring->used_idx) {
        if (g_get_monotonic_time() - start >= timeout_us) {
            return false;
        }
        g_usleep(QVRDMA_DP_POLL_US);
    }
    ring_take_used(ring, &id, &len);
    g_assert_cmpuint(len, ==, sizeof(*ev));
    qtest_memread(qts, ring_buf(ring, id), ev, sizeof(*ev));
    qtest_memset(qts, ring_buf(ring, id), 0xa5, ring->slot);
    ring_add_avail(ring, id);
    ring_publish_and_kick(ring);
    return true;
}

bool qvrdma_dp_eq_irq(QVrdmaEq *eq)
{
    QVirtioDevice *vdev = &eq->ring.dev->vpci->vdev;

    g_assert_true(eq->has_msix);
    return vdev->bus->get_queue_isr_status(vdev, eq->ring.vq);
}

void qvrdma_dp_eq_free(QVrdmaEq *eq)
{
    if (eq->ring.dev->eq == eq) {
        eq->ring.dev->eq = NULL;
    }
    ring_free(&eq->ring);
    g_free(eq);
}

bool qvrdma_dp_cq_irq(QVrdmaCq *cq)
{
    QVrdmaDev *d = cq->dev;
    struct virtio_rdma_event ev;

    g_assert_nonnull(d->eq);    /* a CQ's events come on the event queue */
    while (qvrdma_dp_eq_poll(d->eq, &ev, 0)) {
        if (le32_to_cpu(ev.type) == VIRTIO_RDMA_EVENT_CQ) {
            g_hash_table_add(d->cq_fired,
                             GUINT_TO_POINTER(le32_to_cpu(ev.handle) + 1));
        }
    }
    return g_hash_table_remove(d->cq_fired, GUINT_TO_POINTER(cq->cqn + 1));
}

void qvrdma_dp_cq_arm(QVrdmaCq *cq, uint32_t flags)
{
    qvrdma_ring_cq_arm(cq->rcq, flags);
}

bool qvrdma_dp_wait_cq_irq(QVrdmaCq *cq, gint64 timeout_us)
{
    gint64 start = g_get_monotonic_time();

    while (!qvrdma_dp_cq_irq(cq)) {
        if (g_get_monotonic_time() - start >= timeout_us) {
            return false;
        }
        g_usleep(QVRDMA_DP_POLL_US);
    }
    return true;
}

/* ---- connections ------------------------------------------------------------ */

#define QVRDMA_DP_ACCESS_ALL \
    (VIRTIO_RDMA_ACCESS_LOCAL_WRITE | VIRTIO_RDMA_ACCESS_REMOTE_WRITE | \
     VIRTIO_RDMA_ACCESS_REMOTE_READ | VIRTIO_RDMA_ACCESS_REMOTE_ATOMIC)

static void qvrdma_dp_modify(QVrdmaDev *d, QVrdmaQp *qp, uint32_t mask,
                             const struct virtio_rdma_qp_attr *attr)
{
    uint8_t st = qvrdma_modify_qp(&d->r, qp->qpn, mask, attr);

    if (st) {
        g_error("virtio-rdma: MODIFY_QP qpn %u -> state %u (mask 0x%x): %s",
                qp->qpn, attr->qp_state, mask, qvrdma_status_name(st));
    }
}

void qvrdma_dp_rc_connect(QVrdmaDev *d, QVrdmaQp *qp, const QVrdmaPath *p)
{
    struct virtio_rdma_qp_attr attr;
    uint32_t mask;

    g_assert_cmpuint(qp->type, ==, VIRTIO_RDMA_QPT_RC);
    if (qp->rqp) {
        /* In RESET: the device's ring counters are 0, so are ours. */
        qvrdma_ring_qp_counters_reset(qp->rqp);
    }

    qvrdma_rc_attr(VIRTIO_RDMA_QPS_INIT, p->dest_qpn, p->sgid_index, p->dgid,
                   &attr, &mask);
    attr.qp_access_flags = p->access ? p->access : QVRDMA_DP_ACCESS_ALL;
    qvrdma_dp_modify(d, qp, mask, &attr);

    qvrdma_rc_attr(VIRTIO_RDMA_QPS_RTR, p->dest_qpn, p->sgid_index, p->dgid,
                   &attr, &mask);
    attr.path_mtu = p->path_mtu ? p->path_mtu : VIRTIO_RDMA_MTU_1024;
    attr.rq_psn = p->rq_psn;
    attr.max_dest_rd_atomic = 4;
    attr.min_rnr_timer = p->min_rnr_timer ? p->min_rnr_timer : 1;
    memcpy(attr.ah_attr.dmac, p->dmac, 6);
    qvrdma_dp_modify(d, qp, mask, &attr);

    qvrdma_rc_attr(VIRTIO_RDMA_QPS_RTS, p->dest_qpn, p->sgid_index, p->dgid,
                   &attr, &mask);
    attr.timeout = p->timeout ? p->timeout : 14;
    attr.retry_cnt = p->retry_cnt;
    attr.rnr_retry = p->rnr_retry;
    attr.sq_psn = p->sq_psn;
    attr.max_rd_atomic = 4;
    qvrdma_dp_modify(d, qp, mask, &attr);
}

void qvrdma_dp_ud_ready(QVrdmaDev *d, QVrdmaQp *qp, uint32_t qkey,
                        uint32_t sq_psn)
{
    struct virtio_rdma_qp_attr attr;
    uint32_t mask;

    g_assert_true(qp->type == VIRTIO_RDMA_QPT_UD ||
                  qp->type == VIRTIO_RDMA_QPT_GSI);
    if (qp->rqp) {
        qvrdma_ring_qp_counters_reset(qp->rqp);     /* as rc_connect's */
    }
    qvrdma_ud_attr(VIRTIO_RDMA_QPS_INIT, &attr, &mask);
    attr.qkey = qkey;
    if (qp->type == VIRTIO_RDMA_QPT_GSI) {
        mask &= ~VIRTIO_RDMA_QP_PORT; /* IBA: QP1 is its port's */
    }
    qvrdma_dp_modify(d, qp, mask, &attr);
    qvrdma_ud_attr(VIRTIO_RDMA_QPS_RTR, &attr, &mask);
    qvrdma_dp_modify(d, qp, mask, &attr);
    qvrdma_ud_attr(VIRTIO_RDMA_QPS_RTS, &attr, &mask);
    attr.sq_psn = sq_psn;
    qvrdma_dp_modify(d, qp, mask, &attr);
}

uint32_t qvrdma_dp_qp_state(QVrdmaDev *d, QVrdmaQp *qp)
{
    struct virtio_rdma_qp_attr attr;
    uint8_t st = qvrdma_query_qp(&d->r, qp->qpn, VIRTIO_RDMA_QP_STATE, &attr);

    g_assert_cmpstr(qvrdma_status_name(st), ==, "OK");
    return le32_to_cpu(attr.qp_state);
}

/* ---- counters ---------------------------------------------------------------- */

/*
 * The one device's entry of query-virtio-rdma; @rsp holds it (unref
 * @rsp when done).
 */
QDict *qvrdma_dp_query(QVrdmaDev *d, QDict **rsp)
{
    QList *list;

    *rsp = qtest_qmp(d->qts, "{'execute': 'query-virtio-rdma'}");
    g_assert_true(qdict_haskey(*rsp, "return"));
    list = qdict_get_qlist(*rsp, "return");
    g_assert_cmpuint(qlist_size(list), ==, 1);
    return qobject_to(QDict, qlist_peek(list));
}

uint64_t qvrdma_dp_counter(QVrdmaDev *d, const char *name)
{
    QDict *rsp;
    QDict *dp = qdict_get_qdict(qvrdma_dp_query(d, &rsp), "data-path");
    QNum *num;
    uint64_t v;

    g_assert_nonnull(dp);
    num = qobject_to(QNum, qdict_get(dp, name));
    g_assert_nonnull(num);
    g_assert_true(qnum_get_try_uint(num, &v));
    qobject_unref(rsp);
    return v;
}

void qvrdma_dp_objects(QVrdmaDev *d, bool host, uint32_t n[4])
{
    static const char *const names[4] = { "pds", "cqs", "qps", "mrs" };
    QDict *rsp;
    QDict *info = qvrdma_dp_query(d, &rsp);
    int i;

    if (host) {
        info = qdict_get_qdict(info, "ibverbs");
        g_assert_nonnull(info);
    }
    for (i = 0; i < 4; i++) {
        n[i] = qdict_get_int(info, names[i]);
    }
    qobject_unref(rsp);
}

bool qvrdma_dp_engine_in_iothread(QVrdmaDev *d)
{
    QDict *rsp;
    bool io = qdict_haskey(qvrdma_dp_query(d, &rsp), "iothread");

    qobject_unref(rsp);
    return io;
}

bool qvrdma_dp_want_iothread(void)
{
    return g_strcmp0(g_getenv("QVRDMA_IOTHREAD"), "1") == 0;
}

bool qvrdma_dp_wait_mad_link(QVrdmaDev *d, uint64_t connects, uint64_t gids,
                             int timeout_s)
{
    gint64 end = g_get_monotonic_time() + timeout_s * G_USEC_PER_SEC;

    for (;;) {
        QDict *rsp;
        QDict *ib = qdict_get_qdict(qvrdma_dp_query(d, &rsp), "ibverbs");
        QDict *l = ib ? qdict_get_qdict(ib, "mad-link") : NULL;
        bool up = l && qdict_get_bool(l, "connected") &&
                  (uint64_t)qdict_get_int(l, "connects") >= connects &&
                  (uint64_t)qdict_get_int(l, "gids-claimed") >= gids;

        qobject_unref(rsp);
        if (up) {
            return true;
        }
        if (g_get_monotonic_time() > end) {
            return false;
        }
        g_usleep(50 * 1000);
    }
}

const char *qvrdma_dp_ibverbs(void)
{
    const char *ib = g_getenv("QVRDMA_IBDEV");

    return ib && *ib ? ib : NULL;
}

/* ---- GIDs and names ---------------------------------------------------------- */

void qvrdma_gid_ipv4(uint8_t gid[16], uint8_t a, uint8_t b, uint8_t c,
                     uint8_t dd)
{
    memset(gid, 0, 16);
    gid[10] = 0xff;
    gid[11] = 0xff;
    gid[12] = a;
    gid[13] = b;
    gid[14] = c;
    gid[15] = dd;
}

void qvrdma_dp_loopback_gid(uint8_t gid[16])
{
    const char *ip = g_getenv("QVRDMA_GID_IPV4");
    uint8_t a[4] = { 10, 0, 0, 1 };

    if (ip) {
        g_assert_cmpint(inet_pton(AF_INET, ip, a), ==, 1);
    }
    qvrdma_gid_ipv4(gid, a[0], a[1], a[2], a[3]);
}

void qvrdma_dp_add_gid(QVrdmaDev *d, uint16_t index, const uint8_t gid[16])
{
    uint8_t st = qvrdma_add_gid(&d->r, gid, VIRTIO_RDMA_GID_TYPE_ROCE_UDP_ENCAP,
                                index, 1);

    g_assert_cmpstr(qvrdma_status_name(st), ==, "OK");
}

const char *qvrdma_wc_status_name(uint32_t status)
{
    switch (status) {
#define QVRDMA_WC_STATUS_NAME_(up) case VIRTIO_RDMA_WC_##up: return #up;
    VRDMA_WC_STATUSES(QVRDMA_WC_STATUS_NAME_)
#undef QVRDMA_WC_STATUS_NAME_
    }
    return "?";
}

const char *qvrdma_wc_opcode_name(uint32_t opcode)
{
    switch (opcode) {
    case VIRTIO_RDMA_WC_SEND: return "SEND";
    case VIRTIO_RDMA_WC_RDMA_WRITE: return "RDMA_WRITE";
    case VIRTIO_RDMA_WC_RDMA_READ: return "RDMA_READ";
    case VIRTIO_RDMA_WC_COMP_SWAP: return "COMP_SWAP";
    case VIRTIO_RDMA_WC_FETCH_ADD: return "FETCH_ADD";
    case VIRTIO_RDMA_WC_LOCAL_INV: return "LOCAL_INV";
    case VIRTIO_RDMA_WC_REG_MR: return "REG_MR";
    case VIRTIO_RDMA_WC_RECV: return "RECV";
    case VIRTIO_RDMA_WC_RECV_RDMA_WITH_IMM: return "RECV_RDMA_WITH_IMM";
    }
    return "?";
}

char *qvrdma_cqe_str(const struct virtio_rdma_cq_req *c)
{
    return g_strdup_printf("wr_id 0x%" PRIx64 " status %s(%u) opcode %s(%u) "
                           "vendor_err %u byte_len %u ex 0x%08x qp_num %u "
                           "src_qp %u wc_flags 0x%x port %u",
                           le64_to_cpu(c->wr_id),
                           qvrdma_wc_status_name(le32_to_cpu(c->status)),
                           le32_to_cpu(c->status),
                           qvrdma_wc_opcode_name(le32_to_cpu(c->opcode)),
                           le32_to_cpu(c->opcode), le32_to_cpu(c->vendor_err),
                           le32_to_cpu(c->byte_len), le32_to_cpu(c->ex),
                           le32_to_cpu(c->qp_num), le32_to_cpu(c->src_qp),
                           le32_to_cpu(c->wc_flags), c->port_num);
}

void qvrdma_dp_reinit(QVrdmaDev *d)
{
    if (d->ctrl_msix) {
        guest_free(&d->qs->alloc,
                   container_of(d->r.ctrl, QVirtQueuePCI, vq)->msix_addr);
        d->ctrl_msix = false;
    }
    qvrdma_reinit(&d->r);
}

void qvrdma_dp_wait_slot_gone(QTestState *qts)
{
    int deleted = 0;
    QDict *ev, *rsp;

    while (deleted < 2) {
        ev = qtest_qmp_receive_dict(qts);
        if (!g_strcmp0(qdict_get_try_str(ev, "event"), "DEVICE_DELETED") &&
            qdict_haskey(qdict_get_qdict(ev, "data"), "device")) {
            deleted++;
        }
        qobject_unref(ev);
    }
    rsp = qtest_qmp(qts, "{'execute': 'query-status'}");
    g_assert_true(qdict_haskey(rsp, "return"));
    qobject_unref(rsp);
}

void qvrdma_dp_eject_slot(QVrdmaDev *d)
{
    qtest_qmp_device_del_send(d->qts, "nic0");
    qtest_outl(d->qts, 0xae00 + 0x8, 1 << QVRDMA_SLOT);
    qvrdma_dp_wait_slot_gone(d->qts);
}

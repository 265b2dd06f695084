/*
 * libqos data-path helpers for virtio-rdma-pci: completion, send and receive
 * queues on top of the control-path driver in virtio-rdma.h.  CQs and QPs
 * are queues in guest memory (virtio-rdma-ring.h, in the kernel's context
 * 0) behind plain calls: create, post, poll, arm, free.  A CQ's interrupt
 * is a record on the event queue (virtqueue VIRTIO_RDMA_VQ_EVENT), whose
 * buffers are managed here, not with qvirtqueue_add() (whose descriptor
 * allocator never wraps): descriptor i always points at buffer slot i, and
 * the queue has its own MSI-X vector whose message lands in a guest-memory
 * cell.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef TESTS_LIBQOS_VIRTIO_RDMA_DP_H
#define TESTS_LIBQOS_VIRTIO_RDMA_DP_H

#include "libqos-pc.h"
#include "virtio-rdma.h"

/* Generous for TCG on a loaded 2-core host, but bounded. */
#define QVRDMA_DP_TIMEOUT_US    (20 * 1000 * 1000)

/* One device (the virtio-net / virtio-rdma pair at slot 4) in one QEMU. */
struct QVrdmaRingDev;
struct QVrdmaRingCq;
struct QVrdmaRingQp;
struct QVrdmaEq;

typedef struct QVrdmaDev {
    QOSState *qs;
    QTestState *qts;
    QVirtioPCIDevice *vpci;
    QVirtioRdma r;
    struct virtio_rdma_config cfg;
    uint32_t max_cq;
    uint32_t max_qp;
    uint8_t mac[6];             /* the paired NIC's MAC */
    uint16_t msix_entries;      /* MSI-X table size; 0: MSI-X off */
    bool ctrl_msix;             /* the control queue has vector 1 */
    struct QVrdmaRingDev *rd;   /* the doorbell region, mapped at boot */
    /*
     * The event queue while there is one (qvrdma_dp_eq_create), and the
     * CQs (cqn + 1) it said fired that qvrdma_dp_cq_irq() has not
     * reported yet: the CQs' notifications.
     */
    struct QVrdmaEq *eq;
    GHashTable *cq_fired;
} QVrdmaDev;

/* The event queue's virtqueue, with our own descriptor bookkeeping. */
typedef struct QVrdmaRing {
    QVrdmaDev *dev;
    QVirtQueue *vq;
    uint64_t bufs;              /* slot i (of @slot bytes) <-> descriptor i */
    uint32_t slot;
    uint32_t n;                 /* descriptors / slots in use: <= vq->size */
    uint16_t avail_idx;         /* our copy of avail->idx */
    uint16_t used_idx;          /* next used entry to consume */
    uint32_t in_flight;         /* posted, not yet returned */
    bool *busy;                 /* per descriptor */
} QVrdmaRing;

/* The event queue. */
typedef struct QVrdmaEq {
    QVrdmaRing ring;
    bool has_msix;              /* MSI-X entry 1 + VIRTIO_RDMA_VQ_EVENT */
} QVrdmaEq;

typedef struct QVrdmaCq {
    QVrdmaDev *dev;
    uint32_t cqn;
    uint32_t cqe;               /* as created */
    uint64_t taken;             /* CQEs read by qvrdma_dp_poll_cq() */
    uint64_t taken_errors;      /* of which with status != SUCCESS */
    struct QVrdmaRingCq *rcq;   /* the CQ's ring */
} QVrdmaCq;

/* The SQ (or, @rq, the RQ) of @rqp, for the batch and in-flight calls. */
typedef struct QVrdmaWq {
    QVrdmaDev *dev;
    struct QVrdmaRingQp *rqp;
    bool rq;
    bool batch;                 /* posts are announced by batch_end */
} QVrdmaWq;

typedef struct QVrdmaQp {
    QVrdmaWq sq;
    QVrdmaWq rq;
    uint32_t qpn;               /* queue index: commands and doorbells */
    uint32_t wire_qpn;          /* what peers address */
    uint8_t type;
    uint32_t max_send_sge;
    uint32_t max_recv_sge;
    struct QVrdmaRingQp *rqp;   /* the QP's rings */
} QVrdmaQp;

/* ---- bring-up ------------------------------------------------------------ */

/*
 * Boots "-M pc" with @netdev_opts (e.g. "user,id=n0"; the id must be n0), a
 * virtio-net-pci with @mac at 04.0 and virtio-rdma-pci at 04.1 with
 * @rdma_opts appended (may be NULL or "", e.g. "max-cq=8,max-qp=8");
 * enables the pair, MSI-X on the RDMA function, and runs the control-path
 * init (qvrdma_init) with the features the device requires
 * (QVRDMA_RING_FEATURES).
 */
QVrdmaDev *qvrdma_dev_boot(const char *netdev_opts, const char *mac,
                           const char *rdma_opts);
/*
 * QVRDMA_IOTHREAD=1 in the environment: every device booted here runs its
 * engine in an iothread (-object iothread + iothread=), off the BQL.
 */
bool qvrdma_dp_want_iothread(void);
/*
 * QVRDMA_IBDEV=<host RDMA device> in the environment: every device booted
 * here is backend=ibverbs on it (guest RAM memfd-backed); NULL otherwise.
 * The lab runs the data-path tests so, nested in a guest with rxe.
 * QVRDMA_MAD_SOCKET=<path> as well: each device's MAD link (mad-chardev)
 * goes to the rdmacm-mux listening there; QVRDMA_UUID=<uuid>, the VM's
 * -uuid, makes every QEMU booted here the same owner of its GIDs' claims
 * there (a VM restarted).  QVRDMA_ALLOWED_GIDS=<list>: each
 * device's allowed-gids (unless QVrdmaBoot.allowed_gids says otherwise);
 * without it the device may add no address the host has already.
 */
const char *qvrdma_dp_ibverbs(void);
/*
 * Waits up to @timeout_s for query-virtio-rdma's ibverbs.mad-link to say
 * connected, at least @connects connections so far and at least @gids
 * GIDs claimed.  @returns whether it did.
 */
bool qvrdma_dp_wait_mad_link(QVrdmaDev *d, uint64_t connects, uint64_t gids,
                             int timeout_s);
/*
 * query-virtio-rdma's live PDs, CQs, QPs and MRs (@host: the host device's,
 * backend=ibverbs) into @n, in that order.
 */
void qvrdma_dp_objects(QVrdmaDev *d, bool host, uint32_t n[4]);
/* Whether query-virtio-rdma says the engine runs in an iothread. */
bool qvrdma_dp_engine_in_iothread(QVrdmaDev *d);
/* The same, with @nic_opts appended to virtio-net-pci's (e.g. ",host_mtu=9000"). */
QVrdmaDev *qvrdma_dev_boot_nic(const char *netdev_opts, const char *mac,
                               const char *nic_opts, const char *rdma_opts);
/*
 * Boots with @features (1 << VIRTIO_RDMA_F_*; 0: QVRDMA_RING_FEATURES, all
 * the device accepts) negotiated; asserts the device offered them all.
 */
QVrdmaDev *qvrdma_dev_boot_features(const char *netdev_opts, const char *mac,
                                    const char *rdma_opts, uint64_t features);
QVrdmaDev *qvrdma_dev_boot_full(const char *netdev_opts, const char *mac,
                                const char *nic_opts, const char *rdma_opts,
                                uint64_t features);
/* Everything qvrdma_dev_boot_with() can vary. */
typedef struct QVrdmaBoot {
    const char *netdev;         /* -netdev options; the id must be n0 */
    const char *mac;
    const char *nic_opts;       /* appended to virtio-net-pci's; may be NULL */
    const char *rdma_opts;      /* appended to virtio-rdma-pci's; may be NULL */
    uint64_t features;          /* 0: QVRDMA_RING_FEATURES */
    /*
     * 128 MiB of guest RAM shared with this file (NULL: private RAM);
     * guest-physical address = file offset: a test thread that maps the
     * file writes guest memory while QEMU runs, as other vCPUs would.
     */
    const char *ram_path;
    bool rdma_first;            /* -device virtio-rdma-pci comes first */
    bool iothread;              /* engine in an iothread, whatever the env */
    /*
     * allowed-gids of a backend=ibverbs device (NULL: QVRDMA_ALLOWED_GIDS;
     * "": none, whatever the environment says).
     */
    const char *allowed_gids;
} QVrdmaBoot;
QVrdmaDev *qvrdma_dev_boot_with(const QVrdmaBoot *b);
/*
 * What boot does once QEMU runs, for the virtio-rdma-pci at @devfn of
 * @d->qs (set, with @d->mac, by the caller): enable it, MSI-X on, the
 * driver's init with @features, its config, the doorbells mapped.
 * qvrdma_dp_detach() undoes it (QEMU keeps running).
 */
void qvrdma_dp_attach(QVrdmaDev *d, int devfn, uint64_t features);
void qvrdma_dp_detach(QVrdmaDev *d);
/* Two free UDP ports on 127.0.0.1 (both held until both are known). */
void qvrdma_free_udp_ports(int *p1, int *p2);
/* -netdev options (id n0) of a dgram wire from 127.0.0.1:@local to :@remote. */
char *qvrdma_dgram_netdev(int local, int remote);
/* RFC 1071 checksum of @len bytes (an IPv4 header: 0 when it is right). */
uint16_t qvrdma_ip_checksum(const uint8_t *p, size_t len);
/*
 * Resets the device (the driver's status write of 0) and sets up its
 * control queue again (qvrdma_reinit); the old control queue's MSI-X cell
 * is freed.  The device then has no object: the test's CQs and QPs are
 * only its own memory (qvrdma_dp_cq_free, qvrdma_dp_qp_free).
 */
void qvrdma_dp_reinit(QVrdmaDev *d);
/*
 * Waits for both functions' DEVICE_DELETED (the device's unrealize ran),
 * then for QEMU to answer QMP after it.
 */
void qvrdma_dp_wait_slot_gone(QTestState *qts);
/*
 * Unplugs the device's slot (PIIX4 ACPI PCI hotplug: device_del of the NIC,
 * then the guest's eject, one bit per slot at 0xae08) and waits for it.
 */
void qvrdma_dp_eject_slot(QVrdmaDev *d);
/* Quits QEMU (if still running) and frees @d; CQs/QPs must be freed first. */
void qvrdma_dev_quit(QVrdmaDev *d);
/* Kill QEMU (SIGTERM + wait) but keep @d for a later qvrdma_dev_quit(). */
void qvrdma_dev_kill(QVrdmaDev *d);
/*
 * Whether the control queue's MSI-X vector fired since the last call (every
 * control command notifies); clears it.  Shows the MSI-X path works, which
 * gives "no CQ interrupt" its meaning.
 */
bool qvrdma_dp_ctrl_irq(QVrdmaDev *d);

/*
 * CREATE_CQ_RING for @cqe entries on a ring of the least power of 2 >=
 * @cqe.  Asserts every step.
 */
QVrdmaCq *qvrdma_dp_cq_create(QVrdmaDev *d, uint32_t cqe);
/*
 * CREATE_QP_RING (@type on @pdn, SQ on @send_cq, RQ on @recv_cq, 16 WRs and
 * @max_sge SGEs each way, @sq_sig_type VIRTIO_RDMA_SIGNAL_*), each ring of
 * 64 entries or @max_wr's power of 2.
 */
QVrdmaQp *qvrdma_dp_qp_create(QVrdmaDev *d, uint32_t pdn, uint8_t type,
                              QVrdmaCq *send_cq, QVrdmaCq *recv_cq,
                              uint32_t max_sge, uint8_t sq_sig_type);
/* The same with @max_wr work requests each way (and as many ring slots). */
QVrdmaQp *qvrdma_dp_qp_create_wr(QVrdmaDev *d, uint32_t pdn, uint8_t type,
                                 QVrdmaCq *send_cq, QVrdmaCq *recv_cq,
                                 uint32_t max_sge, uint8_t sq_sig_type,
                                 uint32_t max_wr);
void qvrdma_dp_cq_free(QVrdmaCq *cq);
void qvrdma_dp_qp_free(QVrdmaQp *qp);

/* ---- work requests --------------------------------------------------------- */

/*
 * Writes one send WQE, @req (num_sge is set from @n_sge) + @sge, into the
 * SQ ring and rings the doorbell (not in a batch).
 */
void qvrdma_dp_post_send(QVrdmaQp *qp, const struct virtio_rdma_sq_req *req,
                         const struct virtio_rdma_sge *sge, uint32_t n_sge);
void qvrdma_dp_post_recv(QVrdmaQp *qp, uint64_t wr_id,
                         const struct virtio_rdma_sge *sge, uint32_t n_sge);
/*
 * Between batch_begin and batch_end, posts on @wq only fill the ring's
 * entries; batch_end rings one doorbell with the producer counter.
 */
void qvrdma_dp_batch_begin(QVrdmaWq *wq);
void qvrdma_dp_batch_end(QVrdmaWq *wq);
/*
 * Ends a batch like batch_end but without the doorbell: the requests are
 * in the ring, and the device does not know yet (a doorbell still to come).
 */
void qvrdma_dp_batch_publish(QVrdmaWq *wq);
/* Entries posted on @wq that the device has not copied out (device_idx). */
uint32_t qvrdma_dp_ring_in_flight(QVrdmaWq *wq);
/*
 * Waits until the device has copied out every entry posted on @wq: the
 * work requests are in its engine (the device takes them in its own time,
 * at most its window of a queue).
 */
void qvrdma_dp_wait_ring_idle(QVrdmaWq *wq);

/* Send WQE builders (signaled; wr_id as given). */
struct virtio_rdma_sq_req qvrdma_wr_send(uint64_t wr_id);
struct virtio_rdma_sq_req qvrdma_wr_rdma(uint32_t opcode, uint64_t wr_id,
                                         uint64_t remote_addr, uint32_t rkey);
struct virtio_rdma_sq_req qvrdma_wr_atomic(uint32_t opcode, uint64_t wr_id,
                                           uint64_t remote_addr, uint32_t rkey,
                                           uint64_t compare_add,
                                           uint64_t swap);

/* ---- completions ------------------------------------------------------------ */

/*
 * Takes the next CQE of @cq if there is one within @timeout_us (0: look
 * once), by the owner bit, and publishes its consumption.  @returns whether
 * one was taken.
 */
bool qvrdma_dp_poll_cq(QVrdmaCq *cq, struct virtio_rdma_cq_req *cqe,
                       gint64 timeout_us);
/* Like qvrdma_dp_poll_cq(), but fails the test on timeout. */
void qvrdma_dp_wait_cqe(QVrdmaCq *cq, struct virtio_rdma_cq_req *cqe);
/* Asserts that @cq produces no completion within @quiet_us. */
void qvrdma_dp_assert_cq_empty(QVrdmaCq *cq, gint64 quiet_us);
/* The number of CQEs the device has written and we have not taken yet. */
uint16_t qvrdma_dp_cq_pending(QVrdmaCq *cq);

/*
 * Whether a CQ event record for @cq came on the event queue since the last
 * call (the device's event queue must exist: qvrdma_dp_eq_create; this
 * takes every record waiting there, and keeps only the CQ events).
 */
bool qvrdma_dp_cq_irq(QVrdmaCq *cq);
/* Waits up to @timeout_us for the CQ's interrupt. */
/* Arms @cq (@flags: VIRTIO_RDMA_NOTIFY_*): its CQ_ARM doorbell. */
void qvrdma_dp_cq_arm(QVrdmaCq *cq, uint32_t flags);
bool qvrdma_dp_wait_cq_irq(QVrdmaCq *cq, gint64 timeout_us);

/* ---- the event queue ------------------------------------------------------------ */

/*
 * Sets up the event queue with @nbufs device-writable buffers of @len
 * bytes (descriptors; @post of them posted now), MSI-X entry 2 if the table
 * has room.
 */
QVrdmaEq *qvrdma_dp_eq_create(QVrdmaDev *d, uint32_t nbufs, uint32_t len,
                              uint32_t post);
/* Posts the buffers not posted yet, and kicks. */
void qvrdma_dp_eq_post_all(QVrdmaEq *eq);
/*
 * Takes the next event within @timeout_us (0: look once), asserting its
 * used length is a whole record, and posts its buffer again.
 */
bool qvrdma_dp_eq_poll(QVrdmaEq *eq, struct virtio_rdma_event *ev,
                       gint64 timeout_us);
/* Whether the event queue's MSI-X vector fired since the last call. */
bool qvrdma_dp_eq_irq(QVrdmaEq *eq);
void qvrdma_dp_eq_free(QVrdmaEq *eq);

/* ---- connections -------------------------------------------------------------- */

/* The far end of an RC connection, or the destination of a UD send. */
typedef struct QVrdmaPath {
    uint32_t dest_qpn;
    uint8_t dgid[16];
    uint8_t dmac[6];
    uint8_t sgid_index;         /* our GID */
    uint32_t rq_psn;            /* = the peer's sq_psn */
    uint32_t sq_psn;            /* = the peer's rq_psn */
    uint32_t path_mtu;          /* VIRTIO_RDMA_MTU_*; 0: 1024 */
    uint8_t timeout;            /* 0: 14 (67 ms) */
    uint8_t retry_cnt;          /* used as is (0 is a valid value) */
    uint8_t rnr_retry;
    uint8_t min_rnr_timer;      /* 0: 1 (0.01 ms) */
    uint32_t access;            /* 0: local write | remote write/read/atomic */
} QVrdmaPath;

/* RC RESET -> INIT -> RTR -> RTS along @p; asserts each MODIFY_QP. */
void qvrdma_dp_rc_connect(QVrdmaDev *d, QVrdmaQp *qp, const QVrdmaPath *p);
/* UD or GSI RESET -> INIT (qkey @qkey) -> RTR -> RTS (sq_psn @sq_psn). */
void qvrdma_dp_ud_ready(QVrdmaDev *d, QVrdmaQp *qp, uint32_t qkey,
                        uint32_t sq_psn);
/* QUERY_QP's state. */
uint32_t qvrdma_dp_qp_state(QVrdmaDev *d, QVrdmaQp *qp);

/* ---- counters ---------------------------------------------------------------- */

/* The device's entry of query-virtio-rdma; unref *@rsp when done. */
QDict *qvrdma_dp_query(QVrdmaDev *d, QDict **rsp);

/*
 * One data-path counter of the device ("tx-packets", "completions", ...:
 * the members of query-virtio-rdma's VirtioRdmaDataPath).  The QEMU must
 * have exactly one virtio-rdma device.
 */
uint64_t qvrdma_dp_counter(QVrdmaDev *d, const char *name);

/* ---- GIDs and names ---------------------------------------------------------- */

/* ::ffff:a.b.c.d */
void qvrdma_gid_ipv4(uint8_t gid[16], uint8_t a, uint8_t b, uint8_t c,
                     uint8_t dd);
/*
 * A loopback test's GID 0: ::ffff:10.0.0.1, or on a host RDMA device an
 * address the host has (QVRDMA_GID_IPV4, its RoCE netdev's).
 */
void qvrdma_dp_loopback_gid(uint8_t gid[16]);
/* ADD_GID as RoCEv2 (type 2) at @index on port 1; asserts OK. */
void qvrdma_dp_add_gid(QVrdmaDev *d, uint16_t index, const uint8_t gid[16]);

const char *qvrdma_wc_status_name(uint32_t status);
const char *qvrdma_wc_opcode_name(uint32_t opcode);

/* Formats a CQE for messages (g_free the result). */
char *qvrdma_cqe_str(const struct virtio_rdma_cq_req *cqe);

#endif

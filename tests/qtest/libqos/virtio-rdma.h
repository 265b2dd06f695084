/*
 * libqos driver for virtio-rdma-pci, and the control-queue helpers shared by
 * virtio-rdma-test (qos graph) and virtio-rdma-demo (plain qtest).
 *
 * The device sits at function 1 of a slot whose function 0 is virtio-net-pci.
 * The driver sets up only the control queue (vq 0); the event queue
 * (vq 1) is virtio-rdma-dp's.  Every control command is one descriptor
 * chain:
 *   device-readable [u8 cmd][request], device-writable [u8 status][response]
 * and the device completes it synchronously during the kick.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef TESTS_LIBQOS_VIRTIO_RDMA_H
#define TESTS_LIBQOS_VIRTIO_RDMA_H

#include "qgraph.h"
#include "virtio.h"
#include "virtio-pci.h"
#include "hw/rdma/virtio-rdma-abi.h"

/* Where the qos graph (and the demo) put the pair. */
#define QVRDMA_SLOT         4
#define QVRDMA_NETDEV_ID    "hn0"
#define QVRDMA_NIC_ID       "nic0"
#define QVRDMA_DEV_ID       "rdma0"
#define QVRDMA_MAC          "52:54:00:12:34:56"

/* RINGS and the two features it needs: ABI version 2 requires all three. */
#define QVRDMA_RING_FEATURES \
    ((1ull << VIRTIO_RDMA_F_WIRE_QPN) | (1ull << VIRTIO_RDMA_F_EVENT_QUEUE) | \
     (1ull << VIRTIO_RDMA_F_RINGS))

/* Size of each half (out / in) of the scratch buffer used for commands. */
#define QVRDMA_BUF_SIZE     4096
#define QVRDMA_TIMEOUT_US   (5 * 1000 * 1000)

typedef struct QVirtioRdma {
    QVirtioDevice *vdev;
    QTestState *qts;
    QGuestAllocator *alloc;
    QVirtQueue *ctrl;           /* vq 0; NULL until qvrdma_init() */
    uint64_t buf;               /* 2 * QVRDMA_BUF_SIZE: out half, then in half */
    uint32_t last_used_len;     /* used.len of the last completed chain */
    /*
     * Device feature bits (1 << VIRTIO_RDMA_F_*) to negotiate if offered
     * (the qos driver: QVRDMA_RING_FEATURES), and those negotiated.
     */
    uint64_t want_features;
    uint64_t features;
} QVirtioRdma;

typedef struct QVirtioRdmaPCI {
    QVirtioPCIDevice pci_vdev;
    QVirtioRdma rdma;
} QVirtioRdmaPCI;

/* ---- bring-up --------------------------------------------------------- */

/*
 * Binds @r to @vdev (already reset, ACKNOWLEDGE|DRIVER set), negotiates
 * VERSION_1 (+ INDIRECT_DESC if offered), sets up the control queue and sets
 * DRIVER_OK.
 */
void qvrdma_init(QVirtioRdma *r, QVirtioDevice *vdev, QTestState *qts,
                 QGuestAllocator *alloc);
/* Frees the control queue and the scratch buffer. */
void qvrdma_cleanup(QVirtioRdma *r);
/* Virtio reset (status 0): the device frees every object. */
void qvrdma_reset(QVirtioRdma *r);
/* Reset, then the whole init sequence again (new control queue). */
void qvrdma_reinit(QVirtioRdma *r);
/* qvrdma_reinit() negotiating @want (device feature bits) if offered. */
void qvrdma_renegotiate(QVirtioRdma *r, uint64_t want);
/* Whether VIRTIO_RDMA_F_@bit was negotiated. */
static inline bool qvrdma_has_feature(QVirtioRdma *r, unsigned bit)
{
    return r->features & (1ull << bit);
}
/* The virtio status byte (VIRTIO_CONFIG_S_*). */
uint8_t qvrdma_status(QVirtioRdma *r);
/* The whole config space, read byte by byte. */
void qvrdma_read_config(QVirtioRdma *r, struct virtio_rdma_config *cfg);

/* ---- raw framing ------------------------------------------------------ */

/*
 * One control chain with an arbitrary descriptor layout.  The out bytes are
 * copied to the out half of the scratch buffer and cut into descriptors of
 * @out_split[i] bytes (their sum must be @out_len; NULL: one descriptor, none
 * if @out_len is 0); likewise @in_len bytes of device-writable room (filled
 * with 0xff first).  @indirect puts the whole chain in an indirect table.
 */
typedef struct QVrdmaFrame {
    const void *out;
    size_t out_len;
    const size_t *out_split;
    unsigned n_out_split;
    size_t in_len;
    const size_t *in_split;
    unsigned n_in_split;
    bool indirect;
    gint64 timeout_us;          /* 0: QVRDMA_TIMEOUT_US */
    /* Called once after the kick, before waiting for the answer. */
    void (*after_kick)(void *opaque);
    void *after_kick_opaque;
} QVrdmaFrame;

/*
 * Submits @f and waits for the device to return it.  @returns false if it
 * did not within the timeout (e.g. the device flagged NEEDS_RESET); else
 * true, with the @f->in_len device-writable bytes copied to @in (if not NULL)
 * and the used length in *@used_len (if not NULL) and r->last_used_len.
 */
bool qvrdma_submit(QVirtioRdma *r, const QVrdmaFrame *f, void *in,
                   uint32_t *used_len);

/*
 * One command, framed like the guest driver does: [cmd] [request] as two
 * device-readable descriptors, [status] [response] as two device-writable
 * ones (a zero-length part gets no descriptor).  Asserts the device answered.
 * On status 0 the @rsp_len response bytes are copied to @rsp.
 * @returns the status byte.
 */
uint8_t qvrdma_cmd(QVirtioRdma *r, uint8_t cmd, const void *req,
                   size_t req_len, void *rsp, size_t rsp_len);

/*
 * @n chains of the same command (@req_len bytes of request after the
 * command byte; room for @rsp_len response bytes after the status) posted
 * with one kick, as a guest with several vCPUs could.  Waits, reading the
 * used index back-to-back, until the device used them all (at most
 * @timeout_s).  Each chain is two descriptors; 2 * @n must fit the ring.
 */
typedef struct QVrdmaBatch {
    gint64 kick_us;             /* the kick (an MMIO write) took */
    gint64 max_stall_us;        /* the longest of it and every read: how
                                   long QEMU's main loop did not answer */
    gint64 total_us;            /* until every chain was used */
    unsigned reads;
    uint8_t *status;            /* n status bytes (g_free) */
    uint8_t *rsp;               /* n * rsp_len response bytes (g_free) */
} QVrdmaBatch;
QVrdmaBatch qvrdma_cmd_batch(QVirtioRdma *r, uint8_t cmd, const void *req,
                             size_t req_len, size_t rsp_len, unsigned n,
                             int timeout_s);
void qvrdma_batch_free(QVrdmaBatch *b);

/* ---- typed commands (each @returns the status byte) ------------------- */

uint8_t qvrdma_query_port(QVirtioRdma *r, uint32_t port,
                          struct virtio_rdma_port_attr *attr);
uint8_t qvrdma_destroy_cq(QVirtioRdma *r, uint32_t cqn);
uint8_t qvrdma_create_pd(QVirtioRdma *r, uint32_t *pdn);
uint8_t qvrdma_destroy_pd(QVirtioRdma *r, uint32_t pdn);
uint8_t qvrdma_get_dma_mr(QVirtioRdma *r, uint32_t pdn, uint32_t access,
                          struct virtio_rdma_rsp_mr *mr);
uint8_t qvrdma_create_mr(QVirtioRdma *r, uint32_t pdn, uint32_t access,
                         uint32_t max_num_sg, struct virtio_rdma_rsp_mr *mr);
uint8_t qvrdma_map_mr_sg(QVirtioRdma *r, uint32_t mrn, uint32_t npages,
                         uint64_t start, uint64_t length, uint64_t pages,
                         uint32_t *mapped);
uint8_t qvrdma_reg_user_mr(QVirtioRdma *r, uint32_t pdn, uint32_t access,
                           uint64_t start, uint64_t length, uint64_t virt_addr,
                           uint64_t pages, uint32_t npages,
                           struct virtio_rdma_rsp_mr *mr);
uint8_t qvrdma_dereg_mr(QVirtioRdma *r, uint32_t mrn);
uint8_t qvrdma_modify_qp(QVirtioRdma *r, uint32_t qpn, uint32_t attr_mask,
                         const struct virtio_rdma_qp_attr *attr);
uint8_t qvrdma_query_qp(QVirtioRdma *r, uint32_t qpn, uint32_t attr_mask,
                        struct virtio_rdma_qp_attr *attr);
uint8_t qvrdma_destroy_qp(QVirtioRdma *r, uint32_t qpn);
uint8_t qvrdma_query_pkey(QVirtioRdma *r, uint32_t port, uint16_t index,
                          uint16_t *pkey);
uint8_t qvrdma_add_gid(QVirtioRdma *r, const uint8_t gid[16],
                       uint32_t gid_type, uint16_t index, uint32_t port);
uint8_t qvrdma_del_gid(QVirtioRdma *r, uint16_t index, uint32_t port);
/*
 * The oldest RDMA_GID_STATUS_CHANGED event not taken yet, or NULL; every
 * event of a GID command answered before the call is there by then.
 * The device emits it from a bottom half the command schedules; QMP
 * dispatches a command from a bottom half too, and the main loop runs a
 * batch of them newest first, so the answer to one QMP command can come
 * before the event.  The answer to a second one cannot: that command's
 * bottom half is scheduled only after the first's batch ran.
 */
QDict *qvrdma_next_gid_event(QTestState *qts);

/*
 * The QP request CREATE_QP_RING embeds: @type on @pdn, both queues on @cqn,
 * 16 WRs, 1 SGE.
 */
struct virtio_rdma_cmd_create_qp qvrdma_qp_req(uint32_t pdn, uint8_t type,
                                               uint32_t cqn);

/*
 * Takes an RC QP RESET -> INIT -> RTR -> RTS towards @dest_qpn with the GID
 * at @sgid_index as source (it must exist).  @returns the first non-zero
 * status, or 0.
 */
uint8_t qvrdma_rc_to_rts(QVirtioRdma *r, uint32_t qpn, uint32_t dest_qpn,
                         uint8_t sgid_index, const uint8_t dgid[16]);
/* The attributes of each RC / UD step (mask in *@mask). */
void qvrdma_rc_attr(uint32_t to_state, uint32_t dest_qpn, uint8_t sgid_index,
                    const uint8_t dgid[16], struct virtio_rdma_qp_attr *attr,
                    uint32_t *mask);
void qvrdma_ud_attr(uint32_t to_state, struct virtio_rdma_qp_attr *attr,
                    uint32_t *mask);

/* ---- MR page tables --------------------------------------------------- */

/*
 * A two-level MR page table in guest memory: `l1` (pass it as `pages`) is one
 * 4 KiB page of le64 addresses of the n_l2 level-2 pages (contiguous at
 * `l2`), each of up to 512 le64 data page addresses.
 */
typedef struct QVrdmaPageTable {
    uint64_t l1;
    uint64_t l2;
    uint32_t n_l2;
    uint64_t data;              /* contiguous data pages, 0 if caller-given */
    uint32_t npages;
} QVrdmaPageTable;

/*
 * Builds a table for @npages (1..512*512) data pages: @page_addrs if given
 * (used as is: they may be unaligned or outside RAM), else freshly allocated
 * contiguous pages starting at pt->data.
 */
void qvrdma_pt_build(QVirtioRdma *r, QVrdmaPageTable *pt, uint32_t npages,
                     const uint64_t *page_addrs);
/* Overwrites entry @i of the level-1 page / data page entry @i. */
void qvrdma_pt_set_l1(QVirtioRdma *r, QVrdmaPageTable *pt, uint32_t i,
                      uint64_t addr);
void qvrdma_pt_set_page(QVirtioRdma *r, QVrdmaPageTable *pt, uint32_t i,
                        uint64_t addr);
void qvrdma_pt_free(QVirtioRdma *r, QVrdmaPageTable *pt);

/* ---- names for messages ------------------------------------------------ */

const char *qvrdma_cmd_name(uint8_t cmd);
const char *qvrdma_status_name(uint8_t status);

#endif

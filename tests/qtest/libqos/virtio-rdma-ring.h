/*
 * libqos helpers for virtio-rdma-pci's queues in guest memory
 * (VIRTIO_RDMA_F_RINGS; docs/specs/virtio-rdma.rst, "Queues in guest
 * memory"), on top of the control-path driver (virtio-rdma.h) and the
 * data-path device helpers (virtio-rdma-dp.h: boot, event queue, QP
 * connection).
 *
 * Who writes what, as the spec orders it:
 *  - SQ / RQ: the driver writes an entry, then rings the doorbell with the
 *    new producer counter; it reuses a slot only once the trailer's
 *    device_idx has passed it.
 *  - CQ: the device writes a CQE and then its owner byte; the driver reads
 *    the owner byte, then the entry, then writes driver_idx.
 * Every qtest access completes before the next one starts, so no barrier
 * is needed on this side.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef TESTS_LIBQOS_VIRTIO_RDMA_RING_H
#define TESTS_LIBQOS_VIRTIO_RDMA_RING_H

#include "virtio-rdma-dp.h"

/* A device with RINGS negotiated and its doorbell region mapped. */
typedef struct QVrdmaRingDev {
    QVrdmaDev *d;
    uint32_t max_ctx;           /* config space */
    uint8_t db_bar_idx;
    QPCIBar db_bar;
    uint64_t db_offset;         /* of the region in its BAR */
    uint64_t db_length;
} QVrdmaRingDev;

/* A virtio shared memory region, as its PCI capability describes it. */
typedef struct QVrdmaShm {
    uint8_t bar;
    uint64_t offset;
    uint64_t length;
} QVrdmaShm;

/* ---- bring-up ----------------------------------------------------------- */

/*
 * Boots like qvrdma_dev_boot_features() ("user" netdev, @mac) with
 * QVRDMA_RING_FEATURES negotiated and maps the doorbell region.
 */
QVrdmaRingDev *qvrdma_ring_dev_boot(const char *mac, const char *rdma_opts);
/* Quits QEMU; every CQ and QP must be freed first. */
void qvrdma_ring_dev_quit(QVrdmaRingDev *rd);
/*
 * The VIRTIO_PCI_CAP_SHARED_MEMORY_CFG capability with @id.  @returns
 * whether the function has one.
 */
bool qvrdma_find_shm(QVirtioPCIDevice *vpci, uint8_t id, QVrdmaShm *shm);
/* Finds region VIRTIO_RDMA_SHM_DOORBELLS and maps its BAR (asserts). */
void qvrdma_ring_map_doorbells(QVrdmaRingDev *rd);
/*
 * Resets the device, offers it VERSION_1 | @features and sets FEATURES_OK.
 * @returns whether the device kept FEATURES_OK.  The control queue is gone
 * afterwards: qvrdma_dp_reinit() brings the device back.
 */
bool qvrdma_ring_try_features(QVrdmaDev *d, uint64_t features);

/* ---- doorbells ---------------------------------------------------------- */

/* One 8-byte write of @value at offset 0 of doorbell page @page. */
void qvrdma_ring_doorbell(QVrdmaRingDev *rd, uint32_t page, uint64_t value);
/* The same at @off of the page (a doorbell only at 0). */
void qvrdma_ring_doorbell_at(QVrdmaRingDev *rd, uint32_t page, uint32_t off,
                             uint64_t value);
/* Reads 8 bytes at @off of doorbell page @page. */
uint64_t qvrdma_ring_doorbell_read(QVrdmaRingDev *rd, uint32_t page,
                                   uint32_t off);

/* ---- commands (each @returns the status byte) --------------------------- */

uint8_t qvrdma_alloc_context(QVirtioRdma *r, uint32_t *ctx);
uint8_t qvrdma_free_context(QVirtioRdma *r, uint32_t ctx);
uint8_t qvrdma_create_cq_ring(QVirtioRdma *r, uint32_t ctx, uint32_t cqe,
                              const struct virtio_rdma_ring *ring,
                              uint32_t *cqn);
/* The response is virtio_rdma_rsp_create_qp_wire (asserts 8 bytes). */
uint8_t qvrdma_create_qp_ring(QVirtioRdma *r,
                              const struct virtio_rdma_cmd_create_qp_ring *req,
                              uint32_t *qpn, uint32_t *wire_qpn);

/* ---- a ring's memory ---------------------------------------------------- */

/*
 * 2^log_entries entries of 2^log_stride bytes and the trailer, in pages
 * that an MR page table describes (pt.data is the ring's first byte).
 */
typedef struct QVrdmaGRing {
    QTestState *qts;
    QVrdmaPageTable pt;
    uint8_t log_entries;
    uint8_t log_stride;
} QVrdmaGRing;

/* ceil((entries * stride + 64) / 4096): the npages the device wants. */
uint32_t qvrdma_gring_npages(uint8_t log_entries, uint8_t log_stride);
/* The smallest log_stride whose entries hold @bytes (at least 64). */
uint8_t qvrdma_gring_log_stride(uint32_t bytes);
/* Allocates the pages and their table, and zeroes the ring. */
void qvrdma_gring_alloc(QVirtioRdma *r, QVrdmaGRing *g, uint8_t log_entries,
                        uint8_t log_stride);
void qvrdma_gring_free(QVirtioRdma *r, QVrdmaGRing *g);
/* The virtio_rdma_ring that describes @g. */
struct virtio_rdma_ring qvrdma_gring_desc(const QVrdmaGRing *g);
static inline uint32_t qvrdma_gring_entries(const QVrdmaGRing *g)
{
    return 1u << g->log_entries;
}
/* Guest-physical address of the entry counter @i names. */
uint64_t qvrdma_gring_entry(const QVrdmaGRing *g, uint32_t i);
uint64_t qvrdma_gring_trailer(const QVrdmaGRing *g);
uint32_t qvrdma_gring_driver_idx(const QVrdmaGRing *g);
uint32_t qvrdma_gring_device_idx(const QVrdmaGRing *g);
void qvrdma_gring_set_driver_idx(const QVrdmaGRing *g, uint32_t v);
/* Waits up to @timeout_us for device_idx to reach @want exactly. */
bool qvrdma_gring_wait_device_idx(const QVrdmaGRing *g, uint32_t want,
                                  gint64 timeout_us);
/* Writes @len bytes at the entry counter @i names. */
void qvrdma_gring_write_entry(const QVrdmaGRing *g, uint32_t i,
                              const void *data, size_t len);

/* ---- CQs ---------------------------------------------------------------- */

typedef struct QVrdmaRingCq {
    QVrdmaRingDev *rd;
    QVrdmaGRing ring;
    uint32_t ctx;
    uint32_t cqn;
    uint32_t cqe;
    uint32_t cons;              /* the consumer counter (driver_idx) */
    uint64_t taken;             /* CQEs taken by qvrdma_ring_cq_poll() */
    uint64_t taken_errors;      /* of which with status != SUCCESS */
} QVrdmaRingCq;

/* CREATE_CQ_RING for @cqe on a fresh ring of 2^@log_entries (asserts OK). */
QVrdmaRingCq *qvrdma_ring_cq_create(QVrdmaRingDev *rd, uint32_t ctx,
                                    uint32_t cqe, uint8_t log_entries);
/*
 * Whether the entry counter @i names holds a completion of @i's pass by the
 * owner-bit rule; if so it is copied to *@out.  Changes nothing.
 */
bool qvrdma_ring_cq_peek(QVrdmaRingCq *cq, uint32_t i,
                         struct virtio_rdma_cqe *out);
/*
 * Takes the completion at the consumer counter if one is there within
 * @timeout_us (0: look once): copies it, asserts its reserved bytes are 0,
 * advances the counter and writes driver_idx.
 */
bool qvrdma_ring_cq_poll(QVrdmaRingCq *cq, struct virtio_rdma_cq_req *cqe,
                         gint64 timeout_us);
/* Like qvrdma_ring_cq_poll(), but fails the test on timeout. */
void qvrdma_ring_cq_wait(QVrdmaRingCq *cq, struct virtio_rdma_cq_req *cqe);
/* CQ_ARM doorbell with VIRTIO_RDMA_NOTIFY_* @flags on the CQ's page. */
void qvrdma_ring_cq_arm(QVrdmaRingCq *cq, uint32_t flags);
/* DESTROY_CQ (asserts OK); the ring's memory stays until _free. */
void qvrdma_ring_cq_destroy(QVrdmaRingCq *cq);
void qvrdma_ring_cq_free(QVrdmaRingCq *cq);

/* ---- QPs ---------------------------------------------------------------- */

typedef struct QVrdmaRingQp {
    /*
     * qpn, wire_qpn, type and SGE counts, for virtio-rdma-dp's QP helpers
     * (qvrdma_dp_rc_connect, qvrdma_dp_qp_state); its virtqueue rings stay
     * unused.
     */
    QVrdmaQp vq;
    QVrdmaRingDev *rd;
    uint32_t ctx;
    QVrdmaGRing sq;
    QVrdmaGRing rq;
    uint32_t sq_prod;           /* producer counters */
    uint32_t rq_prod;
} QVrdmaRingQp;

/*
 * A CREATE_QP_RING request: an RC QP of @pdn in @ctx, @max_wr WRs and
 * @max_sge SGEs each way, signaled WRs only, on @sq / @rq (NULL: no ring).
 */
struct virtio_rdma_cmd_create_qp_ring
qvrdma_ring_qp_req(uint32_t ctx, uint32_t pdn, uint32_t send_cqn,
                   uint32_t recv_cqn, uint32_t max_wr, uint32_t max_sge,
                   const QVrdmaGRing *sq, const QVrdmaGRing *rq);
/*
 * CREATE_QP_RING as qvrdma_ring_qp_req() says, on fresh rings of
 * 2^@log_entries entries just large enough (asserts OK).
 */
QVrdmaRingQp *qvrdma_ring_qp_create(QVrdmaRingDev *rd, uint32_t ctx,
                                    uint32_t pdn, QVrdmaRingCq *send_cq,
                                    QVrdmaRingCq *recv_cq, uint32_t max_wr,
                                    uint32_t max_sge, uint8_t log_entries);
/*
 * CREATE_QP_RING of @qp_req (any QP type, its WR and SGE counts, its CQs)
 * in @ctx, each queue that has work requests on a fresh ring of
 * 2^@log_entries (asserts OK).
 */
QVrdmaRingQp *qvrdma_ring_qp_create_req(QVrdmaRingDev *rd, uint32_t ctx,
                                        const struct virtio_rdma_cmd_create_qp *qp_req,
                                        uint8_t log_entries);
/*
 * A shared receive queue (CREATE_SRQ_RING, asserts OK) of @max_wr requests
 * of @max_sge SGEs on a ring of 2^@log_entries; its producer counter.
 */
typedef struct QVrdmaRingSrq {
    QVrdmaRingDev *rd;
    uint32_t ctx;
    uint32_t srqn;
    QVrdmaGRing ring;
    uint32_t prod;
} QVrdmaRingSrq;

uint8_t qvrdma_create_srq_ring(QVirtioRdma *r,
                               const struct virtio_rdma_cmd_create_srq_ring *req,
                               uint32_t *srqn);
QVrdmaRingSrq *qvrdma_ring_srq_create(QVrdmaRingDev *rd, uint32_t ctx,
                                      uint32_t pdn, uint32_t max_wr,
                                      uint32_t max_sge, uint8_t log_entries);
/* DESTROY_SRQ (asserts OK); the ring's memory stays until _free. */
void qvrdma_ring_srq_destroy(QVrdmaRingSrq *srq);
void qvrdma_ring_srq_free(QVrdmaRingSrq *srq);
/* A receive request into the SRQ's next slot; then its doorbell. */
void qvrdma_ring_srq_write(QVrdmaRingSrq *srq, uint64_t wr_id,
                           const struct virtio_rdma_sge *sge, uint32_t n_sge);
void qvrdma_ring_srq_doorbell(QVrdmaRingSrq *srq);
/* An RC QP as qvrdma_ring_qp_create's, receiving from @srq (no RQ). */
QVrdmaRingQp *qvrdma_ring_qp_create_on_srq(QVrdmaRingDev *rd, uint32_t ctx,
                                           uint32_t pdn,
                                           QVrdmaRingCq *send_cq,
                                           QVrdmaRingCq *recv_cq,
                                           uint32_t max_wr, uint32_t max_sge,
                                           uint8_t log_entries,
                                           const QVrdmaRingSrq *srq);
/* DESTROY_QP (asserts OK); the rings' memory stays until _free. */
void qvrdma_ring_qp_destroy(QVrdmaRingQp *qp);
void qvrdma_ring_qp_free(QVrdmaRingQp *qp);
/*
 * The driver's side of MODIFY_QP to RESET: the device set its counters to
 * 0, so do ours.
 */
void qvrdma_ring_qp_counters_reset(QVrdmaRingQp *qp);

/*
 * Writes a send request (@req, num_sge set from @n_sge, + @sge) into the SQ
 * slot of the producer counter and advances it; waits for the slot to be
 * free first.  No doorbell.
 */
void qvrdma_ring_write_send(QVrdmaRingQp *qp,
                            const struct virtio_rdma_sq_req *req,
                            const struct virtio_rdma_sge *sge, uint32_t n_sge);
/* The same for a receive request. */
void qvrdma_ring_write_recv(QVrdmaRingQp *qp, uint64_t wr_id,
                            const struct virtio_rdma_sge *sge, uint32_t n_sge);
/* SQ / RQ doorbell with the producer counter, on the QP's context page. */
void qvrdma_ring_sq_doorbell(QVrdmaRingQp *qp);
void qvrdma_ring_rq_doorbell(QVrdmaRingQp *qp);
/* write_send + sq_doorbell; write_recv + rq_doorbell. */
void qvrdma_ring_post_send(QVrdmaRingQp *qp,
                           const struct virtio_rdma_sq_req *req,
                           const struct virtio_rdma_sge *sge, uint32_t n_sge);
void qvrdma_ring_post_recv(QVrdmaRingQp *qp, uint64_t wr_id,
                           const struct virtio_rdma_sge *sge, uint32_t n_sge);

#endif

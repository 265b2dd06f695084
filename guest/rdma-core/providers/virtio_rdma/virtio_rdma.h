/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * rdma-core provider for virtio-rdma-pci: the objects, shared by the verbs
 * (virtio_rdma.c) and the rings data path (ring.c).
 *
 * The kernel module's uverbs ABI 2 (VIRTIO_RDMA_UVERBS_ABI_RINGS): send,
 * receive, shared receive and completion queues are rings in this
 * process's memory that the device reads and writes directly, and the
 * process rings its own doorbell page: posting, polling and arming a CQ
 * make no system call.  The module pins the rings and gives the device
 * their page tables, so this process never learns a guest-physical
 * address, and the device takes doorbells on this page only for this
 * process's queues.
 */
#ifndef VIRTIO_RDMA_PROVIDER_H
#define VIRTIO_RDMA_PROVIDER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/driver.h>
#include <infiniband/verbs.h>

/* The device's one ABI header, shared with QEMU and the kernel module. */
#include <hw/rdma/virtio-rdma-abi.h>

/*
 * The most inline data a send may carry (cap.max_inline_data).  The
 * provider copies it at post time into a buffer of the QP's own, one slot
 * per SQ ring entry, registered with the QP's PD, and the device reads it
 * from there like any SGE: the application's buffer is free at once and
 * needs no MR, as with inline data on any device.
 */
#define VRDMA_MAX_INLINE 512

/* Wire QPNs are 24 bits: a two-level table of 4096 x 4096 QPs. */
#define VRDMA_QP_TABLE_SHIFT 12
#define VRDMA_QP_TABLE_SIZE (1u << VRDMA_QP_TABLE_SHIFT)

struct vrdma_context {
	struct verbs_context ibv_ctx;
	/*
	 * Where the running libibverbs' ibv_qp_to_qp_ex() looks for
	 * VERBS_QP_EX in a struct verbs_qp (0: nowhere we can serve): see
	 * vrdma_qpex_mask_offset().
	 */
	size_t qpex_mask_off;
	void *db;			/* the doorbell page, mapped write-only */
	/* Wire QPN -> our QP, for the CQEs polled from a ring. */
	pthread_mutex_t qp_table_lock;
	struct vrdma_qp **qp_table[VRDMA_QP_TABLE_SIZE];
};

/*
 * A ring in this process's memory: 2^log_entries entries of 2^log_stride
 * bytes from a page boundary, then the 64-byte trailer, zeroed.
 */
struct vrdma_uring {
	void *buf;
	size_t bytes;			/* whole pages */
	uint8_t log_entries, log_stride;
	struct virtio_rdma_ring_trailer *trailer;
};

struct vrdma_cq {
	struct verbs_cq vcq;
	/* Extended CQ: held from start_poll to end_poll, unless single-threaded. */
	pthread_spinlock_t lock;
	bool locked;
	/* The completion start_poll/next_poll fetched, for the read_* calls. */
	struct ibv_wc wc;
	/* ABI 2 */
	struct vrdma_uring ring;
	uint32_t cqn;			/* what CQ_ARM names */
	uint32_t cons;			/* consumer counter (under lock) */
};

/* The ibv_wr_* builder's list, sized at create by the granted max_send_wr. */
struct vrdma_wr_list {
	pthread_spinlock_t lock;
	/*
	 * ABI 2, inline data: wr_set_inline_data* copies at once (the caller
	 * may reuse its buffer on return) into a slot of inline_stage (max_wr
	 * slots of the SQ's inline_slot bytes), named by the WR's inline_sge.
	 */
	char *inline_stage;
	struct ibv_sge *inline_sge;	/* [max_wr] */
	uint64_t ops;			/* the QP's send_ops_flags */
	struct ibv_send_wr *wr;		/* wr[max_wr] */
	struct ibv_sge *sge;		/* max_send_sge per WR */
	uint32_t max_wr;
	uint32_t n;			/* WRs built since wr_start */
	struct ibv_send_wr *cur;	/* the WR the wr_set_* calls fill */
	int err;			/* the first error since wr_start */
};

/*
 * A posted request: the device is given its tag (from 1, never reused),
 * the application's wr_id stays here, at ents[tag & (entries - 1)].
 */
struct vrdma_wr_ent {
	uint64_t tag;			/* 0: free */
	uint64_t wr_id;
	bool signaled;			/* a CQE may report success */
};

/*
 * A send or receive queue of a QP on a ring (ABI 2).  Requests complete in
 * order, so a completion for tag t completes every request before it; at
 * most max_wr requests are between post and completion, and the ring has
 * at least max_wr entries, so a slot is reused only after the device has
 * copied the request in it (device_idx passed it).
 */
struct vrdma_uwq {
	struct vrdma_uring ring;
	pthread_spinlock_t lock;
	struct vrdma_wr_ent *ents;	/* [entries] */
	uint32_t max_wr, max_sge;
	/* SQ with inline data: inline_slot bytes per ring entry, in inline_mr. */
	uint32_t inline_slot;
	char *inline_buf;
	struct ibv_mr *inline_mr;
	uint32_t prod;			/* producer counter: the doorbell's */
	uint64_t next_tag;		/* the next request's tag */
	uint64_t done_tag;		/* requests below it completed */
};

struct vrdma_qp {
	struct verbs_qp vqp;
	/* What the kernel granted at create: bounds num_sge before alloca. */
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	struct vrdma_wr_list wrl;	/* ibv_wr_*: only with SEND_OPS_FLAGS */
	/* ABI 2 */
	uint32_t qpn;			/* the queue index SQ/RQ doorbells name */
	bool sig_all;			/* sq_sig_all at create */
	/*
	 * Receives from an SRQ: rq has no ring (max_wr 0), and a receive
	 * CQE carries the wr_id of the SRQ entry it consumed.
	 */
	bool srq;
	struct vrdma_uwq sq, rq;
};

/*
 * ABI 2: a shared receive queue, a ring of receive requests (the RQ entry
 * format) that the QPs created on it take from, in ring order.  Unlike an
 * RQ's, its entries complete in no order (each on the QP that took it), so
 * an entry carries the application's wr_id itself, which the CQE gives
 * back, and a slot is reused once the device has copied its entry out
 * (the trailer's device_idx passed it).
 */
struct vrdma_srq {
	struct ibv_srq ibsrq;
	struct vrdma_uring ring;
	pthread_spinlock_t lock;	/* the posters' */
	uint32_t srqn;			/* what SRQ doorbells name */
	uint32_t max_wr, max_sge;	/* as granted */
	uint32_t prod;			/* producer counter: the doorbell's */
};

struct vrdma_ah {
	struct ibv_ah ibah;
	struct virtio_rdma_av av;	/* ABI 2: copied into UD send entries */
};

static inline struct vrdma_context *to_vctx(struct ibv_context *ibctx)
{
	return container_of(ibctx, struct vrdma_context, ibv_ctx.context);
}

static inline struct vrdma_qp *to_vqp(struct ibv_qp *ibqp)
{
	return container_of(ibqp, struct vrdma_qp, vqp.qp);
}

static inline struct vrdma_qp *qpx_to_vqp(struct ibv_qp_ex *qpx)
{
	return container_of(qpx, struct vrdma_qp, vqp.qp_ex);
}

static inline struct vrdma_cq *to_vcq(struct ibv_cq *ibcq)
{
	return container_of(ibcq, struct vrdma_cq, vcq.cq);
}

static inline struct vrdma_cq *cqx_to_vcq(struct ibv_cq_ex *cqx)
{
	return container_of(cqx, struct vrdma_cq, vcq.cq_ex);
}

static inline struct vrdma_ah *to_vah(struct ibv_ah *ah)
{
	return container_of(ah, struct vrdma_ah, ibah);
}

static inline struct vrdma_srq *to_vsrq(struct ibv_srq *ibsrq)
{
	return container_of(ibsrq, struct vrdma_srq, ibsrq);
}

/* ring.c */
int vrdma_uring_alloc(struct vrdma_uring *r, uint32_t min_entries,
		      uint32_t entry_bytes);
void vrdma_uring_free(struct vrdma_uring *r);
int vrdma_uwq_init(struct vrdma_uwq *wq, uint32_t max_wr, uint32_t max_sge,
		   size_t hdr);
int vrdma_uwq_inline_init(struct vrdma_uwq *wq, struct ibv_pd *pd,
			  uint32_t max_inline);
void vrdma_uwq_fini(struct vrdma_uwq *wq);
void vrdma_qp_rings_reset(struct vrdma_qp *qp);
int vrdma_qp_table_add(struct vrdma_context *ctx, struct vrdma_qp *qp);
void vrdma_qp_table_del(struct vrdma_context *ctx, struct vrdma_qp *qp);
int vrdma_ring_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
			 struct ibv_send_wr **bad_wr);
int vrdma_ring_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad_wr);
int vrdma_ring_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
			     struct ibv_recv_wr **bad_wr);
int vrdma_ring_poll_cq(struct ibv_cq *ibcq, int num_entries,
		       struct ibv_wc *wc);
int vrdma_ring_poll_one(struct vrdma_cq *cq, struct ibv_wc *wc);
int vrdma_ring_req_notify_cq(struct ibv_cq *ibcq, int solicited_only);

#endif /* VIRTIO_RDMA_PROVIDER_H */

// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The rings data path in user space (uverbs ABI 2; docs/specs/virtio-rdma.rst,
 * "Queues in guest memory"): post_send, post_recv, post_srq_recv, poll_cq
 * and req_notify_cq without a system call.
 *
 * Ordering, per ring (indexes are free-running 32-bit counters):
 *  - SQ, RQ: entries are written up to the producer counter, then the
 *    doorbell (udma_to_device_barrier() orders them before the MMIO write);
 *    the device copies an entry once and never reads it again.
 *  - SRQ: as an RQ, but a slot is written again only once the trailer's
 *    device_idx (loaded with acquire) says the device copied its entry.
 *  - CQ: the device writes a CQE, then its owner byte; we load the owner
 *    byte with acquire, then the CQE; our consumer counter goes to
 *    driver_idx with release, after the CQEs it covers were read.
 *
 * As in the kernel module, the device is given a tag per request, not the
 * application's wr_id, and a CQE is taken only if it names a request
 * outstanding on the queue of a QP of ours that completes to the CQ polled;
 * others are dropped.  An SRQ's entries carry the application's wr_id
 * instead (they complete in no order, each on the QP that took it): a
 * receive CQE of a QP on an SRQ is taken, with its wr_id, if the QP is
 * ours and completes receives to the CQ polled.  Locks: a post holds the
 * queue's (SRQ's) lock; a poll holds the CQ's (when the CQ is not
 * single-threaded), the QP table's, then the queue's.
 */
#include <config.h>

#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <util/mmio.h>
#include <util/udma_barrier.h>

#include "virtio_rdma.h"

#define VRDMA_PAGE 4096u

static void *vrdma_uring_entry(const struct vrdma_uring *r, uint32_t i)
{
	return (char *)r->buf +
	       ((size_t)(i & ((1u << r->log_entries) - 1)) << r->log_stride);
}

/*
 * A zeroed ring of at least min_entries entries of at least entry_bytes,
 * page-aligned, in whole pages; 0 or an errno.
 */
int vrdma_uring_alloc(struct vrdma_uring *r, uint32_t min_entries,
		      uint32_t entry_bytes)
{
	uint8_t le = 0, ls = VIRTIO_RDMA_RING_MIN_LOG_STRIDE;
	size_t ring_bytes;

	memset(r, 0, sizeof(*r));
	while ((1u << le) < min_entries && le <= VIRTIO_RDMA_RING_MAX_LOG_ENTRIES)
		le++;
	while ((1u << ls) < entry_bytes && ls <= VIRTIO_RDMA_RING_MAX_LOG_STRIDE)
		ls++;
	if (le > VIRTIO_RDMA_RING_MAX_LOG_ENTRIES ||
	    ls > VIRTIO_RDMA_RING_MAX_LOG_STRIDE)
		return EINVAL;
	ring_bytes = (size_t)1 << (le + ls);
	r->bytes = (ring_bytes + sizeof(struct virtio_rdma_ring_trailer) +
		    VRDMA_PAGE - 1) & ~(size_t)(VRDMA_PAGE - 1);
	if (posix_memalign(&r->buf, VRDMA_PAGE, r->bytes))
		return ENOMEM;
	memset(r->buf, 0, r->bytes);
	/* A forked child must not share (copy-on-write) what the device writes. */
	if (ibv_dontfork_range(r->buf, r->bytes)) {
		free(r->buf);
		r->buf = NULL;
		return ENOMEM;
	}
	r->log_entries = le;
	r->log_stride = ls;
	r->trailer = (void *)((char *)r->buf + ring_bytes);
	return 0;
}

/* Only once the device let go of it (the destroy command succeeded). */
void vrdma_uring_free(struct vrdma_uring *r)
{
	if (r->buf)
		ibv_dofork_range(r->buf, r->bytes);
	free(r->buf);
	memset(r, 0, sizeof(*r));
}

/* A queue's ring for max_wr requests of hdr + max_sge SGEs; none for 0. */
int vrdma_uwq_init(struct vrdma_uwq *wq, uint32_t max_wr, uint32_t max_sge,
		   size_t hdr)
{
	int ret;

	memset(wq, 0, sizeof(*wq));
	pthread_spin_init(&wq->lock, PTHREAD_PROCESS_PRIVATE);
	wq->max_wr = max_wr;
	wq->max_sge = max_sge;
	wq->next_tag = 1;
	wq->done_tag = 1;
	if (!max_wr)
		return 0;
	ret = vrdma_uring_alloc(&wq->ring, max_wr,
				hdr + max_sge * sizeof(struct virtio_rdma_sge));
	if (ret)
		return ret;
	wq->ents = calloc((size_t)1 << wq->ring.log_entries, sizeof(*wq->ents));
	if (!wq->ents) {
		vrdma_uring_free(&wq->ring);
		return ENOMEM;
	}
	return 0;
}

/*
 * The SQ's inline buffer: a slot of max_inline bytes (rounded up to 64) per
 * ring entry, registered with the QP's PD for local access only.
 */
int vrdma_uwq_inline_init(struct vrdma_uwq *wq, struct ibv_pd *pd,
			  uint32_t max_inline)
{
	size_t bytes;

	if (!max_inline || !wq->max_wr)
		return 0;
	if (max_inline > VRDMA_MAX_INLINE)
		return EINVAL;
	wq->inline_slot = (max_inline + 63) & ~63u;
	bytes = (size_t)wq->inline_slot << wq->ring.log_entries;
	if (posix_memalign((void **)&wq->inline_buf, VRDMA_PAGE, bytes))
		return ENOMEM;
	wq->inline_mr = ibv_reg_mr(pd, wq->inline_buf, bytes,
				   IBV_ACCESS_LOCAL_WRITE);
	if (!wq->inline_mr) {
		free(wq->inline_buf);
		wq->inline_buf = NULL;
		return errno ? errno : ENOMEM;
	}
	return 0;
}

void vrdma_uwq_fini(struct vrdma_uwq *wq)
{
	if (wq->inline_mr)
		ibv_dereg_mr(wq->inline_mr);
	free(wq->inline_buf);
	wq->inline_buf = NULL;
	wq->inline_mr = NULL;
	vrdma_uring_free(&wq->ring);
	free(wq->ents);
	wq->ents = NULL;
	pthread_spin_destroy(&wq->lock);
}

/*
 * After a successful modify to RESET: the device set the rings' counters
 * to 0 and dropped what was posted, so do we (a CQE from before that is
 * still in a CQ is still taken: its entry stays until reused).
 */
void vrdma_qp_rings_reset(struct vrdma_qp *qp)
{
	struct vrdma_uwq *wqs[] = { &qp->sq, &qp->rq };
	unsigned int i;

	for (i = 0; i < 2; i++) {
		pthread_spin_lock(&wqs[i]->lock);
		wqs[i]->prod = 0;
		wqs[i]->done_tag = wqs[i]->next_tag;
		pthread_spin_unlock(&wqs[i]->lock);
	}
}

int vrdma_qp_table_add(struct vrdma_context *ctx, struct vrdma_qp *qp)
{
	uint32_t n = qp->vqp.qp.qp_num;
	struct vrdma_qp ***top = &ctx->qp_table[(n >> VRDMA_QP_TABLE_SHIFT) &
						(VRDMA_QP_TABLE_SIZE - 1)];
	int ret = 0;

	if (n >> (2 * VRDMA_QP_TABLE_SHIFT))
		return EINVAL;
	pthread_mutex_lock(&ctx->qp_table_lock);
	if (!*top)
		*top = calloc(VRDMA_QP_TABLE_SIZE, sizeof(**top));
	if (!*top)
		ret = ENOMEM;
	else if ((*top)[n & (VRDMA_QP_TABLE_SIZE - 1)])
		ret = EEXIST;
	else
		(*top)[n & (VRDMA_QP_TABLE_SIZE - 1)] = qp;
	pthread_mutex_unlock(&ctx->qp_table_lock);
	return ret;
}

void vrdma_qp_table_del(struct vrdma_context *ctx, struct vrdma_qp *qp)
{
	uint32_t n = qp->vqp.qp.qp_num;
	struct vrdma_qp **t;

	pthread_mutex_lock(&ctx->qp_table_lock);
	t = ctx->qp_table[(n >> VRDMA_QP_TABLE_SHIFT) & (VRDMA_QP_TABLE_SIZE - 1)];
	if (t && t[n & (VRDMA_QP_TABLE_SIZE - 1)] == qp)
		t[n & (VRDMA_QP_TABLE_SIZE - 1)] = NULL;
	pthread_mutex_unlock(&ctx->qp_table_lock);
}

static void vrdma_doorbell(struct vrdma_context *ctx, uint32_t type,
			   uint32_t qn, uint32_t value)
{
	/* The ring's entries (or our CQ reads) before the MMIO write. */
	udma_to_device_barrier();
	mmio_write64_le(ctx->db, htole64(VIRTIO_RDMA_DB(type, qn, value)));
}

/* The device's opcode for wr on a QP of type, or -1 (the module's set). */
static int vrdma_ring_opcode(enum ibv_qp_type type, enum ibv_wr_opcode op)
{
	bool rc = type == IBV_QPT_RC, uc = type == IBV_QPT_UC;

	switch (op) {
	case IBV_WR_SEND:
		return VIRTIO_RDMA_WR_SEND;
	case IBV_WR_SEND_WITH_IMM:
		return VIRTIO_RDMA_WR_SEND_WITH_IMM;
	case IBV_WR_RDMA_WRITE:
		return rc || uc ? VIRTIO_RDMA_WR_RDMA_WRITE : -1;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return rc || uc ? VIRTIO_RDMA_WR_RDMA_WRITE_WITH_IMM : -1;
	case IBV_WR_RDMA_READ:
		return rc ? VIRTIO_RDMA_WR_RDMA_READ : -1;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return rc ? VIRTIO_RDMA_WR_ATOMIC_CMP_AND_SWP : -1;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return rc ? VIRTIO_RDMA_WR_ATOMIC_FETCH_AND_ADD : -1;
	case IBV_WR_SEND_WITH_INV:
		return rc ? VIRTIO_RDMA_WR_SEND_WITH_INV : -1;
	default:
		return -1;
	}
}

#define VRDMA_SEND_FLAGS_OK (IBV_SEND_FENCE | IBV_SEND_SIGNALED | \
			     IBV_SEND_SOLICITED | IBV_SEND_INLINE)

static void vrdma_put_sges(struct virtio_rdma_sge *d, const struct ibv_sge *s,
			   int n)
{
	int i;

	for (i = 0; i < n; i++) {
		d[i].addr = htole64(s[i].addr);
		d[i].length = htole32(s[i].length);
		d[i].lkey = htole32(s[i].lkey);
	}
}

/*
 * IBV_SEND_INLINE: the data of wr's SGEs (their lkeys ignored) into the
 * inline slot of ring entry pos, as the one SGE of the request in r
 * (none for no data); 0 or EINVAL (too long, an opcode that sends no data
 * of its own, a QP created without inline data).
 */
static int vrdma_put_inline(struct vrdma_uwq *wq, const struct ibv_send_wr *wr,
			    uint32_t pos, struct virtio_rdma_sq_req *r)
{
	char *slot = wq->inline_buf +
		     (size_t)(pos & ((1u << wq->ring.log_entries) - 1)) *
			     wq->inline_slot;
	struct virtio_rdma_sge *d = (struct virtio_rdma_sge *)(r + 1);
	uint64_t len = 0;
	int i;

	if (wr->opcode == IBV_WR_RDMA_READ ||
	    wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
	    wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD)
		return EINVAL;
	for (i = 0; i < wr->num_sge; i++)
		len += wr->sg_list[i].length;
	if (len > wq->inline_slot)
		return EINVAL;	/* also: no inline buffer (inline_slot 0) */
	len = 0;
	for (i = 0; i < wr->num_sge; i++) {
		memcpy(slot + len, (void *)(uintptr_t)wr->sg_list[i].addr,
		       wr->sg_list[i].length);
		len += wr->sg_list[i].length;
	}
	r->num_sge = htole32(len ? 1 : 0);
	if (len) {
		d->addr = htole64((uintptr_t)slot);
		d->length = htole32(len);
		d->lkey = htole32(wq->inline_mr->lkey);
	}
	return 0;
}

/* Build wr into the slot r with tag; 0 or EINVAL (nothing posted). */
static int vrdma_build_send(struct vrdma_qp *qp, const struct ibv_send_wr *wr,
			    uint64_t tag, struct virtio_rdma_sq_req *r)
{
	enum ibv_qp_type type = qp->vqp.qp.qp_type;
	int op = vrdma_ring_opcode(type, wr->opcode);
	bool inl = wr->send_flags & IBV_SEND_INLINE;
	uint32_t flags = 0;

	/* An inline request's SGEs are copied, however many (up to the slot). */
	if (op < 0 || wr->num_sge < 0 ||
	    (!inl && (uint32_t)wr->num_sge > qp->sq.max_sge) ||
	    (wr->send_flags & ~VRDMA_SEND_FLAGS_OK))
		return EINVAL;
	if ((type == IBV_QPT_UD) && !wr->wr.ud.ah)
		return EINVAL;
	if (wr->send_flags & IBV_SEND_FENCE)
		flags |= VIRTIO_RDMA_SEND_FENCE;
	if (wr->send_flags & IBV_SEND_SIGNALED)
		flags |= VIRTIO_RDMA_SEND_SIGNALED;
	if (wr->send_flags & IBV_SEND_SOLICITED)
		flags |= VIRTIO_RDMA_SEND_SOLICITED;
	memset(r, 0, sizeof(*r));
	r->num_sge = htole32(wr->num_sge);
	r->send_flags = htole32(flags);
	r->opcode = htole32(op);
	r->wr_id = htole64(tag);

	switch (wr->opcode) {
	case IBV_WR_SEND_WITH_IMM:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		memcpy(&r->ex, &wr->imm_data, sizeof(r->ex));	/* big-endian */
		break;
	case IBV_WR_SEND_WITH_INV:
		r->ex = htole32(wr->invalidate_rkey);
		break;
	default:
		break;
	}
	switch (wr->opcode) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		if (type == IBV_QPT_UD) {
			r->wr.ud.remote_qpn = htole32(wr->wr.ud.remote_qpn);
			r->wr.ud.remote_qkey = htole32(wr->wr.ud.remote_qkey);
			r->wr.ud.av = to_vah(wr->wr.ud.ah)->av;
		}
		break;
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
		r->wr.rdma.remote_addr = htole64(wr->wr.rdma.remote_addr);
		r->wr.rdma.rkey = htole32(wr->wr.rdma.rkey);
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		r->wr.atomic.remote_addr = htole64(wr->wr.atomic.remote_addr);
		r->wr.atomic.compare_add = htole64(wr->wr.atomic.compare_add);
		r->wr.atomic.swap = htole64(wr->wr.atomic.swap);
		r->wr.atomic.rkey = htole32(wr->wr.atomic.rkey);
		break;
	default:
		break;
	}
	if (inl)
		return vrdma_put_inline(&qp->sq, wr, qp->sq.prod, r);
	vrdma_put_sges((struct virtio_rdma_sge *)(r + 1), wr->sg_list,
		       wr->num_sge);
	return 0;
}

/* A receive request for wr, carrying wr_id, into an RQ or SRQ entry. */
static void vrdma_put_recv(struct virtio_rdma_rq_req *r,
			   const struct ibv_recv_wr *wr, uint64_t wr_id)
{
	memset(r, 0, sizeof(*r));
	r->num_sge = htole32(wr->num_sge);
	r->wr_id = htole64(wr_id);
	vrdma_put_sges((struct virtio_rdma_sge *)(r + 1), wr->sg_list,
		       wr->num_sge);
}

/* The slot for the next request, or NULL: max_wr outstanding (lock held). */
static void *vrdma_uwq_slot(struct vrdma_uwq *wq)
{
	if (wq->next_tag - wq->done_tag >= wq->max_wr)
		return NULL;
	return vrdma_uring_entry(&wq->ring, wq->prod);
}

static void vrdma_uwq_commit(struct vrdma_uwq *wq, uint64_t wr_id,
			     bool signaled)
{
	struct vrdma_wr_ent *e =
		&wq->ents[wq->next_tag & ((1u << wq->ring.log_entries) - 1)];

	e->tag = wq->next_tag++;
	e->wr_id = wr_id;
	e->signaled = signaled;
	wq->prod++;
}

int vrdma_ring_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
			 struct ibv_send_wr **bad_wr)
{
	struct vrdma_qp *qp = to_vqp(ibqp);
	struct vrdma_uwq *wq = &qp->sq;
	unsigned int n = 0;
	int ret = 0;

	/* IBA 11.4.1.1: no send queue before RTS (the whole list fails). */
	if (ibqp->state < IBV_QPS_RTS || !wq->max_wr) {
		*bad_wr = wr;
		return EINVAL;
	}
	pthread_spin_lock(&wq->lock);
	for (; wr; wr = wr->next) {
		void *slot = vrdma_uwq_slot(wq);

		if (!slot) {
			ret = ENOMEM;
			break;
		}
		/* In place: the device reads nothing past the producer counter. */
		ret = vrdma_build_send(qp, wr, wq->next_tag, slot);
		if (ret)
			break;
		vrdma_uwq_commit(wq, wr->wr_id, qp->sig_all ||
				 (wr->send_flags & IBV_SEND_SIGNALED));
		n++;
	}
	if (n)
		vrdma_doorbell(to_vctx(ibqp->context), VIRTIO_RDMA_DB_SQ,
			       qp->qpn, wq->prod);
	pthread_spin_unlock(&wq->lock);
	if (ret)
		*bad_wr = wr;
	return ret;
}

int vrdma_ring_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad_wr)
{
	struct vrdma_qp *qp = to_vqp(ibqp);
	struct vrdma_uwq *wq = &qp->rq;
	unsigned int n = 0;
	int ret = 0;

	/*
	 * IBA 11.4.1.1: no receive queue in RESET.  A QP on an SRQ has none
	 * at all (max_wr 0): its receives are posted to the SRQ.
	 */
	if (ibqp->state == IBV_QPS_RESET || !wq->max_wr) {
		*bad_wr = wr;
		return EINVAL;
	}
	pthread_spin_lock(&wq->lock);
	for (; wr; wr = wr->next) {
		struct virtio_rdma_rq_req *r;

		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > wq->max_sge) {
			ret = EINVAL;
			break;
		}
		r = vrdma_uwq_slot(wq);
		if (!r) {
			ret = ENOMEM;
			break;
		}
		vrdma_put_recv(r, wr, wq->next_tag);
		vrdma_uwq_commit(wq, wr->wr_id, true);
		n++;
	}
	if (n)
		vrdma_doorbell(to_vctx(ibqp->context), VIRTIO_RDMA_DB_RQ,
			       qp->qpn, wq->prod);
	pthread_spin_unlock(&wq->lock);
	if (ret)
		*bad_wr = wr;
	return ret;
}

/* The entries the device has copied out of the SRQ's ring. */
static uint32_t vrdma_srq_taken(struct vrdma_srq *srq)
{
	/* Acquire: our writes into those slots after the device's reads. */
	return le32toh(__atomic_load_n(&srq->ring.trailer->device_idx,
				       __ATOMIC_ACQUIRE));
}

/*
 * At most max_wr entries announced and not yet taken (the ring holds at
 * least that many): more is ENOMEM, as for a full RQ.  A device_idx the
 * device should not have written makes the SRQ look full, nothing worse.
 */
int vrdma_ring_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
			     struct ibv_recv_wr **bad_wr)
{
	struct vrdma_srq *srq = to_vsrq(ibsrq);
	unsigned int n = 0;
	uint32_t taken;
	int ret = 0;

	pthread_spin_lock(&srq->lock);
	taken = vrdma_srq_taken(srq);
	for (; wr; wr = wr->next) {
		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > srq->max_sge) {
			ret = EINVAL;
			break;
		}
		/* Full: the device may have taken more since we looked. */
		if (srq->prod - taken >= srq->max_wr)
			taken = vrdma_srq_taken(srq);
		if (srq->prod - taken >= srq->max_wr) {
			ret = ENOMEM;
			break;
		}
		/* In place: the device reads nothing past the producer counter. */
		vrdma_put_recv(vrdma_uring_entry(&srq->ring, srq->prod), wr,
			       wr->wr_id);
		srq->prod++;
		n++;
	}
	if (n)
		vrdma_doorbell(to_vctx(ibsrq->context), VIRTIO_RDMA_DB_SRQ,
			       srq->srqn, srq->prod);
	pthread_spin_unlock(&srq->lock);
	if (ret)
		*bad_wr = wr;
	return ret;
}

/* ---- completions ----------------------------------------------------- */

static enum ibv_wc_status vrdma_wc_status(uint32_t s)
{
	static const enum ibv_wc_status map[] = {
		[VIRTIO_RDMA_WC_SUCCESS] = IBV_WC_SUCCESS,
		[VIRTIO_RDMA_WC_LOC_LEN_ERR] = IBV_WC_LOC_LEN_ERR,
		[VIRTIO_RDMA_WC_LOC_QP_OP_ERR] = IBV_WC_LOC_QP_OP_ERR,
		[VIRTIO_RDMA_WC_LOC_EEC_OP_ERR] = IBV_WC_LOC_EEC_OP_ERR,
		[VIRTIO_RDMA_WC_LOC_PROT_ERR] = IBV_WC_LOC_PROT_ERR,
		[VIRTIO_RDMA_WC_WR_FLUSH_ERR] = IBV_WC_WR_FLUSH_ERR,
		[VIRTIO_RDMA_WC_MW_BIND_ERR] = IBV_WC_MW_BIND_ERR,
		[VIRTIO_RDMA_WC_BAD_RESP_ERR] = IBV_WC_BAD_RESP_ERR,
		[VIRTIO_RDMA_WC_LOC_ACCESS_ERR] = IBV_WC_LOC_ACCESS_ERR,
		[VIRTIO_RDMA_WC_REM_INV_REQ_ERR] = IBV_WC_REM_INV_REQ_ERR,
		[VIRTIO_RDMA_WC_REM_ACCESS_ERR] = IBV_WC_REM_ACCESS_ERR,
		[VIRTIO_RDMA_WC_REM_OP_ERR] = IBV_WC_REM_OP_ERR,
		[VIRTIO_RDMA_WC_RETRY_EXC_ERR] = IBV_WC_RETRY_EXC_ERR,
		[VIRTIO_RDMA_WC_RNR_RETRY_EXC_ERR] = IBV_WC_RNR_RETRY_EXC_ERR,
		[VIRTIO_RDMA_WC_LOC_RDD_VIOL_ERR] = IBV_WC_LOC_RDD_VIOL_ERR,
		[VIRTIO_RDMA_WC_REM_INV_RD_REQ_ERR] = IBV_WC_REM_INV_RD_REQ_ERR,
		[VIRTIO_RDMA_WC_REM_ABORT_ERR] = IBV_WC_REM_ABORT_ERR,
		[VIRTIO_RDMA_WC_INV_EECN_ERR] = IBV_WC_INV_EECN_ERR,
		[VIRTIO_RDMA_WC_INV_EEC_STATE_ERR] = IBV_WC_INV_EEC_STATE_ERR,
		[VIRTIO_RDMA_WC_FATAL_ERR] = IBV_WC_FATAL_ERR,
		[VIRTIO_RDMA_WC_RESP_TIMEOUT_ERR] = IBV_WC_RESP_TIMEOUT_ERR,
		[VIRTIO_RDMA_WC_GENERAL_ERR] = IBV_WC_GENERAL_ERR,
	};

	return s < sizeof(map) / sizeof(map[0]) ? map[s] : IBV_WC_GENERAL_ERR;
}

static bool vrdma_wc_opcode(uint32_t op, enum ibv_wc_opcode *out)
{
	switch (op) {
	case VIRTIO_RDMA_WC_SEND: *out = IBV_WC_SEND; break;
	case VIRTIO_RDMA_WC_RDMA_WRITE: *out = IBV_WC_RDMA_WRITE; break;
	case VIRTIO_RDMA_WC_RDMA_READ: *out = IBV_WC_RDMA_READ; break;
	case VIRTIO_RDMA_WC_COMP_SWAP: *out = IBV_WC_COMP_SWAP; break;
	case VIRTIO_RDMA_WC_FETCH_ADD: *out = IBV_WC_FETCH_ADD; break;
	case VIRTIO_RDMA_WC_LOCAL_INV: *out = IBV_WC_LOCAL_INV; break;
	case VIRTIO_RDMA_WC_RECV: *out = IBV_WC_RECV; break;
	case VIRTIO_RDMA_WC_RECV_RDMA_WITH_IMM:
		*out = IBV_WC_RECV_RDMA_WITH_IMM;
		break;
	default:
		return false;
	}
	return true;
}

/*
 * The request a CQE's tag names on its queue, completed (the queue's lock
 * held): its wr_id, or false if none is outstanding there.  A success for
 * an unsignaled send is refused: its wr_id may already be reused.
 */
static bool vrdma_uwq_complete(struct vrdma_uwq *wq, uint64_t tag,
			       bool success, uint64_t *wr_id)
{
	struct vrdma_wr_ent *e;

	if (!wq->ents || tag < wq->done_tag || tag >= wq->next_tag)
		return false;
	e = &wq->ents[tag & ((1u << wq->ring.log_entries) - 1)];
	if (e->tag != tag || (success && !e->signaled))
		return false;
	*wr_id = e->wr_id;
	e->tag = 0;
	wq->done_tag = tag + 1;	/* in order: every request before it too */
	return true;
}

/* wc from the CQE c polled from cq; false: it is dropped. */
static bool vrdma_cqe_to_wc(struct vrdma_cq *cq,
			    const struct virtio_rdma_cq_req *c,
			    struct ibv_wc *wc)
{
	struct vrdma_context *ctx = to_vctx(cq->vcq.cq.context);
	uint32_t status = le32toh(c->status), f = le32toh(c->wc_flags);
	uint32_t qpn = le32toh(c->qp_num), op = le32toh(c->opcode);
	/* Only receive requests complete with these (a flushed one too). */
	bool recv = op == VIRTIO_RDMA_WC_RECV ||
		    op == VIRTIO_RDMA_WC_RECV_RDMA_WITH_IMM;
	struct vrdma_qp **t, *qp = NULL;
	struct vrdma_uwq *wq;
	uint64_t wr_id;
	bool ok = false;

	pthread_mutex_lock(&ctx->qp_table_lock);
	if (!(qpn >> (2 * VRDMA_QP_TABLE_SHIFT))) {
		t = ctx->qp_table[qpn >> VRDMA_QP_TABLE_SHIFT];
		qp = t ? t[qpn & (VRDMA_QP_TABLE_SIZE - 1)] : NULL;
	}
	if (qp && (recv ? qp->vqp.qp.recv_cq : qp->vqp.qp.send_cq) ==
			  &cq->vcq.cq) {
		if (recv && qp->srq) {
			/* The SRQ entry's own wr_id: nothing of the QP's RQ. */
			wr_id = le64toh(c->wr_id);
			ok = true;
		} else {
			wq = recv ? &qp->rq : &qp->sq;
			pthread_spin_lock(&wq->lock);
			ok = vrdma_uwq_complete(wq, le64toh(c->wr_id),
						status == VIRTIO_RDMA_WC_SUCCESS,
						&wr_id);
			pthread_spin_unlock(&wq->lock);
		}
	}
	pthread_mutex_unlock(&ctx->qp_table_lock);
	if (!ok)
		return false;

	memset(wc, 0, sizeof(*wc));
	wc->wr_id = wr_id;
	wc->status = vrdma_wc_status(status);
	if (!vrdma_wc_opcode(op, &wc->opcode) && wc->status == IBV_WC_SUCCESS)
		wc->status = IBV_WC_GENERAL_ERR;
	wc->vendor_err = le32toh(c->vendor_err);
	wc->byte_len = le32toh(c->byte_len);
	wc->qp_num = qpn;
	wc->src_qp = le32toh(c->src_qp);
	wc->pkey_index = le16toh(c->pkey_index);
	wc->slid = le16toh(c->slid);
	wc->sl = c->sl;
	wc->dlid_path_bits = c->dlid_path_bits;
	if (f & VIRTIO_RDMA_WC_GRH)
		wc->wc_flags |= IBV_WC_GRH;
	if (f & VIRTIO_RDMA_WC_WITH_IMM) {
		wc->wc_flags |= IBV_WC_WITH_IMM;
		memcpy(&wc->imm_data, &c->ex, sizeof(c->ex));
	}
	if (f & VIRTIO_RDMA_WC_WITH_INVALIDATE) {
		wc->wc_flags |= IBV_WC_WITH_INV;
		wc->invalidated_rkey = le32toh(c->ex);
	}
	return true;
}

/* The CQE at the consumer counter, copied, if the device wrote it. */
static bool vrdma_ring_cqe(struct vrdma_cq *cq, struct virtio_rdma_cq_req *c)
{
	struct virtio_rdma_cqe *e = vrdma_uring_entry(&cq->ring, cq->cons);
	uint8_t want = ((cq->cons >> cq->ring.log_entries) + 1) &
		       VIRTIO_RDMA_CQE_OWNER;
	uint8_t owner = __atomic_load_n(&e->owner, __ATOMIC_ACQUIRE);

	if ((owner & VIRTIO_RDMA_CQE_OWNER) != want)
		return false;
	memcpy(c, &e->wc, sizeof(*c));
	return true;
}

/* Our consumer counter, after the reads of the entries it frees. */
static void vrdma_cq_publish(struct vrdma_cq *cq)
{
	__atomic_store_n(&cq->ring.trailer->driver_idx, htole32(cq->cons),
			 __ATOMIC_RELEASE);
}

/*
 * Up to max completions into wc (cq->lock held if the CQ is locked); at
 * most one pass over the ring: the device cannot make the loop longer.
 */
static int vrdma_ring_poll(struct vrdma_cq *cq, int max, struct ibv_wc *wc)
{
	uint32_t start = cq->cons, entries = 1u << cq->ring.log_entries;
	struct virtio_rdma_cq_req c;
	int n = 0;

	while (n < max && cq->cons - start < entries && vrdma_ring_cqe(cq, &c)) {
		cq->cons++;
		if (vrdma_cqe_to_wc(cq, &c, &wc[n]))
			n++;
	}
	if (cq->cons != start)
		vrdma_cq_publish(cq);
	return n;
}

int vrdma_ring_poll_cq(struct ibv_cq *ibcq, int num_entries, struct ibv_wc *wc)
{
	struct vrdma_cq *cq = to_vcq(ibcq);
	int n;

	if (num_entries < 0)
		return -EINVAL;
	pthread_spin_lock(&cq->lock);
	n = vrdma_ring_poll(cq, num_entries, wc);
	pthread_spin_unlock(&cq->lock);
	return n;
}

/* One completion for the extended CQ (its lock as start_poll took it). */
int vrdma_ring_poll_one(struct vrdma_cq *cq, struct ibv_wc *wc)
{
	return vrdma_ring_poll(cq, 1, wc) ? 0 : ENOENT;
}

/*
 * CQ_ARM by doorbell; it takes effect when the write completes, and the
 * caller polls again afterwards for what came before it (the verbs rule).
 */
int vrdma_ring_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct vrdma_cq *cq = to_vcq(ibcq);

	vrdma_doorbell(to_vctx(ibcq->context), VIRTIO_RDMA_DB_CQ_ARM, cq->cqn,
		       solicited_only ? VIRTIO_RDMA_NOTIFY_SOLICITED :
				       VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION);
	return 0;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * The data path: post_send / post_recv, poll_cq, req_notify_cq, and the
 * interrupts that carry CQ notifications.  Every function here may run in
 * atomic context (ib_cq pollers in softirq, block drivers' queue_rq), so
 * only spinlocks and GFP_ATOMIC; only a user CQ's arm (uverbs, process
 * context) sleeps for its answer.
 *
 * A post to a kernel QP writes each request in place into the next slot
 * of the queue's ring (the layout of docs/specs/virtio-rdma.rst;
 * vrdma_qp.c, "Rings") and rings one doorbell for the batch.  max_wr
 * requests outstanding is a full queue: the post fails at once with
 * -ENOMEM instead of waiting for the device.  So does a post whose tag's
 * entry still waits for its CQE: a ULP more than max_wr requests ahead of
 * its polls (vrdma_qp.c, "Tags").  A poll reads the CQ's ring by the
 * owner-bit rule and a CQ is armed by doorbell (vrdma_ring.c states the
 * ordering).
 * Values from user space arrive here through uverbs, already copied into
 * kernel structures; what the device cannot take is refused here with
 * -EINVAL and bad_wr, before anything is posted.
 *
 * The device never sees a ULP's wr_id (a kernel ULP's is a pointer): a
 * request carries its queue's next tag and the wr_id stays in the queue's
 * table (vrdma_qp.c, "Tags"), kernel and user QPs alike, ib_drain_qp()'s
 * requests included (the core posts them here).  Polling hands back the
 * wr_id of the request a CQE's tag names, only if it is outstanding on
 * that QP's queue, on the CQ polled; any other CQE is dropped, counted in
 * dev->bad_cqes and reported (rate-limited).  Locks: a post holds
 * wq->lock; a poll holds cq->lock and takes dev->qps' lock, then the
 * queue's wq->lock, inside it (nothing takes them the other way round).
 *
 * User queues are the provider's to post, poll and arm, in user space
 * (uverbs has no such command for this device, vrdma_probe()).  Their CQ
 * events and async events still come through the event queue below (none
 * of that reads a ring), to the handlers uverbs installed.
 *
 * A QP on an SRQ (vrdma_srq.c) has no RQ: post_recv to it fails, and its
 * receive CQEs name requests of its SRQ, whose table the poll looks them
 * up in instead (under the SRQ's lock, inside cq->lock).
 */
#include <linux/scatterlist.h>

#include "vrdma.h"

/* rdma-core's IBV_WC_WITH_INV: user space numbers wc_flags differently. */
#define VRDMA_UVERBS_WC_WITH_INV (1u << 3)

static int vrdma_sges(struct virtio_rdma_sge *d, const struct ib_sge *s, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		d[i].addr = cpu_to_le64(s[i].addr);
		d[i].length = cpu_to_le32(s[i].length);
		d[i].lkey = cpu_to_le32(s[i].lkey);
	}
	return n;
}

static int vrdma_wr_opcode(enum ib_qp_type type, enum ib_wr_opcode op)
{
	bool rc = type == IB_QPT_RC, uc = type == IB_QPT_UC;

	switch (op) {
	case IB_WR_SEND:
		return VIRTIO_RDMA_WR_SEND;
	case IB_WR_SEND_WITH_IMM:
		return VIRTIO_RDMA_WR_SEND_WITH_IMM;
	case IB_WR_RDMA_WRITE:
		return rc || uc ? VIRTIO_RDMA_WR_RDMA_WRITE : -1;
	case IB_WR_RDMA_WRITE_WITH_IMM:
		return rc || uc ? VIRTIO_RDMA_WR_RDMA_WRITE_WITH_IMM : -1;
	case IB_WR_LOCAL_INV:
		return rc || uc ? VIRTIO_RDMA_WR_LOCAL_INV : -1;
	case IB_WR_REG_MR:
		return rc || uc ? VIRTIO_RDMA_WR_REG_MR : -1;
	case IB_WR_RDMA_READ:
		return rc ? VIRTIO_RDMA_WR_RDMA_READ : -1;
	case IB_WR_ATOMIC_CMP_AND_SWP:
		return rc ? VIRTIO_RDMA_WR_ATOMIC_CMP_AND_SWP : -1;
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		return rc ? VIRTIO_RDMA_WR_ATOMIC_FETCH_AND_ADD : -1;
	case IB_WR_SEND_WITH_INV:
		return rc ? VIRTIO_RDMA_WR_SEND_WITH_INV : -1;
	default:
		return -1;
	}
}

#define VRDMA_SEND_FLAGS_OK (IB_SEND_FENCE | IB_SEND_SIGNALED | IB_SEND_SOLICITED)

/*
 * A receive request for wr (its num_sge checked) into r, an RQ or SRQ
 * entry or buffer, carrying tag instead of wr->wr_id; its length.
 */
size_t vrdma_build_recv(struct virtio_rdma_rq_req *r,
			const struct ib_recv_wr *wr, u64 tag)
{
	memset(r, 0, sizeof(*r));
	r->num_sge = cpu_to_le32(wr->num_sge);
	r->wr_id = cpu_to_le64(tag);
	vrdma_sges((struct virtio_rdma_sge *)(r + 1), wr->sg_list, wr->num_sge);
	return sizeof(*r) + wr->num_sge * sizeof(struct virtio_rdma_sge);
}

/* Fill the request for wr into r; its length, or -EINVAL. */
static int vrdma_build_send(struct vrdma_qp *qp, const struct ib_send_wr *wr,
			    struct virtio_rdma_sq_req *r)
{
	enum ib_qp_type type = qp->ibqp.qp_type;
	int op = vrdma_wr_opcode(type, wr->opcode);
	u32 flags = 0;

	if (op < 0 || wr->num_sge < 0 || wr->num_sge > qp->sq.max_sge ||
	    (wr->send_flags & ~VRDMA_SEND_FLAGS_OK))
		return -EINVAL;	/* IB_SEND_INLINE included: not supported */
	if (wr->send_flags & IB_SEND_FENCE)
		flags |= VIRTIO_RDMA_SEND_FENCE;
	if (wr->send_flags & IB_SEND_SIGNALED)
		flags |= VIRTIO_RDMA_SEND_SIGNALED;
	if (wr->send_flags & IB_SEND_SOLICITED)
		flags |= VIRTIO_RDMA_SEND_SOLICITED;
	memset(r, 0, sizeof(*r));
	r->num_sge = cpu_to_le32(wr->num_sge);
	r->send_flags = cpu_to_le32(flags);
	r->opcode = cpu_to_le32(op);
	r->wr_id = cpu_to_le64(vrdma_wq_tag(&qp->sq));	/* not wr->wr_id */

	switch (wr->opcode) {
	case IB_WR_SEND_WITH_IMM:
	case IB_WR_RDMA_WRITE_WITH_IMM:
		memcpy(&r->ex, &wr->ex.imm_data, sizeof(r->ex));	/* big-endian */
		break;
	case IB_WR_SEND_WITH_INV:
	case IB_WR_LOCAL_INV:
		r->ex = cpu_to_le32(wr->ex.invalidate_rkey);
		break;
	default:
		break;
	}

	switch (wr->opcode) {
	case IB_WR_SEND:
	case IB_WR_SEND_WITH_IMM:
		if (type == IB_QPT_UD || type == IB_QPT_GSI) {
			const struct ib_ud_wr *ud = ud_wr(wr);
			struct vrdma_ah *ah;

			if (!ud->ah)
				return -EINVAL;
			ah = to_vah(ud->ah);
			r->wr.ud.remote_qpn = cpu_to_le32(ud->remote_qpn);
			r->wr.ud.remote_qkey = cpu_to_le32(ud->remote_qkey);
			r->wr.ud.av = ah->av;
		}
		break;
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
	case IB_WR_RDMA_READ:
		r->wr.rdma.remote_addr = cpu_to_le64(rdma_wr(wr)->remote_addr);
		r->wr.rdma.rkey = cpu_to_le32(rdma_wr(wr)->rkey);
		break;
	case IB_WR_ATOMIC_CMP_AND_SWP:
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		r->wr.atomic.remote_addr = cpu_to_le64(atomic_wr(wr)->remote_addr);
		r->wr.atomic.compare_add = cpu_to_le64(atomic_wr(wr)->compare_add);
		r->wr.atomic.swap = cpu_to_le64(atomic_wr(wr)->swap);
		r->wr.atomic.rkey = cpu_to_le32(atomic_wr(wr)->rkey);
		break;
	case IB_WR_REG_MR:
		r->wr.reg.mrn = cpu_to_le32(to_vmr(reg_wr(wr)->mr)->mrn);
		r->wr.reg.key = cpu_to_le32(reg_wr(wr)->key);
		r->wr.reg.access = cpu_to_le32(reg_wr(wr)->access);
		break;
	default:
		break;
	}
	vrdma_sges((struct virtio_rdma_sge *)(r + 1), wr->sg_list, wr->num_sge);
	return sizeof(*r) + wr->num_sge * sizeof(struct virtio_rdma_sge);
}

/* The requests into the SQ ring, one doorbell for them all. */
int vrdma_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		    const struct ib_send_wr **bad_wr)
{
	struct vrdma_qp *qp = to_vqp(ibqp);
	struct vrdma_wq *wq = &qp->sq;
	unsigned long flags;
	unsigned int n = 0;
	int err = 0;

	if (qp->user_rings) {	/* the provider writes its rings itself */
		*bad_wr = wr;
		return -EOPNOTSUPP;
	}
	/* IBA 11.4.1.1: no send queue before RTS (the whole list fails). */
	if (READ_ONCE(qp->state) < IB_QPS_RTS) {
		*bad_wr = wr;
		return -EINVAL;
	}
	spin_lock_irqsave(&wq->lock, flags);
	for (; wr; wr = wr->next) {
		void *slot = vrdma_wq_ring_slot(wq);
		int len;

		if (!slot) {
			err = -ENOMEM;
			break;
		}
		/* In place: the device reads nothing past the producer counter. */
		len = vrdma_build_send(qp, wr, slot);
		if (len < 0) {
			err = len;
			break;
		}
		vrdma_wq_ring_commit(wq, wr->wr_id,
				     qp->sig_type == IB_SIGNAL_ALL_WR ||
				     (wr->send_flags & IB_SEND_SIGNALED));
		n++;
	}
	if (n)
		vrdma_doorbell(to_vdev(qp->ibqp.device), VIRTIO_RDMA_DB_SQ,
			       qp->qpn, wq->prod);
	spin_unlock_irqrestore(&wq->lock, flags);
	if (err)
		*bad_wr = wr;
	return err;
}

int vrdma_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		    const struct ib_recv_wr **bad_wr)
{
	struct vrdma_qp *qp = to_vqp(ibqp);
	struct vrdma_wq *wq = &qp->rq;
	unsigned long flags;
	unsigned int n = 0;
	int err = 0;

	/* Its receives are posted to the SRQ (ib_post_srq_recv()). */
	if (qp->srq) {
		*bad_wr = wr;
		return -EINVAL;
	}
	if (qp->user_rings) {	/* the provider writes its rings itself */
		*bad_wr = wr;
		return -EOPNOTSUPP;
	}
	/* IBA 11.4.1.1: no receive queue in RESET. */
	if (READ_ONCE(qp->state) == IB_QPS_RESET) {
		*bad_wr = wr;
		return -EINVAL;
	}
	spin_lock_irqsave(&wq->lock, flags);
	for (; wr; wr = wr->next) {
		struct virtio_rdma_rq_req *r;

		if (wr->num_sge < 0 || wr->num_sge > wq->max_sge) {
			err = -EINVAL;
			break;
		}
		if (atomic_read(&qp->rq_posted) >= qp->cap.max_recv_wr) {
			err = -ENOMEM;
			break;
		}
		r = vrdma_wq_ring_slot(wq);	/* in place */
		if (!r) {
			err = -ENOMEM;
			break;
		}
		vrdma_build_recv(r, wr, vrdma_wq_tag(wq));	/* not wr->wr_id */
		vrdma_wq_ring_commit(wq, wr->wr_id, true);
		atomic_inc(&qp->rq_posted);
		n++;
	}
	if (n)
		vrdma_doorbell(to_vdev(ibqp->device), VIRTIO_RDMA_DB_RQ,
			       qp->qpn, wq->prod);
	spin_unlock_irqrestore(&wq->lock, flags);
	if (err)
		*bad_wr = wr;
	return err;
}

/* ---- completion queues ---------------------------------------------- */

static const enum ib_wc_status vrdma_wc_status[] = {
	[VIRTIO_RDMA_WC_SUCCESS] = IB_WC_SUCCESS,
	[VIRTIO_RDMA_WC_LOC_LEN_ERR] = IB_WC_LOC_LEN_ERR,
	[VIRTIO_RDMA_WC_LOC_QP_OP_ERR] = IB_WC_LOC_QP_OP_ERR,
	[VIRTIO_RDMA_WC_LOC_EEC_OP_ERR] = IB_WC_LOC_EEC_OP_ERR,
	[VIRTIO_RDMA_WC_LOC_PROT_ERR] = IB_WC_LOC_PROT_ERR,
	[VIRTIO_RDMA_WC_WR_FLUSH_ERR] = IB_WC_WR_FLUSH_ERR,
	[VIRTIO_RDMA_WC_MW_BIND_ERR] = IB_WC_MW_BIND_ERR,
	[VIRTIO_RDMA_WC_BAD_RESP_ERR] = IB_WC_BAD_RESP_ERR,
	[VIRTIO_RDMA_WC_LOC_ACCESS_ERR] = IB_WC_LOC_ACCESS_ERR,
	[VIRTIO_RDMA_WC_REM_INV_REQ_ERR] = IB_WC_REM_INV_REQ_ERR,
	[VIRTIO_RDMA_WC_REM_ACCESS_ERR] = IB_WC_REM_ACCESS_ERR,
	[VIRTIO_RDMA_WC_REM_OP_ERR] = IB_WC_REM_OP_ERR,
	[VIRTIO_RDMA_WC_RETRY_EXC_ERR] = IB_WC_RETRY_EXC_ERR,
	[VIRTIO_RDMA_WC_RNR_RETRY_EXC_ERR] = IB_WC_RNR_RETRY_EXC_ERR,
	[VIRTIO_RDMA_WC_LOC_RDD_VIOL_ERR] = IB_WC_LOC_RDD_VIOL_ERR,
	[VIRTIO_RDMA_WC_REM_INV_RD_REQ_ERR] = IB_WC_REM_INV_RD_REQ_ERR,
	[VIRTIO_RDMA_WC_REM_ABORT_ERR] = IB_WC_REM_ABORT_ERR,
	[VIRTIO_RDMA_WC_INV_EECN_ERR] = IB_WC_INV_EECN_ERR,
	[VIRTIO_RDMA_WC_INV_EEC_STATE_ERR] = IB_WC_INV_EEC_STATE_ERR,
	[VIRTIO_RDMA_WC_FATAL_ERR] = IB_WC_FATAL_ERR,
	[VIRTIO_RDMA_WC_RESP_TIMEOUT_ERR] = IB_WC_RESP_TIMEOUT_ERR,
	[VIRTIO_RDMA_WC_GENERAL_ERR] = IB_WC_GENERAL_ERR,
};

/* IB_WC_REG_MR is 8 in 6.1 and 10 from 6.2: translate by name. */
static int vrdma_wc_opcode(u32 op, enum ib_wc_opcode *out)
{
	switch (op) {
	case VIRTIO_RDMA_WC_SEND: *out = IB_WC_SEND; break;
	case VIRTIO_RDMA_WC_RDMA_WRITE: *out = IB_WC_RDMA_WRITE; break;
	case VIRTIO_RDMA_WC_RDMA_READ: *out = IB_WC_RDMA_READ; break;
	case VIRTIO_RDMA_WC_COMP_SWAP: *out = IB_WC_COMP_SWAP; break;
	case VIRTIO_RDMA_WC_FETCH_ADD: *out = IB_WC_FETCH_ADD; break;
	case VIRTIO_RDMA_WC_LOCAL_INV: *out = IB_WC_LOCAL_INV; break;
	case VIRTIO_RDMA_WC_REG_MR: *out = IB_WC_REG_MR; break;
	case VIRTIO_RDMA_WC_RECV: *out = IB_WC_RECV; break;
	case VIRTIO_RDMA_WC_RECV_RDMA_WITH_IMM: *out = IB_WC_RECV_RDMA_WITH_IMM; break;
	default: return -EINVAL;
	}
	return 0;
}

/* A CQE naming no request outstanding on its CQ: the device is wrong. */
static void vrdma_bad_cqe(struct vrdma_dev *dev, struct vrdma_cq *cq,
			  u32 qpn, bool recv, u64 tag, const char *why)
{
	s64 n = atomic64_inc_return(&dev->bad_cqes);

	ibdev_warn_ratelimited(&dev->ib,
			       "CQ %u: CQE for QP %u's %s queue, wr_id %#llx: %s, dropped (%lld so far)\n",
			       cq->cqn, qpn, recv ? "receive" : "send", tag,
			       why, n);
}

/*
 * Fill wc from a CQE (cq->lock held); false if it is dropped: it names no
 * live QP (one destroyed before its CQEs were polled), or no request of
 * the QP outstanding on this CQ.  A receive of a QP on an SRQ names a
 * request of the SRQ (which outlives the QP, so it is alive too).
 */
static bool vrdma_wc(struct vrdma_dev *dev, struct vrdma_cq *cq,
		     const struct virtio_rdma_cq_req *c, struct ib_wc *wc)
{
	u32 status = le32_to_cpu(c->status), f = le32_to_cpu(c->wc_flags);
	u32 qpn = le32_to_cpu(c->qp_num);
	u64 tag = le64_to_cpu(c->wr_id), wr_id;
	/* Only receive WQEs complete with these (a flushed one included). */
	bool recv = c->opcode == cpu_to_le32(VIRTIO_RDMA_WC_RECV) ||
		    c->opcode == cpu_to_le32(VIRTIO_RDMA_WC_RECV_RDMA_WITH_IMM);
	struct vrdma_qp *qp;
	struct vrdma_wq *wq;
	bool ours, ok;

	/*
	 * A QP found under the xarray's lock whose queue completes to this CQ
	 * stays alive while cq->lock is held: destroy_qp() takes it out of
	 * the xarray, then waits for cq->lock.  Another CQ's lock would not
	 * keep it, so its fields are read only under the xarray's lock.
	 */
	xa_lock(&dev->qps);
	qp = xa_load(&dev->qps, qpn);
	ours = qp && (recv ? qp->rcq : qp->scq) == cq;
	xa_unlock(&dev->qps);
	if (!qp)
		return false;
	if (!ours) {
		vrdma_bad_cqe(dev, cq, qpn, recv, tag, "not the queue's CQ");
		return false;
	}
	if (recv && qp->srq) {
		ok = vrdma_srq_complete(qp->srq, tag, &wr_id);
	} else {
		wq = recv ? &qp->rq : &qp->sq;
		spin_lock(&wq->lock);	/* interrupts are off: cq->lock is irqsave */
		ok = vrdma_wq_complete(wq, tag,
				       status == VIRTIO_RDMA_WC_SUCCESS, &wr_id);
		spin_unlock(&wq->lock);
	}
	if (!ok) {
		vrdma_bad_cqe(dev, cq, qpn, recv, tag, "no such request outstanding");
		return false;
	}
	if (recv && !qp->srq)
		atomic_dec_if_positive(&qp->rq_posted);

	memset(wc, 0, sizeof(*wc));
	wc->wr_id = wr_id;
	wc->status = status < ARRAY_SIZE(vrdma_wc_status) ?
		vrdma_wc_status[status] : IB_WC_GENERAL_ERR;
	if (vrdma_wc_opcode(le32_to_cpu(c->opcode), &wc->opcode) &&
	    wc->status == IB_WC_SUCCESS)
		wc->status = IB_WC_GENERAL_ERR;
	wc->vendor_err = le32_to_cpu(c->vendor_err);
	wc->byte_len = le32_to_cpu(c->byte_len);
	wc->qp = &qp->ibqp;
	wc->src_qp = le32_to_cpu(c->src_qp);
	wc->pkey_index = le16_to_cpu(c->pkey_index);
	wc->slid = le16_to_cpu(c->slid);
	wc->sl = c->sl;
	wc->dlid_path_bits = c->dlid_path_bits;
	wc->port_num = VRDMA_PORT;
	if (f & VIRTIO_RDMA_WC_GRH)
		wc->wc_flags |= IB_WC_GRH;
	if (f & VIRTIO_RDMA_WC_WITH_IMM) {
		wc->wc_flags |= IB_WC_WITH_IMM;
		memcpy(&wc->ex.imm_data, &c->ex, sizeof(c->ex));
	}
	if (f & VIRTIO_RDMA_WC_WITH_INVALIDATE) {
		/* uverbs copies wc_flags raw: use user space's bit there. */
		wc->wc_flags |= cq->ibcq.uobject ? VRDMA_UVERBS_WC_WITH_INV :
						   IB_WC_WITH_INVALIDATE;
		wc->ex.invalidate_rkey = le32_to_cpu(c->ex);
	}
	return true;
}

/*
 * The CQE at the consumer counter if the device has written it
 * (cq->lock held).  Its owner bit is 1 on even passes over the ring.
 */
static const struct virtio_rdma_cqe *vrdma_ring_cqe(struct vrdma_cq *cq)
{
	const struct virtio_rdma_cqe *e = vrdma_ring_entry(&cq->ring, cq->cons);
	u8 want = ((cq->cons >> cq->ring.log_entries) + 1) & VIRTIO_RDMA_CQE_OWNER;

	if ((READ_ONCE(e->owner) & VIRTIO_RDMA_CQE_OWNER) != want)
		return NULL;
	dma_rmb();	/* the CQE only after its owner byte */
	return e;
}

int vrdma_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc)
{
	struct vrdma_dev *dev = to_vdev(ibcq->device);
	struct vrdma_cq *cq = to_vcq(ibcq);
	const struct virtio_rdma_cqe *e;
	struct virtio_rdma_cq_req c;
	unsigned long flags;
	u32 start;
	int n = 0;

	if (cq->ring.umem)	/* the provider polls its ring itself */
		return -EOPNOTSUPP;
	spin_lock_irqsave(&cq->lock, flags);
	start = cq->cons;
	/* At most one pass: the device cannot make the loop longer. */
	while (n < num_entries && cq->cons - start < vrdma_ring_entries(&cq->ring) &&
	       (e = vrdma_ring_cqe(cq))) {
		c = e->wc;
		cq->cons++;
		if (vrdma_wc(dev, cq, &c, &wc[n]))
			n++;
	}
	if (cq->cons != start) {
		/* Our reads of the entries before the device may reuse them. */
		dma_mb();
		WRITE_ONCE(cq->ring.trailer->driver_idx, cpu_to_le32(cq->cons));
	}
	spin_unlock_irqrestore(&cq->lock, flags);
	return n;
}

int vrdma_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	struct vrdma_cq *cq = to_vcq(ibcq);
	struct vrdma_dev *dev = to_vdev(ibcq->device);
	unsigned long irqflags;
	int missed;

	if (cq->ring.umem)	/* the provider arms by its own doorbell */
		return -EOPNOTSUPP;
	vrdma_doorbell(dev, VIRTIO_RDMA_DB_CQ_ARM, cq->cqn,
		       (flags & IB_CQ_SOLICITED_MASK) == IB_CQ_SOLICITED ?
		       VIRTIO_RDMA_NOTIFY_SOLICITED :
		       VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION);
	if (!(flags & IB_CQ_REPORT_MISSED_EVENTS))
		return 0;
	/* The arm covers what comes after the write: look at the rest. */
	dma_mb();
	spin_lock_irqsave(&cq->lock, irqflags);
	missed = vrdma_ring_cqe(cq) != NULL;
	spin_unlock_irqrestore(&cq->lock, irqflags);
	return missed;
}

/*
 * CQ @cqn's completion event, or (@err) its CQ_ERR: the CQ overran
 * or its ring broke.  The CQ table's lock is held across the handler:
 * destroy_cq clears the slot under it.  Kernel and user CQs alike (for a
 * user CQ uverbs' handlers queue the event for its process): nothing here
 * reads the CQ's ring.
 */
static void vrdma_cq_notify(struct vrdma_dev *dev, u32 cqn, bool err)
{
	struct vrdma_cq *cq;
	unsigned long flags;

	if (cqn >= dev->ncq)
		return;
	if (err)
		ibdev_warn_ratelimited(&dev->ib,
				       "CQ %u: overrun or broken ring (CQ_ERR)\n",
				       cqn);
	spin_lock_irqsave(&dev->cq_table_lock, flags);
	cq = dev->cqs[cqn];
	if (cq && !err && cq->ibcq.comp_handler) {
		cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
	} else if (cq && err && cq->ibcq.event_handler) {
		struct ib_event ev = {
			.device = &dev->ib,
			.element.cq = &cq->ibcq,
			.event = IB_EVENT_CQ_ERR,
		};

		cq->ibcq.event_handler(&ev, cq->ibcq.cq_context);
	}
	spin_unlock_irqrestore(&dev->cq_table_lock, flags);
}

static void vrdma_cq_event(struct vrdma_dev *dev, u32 cqn)
{
	vrdma_cq_notify(dev, cqn, false);
}

static int vrdma_event_add(struct vrdma_dev *dev, struct virtio_rdma_event *e,
			   gfp_t gfp)
{
	struct scatterlist sg;

	sg_init_one(&sg, e, sizeof(*e));
	return virtqueue_add_inbuf(dev->event_vq, &sg, 1, e, gfp);
}

int vrdma_event_init(struct vrdma_dev *dev)
{
	unsigned int i, n = virtqueue_get_vring_size(dev->event_vq);
	int err;

	dev->events = kcalloc(n, sizeof(*dev->events), GFP_KERNEL);
	if (!dev->events)
		return -ENOMEM;
	dev->nevents = n;
	for (i = 0; i < n; i++) {
		err = vrdma_event_add(dev, &dev->events[i], GFP_KERNEL);
		if (err)
			return err;
	}
	virtqueue_kick(dev->event_vq);
	return 0;
}

void vrdma_event_vq_done(struct virtqueue *vq)
{
	struct vrdma_dev *dev = vq->vdev->priv;
	struct virtio_rdma_event *e;
	unsigned int len, n = 0;

	while ((e = virtqueue_get_buf(vq, &len))) {
		struct virtio_rdma_event ev = *e;

		vrdma_event_add(dev, e, GFP_ATOMIC);
		n++;
		if (len < sizeof(ev))
			continue;
		switch (le32_to_cpu(ev.type)) {
		case VIRTIO_RDMA_EVENT_CQ:
			vrdma_cq_event(dev, le32_to_cpu(ev.handle));
			break;
		case VIRTIO_RDMA_EVENT_QP_FATAL:
			vrdma_qp_event(dev, le32_to_cpu(ev.handle),
				       IB_EVENT_QP_FATAL);
			break;
		case VIRTIO_RDMA_EVENT_CQ_ERR:
			vrdma_cq_notify(dev, le32_to_cpu(ev.handle), true);
			break;
		case VIRTIO_RDMA_EVENT_SRQ_LIMIT:
			vrdma_srq_event(dev, le32_to_cpu(ev.handle),
					IB_EVENT_SRQ_LIMIT_REACHED);
			break;
		case VIRTIO_RDMA_EVENT_SRQ_ERR:
			vrdma_srq_event(dev, le32_to_cpu(ev.handle),
					IB_EVENT_SRQ_ERR);
			break;
		default:
			break;	/* unknown: ignored */
		}
	}
	/* Events the device holds for want of a buffer come now. */
	if (n)
		virtqueue_kick(vq);
}

// SPDX-License-Identifier: GPL-2.0
/*
 * Queue pairs: create, modify, query, destroy.
 *
 * A QP has two numbers: the queue index the device gives it (it names the
 * QP in commands and doorbells) and a wire QPN (VIRTIO_RDMA_F_WIRE_QPN) --
 * what peers address and what CQEs carry, so it is ib_qp.qp_num.  Its SQ
 * and RQ are rings of its own ("Rings" below): a kernel QP's in vmalloc
 * memory, a user QP's in the process's ("User rings").  A QP on an SRQ
 * (vrdma_srq.c) has no RQ ring: its RQ is a queue of no work requests,
 * and its receive completions name the SRQ's requests.
 */
#include "vrdma.h"

/*
 * Tags.  The device returns in each CQE the wr_id it was given, and a
 * kernel ULP's wr_id is a pointer (wr_cqe: ib_cq's poller calls
 * wr_cqe->done), so the device is never given the ULP's: a work queue
 * numbers its requests (the tag: from 1, one per post, never reused in
 * 2^64 posts) and keeps each one's wr_id at ents[tag & (nents - 1)]; the
 * request carries the tag.  A CQE is taken only if its wr_id is the tag of
 * a live entry of the queue its opcode belongs to, on the CQ that queue
 * completes to (vrdma_wc()); the entry is then freed, so a CQE replayed or
 * made up by the device (a confidential VM's host, a buggy device) is
 * dropped instead of calling through a stale or arbitrary pointer, and no
 * kernel address reaches the device.
 *
 * A request's entry is taken again nents posts later.  A ULP keeps at most
 * max_wr requests between post and poll (the verbs contract for sends, an
 * unsignaled one counting until a later signaled one is polled;
 * rq_posted enforces it for receives), and nents >= 2 * max_wr, so the
 * entry is free by then or holds an unsignaled send the ULP already counts
 * as done (a later signaled one was polled): it is overwritten.  A ULP
 * past max_wr finds the entry still holding a request whose CQE is due
 * (VRDMA_WR_DUE: a signaled send, a receive): the post fails with
 * -ENOMEM, a full queue, until that CQE is polled, instead of losing it.
 * RESET discards the posted requests: their entries stop being due (a CQE
 * from before it that is still in the CQ is still taken).  An unsignaled
 * send completes only with an error (a flush): a successful CQE naming one
 * is dropped, so a device cannot hand back the wr_id of a request the ULP
 * already reuses.
 * The table is under wq->lock: the posters hold it, vrdma_wc() takes it
 * inside cq->lock (the only order the two are ever held in).
 */
/* A kernel QP's queue: its tag table and its ring ("Rings"). */
static int vrdma_wq_init(struct vrdma_wq *wq, u32 max_wr, u32 max_sge,
			 size_t hdr)
{
	spin_lock_init(&wq->lock);
	wq->max_sge = max_sge;
	wq->max_wr = max_wr;
	wq->slot_len = hdr + max_sge * sizeof(struct virtio_rdma_sge);
	/* max_wr <= max_ring_qp_wr, clamped at probe: no overflow. */
	wq->nents = roundup_pow_of_two(2 * max(max_wr, 1u));
	wq->ents = kvcalloc(wq->nents, sizeof(*wq->ents), GFP_KERNEL);
	wq->next_tag = 1;
	if (!wq->ents)
		return -ENOMEM;
	return max_wr ? vrdma_ring_alloc(&wq->ring, max_wr, wq->slot_len) : 0;
}

/*
 * Rings.  A kernel QP's SQ and RQ: a ring of 2^n >= max_wr
 * entries (vrdma_ring.c), each request written in place into the slot of
 * the producer counter, one doorbell per post call.  Tags and their table
 * are as above (the device echoes the wr_id it finds in the entry).  A
 * queue has at most max_wr requests outstanding (tags after done_tag): a
 * completion ends its request and, the queue completing in order, every
 * earlier one (the unsignaled sends before a signaled one).  So the slot
 * taken next held a request that completed, which the device had copied
 * out: the driver never needs to read device_idx, and a doorbell never
 * runs more than entries ahead of the device.  RESET sets the counters
 * back to 0 on both sides (the device resets its own, spec).
 */

/* The slot for the next request, or NULL: the queue is full (wq->lock). */
void *vrdma_wq_ring_slot(struct vrdma_wq *wq)
{
	if (!wq->ring.va || wq->next_tag - 1 - wq->done_tag >= wq->max_wr ||
	    wq->ents[wq->next_tag & (wq->nents - 1)].tag & VRDMA_WR_DUE)
		return NULL;
	return vrdma_ring_entry(&wq->ring, wq->prod);
}

/* The slot vrdma_wq_ring_slot() gave is filled: it is the device's. */
void vrdma_wq_ring_commit(struct vrdma_wq *wq, u64 wr_id, bool due)
{
	struct vrdma_wr_ent *e = &wq->ents[wq->next_tag & (wq->nents - 1)];

	e->tag = wq->next_tag++ | (due ? VRDMA_WR_FLAGS : 0);
	e->wr_id = wr_id;
	wq->prod++;
	/* For a reader of the ring only: the doorbell carries the index. */
	WRITE_ONCE(wq->ring.trailer->driver_idx, cpu_to_le32(wq->prod));
}

/* RESET discarded the queue's requests: no CQE is due for any of them. */
static void vrdma_wq_reset(struct vrdma_wq *wq)
{
	unsigned long flags;
	unsigned int i;

	spin_lock_irqsave(&wq->lock, flags);
	for (i = 0; i < wq->nents; i++)
		wq->ents[i].tag &= ~VRDMA_WR_DUE;
	wq->done_tag = wq->next_tag - 1;
	wq->prod = 0;
	spin_unlock_irqrestore(&wq->lock, flags);
}

/*
 * The ULP's wr_id of the request a CQE names by tag, its entry freed; false
 * if no outstanding request of this queue has the tag, or if the CQE is a
 * @success of an unsignaled one (wq->lock held).
 */
bool vrdma_wq_complete(struct vrdma_wq *wq, u64 tag, bool success,
		       u64 *wr_id)
{
	struct vrdma_wr_ent *e = &wq->ents[tag & (wq->nents - 1)];

	if (!tag || (e->tag & ~VRDMA_WR_FLAGS) != tag)
		return false;
	if (success && !(e->tag & VRDMA_WR_SIGNALED))
		return false;
	e->tag = 0;
	*wr_id = e->wr_id;
	if (tag > wq->done_tag)	/* in order: every earlier request is done */
		wq->done_tag = tag;
	return true;
}

/*
 * User rings.  A user QP's SQ and RQ are rings the provider
 * allocated, of the geometry it chose and sent in
 * virtio_rdma_ucmd_create_qp; the module checks it against the QP's
 * request (it must hold max_wr entries of max_sge SGEs: the cap granted is
 * exactly the one asked for, so the provider sizes from the same numbers),
 * pins it and gives the device its page table.  The provider writes the
 * entries, their wr_ids and the doorbells: the module keeps no buffers and
 * no tag table for such a queue, and uverbs cannot post to it.
 */

/*
 * One queue of a user QP's request (or a user SRQ's ring, vrdma_srq.c);
 * -EINVAL unless it fits the cap.
 */
int vrdma_uwq_check(u64 va, u8 log_entries, u8 log_stride, u32 max_wr,
		    u32 max_sge, size_t hdr)
{
	if (!max_wr)	/* no work requests: no ring */
		return va || log_entries || log_stride ? -EINVAL : 0;
	if (!va || !PAGE_ALIGNED(va) ||
	    log_entries > VIRTIO_RDMA_RING_MAX_LOG_ENTRIES ||
	    log_stride < VIRTIO_RDMA_RING_MIN_LOG_STRIDE ||
	    log_stride > VIRTIO_RDMA_RING_MAX_LOG_STRIDE ||
	    (1u << log_entries) < max_wr ||
	    (1u << log_stride) < hdr + max_sge * sizeof(struct virtio_rdma_sge))
		return -EINVAL;
	return 0;
}

/* A user QP's queue, checked (vrdma_uwq_check()): its ring pinned. */
static int vrdma_uwq_init(struct vrdma_wq *wq, struct ib_device *ib, u64 va,
			  u8 log_entries, u8 log_stride, u32 max_wr,
			  u32 max_sge)
{
	spin_lock_init(&wq->lock);
	wq->max_wr = max_wr;
	wq->max_sge = max_sge;
	wq->next_tag = 1;
	if (!max_wr)
		return 0;
	return vrdma_ring_get_user(&wq->ring, ib, va, log_entries, log_stride);
}

/*
 * Free what is ours.  A ring is freed (a user one unpinned) only if the
 * device let go of it (device_done: DESTROY_QP succeeded).
 */
static void vrdma_wq_fini(struct vrdma_wq *wq, bool device_done)
{
	kvfree(wq->ents);	/* no poller: the QP has left dev->qps */
	wq->ents = NULL;
	if (device_done)
		vrdma_ring_free(&wq->ring);
	else if (vrdma_ring_present(&wq->ring))
		pr_warn("virtio_rdma: a ring of %u pages left to the device\n",
			wq->ring.npages);
}

static int vrdma_qp_type(enum ib_qp_type t)
{
	switch (t) {
	case IB_QPT_GSI: return VIRTIO_RDMA_QPT_GSI;
	case IB_QPT_RC: return VIRTIO_RDMA_QPT_RC;
	case IB_QPT_UC: return VIRTIO_RDMA_QPT_UC;
	case IB_QPT_UD: return VIRTIO_RDMA_QPT_UD;
	default: return -1;
	}
}

static int vrdma_destroy_cmd(struct vrdma_dev *dev, u32 qpn)
{
	struct virtio_rdma_cmd_destroy_qp cmd = { .qpn = cpu_to_le32(qpn) };

	return vrdma_cmd(dev, VIRTIO_RDMA_CMD_DESTROY_QP, &cmd, sizeof(cmd),
			 NULL, 0);
}

/*
 * CREATE_QP_RING for the checked request cmd of context ctx, the
 * SQ and RQ rings made first: a kernel QP's ("Rings"), or with ucmd (its
 * checked request, vrdma_user_qp_check()) a user QP's ("User rings"); on
 * failure nothing is left.  srqn: 0, or the SRQ it receives from (cap has
 * no receive work requests then: no RQ ring).
 */
static int vrdma_create_qp_ring(struct vrdma_dev *dev, struct vrdma_qp *qp,
				const struct ib_qp_cap *cap,
				const struct virtio_rdma_cmd_create_qp *cmd,
				u32 ctx, u32 srqn,
				const struct virtio_rdma_ucmd_create_qp *ucmd,
				struct virtio_rdma_rsp_create_qp_wire *r)
{
	struct virtio_rdma_cmd_create_qp_ring *req;
	struct vrdma_pt spt, rpt;
	int err;

	if (ucmd) {
		err = vrdma_uwq_init(&qp->sq, &dev->ib, ucmd->sq_va,
				     ucmd->sq_log_entries, ucmd->sq_log_stride,
				     cap->max_send_wr, cap->max_send_sge);
		if (!err)
			err = vrdma_uwq_init(&qp->rq, &dev->ib, ucmd->rq_va,
					     ucmd->rq_log_entries,
					     ucmd->rq_log_stride,
					     cap->max_recv_wr, cap->max_recv_sge);
	} else {
		err = vrdma_wq_init(&qp->sq, cap->max_send_wr,
				    cap->max_send_sge,
				    sizeof(struct virtio_rdma_sq_req));
		if (!err)
			err = vrdma_wq_init(&qp->rq, cap->max_recv_wr,
					    cap->max_recv_sge,
					    sizeof(struct virtio_rdma_rq_req));
	}
	req = kzalloc(sizeof(*req), GFP_KERNEL);
	if (!req && !err)
		err = -ENOMEM;
	memset(&spt, 0, sizeof(spt));
	memset(&rpt, 0, sizeof(rpt));
	if (!err) {
		req->qp = *cmd;
		req->ctx = cpu_to_le32(ctx);
		req->srqn = cpu_to_le32(srqn);
		err = vrdma_ring_desc(&qp->sq.ring, &spt, &req->sq);
	}
	if (!err)
		err = vrdma_ring_desc(&qp->rq.ring, &rpt, &req->rq);
	if (!err)
		err = vrdma_cmd(dev, VIRTIO_RDMA_CMD_CREATE_QP_RING, req,
				sizeof(*req), r, sizeof(*r));
	vrdma_pt_free(&spt);	/* the device walked them during the command */
	vrdma_pt_free(&rpt);
	kfree(req);
	if (err) {
		vrdma_wq_fini(&qp->sq, true);
		vrdma_wq_fini(&qp->rq, true);
	}
	return err;
}

/*
 * A user QP: its request (virtio_rdma_ucmd_create_qp) into ucmd,
 * checked against the cap and the CQs before anything is pinned or the
 * device hears of it ("User rings").
 */
static int vrdma_user_qp_check(struct ib_qp_init_attr *init,
			       struct ib_udata *udata, u32 ctx,
			       struct virtio_rdma_ucmd_create_qp *ucmd)
{
	const struct ib_qp_cap *cap = &init->cap;
	int err;

	err = vrdma_udata_in(udata, ucmd, sizeof(*ucmd));
	if (err)
		return err;
	if (udata->outlen < sizeof(struct virtio_rdma_uresp_create_qp) ||
	    ucmd->reserved)
		return -EINVAL;
	/*
	 * The device checks it too; uverbs gives only the file's own CQs (and
	 * SRQ: vrdma_qp_srq_check()).  With an SRQ the cap has no receive
	 * work requests, so the provider names no RQ ring.
	 */
	if (to_vcq(init->send_cq)->ctx != ctx ||
	    to_vcq(init->recv_cq)->ctx != ctx)
		return -EINVAL;
	err = vrdma_uwq_check(ucmd->sq_va, ucmd->sq_log_entries,
			      ucmd->sq_log_stride, cap->max_send_wr,
			      cap->max_send_sge,
			      sizeof(struct virtio_rdma_sq_req));
	if (err)
		return err;
	return vrdma_uwq_check(ucmd->rq_va, ucmd->rq_log_entries,
			       ucmd->rq_log_stride, cap->max_recv_wr,
			       cap->max_recv_sge,
			       sizeof(struct virtio_rdma_rq_req));
}

/*
 * A QP on init->srq (ctx: the QP's context) receives from it and
 * has no receive queue of its own: the receive cap is 0 whatever was asked
 * (as HCAs do; it is what the QP is granted), and the SRQ must be a basic
 * SRQ of this device and of the same context -- a user QP's SRQ of its
 * own process (uverbs finds it among the file's objects; the device checks
 * it too).  Not for GSI: the MAD layer posts to QP1's own RQ.
 */
static int vrdma_qp_srq_check(struct vrdma_dev *dev,
			      struct ib_qp_init_attr *init, u32 ctx)
{
	struct vrdma_srq *srq;

	if (!init->srq)
		return 0;
	if (init->srq->device != &dev->ib || init->qp_type == IB_QPT_GSI)
		return -EINVAL;
	if (init->srq->srq_type != IB_SRQT_BASIC)
		return -EOPNOTSUPP;
	srq = to_vsrq(init->srq);
	if (srq->ctx != ctx)
		return -EINVAL;
	init->cap.max_recv_wr = 0;
	init->cap.max_recv_sge = 0;
	return 0;
}

int vrdma_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		    struct ib_udata *udata)
{
	struct vrdma_dev *dev = to_vdev(ibqp->device);
	struct vrdma_qp *qp = to_vqp(ibqp);
	struct ib_qp_cap *cap = &init->cap;
	struct virtio_rdma_cmd_create_qp cmd = {};
	struct virtio_rdma_rsp_create_qp_wire r = {};
	struct virtio_rdma_ucmd_create_qp ucmd;
	int type = vrdma_qp_type(init->qp_type);
	bool user = udata;
	u32 ctx = VIRTIO_RDMA_KERNEL_CTX;
	int err, err2;

	if (type < 0 || init->create_flags || init->rwq_ind_tbl)
		return -EOPNOTSUPP;
	if (init->port_num > 1)
		return -EINVAL;
	if (user)
		ctx = rdma_udata_to_drv_context(udata, struct vrdma_ucontext,
						ibuc)->ctx;
	err = vrdma_qp_srq_check(dev, init, ctx);
	if (err)
		return err;
	if (cap->max_send_wr > vrdma_max_qp_wr(dev) ||
	    cap->max_recv_wr > vrdma_max_qp_wr(dev) ||
	    cap->max_send_sge > dev->cfg.max_send_sge ||
	    cap->max_recv_sge > dev->cfg.max_recv_sge ||
	    (!cap->max_send_wr && !cap->max_recv_wr))
		return -EINVAL;
	if (user) {
		err = vrdma_user_qp_check(init, udata, ctx, &ucmd);
		if (err)
			return err;
	}
	/*
	 * No inline data: report 0, as callers that ask check what they got.
	 * The rest of the cap is granted exactly as asked.
	 */
	cap->max_inline_data = 0;

	cmd.pdn = cpu_to_le32(to_vpd(ibqp->pd)->pdn);
	cmd.qp_type = type;
	cmd.sq_sig_type = init->sq_sig_type == IB_SIGNAL_ALL_WR ?
		VIRTIO_RDMA_SIGNAL_ALL_WR : VIRTIO_RDMA_SIGNAL_REQ_WR;
	cmd.max_send_wr = cpu_to_le32(cap->max_send_wr);
	cmd.max_send_sge = cpu_to_le32(cap->max_send_sge);
	cmd.send_cqn = cpu_to_le32(to_vcq(init->send_cq)->cqn);
	cmd.max_recv_wr = cpu_to_le32(cap->max_recv_wr);
	cmd.max_recv_sge = cpu_to_le32(cap->max_recv_sge);
	cmd.recv_cqn = cpu_to_le32(to_vcq(init->recv_cq)->cqn);
	err = vrdma_create_qp_ring(dev, qp, cap, &cmd, ctx,
				   init->srq ? to_vsrq(init->srq)->srqn : 0,
				   user ? &ucmd : NULL, &r);
	if (err)
		return err;
	qp->qpn = le32_to_cpu(r.qpn);
	qp->wire_qpn = le32_to_cpu(r.wire_qpn);
	if (qp->qpn >= dev->nqp || !qp->qpn ||
	    qp->wire_qpn > 0xffffff || test_and_set_bit(qp->qpn, dev->qp_busy)) {
		dev_err(&dev->vdev->dev, "device gave QP %u (wire %u): not usable\n",
			qp->qpn, qp->wire_qpn);
		err = vrdma_destroy_cmd(dev, qp->qpn);
		vrdma_wq_fini(&qp->sq, !err);
		vrdma_wq_fini(&qp->rq, !err);
		return -EIO;
	}
	qp->pdn = to_vpd(ibqp->pd)->pdn;
	qp->cap = *cap;
	qp->sig_type = init->sq_sig_type;
	qp->state = IB_QPS_RESET;
	qp->scq = to_vcq(init->send_cq);
	qp->rcq = to_vcq(init->recv_cq);
	qp->user_rings = user;
	qp->srq = init->srq ? to_vsrq(init->srq) : NULL;
	atomic_set(&qp->rq_posted, 0);
	err = 0;
	if (user) {
		/* The queue index its doorbells name; qp_num is the wire QPN. */
		struct virtio_rdma_uresp_create_qp resp = { .qpn = qp->qpn };

		err = ib_copy_to_udata(udata, &resp, sizeof(resp));
	}
	if (!err)
		err = xa_insert_irq(&dev->qps, qp->wire_qpn, qp, GFP_KERNEL);
	if (err)
		goto err_destroy;
	ibqp->qp_num = qp->wire_qpn;
	return 0;

err_destroy:
	err2 = vrdma_destroy_cmd(dev, qp->qpn);
	vrdma_wq_fini(&qp->sq, !err2);
	vrdma_wq_fini(&qp->rq, !err2);
	clear_bit(qp->qpn, dev->qp_busy);
	return err;
}

#define VRDMA_QP_MASK_OK ((1u << 21) - 1)
#define VRDMA_QP_ACCESS_FLUSH ((1u << 8) | (1u << 9))

static void vrdma_ah_to_dev(const struct rdma_ah_attr *a,
			    struct virtio_rdma_ah_attr *d)
{
	const struct ib_global_route *grh = rdma_ah_read_grh(a);

	memcpy(d->grh.dgid, grh->dgid.raw, sizeof(d->grh.dgid));
	d->grh.flow_label = cpu_to_le32(grh->flow_label);
	d->grh.sgid_index = grh->sgid_index;
	d->grh.hop_limit = grh->hop_limit;
	d->grh.traffic_class = grh->traffic_class;
	d->sl = rdma_ah_get_sl(a);
	d->static_rate = rdma_ah_get_static_rate(a);
	d->port_num = rdma_ah_get_port_num(a);
	d->ah_flags = (rdma_ah_get_ah_flags(a) & IB_AH_GRH) ? VIRTIO_RDMA_AH_GRH : 0;
	if (a->type == RDMA_AH_ATTR_TYPE_ROCE)
		memcpy(d->dmac, a->roce.dmac, ETH_ALEN);
}

static void vrdma_ah_from_dev(struct ib_device *ib,
			      const struct virtio_rdma_ah_attr *d,
			      struct rdma_ah_attr *a)
{
	union ib_gid dgid;

	memset(a, 0, sizeof(*a));
	a->type = RDMA_AH_ATTR_TYPE_ROCE;
	memcpy(dgid.raw, d->grh.dgid, sizeof(dgid.raw));
	rdma_ah_set_grh(a, &dgid, le32_to_cpu(d->grh.flow_label),
			d->grh.sgid_index, d->grh.hop_limit,
			d->grh.traffic_class);
	rdma_ah_set_sl(a, d->sl);
	rdma_ah_set_static_rate(a, d->static_rate);
	rdma_ah_set_port_num(a, d->port_num ? d->port_num : VRDMA_PORT);
	memcpy(a->roce.dmac, d->dmac, ETH_ALEN);
}

int vrdma_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		    struct ib_udata *udata)
{
	struct vrdma_qp *qp = to_vqp(ibqp);
	struct virtio_rdma_cmd_modify_qp *cmd;
	struct virtio_rdma_qp_attr *d;
	int err;

	if (udata && udata->inlen)
		return -EINVAL;
	if (mask & ~VRDMA_QP_MASK_OK)
		return -EOPNOTSUPP;
	/* 168 bytes: too big for a stack that post paths may share. */
	cmd = kzalloc(sizeof(*cmd), GFP_KERNEL);
	if (!cmd)
		return -ENOMEM;
	d = &cmd->attrs;
	cmd->qpn = cpu_to_le32(qp->qpn);
	cmd->attr_mask = cpu_to_le32(mask);
	d->qp_state = cpu_to_le32(attr->qp_state);
	d->cur_qp_state = cpu_to_le32(attr->cur_qp_state);
	d->path_mtu = cpu_to_le32(attr->path_mtu);
	d->path_mig_state = cpu_to_le32(attr->path_mig_state);
	d->qkey = cpu_to_le32(attr->qkey);
	d->rq_psn = cpu_to_le32(attr->rq_psn);
	d->sq_psn = cpu_to_le32(attr->sq_psn);
	d->dest_qp_num = cpu_to_le32(attr->dest_qp_num);
	/*
	 * FLUSH access (6.2's IB_ACCESS_FLUSH_*, bits 8 and 9) lets peers send
	 * RDMA FLUSH, which this device never executes (its responder NAKs the
	 * opcode): dropped, as HCAs without FLUSH do, not refused.
	 */
	d->qp_access_flags = cpu_to_le32(attr->qp_access_flags & ~VRDMA_QP_ACCESS_FLUSH);
	d->pkey_index = cpu_to_le16(attr->pkey_index);
	d->alt_pkey_index = cpu_to_le16(attr->alt_pkey_index);
	d->en_sqd_async_notify = attr->en_sqd_async_notify;
	d->sq_draining = attr->sq_draining;
	d->max_rd_atomic = attr->max_rd_atomic;
	d->max_dest_rd_atomic = attr->max_dest_rd_atomic;
	d->min_rnr_timer = attr->min_rnr_timer;
	d->port_num = attr->port_num;
	d->timeout = attr->timeout;
	d->retry_cnt = attr->retry_cnt;
	d->rnr_retry = attr->rnr_retry;
	d->alt_port_num = attr->alt_port_num;
	d->alt_timeout = attr->alt_timeout;
	d->cap.max_send_wr = cpu_to_le32(attr->cap.max_send_wr);
	d->cap.max_recv_wr = cpu_to_le32(attr->cap.max_recv_wr);
	d->cap.max_send_sge = cpu_to_le32(attr->cap.max_send_sge);
	d->cap.max_recv_sge = cpu_to_le32(attr->cap.max_recv_sge);
	d->cap.max_inline_data = cpu_to_le32(attr->cap.max_inline_data);
	if (mask & IB_QP_AV)
		vrdma_ah_to_dev(&attr->ah_attr, &d->ah_attr);
	if (mask & IB_QP_ALT_PATH)
		vrdma_ah_to_dev(&attr->alt_ah_attr, &d->alt_ah_attr);
	err = vrdma_cmd(to_vdev(ibqp->device), VIRTIO_RDMA_CMD_MODIFY_QP, cmd,
			sizeof(*cmd), NULL, 0);
	kfree(cmd);
	if (!err && (mask & IB_QP_STATE)) {
		/* RESET discarded the posted requests: no CQE will come. */
		if (attr->qp_state == IB_QPS_RESET) {
			/* ... and the device's counters are 0 again. */
			atomic_set(&qp->rq_posted, 0);
			vrdma_wq_reset(&qp->sq);
			vrdma_wq_reset(&qp->rq);
		}
		WRITE_ONCE(qp->state, attr->qp_state);
	}
	return err;
}

int vrdma_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		   struct ib_qp_init_attr *init)
{
	struct vrdma_qp *qp = to_vqp(ibqp);
	struct virtio_rdma_cmd_query_qp cmd = {
		.qpn = cpu_to_le32(qp->qpn),
		.attr_mask = cpu_to_le32(mask & VRDMA_QP_MASK_OK),
	};
	struct virtio_rdma_qp_attr *d;
	int err;

	d = kzalloc(sizeof(*d), GFP_KERNEL);
	if (!d)
		return -ENOMEM;
	err = vrdma_cmd(to_vdev(ibqp->device), VIRTIO_RDMA_CMD_QUERY_QP, &cmd,
			sizeof(cmd), d, sizeof(*d));
	if (err)
		goto out;
	memset(attr, 0, sizeof(*attr));
	attr->qp_state = le32_to_cpu(d->qp_state);
	attr->cur_qp_state = le32_to_cpu(d->cur_qp_state);
	attr->path_mtu = le32_to_cpu(d->path_mtu);
	attr->path_mig_state = le32_to_cpu(d->path_mig_state);
	attr->qkey = le32_to_cpu(d->qkey);
	attr->rq_psn = le32_to_cpu(d->rq_psn);
	attr->sq_psn = le32_to_cpu(d->sq_psn);
	attr->dest_qp_num = le32_to_cpu(d->dest_qp_num);
	attr->qp_access_flags = le32_to_cpu(d->qp_access_flags);
	attr->pkey_index = le16_to_cpu(d->pkey_index);
	attr->alt_pkey_index = le16_to_cpu(d->alt_pkey_index);
	attr->en_sqd_async_notify = d->en_sqd_async_notify;
	attr->sq_draining = d->sq_draining;
	attr->max_rd_atomic = d->max_rd_atomic;
	attr->max_dest_rd_atomic = d->max_dest_rd_atomic;
	attr->min_rnr_timer = d->min_rnr_timer;
	attr->port_num = d->port_num;
	attr->timeout = d->timeout;
	attr->retry_cnt = d->retry_cnt;
	attr->rnr_retry = d->rnr_retry;
	attr->alt_port_num = d->alt_port_num;
	attr->alt_timeout = d->alt_timeout;
	attr->cap = qp->cap;
	if (qp->ibqp.qp_type == IB_QPT_RC || qp->ibqp.qp_type == IB_QPT_UC) {
		vrdma_ah_from_dev(ibqp->device, &d->ah_attr, &attr->ah_attr);
		vrdma_ah_from_dev(ibqp->device, &d->alt_ah_attr, &attr->alt_ah_attr);
	}
	memset(init, 0, sizeof(*init));
	init->qp_type = qp->ibqp.qp_type;
	init->send_cq = qp->ibqp.send_cq;
	init->recv_cq = qp->ibqp.recv_cq;
	init->srq = qp->ibqp.srq;
	init->sq_sig_type = qp->sig_type;
	init->cap = qp->cap;
out:
	kfree(d);
	return err;
}

/* No poller still holds this QP once it has left the table. */
static void vrdma_cq_barrier(struct ib_cq *ibcq)
{
	struct vrdma_cq *cq = to_vcq(ibcq);
	unsigned long flags;

	spin_lock_irqsave(&cq->lock, flags);
	spin_unlock_irqrestore(&cq->lock, flags);
}

int vrdma_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct vrdma_dev *dev = to_vdev(ibqp->device);
	struct vrdma_qp *qp = to_vqp(ibqp);
	struct virtio_rdma_cmd_destroy_qp cmd = { .qpn = cpu_to_le32(qp->qpn) };
	int err;

	err = vrdma_cmd(dev, VIRTIO_RDMA_CMD_DESTROY_QP, &cmd, sizeof(cmd),
			NULL, 0);
	if (err)
		dev_warn(&dev->vdev->dev, "DESTROY_QP %u: %d\n", qp->qpn, err);
	xa_erase_irq(&dev->qps, qp->wire_qpn);
	vrdma_cq_barrier(ibqp->send_cq);
	vrdma_cq_barrier(ibqp->recv_cq);
	vrdma_wq_fini(&qp->sq, !err);
	vrdma_wq_fini(&qp->rq, !err);
	clear_bit(qp->qpn, dev->qp_busy);
	return 0;
}

/*
 * An async event for the QP of queue index qpn (the event queue's
 * interrupt).  The handler runs under the table's lock: destroy_qp() takes
 * the QP out of it before it goes.  A handle naming no live QP (one just
 * destroyed, a device's mistake) is ignored.
 */
void vrdma_qp_event(struct vrdma_dev *dev, u32 qpn, enum ib_event_type type)
{
	struct vrdma_qp *qp;
	unsigned long flags, i;

	if (!qpn || qpn >= dev->nqp || !test_bit(qpn, dev->qp_busy))
		return;
	ibdev_warn_ratelimited(&dev->ib, "QP %u: ring broke (QP_FATAL)\n", qpn);
	xa_lock_irqsave(&dev->qps, flags);
	/* Keyed by wire QPN; at most nqp live entries, events are rare. */
	xa_for_each(&dev->qps, i, qp) {
		if (qp->qpn != qpn)
			continue;
		if (qp->ibqp.event_handler) {
			struct ib_event ev = {
				.device = qp->ibqp.device,
				.element.qp = &qp->ibqp,
				.event = type,
			};

			qp->ibqp.event_handler(&ev, qp->ibqp.qp_context);
		}
		break;
	}
	xa_unlock_irqrestore(&dev->qps, flags);
}

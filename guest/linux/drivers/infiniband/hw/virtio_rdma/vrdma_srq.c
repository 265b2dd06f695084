// SPDX-License-Identifier: GPL-2.0
/*
 * Shared receive queues: create, modify, query, destroy, post_srq_recv and
 * their async events (docs/specs/virtio-rdma.rst, "Shared receive
 * queues"); on a device without SRQs max_srq is 0 and create_srq fails
 * with -EOPNOTSUPP.
 *
 * An SRQ is a ring of receive requests in guest memory, each entry an RQ
 * entry (virtio_rdma_rq_req and its SGEs), that the QPs created on it
 * (vrdma_qp.c) receive from.  The device copies each entry out once, in
 * ring order -- when a QP needs a receive (soft-RoCE) or as the doorbells
 * announce them (a host SRQ) -- and counts the entries it copied in the
 * trailer's device_idx.  A kernel SRQ's ring is vmalloc memory (vrdma_ring.c)
 * that post_srq_recv writes in place and announces with one SRQ doorbell
 * per call on context 0's page.  A user SRQ's ring is the process's
 * (virtio_rdma_ucmd_create_srq), checked as a user QP's rings are and
 * pinned for the SRQ's life; the provider posts to it and rings its own
 * context's page (uverbs' POST_SRQ_RECV is not enabled).
 *
 * Room.  A slot may be written again once the device has copied its entry
 * out, so a post keeps at most max_wr entries announced and not yet taken
 * (producer counter - device_idx): the ring, of at least max_wr entries,
 * holds them, and a doorbell never runs beyond it.  More fails with
 * -ENOMEM (as a full RQ does).  device_idx is the device's: a value it
 * should not have makes the SRQ look full, nothing worse.
 *
 * Tags.  As for a kernel RQ (vrdma_qp.c, "Tags") the device is given a tag
 * per request, never the ULP's wr_id (a kernel ULP's is a pointer), and a
 * receive CQE is taken only if its wr_id is the tag of a request
 * outstanding on the SRQ of the QP it completes for (vrdma_wc()); the
 * entry is then freed.  But an SRQ's requests complete in no order -- each
 * on the QP that took it, when its message comes -- and one a QP took may
 * never complete (a QP destroyed or reset while holding it; a QP in ERR
 * flushes it), so a request takes the first table entry from its tag on
 * that waits for no CQE, the tags of busy entries being skipped (never
 * used).  The table has at least 2 * max_wr entries: max_wr requests not
 * yet taken, and as many taken and not yet polled (a host SRQ of max_wr
 * takes that many); with none free a post fails with -ENOMEM too, until
 * CQEs are polled.  A request the device loses keeps its entry for the
 * SRQ's life.
 *
 * Events.  SRQ_LIMIT and SRQ_ERR name the srqn; dev->srqs maps it to the
 * SRQ, whose handler runs under the table's lock: destroy_srq() takes the
 * SRQ out of the table before anything else, so no handler runs on an SRQ
 * being destroyed, and an event for a number not (or no longer) in the
 * table is ignored.
 *
 * Locks: a post holds srq->lock; a poll takes it inside cq->lock.
 */
#include <linux/log2.h>

#include "vrdma.h"

static int vrdma_destroy_srq_cmd(struct vrdma_dev *dev, u32 srqn)
{
	struct virtio_rdma_cmd_destroy_srq cmd = { .srqn = cpu_to_le32(srqn) };

	return vrdma_cmd(dev, VIRTIO_RDMA_CMD_DESTROY_SRQ, &cmd, sizeof(cmd),
			 NULL, 0);
}

/*
 * Free what is ours; a ring only if the device let go of it (device_done:
 * DESTROY_SRQ succeeded, or the device never had it), else it stays
 * allocated (a user one pinned) so the device never writes a page that
 * went back to the allocator.
 */
static void vrdma_srq_free(struct vrdma_dev *dev, struct vrdma_srq *srq,
			   bool device_done)
{
	kvfree(srq->ents);	/* no poller: no QP is on the SRQ any more */
	srq->ents = NULL;
	if (device_done)
		vrdma_ring_free(&srq->ring);
	else if (vrdma_ring_present(&srq->ring))
		dev_warn(&dev->vdev->dev, "SRQ %u: its ring of %u pages left to the device\n",
			 srq->srqn, srq->ring.npages);
}

/*
 * A user SRQ's ring: the provider's request (virtio_rdma_ucmd_create_srq),
 * checked against the attributes before anything is pinned or the device
 * hears of it, then pinned.
 */
static int vrdma_user_srq_ring(struct vrdma_dev *dev, struct vrdma_srq *srq,
			       const struct ib_srq_attr *attr,
			       struct ib_udata *udata)
{
	struct virtio_rdma_ucmd_create_srq ucmd;
	int err;

	err = vrdma_udata_in(udata, &ucmd, sizeof(ucmd));
	if (err)
		return err;
	if (udata->outlen < sizeof(struct virtio_rdma_uresp_create_srq) ||
	    memchr_inv(ucmd.reserved, 0, sizeof(ucmd.reserved)))
		return -EINVAL;
	/* As a user RQ's: max_wr entries of max_sge SGEs, page aligned. */
	err = vrdma_uwq_check(ucmd.ring_va, ucmd.log_entries, ucmd.log_stride,
			      attr->max_wr, attr->max_sge,
			      sizeof(struct virtio_rdma_rq_req));
	if (err)
		return err;
	return vrdma_ring_get_user(&srq->ring, &dev->ib, ucmd.ring_va,
				   ucmd.log_entries, ucmd.log_stride);
}

/* A kernel SRQ's ring (zeroed, >= max_wr entries) and tag table. */
static int vrdma_kernel_srq_ring(struct vrdma_srq *srq,
				 const struct ib_srq_attr *attr)
{
	int err;

	err = vrdma_ring_alloc(&srq->ring, attr->max_wr,
			       sizeof(struct virtio_rdma_rq_req) +
			       attr->max_sge * sizeof(struct virtio_rdma_sge));
	if (err)
		return err;
	/* max_wr <= max_srq_wr, clamped to 32768 at probe: no overflow. */
	srq->nents = roundup_pow_of_two(2 * attr->max_wr);
	srq->ents = kvcalloc(srq->nents, sizeof(*srq->ents), GFP_KERNEL);
	if (!srq->ents) {
		vrdma_ring_free(&srq->ring);
		return -ENOMEM;
	}
	srq->next_tag = 1;
	return 0;
}

int vrdma_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		     struct ib_udata *udata)
{
	struct vrdma_dev *dev = to_vdev(ibsrq->device);
	struct vrdma_srq *srq = to_vsrq(ibsrq);
	struct ib_srq_attr *attr = &init->attr;
	struct virtio_rdma_cmd_create_srq_ring cmd = {};
	struct virtio_rdma_rsp_create_srq r = {};
	u32 ctx = VIRTIO_RDMA_KERNEL_CTX;
	struct vrdma_pt pt;
	int err;

	/* 0 on a device without SRQs (vrdma_probe()). */
	if (!dev->cfg.max_srq || init->srq_type != IB_SRQT_BASIC)
		return -EOPNOTSUPP;
	if (attr->max_wr < 1 || attr->max_wr > dev->cfg.max_srq_wr ||
	    attr->max_sge < 1 || attr->max_sge > dev->cfg.max_srq_sge ||
	    attr->srq_limit > attr->max_wr)
		return -EINVAL;
	if (udata) {
		ctx = rdma_udata_to_drv_context(udata, struct vrdma_ucontext,
						ibuc)->ctx;
		err = vrdma_user_srq_ring(dev, srq, attr, udata);
	} else {
		err = vrdma_kernel_srq_ring(srq, attr);
	}
	if (err)
		return err;
	spin_lock_init(&srq->lock);
	srq->ctx = ctx;
	/*
	 * Granted exactly as asked, as a QP's cap is: the ring may have more
	 * entries (a power of two), but a post keeps at most max_wr in it.
	 */
	srq->max_wr = attr->max_wr;
	srq->max_sge = attr->max_sge;

	cmd.ctx = cpu_to_le32(ctx);
	cmd.pdn = cpu_to_le32(to_vpd(ibsrq->pd)->pdn);
	cmd.max_wr = cpu_to_le32(attr->max_wr);
	cmd.max_sge = cpu_to_le32(attr->max_sge);
	cmd.srq_limit = cpu_to_le32(attr->srq_limit);
	err = vrdma_ring_desc(&srq->ring, &pt, &cmd.ring);
	if (!err)
		err = vrdma_cmd(dev, VIRTIO_RDMA_CMD_CREATE_SRQ_RING, &cmd,
				sizeof(cmd), &r, sizeof(r));
	vrdma_pt_free(&pt);	/* the device walked it during the command */
	if (err) {
		vrdma_srq_free(dev, srq, true);
		return err;
	}
	srq->srqn = le32_to_cpu(r.srqn);
	if (!srq->srqn || srq->srqn > dev->cfg.max_srq) {
		dev_err(&dev->vdev->dev, "device gave SRQ %u: not usable\n",
			srq->srqn);
		err = -EIO;
		goto err_destroy;
	}
	if (udata) {
		/* What its doorbells name. */
		struct virtio_rdma_uresp_create_srq resp = { .srqn = srq->srqn };

		err = ib_copy_to_udata(udata, &resp, sizeof(resp));
		if (err)
			goto err_destroy;
	}
	/* Last: its events find it from now on. */
	err = xa_insert_irq(&dev->srqs, srq->srqn, srq, GFP_KERNEL);
	if (err == -EBUSY) {
		/* A live SRQ's number: not ours to destroy. */
		dev_err(&dev->vdev->dev, "device gave SRQ %u twice\n",
			srq->srqn);
		vrdma_srq_free(dev, srq, false);
		return -EIO;
	}
	if (err)
		goto err_destroy;
	return 0;

err_destroy:
	vrdma_srq_free(dev, srq, !vrdma_destroy_srq_cmd(dev, srq->srqn));
	return err;
}

int vrdma_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		     enum ib_srq_attr_mask mask, struct ib_udata *udata)
{
	struct vrdma_srq *srq = to_vsrq(ibsrq);
	struct virtio_rdma_cmd_modify_srq cmd = {};

	if (udata && udata->inlen)
		return -EINVAL;
	if (mask & ~(IB_SRQ_MAX_WR | IB_SRQ_LIMIT))
		return -EINVAL;
	/* No resize (no IB_DEVICE_SRQ_RESIZE): the ring is the SRQ's size. */
	if (mask & IB_SRQ_MAX_WR)
		return -EOPNOTSUPP;
	if (!(mask & IB_SRQ_LIMIT))
		return 0;
	/* 0 disarms; else armed, one SRQ_LIMIT event (vrdma_srq_event()). */
	if (attr->srq_limit > srq->max_wr)
		return -EINVAL;
	cmd.srqn = cpu_to_le32(srq->srqn);
	cmd.attr_mask = cpu_to_le32(VIRTIO_RDMA_SRQ_LIMIT);
	cmd.srq_limit = cpu_to_le32(attr->srq_limit);
	return vrdma_cmd(to_vdev(ibsrq->device), VIRTIO_RDMA_CMD_MODIFY_SRQ,
			 &cmd, sizeof(cmd), NULL, 0);
}

int vrdma_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	struct vrdma_srq *srq = to_vsrq(ibsrq);
	struct virtio_rdma_cmd_query_srq cmd = { .srqn = cpu_to_le32(srq->srqn) };
	struct virtio_rdma_rsp_query_srq r;
	int err;

	err = vrdma_cmd(to_vdev(ibsrq->device), VIRTIO_RDMA_CMD_QUERY_SRQ, &cmd,
			sizeof(cmd), &r, sizeof(r));
	if (err)
		return err;
	/* What was granted; the limit is the device's (0 once it fired). */
	attr->max_wr = srq->max_wr;
	attr->max_sge = srq->max_sge;
	attr->srq_limit = le32_to_cpu(r.srq_limit);
	return 0;
}

/*
 * The core calls this only when no QP is on the SRQ any more (it counts
 * them), and every one of them has left its CQs' pollers (destroy_qp()).
 * As destroy_qp(), it does not fail: a device that does not answer
 * (a broken control queue) or refuses keeps the ring, nothing else.
 */
int vrdma_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct vrdma_dev *dev = to_vdev(ibsrq->device);
	struct vrdma_srq *srq = to_vsrq(ibsrq);
	int err;

	/* First: no event handler runs on it from here on. */
	xa_erase_irq(&dev->srqs, srq->srqn);
	err = vrdma_destroy_srq_cmd(dev, srq->srqn);
	if (err)
		dev_warn(&dev->vdev->dev, "DESTROY_SRQ %u: %d\n", srq->srqn, err);
	vrdma_srq_free(dev, srq, !err);
	return 0;
}

/*
 * The entries the device has taken from a kernel SRQ's ring (srq->lock):
 * it has read them and never reads them again, so their slots are ours.
 */
static u32 vrdma_srq_taken(struct vrdma_srq *srq)
{
	u32 taken = le32_to_cpu(READ_ONCE(srq->ring.trailer->device_idx));

	dma_mb();	/* our writes to those slots after the device's reads */
	return taken;
}

/*
 * The table entry for the next request, srq->next_tag its tag, or NULL if
 * every entry waits for a CQE (srq->lock held).  Busy entries' tags are
 * skipped ("Tags").
 */
static struct vrdma_wr_ent *vrdma_srq_ent(struct vrdma_srq *srq)
{
	struct vrdma_wr_ent *e;
	u32 i;

	if (srq->ndue >= srq->nents)
		return NULL;
	for (i = 0; i < srq->nents; i++, srq->next_tag++) {
		e = &srq->ents[srq->next_tag & (srq->nents - 1)];
		if (!(e->tag & VRDMA_WR_DUE))
			return e;
	}
	return NULL;
}

/* A kernel SRQ: the requests into its ring, one doorbell for them all. */
int vrdma_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			const struct ib_recv_wr **bad_wr)
{
	struct vrdma_srq *srq = to_vsrq(ibsrq);
	unsigned long flags;
	unsigned int n = 0;
	int err = 0;
	u32 taken;

	if (!srq->ents) {	/* a user SRQ: the provider posts to it */
		*bad_wr = wr;
		return -EOPNOTSUPP;
	}
	spin_lock_irqsave(&srq->lock, flags);
	taken = vrdma_srq_taken(srq);
	for (; wr; wr = wr->next) {
		struct vrdma_wr_ent *e = NULL;

		if (wr->num_sge < 0 || wr->num_sge > srq->max_sge) {
			err = -EINVAL;
			break;
		}
		/* Full: the device may have taken more since we looked. */
		if (srq->prod - taken >= srq->max_wr)
			taken = vrdma_srq_taken(srq);
		if (srq->prod - taken < srq->max_wr)
			e = vrdma_srq_ent(srq);
		if (!e) {
			err = -ENOMEM;
			break;
		}
		/* In place: the device reads nothing past the producer counter. */
		vrdma_build_recv(vrdma_ring_entry(&srq->ring, srq->prod), wr,
				 srq->next_tag);	/* not wr->wr_id */
		e->tag = srq->next_tag++ | VRDMA_WR_FLAGS;
		e->wr_id = wr->wr_id;
		srq->ndue++;
		srq->prod++;
		n++;
	}
	if (n) {
		/* For a reader of the ring only: the doorbell carries the index. */
		WRITE_ONCE(srq->ring.trailer->driver_idx, cpu_to_le32(srq->prod));
		vrdma_doorbell(to_vdev(ibsrq->device), VIRTIO_RDMA_DB_SRQ,
			       srq->srqn, srq->prod);
	}
	spin_unlock_irqrestore(&srq->lock, flags);
	if (err)
		*bad_wr = wr;
	return err;
}

/*
 * The ULP's wr_id of the request of a kernel SRQ a receive CQE names by
 * tag, its entry freed; false if none outstanding has the tag.  cq->lock
 * held (interrupts off), the CQE's QP on this SRQ alive.
 */
bool vrdma_srq_complete(struct vrdma_srq *srq, u64 tag, u64 *wr_id)
{
	struct vrdma_wr_ent *e;
	bool ok = false;

	if (!srq->ents)		/* a user SRQ's completions are the provider's */
		return false;
	spin_lock(&srq->lock);
	e = &srq->ents[tag & (srq->nents - 1)];
	if (tag && (e->tag & VRDMA_WR_DUE) &&
	    (e->tag & ~VRDMA_WR_FLAGS) == tag) {
		*wr_id = e->wr_id;
		e->tag = 0;
		srq->ndue--;
		ok = true;
	}
	spin_unlock(&srq->lock);
	return ok;
}

/*
 * An async event for SRQ srqn (the event queue's interrupt): its limit was
 * reached (the device disarmed it) or it broke.  Kernel and user SRQs
 * alike (for a user SRQ uverbs' handler queues the event for its process).
 */
void vrdma_srq_event(struct vrdma_dev *dev, u32 srqn, enum ib_event_type type)
{
	struct vrdma_srq *srq;
	unsigned long flags;

	xa_lock_irqsave(&dev->srqs, flags);
	srq = xa_load(&dev->srqs, srqn);
	if (srq && type == IB_EVENT_SRQ_ERR)
		ibdev_warn_ratelimited(&dev->ib, "SRQ %u: broken (SRQ_ERR)\n",
				       srqn);
	if (srq && srq->ibsrq.event_handler) {
		struct ib_event ev = {
			.device = &dev->ib,
			.element.srq = &srq->ibsrq,
			.event = type,
		};

		srq->ibsrq.event_handler(&ev, srq->ibsrq.srq_context);
	}
	xa_unlock_irqrestore(&dev->srqs, flags);
}

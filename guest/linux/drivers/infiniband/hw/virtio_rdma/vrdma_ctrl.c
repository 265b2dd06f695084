// SPDX-License-Identifier: GPL-2.0
/*
 * The control queue.  The device answers commands in order, from its own
 * thread, and interrupts when it has answered.
 *
 * Process context (nearly every verb) sleeps: one command at a time under
 * ctrl_mutex, in the device's shared buffer, woken by the queue's interrupt.
 * A command the device is slow to answer is waited for as long as it
 * takes, with a warning now and then: its buffer (and what it points to,
 * a REG_USER_MR's page table) is the device's until it comes back, and a
 * slow device is not a dead one.  Only a broken queue ends the waiting.
 *
 * Atomic context (map_mr_sg from a block driver's queue_rq) cannot sleep:
 * the caller brings a buffer of its own object (its MR), posts it beside
 * the sleeper's and spins, interrupts on, for at most VRDMA_CTRL_SPIN_NS.
 * Past that it gives the buffer up to the device ("abandoned") and gets
 * -EINPROGRESS; the buffer is the object's again once the device returns
 * it, and until then the object cannot post another (-EBUSY).
 *
 * ctrl_lock, taken with interrupts off, covers the virtqueue only: adding,
 * kicking and taking answers, never a wait.
 */
#include <linux/ktime.h>
#include <linux/scatterlist.h>

#include "vrdma.h"

/* How long an atomic caller spins for its answer. */
#define VRDMA_CTRL_SPIN_NS (50ULL * NSEC_PER_MSEC)
/* How often a sleeper still waiting says so. */
#define VRDMA_CTRL_WARN_S 10

enum {
	VRDMA_CTRL_IDLE,	/* the driver's */
	VRDMA_CTRL_WAITING,	/* with the device, its caller waiting */
	VRDMA_CTRL_DONE,	/* answered, its caller not yet told */
	VRDMA_CTRL_ABANDONED,	/* with the device, its caller gone */
};

void vrdma_ctrl_req_init(struct vrdma_ctrl_req *r)
{
	atomic_set(&r->state, VRDMA_CTRL_IDLE);
	init_completion(&r->done);
}

/* r is still with the device (or its caller is still waiting). */
bool vrdma_ctrl_req_busy(struct vrdma_ctrl_req *r)
{
	return atomic_read_acquire(&r->state) != VRDMA_CTRL_IDLE;
}

int vrdma_ctrl_init(struct vrdma_dev *dev)
{
	spin_lock_init(&dev->ctrl_lock);
	mutex_init(&dev->ctrl_mutex);
	dev->ctrl = kzalloc(sizeof(*dev->ctrl), GFP_KERNEL);
	if (!dev->ctrl)
		return -ENOMEM;
	vrdma_ctrl_req_init(dev->ctrl);
	return 0;
}

void vrdma_ctrl_fini(struct vrdma_dev *dev)
{
	/* After the device reset: every buffer is ours again. */
	kfree(dev->ctrl);
	dev->ctrl = NULL;
}

/*
 * Take every answer off the queue (the interrupt, and spinners that may
 * have interrupts off), under ctrl_lock: an abandoned buffer is its
 * object's again once taken.
 */
void vrdma_ctrl_reap(struct vrdma_dev *dev)
{
	struct vrdma_ctrl_req *r;
	unsigned long flags;
	unsigned int len;

	spin_lock_irqsave(&dev->ctrl_lock, flags);
	while ((r = virtqueue_get_buf(dev->ctrl_vq, &len))) {
		if (atomic_cmpxchg(&r->state, VRDMA_CTRL_WAITING,
				   VRDMA_CTRL_DONE) == VRDMA_CTRL_WAITING) {
			complete(&r->done);
			continue;
		}
		atomic_set_release(&r->state, VRDMA_CTRL_IDLE);
	}
	spin_unlock_irqrestore(&dev->ctrl_lock, flags);
}

void vrdma_ctrl_vq_done(struct virtqueue *vq)
{
	vrdma_ctrl_reap(vq->vdev->priv);
}

/* The device's status byte is a positive errno (spec, "Status values"). */
static int vrdma_status_errno(u8 status)
{
	switch (status) {
	case VIRTIO_RDMA_OK:
		return 0;
	case VIRTIO_RDMA_ENOENT:
	case VIRTIO_RDMA_EINVAL:
		return -EINVAL;
	case VIRTIO_RDMA_ENOMEM:
		return -ENOMEM;
	case VIRTIO_RDMA_EFAULT:
		return -EFAULT;
	case VIRTIO_RDMA_EBUSY:
		return -EBUSY;
	case VIRTIO_RDMA_ERANGE:
		return -EINVAL;
	case VIRTIO_RDMA_EOPNOTSUPP:
		return -EOPNOTSUPP;
	default:
		return -EIO;
	}
}

/* Fill r's buffer and hand it to the device; r is WAITING on success. */
static int vrdma_ctrl_post(struct vrdma_dev *dev, struct vrdma_ctrl_req *r,
			   u8 cmd, const void *req, size_t req_len,
			   size_t rsp_len)
{
	struct vrdma_ctrl_buf *b = &r->buf;
	struct scatterlist s_cmd, s_req, s_rsp, *sgs[3];
	unsigned int nout = 0;
	unsigned long flags;
	int err;

	if (WARN_ON(req_len > sizeof(b->req) ||
		    rsp_len + 1 > sizeof(b->status_rsp)))
		return -EINVAL;
	b->cmd = cmd;
	memcpy(b->req, req, req_len);
	b->status_rsp[0] = 0xff;
	sg_init_one(&s_cmd, &b->cmd, 1);
	sgs[nout++] = &s_cmd;
	if (req_len) {
		sg_init_one(&s_req, b->req, req_len);
		sgs[nout++] = &s_req;
	}
	sg_init_one(&s_rsp, b->status_rsp, 1 + rsp_len);
	sgs[nout] = &s_rsp;

	reinit_completion(&r->done);
	atomic_set(&r->state, VRDMA_CTRL_WAITING);
	spin_lock_irqsave(&dev->ctrl_lock, flags);
	if (dev->ctrl_dead)
		err = -EIO;
	else
		err = virtqueue_add_sgs(dev->ctrl_vq, sgs, nout, 1, r, GFP_ATOMIC);
	if (!err)
		virtqueue_kick(dev->ctrl_vq);
	spin_unlock_irqrestore(&dev->ctrl_lock, flags);
	if (err)
		atomic_set(&r->state, VRDMA_CTRL_IDLE);
	return err;
}

/* r was answered (DONE): its status and response; r is IDLE again. */
static int vrdma_ctrl_result(struct vrdma_dev *dev, struct vrdma_ctrl_req *r,
			     void *rsp, size_t rsp_len)
{
	const u8 *sr = r->buf.status_rsp;
	int err = vrdma_status_errno(sr[0]);

	if (!err && rsp_len)
		memcpy(rsp, sr + 1, rsp_len);
	if (err)
		dev_dbg(&dev->vdev->dev, "control command %u: status %u\n",
			r->buf.cmd, sr[0]);
	atomic_set_release(&r->state, VRDMA_CTRL_IDLE);
	return err;
}

/* A broken queue answers nothing again: fail this and every later command. */
static int vrdma_ctrl_broken(struct vrdma_dev *dev, u8 cmd)
{
	unsigned long flags;

	spin_lock_irqsave(&dev->ctrl_lock, flags);
	if (!dev->ctrl_dead)
		dev_err(&dev->vdev->dev,
			"control queue broken during command %u; control queue disabled\n",
			cmd);
	dev->ctrl_dead = true;
	spin_unlock_irqrestore(&dev->ctrl_lock, flags);
	return -EIO;
}

/* Process context: may sleep. */
int vrdma_cmd(struct vrdma_dev *dev, u8 cmd, const void *req, size_t req_len,
	      void *rsp, size_t rsp_len)
{
	struct vrdma_ctrl_req *r = dev->ctrl;
	unsigned int waited = 0;
	int err;

	might_sleep();
	mutex_lock(&dev->ctrl_mutex);
	err = vrdma_ctrl_post(dev, r, cmd, req, req_len, rsp_len);
	if (err)
		goto out;
	while (!wait_for_completion_timeout(&r->done, HZ)) {
		/* An answer some spinner took leaves no interrupt to wait for. */
		vrdma_ctrl_reap(dev);
		if (atomic_read(&r->state) == VRDMA_CTRL_DONE)
			break;
		if (virtqueue_is_broken(dev->ctrl_vq)) {
			/* The buffer stays lost: ctrl_dead keeps it unused. */
			err = vrdma_ctrl_broken(dev, cmd);
			goto out;
		}
		if (++waited % VRDMA_CTRL_WARN_S == 0)
			dev_warn(&dev->vdev->dev,
				 "control command %u: no answer for %u s, still waiting\n",
				 cmd, waited);
	}
	/* Pairs with the reaper's cmpxchg: the answer is in the buffer. */
	smp_rmb();
	err = vrdma_ctrl_result(dev, r, rsp, rsp_len);
out:
	mutex_unlock(&dev->ctrl_mutex);
	return err;
}

/*
 * Atomic context, in r (the caller's object's own buffer): 0 or -errno with
 * the device's answer; -EBUSY while r is still with the device from an
 * earlier call; -EINPROGRESS when the device did not answer within
 * VRDMA_CTRL_SPIN_NS (the command stays queued and is carried out).
 */
int vrdma_cmd_atomic(struct vrdma_dev *dev, struct vrdma_ctrl_req *r, u8 cmd,
		     const void *req, size_t req_len, void *rsp, size_t rsp_len)
{
	ktime_t deadline;
	int err;

	if (vrdma_ctrl_req_busy(r))
		return -EBUSY;
	err = vrdma_ctrl_post(dev, r, cmd, req, req_len, rsp_len);
	if (err)
		return err;
	deadline = ktime_add_ns(ktime_get(), VRDMA_CTRL_SPIN_NS);
	for (;;) {
		vrdma_ctrl_reap(dev);
		if (atomic_read_acquire(&r->state) == VRDMA_CTRL_DONE)
			break;
		if (virtqueue_is_broken(dev->ctrl_vq))
			return vrdma_ctrl_broken(dev, cmd);
		if (ktime_after(ktime_get(), deadline) &&
		    atomic_cmpxchg(&r->state, VRDMA_CTRL_WAITING,
				   VRDMA_CTRL_ABANDONED) == VRDMA_CTRL_WAITING)
			return -EINPROGRESS;
		cpu_relax();
	}
	return vrdma_ctrl_result(dev, r, rsp, rsp_len);
}

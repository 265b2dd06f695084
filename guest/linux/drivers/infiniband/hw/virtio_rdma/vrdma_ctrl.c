// SPDX-License-Identifier: GPL-2.0
/*
 * The control queue: one command at a time, busy-polled.
 *
 * Commands come from every context a verb can be called in -- process
 * context, but also softirq (req_notify_cq from an ib_cq poller, map_mr_sg
 * from a block driver's queue_rq) -- so the helper never sleeps: it holds a
 * spinlock with interrupts off and polls the used ring.  The device answers
 * in its own thread (QEMU's main loop), so polling makes progress even on a
 * single vCPU.  A command that does not complete in VRDMA_CTRL_TIMEOUT_NS
 * leaves its buffer with the device: the queue is then dead and every
 * later command fails with -EIO rather than reuse that buffer.
 */
#include <linux/ktime.h>
#include <linux/scatterlist.h>

#include "vrdma.h"

int vrdma_ctrl_init(struct vrdma_dev *dev)
{
	spin_lock_init(&dev->ctrl_lock);
	dev->ctrl = kzalloc(sizeof(*dev->ctrl), GFP_KERNEL);
	return dev->ctrl ? 0 : -ENOMEM;
}

void vrdma_ctrl_fini(struct vrdma_dev *dev)
{
	/* After the device reset: the buffer is ours again even if lost. */
	kfree(dev->ctrl);
	dev->ctrl = NULL;
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

int vrdma_cmd(struct vrdma_dev *dev, u8 cmd, const void *req, size_t req_len,
	      void *rsp, size_t rsp_len)
{
	struct vrdma_ctrl_buf *b = dev->ctrl;
	struct scatterlist s_cmd, s_req, s_rsp, *sgs[3];
	unsigned int nout = 0, len;
	unsigned long flags;
	ktime_t deadline;
	int err;

	if (WARN_ON(req_len > sizeof(b->req) ||
		    rsp_len + 1 > sizeof(b->status_rsp)))
		return -EINVAL;

	spin_lock_irqsave(&dev->ctrl_lock, flags);
	if (dev->ctrl_dead) {
		err = -EIO;
		goto out;
	}
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

	err = virtqueue_add_sgs(dev->ctrl_vq, sgs, nout, 1, b, GFP_ATOMIC);
	if (err)
		goto out;
	virtqueue_kick(dev->ctrl_vq);

	deadline = ktime_add_ns(ktime_get(), VRDMA_CTRL_TIMEOUT_NS);
	while (!virtqueue_get_buf(dev->ctrl_vq, &len)) {
		if (virtqueue_is_broken(dev->ctrl_vq) ||
		    ktime_after(ktime_get(), deadline)) {
			dev->ctrl_dead = true;
			dev_err(&dev->vdev->dev,
				"control command %u got no answer; control queue disabled\n",
				cmd);
			err = -EIO;
			goto out;
		}
		cpu_relax();
	}
	err = vrdma_status_errno(b->status_rsp[0]);
	if (!err && rsp_len)
		memcpy(rsp, b->status_rsp + 1, rsp_len);
	if (err)
		dev_dbg(&dev->vdev->dev, "control command %u: status %u\n",
			cmd, b->status_rsp[0]);
out:
	spin_unlock_irqrestore(&dev->ctrl_lock, flags);
	return err;
}

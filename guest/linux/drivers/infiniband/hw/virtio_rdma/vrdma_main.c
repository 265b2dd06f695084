// SPDX-License-Identifier: GPL-2.0
/*
 * virtio-rdma guest driver: probe, virtqueues, removal.
 *
 * The driver needs VIRTIO_RDMA_F_RINGS (and the two features it needs):
 * CQs, QPs and SRQs are rings in guest memory, announced by doorbells in
 * the region mapped at probe (vrdma_ring.c), and user space gets uverbs
 * ABI VIRTIO_RDMA_UVERBS_ABI_RINGS.  Of the virtqueues
 * (docs/specs/virtio-rdma.rst) it uses the control queue, whose callback
 * wakes the commands waiting for answers, and the event queue (CQ and
 * async events); the layout's CQ and QP virtqueues stay idle.
 */
#include <linux/dma-mapping.h>
#include <linux/module.h>
#include <linux/virtio_config.h>

#include "vrdma.h"

/* docs/specs/virtio-rdma.rst, the device configuration's ranges. */
#define VRDMA_SPEC_MAX_SGE	32
#define VRDMA_SPEC_MAX_RD_ATOM	16
#define VRDMA_SPEC_MAX_CTX	4096

/* The config space is little-endian and packed: read it whole, convert. */
#define VRDMA_LE(c, f)                                                      \
	do {                                                                \
		typeof((c)->f) v_ = (c)->f;                                 \
		BUILD_BUG_ON(sizeof(v_) != 2 && sizeof(v_) != 4 &&          \
			     sizeof(v_) != 8);                              \
		if (sizeof(v_) == 2)                                        \
			v_ = le16_to_cpu((__force __le16)v_);               \
		else if (sizeof(v_) == 4)                                   \
			v_ = le32_to_cpu((__force __le32)v_);               \
		else                                                        \
			v_ = le64_to_cpu((__force __le64)v_);               \
		(c)->f = v_;                                                \
	} while (0)

static void vrdma_read_config(struct vrdma_dev *dev)
{
	struct virtio_rdma_config *c = &dev->cfg;

	virtio_cread_bytes(dev->vdev, 0, c, sizeof(*c));
	VRDMA_LE(c, phys_port_cnt);
	/* sys_image_guid is in network byte order, like IB's: kept as is. */
	VRDMA_LE(c, vendor_id);
	VRDMA_LE(c, vendor_part_id);
	VRDMA_LE(c, hw_ver);
	VRDMA_LE(c, max_mr_size);
	VRDMA_LE(c, page_size_cap);
	VRDMA_LE(c, device_cap_flags);
	VRDMA_LE(c, max_send_sge);
	VRDMA_LE(c, max_recv_sge);
	VRDMA_LE(c, max_sge_rd);
	VRDMA_LE(c, max_mr);
	VRDMA_LE(c, max_pd);
	VRDMA_LE(c, max_qp_rd_atom);
	VRDMA_LE(c, max_res_rd_atom);
	VRDMA_LE(c, max_qp_init_rd_atom);
	VRDMA_LE(c, atomic_cap);
	VRDMA_LE(c, max_ah);
	VRDMA_LE(c, max_fast_reg_page_list_len);
	VRDMA_LE(c, max_pkeys);
	VRDMA_LE(c, max_ctx);
	VRDMA_LE(c, max_ring_cqe);
	VRDMA_LE(c, max_ring_qp_wr);
	VRDMA_LE(c, max_ring_qp);
	VRDMA_LE(c, max_ring_cq);
	VRDMA_LE(c, max_srq);
	VRDMA_LE(c, max_srq_wr);
	VRDMA_LE(c, max_srq_sge);
}

/* The device's two virtqueues, each with its interrupt. */
static int vrdma_init_vqs(struct vrdma_dev *dev)
{
	struct virtqueue *vqs[VIRTIO_RDMA_NUM_VQS];
	vq_callback_t *cbs[VIRTIO_RDMA_NUM_VQS] = {
		[VIRTIO_RDMA_VQ_CTRL] = vrdma_ctrl_vq_done,
		[VIRTIO_RDMA_VQ_EVENT] = vrdma_event_vq_done,
	};
	const char *names[VIRTIO_RDMA_NUM_VQS] = {
		[VIRTIO_RDMA_VQ_CTRL] = "ctrl",
		[VIRTIO_RDMA_VQ_EVENT] = "event",
	};
	int err;

	err = vrdma_find_vqs(dev->vdev, VIRTIO_RDMA_NUM_VQS, vqs, cbs, names);
	if (err)
		return err;
	dev->ctrl_vq = vqs[VIRTIO_RDMA_VQ_CTRL];
	dev->event_vq = vqs[VIRTIO_RDMA_VQ_EVENT];
	return 0;
}

static void vrdma_free_queues(struct vrdma_dev *dev)
{
	/* Only after the reset: no buffer is the device's any more. */
	kfree(dev->events);
	kfree(dev->cqs);
	bitmap_free(dev->qp_busy);
}

/*
 * The device reads guest-physical addresses, and what we give it comes from
 * the DMA API of our PCI function (the IB core's ib_dma_map_sg, the block
 * ULPs' map_mr_sg lists) or virt_to_phys: the two must be the same.  They
 * are not behind a translating IOMMU or with bounce buffers (swiotlb=force,
 * encrypted guest memory), where the device would read and write whatever
 * lies at those numbers: refuse to probe.  One page mapped tells.
 */
static int vrdma_check_direct_dma(struct virtio_device *vdev,
				  struct device *dma)
{
	struct page *page = alloc_page(GFP_KERNEL);
	dma_addr_t addr;
	int err = 0;

	if (!page)
		return -ENOMEM;
	addr = dma_map_page(dma, page, 0, PAGE_SIZE, DMA_BIDIRECTIONAL);
	if (dma_mapping_error(dma, addr)) {
		err = -EIO;
	} else {
		if (addr != page_to_phys(page))
			err = -EOPNOTSUPP;
		dma_unmap_page(dma, addr, PAGE_SIZE, DMA_BIDIRECTIONAL);
	}
	__free_page(page);
	if (err)
		dev_err(&vdev->dev, "DMA addresses of this device are not guest-physical (an IOMMU translates them, or bounce buffering is on): virtio-rdma needs direct DMA\n");
	return err;
}

/*
 * The device's limits size our allocations and arrays (a fast-registration
 * MR's page table holds max_fast_reg_page_list_len entries in one level-1
 * page): a device beyond the spec's ranges (a confidential VM's host, a
 * buggy device) gets the spec's bound, not a heap overflow.
 */
#define VRDMA_CLAMP(dev, field, max) do {					\
	if ((dev)->cfg.field > (max)) {						\
		dev_warn(&(dev)->vdev->dev, #field " %llu above the spec's %llu: clamped\n", \
			 (unsigned long long)(dev)->cfg.field,			\
			 (unsigned long long)(max));				\
		(dev)->cfg.field = (max);					\
	}									\
} while (0)

static void vrdma_clamp_config(struct vrdma_dev *dev)
{
	VRDMA_CLAMP(dev, max_mr_size,
		    (u64)VIRTIO_RDMA_MAX_MR_PAGES * VIRTIO_RDMA_PAGE_SIZE);
	VRDMA_CLAMP(dev, max_fast_reg_page_list_len,
		    min_t(u64, dev->cfg.max_mr_size / VIRTIO_RDMA_PAGE_SIZE,
			  VIRTIO_RDMA_PT2_PAGES));
	VRDMA_CLAMP(dev, max_send_sge, VRDMA_SPEC_MAX_SGE);
	VRDMA_CLAMP(dev, max_recv_sge, VRDMA_SPEC_MAX_SGE);
	VRDMA_CLAMP(dev, max_sge_rd, VRDMA_SPEC_MAX_SGE);
	VRDMA_CLAMP(dev, max_mr, VIRTIO_RDMA_LIMIT_MAX);
	VRDMA_CLAMP(dev, max_pd, VIRTIO_RDMA_LIMIT_MAX);
	VRDMA_CLAMP(dev, max_ah, VIRTIO_RDMA_LIMIT_MAX);
	VRDMA_CLAMP(dev, max_qp_rd_atom, VRDMA_SPEC_MAX_RD_ATOM);
	VRDMA_CLAMP(dev, max_qp_init_rd_atom, VRDMA_SPEC_MAX_RD_ATOM);
	VRDMA_CLAMP(dev, max_ctx, VRDMA_SPEC_MAX_CTX);
	VRDMA_CLAMP(dev, max_ring_cqe, VIRTIO_RDMA_RING_MAX_CQE);
	VRDMA_CLAMP(dev, max_ring_qp_wr, VIRTIO_RDMA_RING_MAX_QP_WR);
	VRDMA_CLAMP(dev, max_ring_qp, VIRTIO_RDMA_RING_MAX_QP);
	VRDMA_CLAMP(dev, max_ring_cq, VIRTIO_RDMA_RING_MAX_CQ);
	VRDMA_CLAMP(dev, max_srq, VIRTIO_RDMA_RING_MAX_SRQ);
	VRDMA_CLAMP(dev, max_srq_wr, VIRTIO_RDMA_RING_MAX_SRQ_WR);
	VRDMA_CLAMP(dev, max_srq_sge, VRDMA_SPEC_MAX_SGE);
}

/*
 * No SRQs when the device gives no depth or SGEs for them: max_srq 0 then
 * says so everywhere.
 */
static void vrdma_srq_config(struct vrdma_dev *dev)
{
	struct virtio_rdma_config *c = &dev->cfg;

	if (!c->max_srq || !c->max_srq_wr || !c->max_srq_sge) {
		c->max_srq = 0;
		c->max_srq_wr = 0;
		c->max_srq_sge = 0;
	}
}

static int vrdma_probe(struct virtio_device *vdev)
{
	struct vrdma_dev *dev;
	struct device *parent = vdev->dev.parent;
	int err;

	if (!parent || !dev_is_pci(parent)) {
		dev_err(&vdev->dev, "virtio-rdma needs a PCI transport\n");
		return -ENODEV;
	}
	err = vrdma_check_direct_dma(vdev, parent);
	if (err)
		return err;
	dev = ib_alloc_device(vrdma_dev, ib);
	if (!dev)
		return -ENOMEM;
	dev->vdev = vdev;
	dev->pdev = to_pci_dev(parent);
	vdev->priv = dev;
	spin_lock_init(&dev->cq_table_lock);
	xa_init_flags(&dev->qps, XA_FLAGS_LOCK_IRQ);
	xa_init_flags(&dev->srqs, XA_FLAGS_LOCK_IRQ);

	vrdma_read_config(dev);
	vrdma_clamp_config(dev);
	dev->ncq = dev->cfg.max_ring_cq;
	dev->nqp = dev->cfg.max_ring_qp;
	vrdma_srq_config(dev);
	if (dev->cfg.hw_ver != VIRTIO_RDMA_ABI_VERSION) {
		dev_err(&vdev->dev, "the device speaks version %u of the virtio-rdma ABI, this driver version %u\n",
			dev->cfg.hw_ver, VIRTIO_RDMA_ABI_VERSION);
		err = -ENODEV;
		goto err_dev;
	}
	if (dev->cfg.phys_port_cnt != 1 ||
	    !dev->ncq || dev->nqp < 2 ||
	    dev->ncq > VIRTIO_RDMA_RING_MAX_CQ ||
	    dev->nqp > VIRTIO_RDMA_RING_MAX_QP ||
	    !dev->cfg.max_ring_cqe || !dev->cfg.max_ring_qp_wr ||
	    dev->cfg.page_size_cap != VIRTIO_RDMA_PAGE_SIZE) {
		dev_err(&vdev->dev, "unsupported configuration (ports %u, CQ numbers %u, QP numbers %u, ring CQEs %u, ring WRs %u)\n",
			dev->cfg.phys_port_cnt, dev->ncq, dev->nqp, dev->cfg.max_ring_cqe,
			dev->cfg.max_ring_qp_wr);
		err = -EINVAL;
		goto err_dev;
	}
	dev_info(&vdev->dev, "queues in guest memory (rings), %u user contexts, %u SRQs: user space needs the ring-capable provider (uverbs ABI %u)\n",
		 dev->cfg.max_ctx, dev->cfg.max_srq,
		 VIRTIO_RDMA_UVERBS_ABI_RINGS);

	err = -ENOMEM;
	dev->cqs = kcalloc(dev->ncq, sizeof(*dev->cqs), GFP_KERNEL);
	dev->qp_busy = bitmap_zalloc(dev->nqp, GFP_KERNEL);
	if (!dev->cqs || !dev->qp_busy)
		goto err_queues;
	err = vrdma_rings_init(dev);
	if (err)
		goto err_queues;
	err = vrdma_ctrl_init(dev);
	if (err)
		goto err_ctrl;
	err = vrdma_init_vqs(dev);
	if (err)
		goto err_ctrl;
	virtio_device_ready(vdev);
	err = vrdma_event_init(dev);
	if (err)
		goto err_reset;

	dev->ib.node_type = RDMA_NODE_IB_CA;
	dev->ib.phys_port_cnt = 1;
	dev->ib.num_comp_vectors = 1;
	dev->ib.node_guid = dev->cfg.sys_image_guid;
	dev->ib.dev.parent = &dev->pdev->dev;	/* provider matches the PCI ID */
	/*
	 * No uverbs POST_SEND, POST_RECV, POLL_CQ or REQ_NOTIFY_CQ: a
	 * process's queues are its own rings, which its provider posts to,
	 * polls and arms itself.
	 */
	strscpy(dev->ib.node_desc, "virtio-rdma", sizeof(dev->ib.node_desc));
	ib_set_device_ops(&dev->ib, &vrdma_dev_ops);

	err = vrdma_netdev_init(dev);
	if (err)
		goto err_reset;
	return 0;

err_reset:
	virtio_reset_device(vdev);
	vdev->config->del_vqs(vdev);
err_ctrl:
	vrdma_ctrl_fini(dev);
	vrdma_rings_fini(dev);
err_queues:
	vrdma_free_queues(dev);
err_dev:
	ib_dealloc_device(&dev->ib);
	return err;
}

static void vrdma_remove(struct virtio_device *vdev)
{
	struct vrdma_dev *dev = vdev->priv;

	/* Unregistering destroys every object, user ones included. */
	vrdma_netdev_fini(dev);
	virtio_reset_device(vdev);
	vdev->config->del_vqs(vdev);
	vrdma_ctrl_fini(dev);
	vrdma_rings_fini(dev);
	vrdma_free_queues(dev);
	WARN_ON(!xa_empty(&dev->qps));
	xa_destroy(&dev->qps);
	WARN_ON(!xa_empty(&dev->srqs));
	xa_destroy(&dev->srqs);
	ib_dealloc_device(&dev->ib);
}

static const struct virtio_device_id vrdma_id_table[] = {
	{ VIRTIO_ID_RDMA_DEVICE, VIRTIO_DEV_ANY_ID },
	{ 0 },
};

static unsigned int vrdma_features[] = {
	VIRTIO_RDMA_F_WIRE_QPN,
	VIRTIO_RDMA_F_EVENT_QUEUE,
	VIRTIO_RDMA_F_RINGS,
};

/*
 * Before FEATURES_OK: the three features are what ABI version 2 is; a
 * device without them is of version 1 (its queues are virtqueues).
 */
static int vrdma_validate(struct virtio_device *vdev)
{
	if (virtio_has_feature(vdev, VIRTIO_RDMA_F_RINGS) &&
	    virtio_has_feature(vdev, VIRTIO_RDMA_F_WIRE_QPN) &&
	    virtio_has_feature(vdev, VIRTIO_RDMA_F_EVENT_QUEUE))
		return 0;
	dev_err(&vdev->dev, "the device does not offer queues in guest memory (VIRTIO_RDMA_F_RINGS with WIRE_QPN and EVENT_QUEUE): it speaks version 1 of the virtio-rdma ABI, this driver version %u\n",
		VIRTIO_RDMA_ABI_VERSION);
	return -ENODEV;
}

static struct virtio_driver vrdma_driver = {
	.driver.name = KBUILD_MODNAME,
	.driver.owner = THIS_MODULE,
	.id_table = vrdma_id_table,
	.feature_table = vrdma_features,
	.feature_table_size = ARRAY_SIZE(vrdma_features),
	.validate = vrdma_validate,
	.probe = vrdma_probe,
	.remove = vrdma_remove,
};

module_virtio_driver(vrdma_driver);
MODULE_DEVICE_TABLE(virtio, vrdma_id_table);
MODULE_DESCRIPTION("virtio-rdma guest driver (RoCEv2 over the paired virtio-net)");
MODULE_LICENSE("GPL");

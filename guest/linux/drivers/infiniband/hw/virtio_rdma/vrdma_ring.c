// SPDX-License-Identifier: GPL-2.0
/*
 * Queues in guest memory (VIRTIO_RDMA_F_RINGS; docs/specs/virtio-rdma.rst,
 * "Queues in guest memory"): the doorbell page and the rings' memory.
 *
 * Memory-ordering contract, per ring (the trailer's indexes are free-running
 * 32-bit counters):
 *  - SQ, RQ: the driver writes entries up to its producer counter, then the
 *    doorbell (writeq orders the ring's stores before the MMIO write); the
 *    device copies an entry out once and never reads it again.  The driver
 *    reuses a slot only when the request it held has completed (vrdma_qp.c,
 *    "Rings"), which implies the device copied it.
 *  - CQ: the device writes a CQE, then its owner byte; the driver reads the
 *    owner byte, dma_rmb(), then the CQE; after consuming it publishes its
 *    consumer counter in driver_idx (vrdma_dp.c).
 *  - CQ_ARM takes effect when the MMIO write completes; dma_mb() orders it
 *    before the driver's look for a CQE the arm does not cover.
 *
 * Only kernel queues use rings for now, on context 0's doorbell page; user
 * CQs and QPs are refused (-EOPNOTSUPP) while the module parameter is on.
 */
#include <linux/io.h>
#include <linux/log2.h>
#include <linux/module.h>
#include <linux/vmalloc.h>

#include "vrdma.h"

bool vrdma_rings_param;
module_param_named(rings, vrdma_rings_param, bool, 0444);
MODULE_PARM_DESC(rings,
		 "Kernel CQs and QPs as queues in guest memory with doorbells, when the device offers VIRTIO_RDMA_F_RINGS; user-space CQs and QPs are then refused with EOPNOTSUPP (the provider still needs the virtqueue path) (default: off)");

/* Map the kernel's page of the doorbell region (probe, RINGS negotiated). */
int vrdma_rings_init(struct vrdma_dev *dev)
{
	struct virtio_shm_region shm;

	if (!virtio_get_shm_region(dev->vdev, &shm, VIRTIO_RDMA_SHM_DOORBELLS)) {
		dev_err(&dev->vdev->dev, "RINGS negotiated but no doorbell region\n");
		return -ENODEV;
	}
	if (shm.len < VIRTIO_RDMA_DB_PAGE) {
		dev_err(&dev->vdev->dev, "doorbell region of %llu bytes: too small\n",
			(unsigned long long)shm.len);
		return -ENODEV;
	}
	/* Page 0 is context 0's, the kernel's: nothing else is ours to ring. */
	dev->db = ioremap(shm.addr + VIRTIO_RDMA_KERNEL_CTX * VIRTIO_RDMA_DB_PAGE,
			  VIRTIO_RDMA_DB_PAGE);
	if (!dev->db)
		return -ENOMEM;
	return 0;
}

void vrdma_rings_fini(struct vrdma_dev *dev)
{
	if (dev->db)
		iounmap(dev->db);
	dev->db = NULL;
}

void vrdma_doorbell(struct vrdma_dev *dev, enum virtio_rdma_db_type type,
		    u32 qn, u32 value)
{
	writeq(VIRTIO_RDMA_DB(type, qn, value), dev->db);
}

/*
 * A zeroed ring of at least min_entries (a power of two, >= 1) entries of
 * at least entry_bytes each (at most a page), and its trailer.
 */
int vrdma_ring_alloc(struct vrdma_ring *r, u32 min_entries, u32 entry_bytes)
{
	size_t bytes;

	BUILD_BUG_ON(PAGE_SIZE != VIRTIO_RDMA_PAGE_SIZE);
	memset(r, 0, sizeof(*r));
	r->log_entries = order_base_2(max(min_entries, 1u));
	r->log_stride = max_t(u8, VIRTIO_RDMA_RING_MIN_LOG_STRIDE,
			      order_base_2(entry_bytes));
	if (r->log_entries > VIRTIO_RDMA_RING_MAX_LOG_ENTRIES ||
	    r->log_stride > VIRTIO_RDMA_RING_MAX_LOG_STRIDE)
		return -EINVAL;
	bytes = ((size_t)1 << (r->log_entries + r->log_stride)) +
		sizeof(struct virtio_rdma_ring_trailer);
	r->npages = DIV_ROUND_UP(bytes, VIRTIO_RDMA_PAGE_SIZE);
	/* Page-aligned, whole pages: an entry never crosses a page. */
	r->va = vzalloc((size_t)r->npages * VIRTIO_RDMA_PAGE_SIZE);
	if (!r->va)
		return -ENOMEM;
	r->trailer = r->va + ((size_t)1 << (r->log_entries + r->log_stride));
	return 0;
}

/*
 * The ring's descriptor for a CREATE_*_RING, with its page table in pt;
 * the device walks the table during the command: vrdma_pt_free() after.
 */
int vrdma_ring_desc(const struct vrdma_ring *r, struct vrdma_pt *pt,
		    struct virtio_rdma_ring *desc)
{
	u32 i;
	int err;

	memset(desc, 0, sizeof(*desc));
	memset(pt, 0, sizeof(*pt));
	if (!r->va)
		return 0;	/* a queue with no work requests has no ring */
	err = vrdma_pt_alloc(pt, r->npages, GFP_KERNEL);
	if (err)
		return err;
	/* Direct DMA (checked at probe): guest-physical addresses. */
	for (i = 0; i < r->npages; i++)
		vrdma_pt_set(pt, i, page_to_phys(vmalloc_to_page(
				r->va + (size_t)i * VIRTIO_RDMA_PAGE_SIZE)));
	desc->pages = cpu_to_le64(virt_to_phys(pt->l1));
	desc->npages = cpu_to_le32(r->npages);
	desc->log_entries = r->log_entries;
	desc->log_stride = r->log_stride;
	return 0;
}

/* Only once the device has let go of it (DESTROY_* succeeded, or reset). */
void vrdma_ring_free(struct vrdma_ring *r)
{
	vfree(r->va);
	memset(r, 0, sizeof(*r));
}

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
 *  - SRQ: as an RQ, but its entries complete in no order, so the driver
 *    reuses a slot once the trailer's device_idx (the entries the device
 *    copied out, in ring order) has passed it: it reads device_idx, then
 *    dma_mb(), then writes (vrdma_srq.c).
 *  - CQ: the device writes a CQE, then its owner byte; the driver reads the
 *    owner byte, dma_rmb(), then the CQE; after consuming it publishes its
 *    consumer counter in driver_idx (vrdma_dp.c).
 *  - CQ_ARM takes effect when the MMIO write completes; dma_mb() orders it
 *    before the driver's look for a CQE the arm does not cover.
 *
 * Kernel queues ring context 0's doorbell page.  User queues are rings in
 * the process's memory, pinned here for the queue's life (ib_umem, with
 * LOCAL_WRITE: the device writes CQEs and trailers); the process rings its
 * own context's page, the one mmap() the driver allows it (vrdma_verbs.c),
 * and keeps to the contract above itself: the driver never touches a user
 * ring, and the device copes with whatever the process writes there (it
 * breaks only that process's queues: CQ_ERR, QP_FATAL).
 */
#include <linux/io.h>
#include <linux/log2.h>
#include <linux/vmalloc.h>

#include "vrdma.h"

/*
 * Map the kernel's page of the doorbell region and note where the region
 * is: user context c's page, at c * VIRTIO_RDMA_DB_PAGE, is mmapped into
 * its process (vrdma_mmap()).  Probe.
 */
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
	/* A user context's page is mapped into its process whole. */
	if (!PAGE_ALIGNED(shm.addr)) {
		dev_err(&dev->vdev->dev, "doorbell region at %#llx: not page aligned\n",
			(unsigned long long)shm.addr);
		return -ENODEV;
	}
	dev->db_base = shm.addr;
	dev->db_len = shm.len;
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
 * Set r's geometry: 1 << log_entries entries of 1 << log_stride bytes and
 * the trailer, in whole pages (the spec's npages); -EINVAL out of range.
 */
static int vrdma_ring_geometry(struct vrdma_ring *r, u8 log_entries,
			       u8 log_stride)
{
	size_t bytes;

	BUILD_BUG_ON(PAGE_SIZE != VIRTIO_RDMA_PAGE_SIZE);
	memset(r, 0, sizeof(*r));
	if (log_entries > VIRTIO_RDMA_RING_MAX_LOG_ENTRIES ||
	    log_stride < VIRTIO_RDMA_RING_MIN_LOG_STRIDE ||
	    log_stride > VIRTIO_RDMA_RING_MAX_LOG_STRIDE)
		return -EINVAL;
	r->log_entries = log_entries;
	r->log_stride = log_stride;
	bytes = vrdma_ring_entries_bytes(r) +
		sizeof(struct virtio_rdma_ring_trailer);
	r->npages = DIV_ROUND_UP(bytes, VIRTIO_RDMA_PAGE_SIZE);
	return 0;
}

/*
 * A zeroed ring of at least min_entries (a power of two, >= 1) entries of
 * at least entry_bytes each (at most a page), and its trailer.
 */
int vrdma_ring_alloc(struct vrdma_ring *r, u32 min_entries, u32 entry_bytes)
{
	int err;

	err = vrdma_ring_geometry(r, order_base_2(max(min_entries, 1u)),
				  max_t(u8, VIRTIO_RDMA_RING_MIN_LOG_STRIDE,
					order_base_2(entry_bytes)));
	if (err)
		return err;
	/* Page-aligned, whole pages: an entry never crosses a page. */
	r->va = vzalloc((size_t)r->npages * VIRTIO_RDMA_PAGE_SIZE);
	if (!r->va)
		return -ENOMEM;
	r->trailer = r->va + vrdma_ring_entries_bytes(r);
	return 0;
}

/*
 * A user queue's ring: the process's memory at va, of the geometry it
 * chose (its caller checked va, the logs and the queue's needs against
 * the request first, with the errnos of its verb), pinned until
 * vrdma_ring_free().  The process zeroed it; the driver never looks into
 * it.  LOCAL_WRITE: the device writes it, so it must be writable memory.
 */
int vrdma_ring_get_user(struct vrdma_ring *r, struct ib_device *ib, u64 va,
			u8 log_entries, u8 log_stride)
{
	struct ib_umem *umem;
	int err;

	err = vrdma_ring_geometry(r, log_entries, log_stride);
	if (err)
		return err;
	if (!va || !PAGE_ALIGNED(va))
		return -EINVAL;
	umem = ib_umem_get(ib, va, (size_t)r->npages * VIRTIO_RDMA_PAGE_SIZE,
			   IB_ACCESS_LOCAL_WRITE);
	if (IS_ERR(umem))
		return PTR_ERR(umem);
	/* Page aligned and whole pages: one 4 KiB block per ring page. */
	if (ib_umem_num_dma_blocks(umem, SZ_4K) != r->npages) {
		ib_umem_release(umem);
		return -EINVAL;
	}
	r->umem = umem;
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
	if (!vrdma_ring_present(r))
		return 0;	/* a queue with no work requests has no ring */
	if (r->umem) {
		err = vrdma_pt_from_umem(pt, r->umem, r->npages);
		if (err)
			return err;
	} else {
		err = vrdma_pt_alloc(pt, r->npages, GFP_KERNEL);
		if (err)
			return err;
		/* Direct DMA (checked at probe): guest-physical addresses. */
		for (i = 0; i < r->npages; i++)
			vrdma_pt_set(pt, i, page_to_phys(vmalloc_to_page(
					r->va + (size_t)i * VIRTIO_RDMA_PAGE_SIZE)));
	}
	desc->pages = cpu_to_le64(virt_to_phys(pt->top));
	desc->npages = cpu_to_le32(r->npages);
	desc->log_entries = r->log_entries;
	desc->log_stride = r->log_stride;
	return 0;
}

/*
 * Only once the device has let go of it (DESTROY_* succeeded, or reset):
 * until then a user ring stays pinned, so the device never writes a page
 * that went back to the allocator.
 */
void vrdma_ring_free(struct vrdma_ring *r)
{
	if (r->umem)
		ib_umem_release(r->umem);
	vfree(r->va);
	memset(r, 0, sizeof(*r));
}

// SPDX-License-Identifier: GPL-2.0
/*
 * Memory regions: DMA MRs (kernel), user MRs (ib_umem -> a two-level page
 * table the device reads once during REG_USER_MR, freed after it; user
 * rings get theirs the same way, vrdma_pt_from_umem()), and
 * fast-registration MRs (a table kept for the MR's life and rewritten by
 * every map_mr_sg, which block drivers call in atomic context: its command
 * goes in the MR's own control buffer, vrdma_cmd_atomic()).
 *
 * The device works in 4 KiB pages and guest-physical addresses: with no
 * VIRTIO_F_ACCESS_PLATFORM the DMA addresses of our PCI function are
 * guest-physical.
 */
#include "vrdma.h"

#define VRDMA_ACCESS_OK \
	(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | \
	 IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC | \
	 IB_ACCESS_RELAXED_ORDERING)

/* Optional access bits the device does not know are dropped, not refused. */
static int vrdma_access(int access, u32 *out)
{
	access &= ~(IB_ACCESS_OPTIONAL & ~IB_ACCESS_RELAXED_ORDERING);
	if (access & ~VRDMA_ACCESS_OK)
		return -EOPNOTSUPP;
	*out = access;
	return 0;
}

static void vrdma_mr_fill(struct vrdma_mr *mr, const struct virtio_rdma_rsp_mr *r)
{
	mr->mrn = le32_to_cpu(r->mrn);
	mr->ibmr.lkey = le32_to_cpu(r->lkey);
	mr->ibmr.rkey = le32_to_cpu(r->rkey);
}

struct ib_mr *vrdma_get_dma_mr(struct ib_pd *pd, int access)
{
	struct virtio_rdma_cmd_get_dma_mr cmd = {
		.pdn = cpu_to_le32(to_vpd(pd)->pdn),
	};
	struct virtio_rdma_rsp_mr r;
	struct vrdma_mr *mr;
	u32 acc;
	int err;

	err = vrdma_access(access, &acc);
	if (err)
		return ERR_PTR(err);
	cmd.access_flags = cpu_to_le32(acc);
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	err = vrdma_cmd(to_vdev(pd->device), VIRTIO_RDMA_CMD_GET_DMA_MR, &cmd,
			sizeof(cmd), &r, sizeof(r));
	if (err) {
		kfree(mr);
		return ERR_PTR(err);
	}
	vrdma_mr_fill(mr, &r);
	return &mr->ibmr;
}

static u32 vrdma_pt_nl2(u32 npages)
{
	return DIV_ROUND_UP(npages, VIRTIO_RDMA_PT_ENTRIES);
}

static u32 vrdma_pt_nl1(u32 npages)
{
	return DIV_ROUND_UP(vrdma_pt_nl2(npages), VIRTIO_RDMA_PT_ENTRIES);
}

/*
 * A table for npages (1..VIRTIO_RDMA_MAX_MR_PAGES) data pages: two levels
 * up to VIRTIO_RDMA_PT2_PAGES, else three.  MRs and the rings of queues in
 * guest memory (vrdma_ring.c) describe their pages to the device with it.
 */
int vrdma_pt_alloc(struct vrdma_pt *pt, u32 npages, gfp_t gfp)
{
	u32 i, nl2 = vrdma_pt_nl2(npages), nl1 = vrdma_pt_nl1(npages);

	memset(pt, 0, sizeof(*pt));
	pt->max_pages = npages;		/* vrdma_pt_free undoes a partial table */
	pt->l1 = kcalloc(nl1, sizeof(*pt->l1), gfp);
	pt->l2 = kvcalloc(nl2, sizeof(*pt->l2), gfp);
	if (!pt->l1 || !pt->l2)
		return -ENOMEM;
	if (nl1 > 1) {
		pt->l0 = (u64 *)get_zeroed_page(gfp);
		if (!pt->l0)
			return -ENOMEM;
	}
	for (i = 0; i < nl1; i++) {
		pt->l1[i] = (u64 *)get_zeroed_page(gfp);
		if (!pt->l1[i])
			return -ENOMEM;
		if (pt->l0)
			pt->l0[i] = cpu_to_le64(virt_to_phys(pt->l1[i]));
	}
	for (i = 0; i < nl2; i++) {
		pt->l2[i] = (u64 *)get_zeroed_page(gfp);
		if (!pt->l2[i])
			return -ENOMEM;
		pt->l1[i / VIRTIO_RDMA_PT_ENTRIES][i % VIRTIO_RDMA_PT_ENTRIES] =
			cpu_to_le64(virt_to_phys(pt->l2[i]));
		if (!(i % 4096))
			cond_resched();	/* 512 GiB: 262144 pages */
	}
	pt->top = pt->l0 ? pt->l0 : pt->l1[0];
	return 0;
}

void vrdma_pt_free(struct vrdma_pt *pt)
{
	u32 i;

	if (pt->l2)
		for (i = 0; i < vrdma_pt_nl2(pt->max_pages); i++)
			free_page((unsigned long)pt->l2[i]);
	if (pt->l1)
		for (i = 0; i < vrdma_pt_nl1(pt->max_pages); i++)
			free_page((unsigned long)pt->l1[i]);
	kvfree(pt->l2);
	kfree(pt->l1);
	free_page((unsigned long)pt->l0);
	memset(pt, 0, sizeof(*pt));
}

void vrdma_pt_set(struct vrdma_pt *pt, u32 i, u64 addr)
{
	pt->l2[i / VIRTIO_RDMA_PT_ENTRIES][i % VIRTIO_RDMA_PT_ENTRIES] =
		cpu_to_le64(addr);
}

/*
 * A table of the umem's 4 KiB blocks, of which its caller counted npages
 * (ib_umem_num_dma_blocks()): a user MR's pages, a user queue's ring.  For
 * the one command that walks it; vrdma_pt_free() after, or on failure.
 */
int vrdma_pt_from_umem(struct vrdma_pt *pt, struct ib_umem *umem, u32 npages)
{
	struct ib_block_iter it;
	u32 i = 0;
	int err;

	err = vrdma_pt_alloc(pt, npages, GFP_KERNEL);
	if (err)
		return err;
	rdma_umem_for_each_dma_block(umem, &it, SZ_4K) {
		if (i < npages)
			vrdma_pt_set(pt, i, rdma_block_iter_dma_address(&it));
		i++;
	}
	return WARN_ON(i != npages) ? -EINVAL : 0;
}

struct ib_mr *vrdma_reg_user_mr(struct ib_pd *pd, u64 start, u64 length,
				u64 virt_addr, int access,
				struct ib_udata *udata)
{
	struct vrdma_dev *dev = to_vdev(pd->device);
	struct virtio_rdma_cmd_reg_user_mr cmd = {};
	struct virtio_rdma_rsp_mr r;
	struct vrdma_mr *mr;
	u64 npages;
	u32 acc;
	int err;

	if (udata && (udata->inlen || udata->outlen))
		return ERR_PTR(-EINVAL);
	err = vrdma_access(access, &acc);
	if (err)
		return ERR_PTR(err);
	if (!length || length > dev->cfg.max_mr_size)
		return ERR_PTR(-EINVAL);
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->umem = ib_umem_get(pd->device, start, length, access);
	if (IS_ERR(mr->umem)) {
		err = PTR_ERR(mr->umem);
		mr->umem = NULL;
		goto err_free;
	}
	/* The IOVA must share the buffer's offset in its 4 KiB page. */
	if (!ib_umem_find_best_pgsz(mr->umem, SZ_4K, virt_addr)) {
		err = -EINVAL;
		goto err_umem;
	}
	npages = ib_umem_num_dma_blocks(mr->umem, SZ_4K);
	if (!npages || npages > VIRTIO_RDMA_MAX_MR_PAGES) {
		err = -EINVAL;
		goto err_umem;
	}
	err = vrdma_pt_from_umem(&mr->pt, mr->umem, npages);
	if (err)
		goto err_pt;
	cmd.pdn = cpu_to_le32(to_vpd(pd)->pdn);
	cmd.access_flags = cpu_to_le32(acc);
	cmd.start = cpu_to_le64(start);
	cmd.length = cpu_to_le64(length);
	cmd.virt_addr = cpu_to_le64(virt_addr);
	cmd.pages = cpu_to_le64(virt_to_phys(mr->pt.top));
	cmd.npages = cpu_to_le32(npages);
	err = vrdma_cmd(dev, VIRTIO_RDMA_CMD_REG_USER_MR, &cmd, sizeof(cmd), &r,
			sizeof(r));
	vrdma_pt_free(&mr->pt);	/* the device read it during the command */
	if (err)
		goto err_umem;
	vrdma_mr_fill(mr, &r);
	mr->ibmr.length = length;
	mr->ibmr.iova = virt_addr;
	return &mr->ibmr;

err_pt:
	vrdma_pt_free(&mr->pt);
err_umem:
	ib_umem_release(mr->umem);
err_free:
	kfree(mr);
	return ERR_PTR(err);
}

struct ib_mr *vrdma_alloc_mr(struct ib_pd *pd, enum ib_mr_type type,
			     u32 max_num_sg)
{
	struct vrdma_dev *dev = to_vdev(pd->device);
	struct virtio_rdma_cmd_create_mr cmd = {
		.pdn = cpu_to_le32(to_vpd(pd)->pdn),
		.max_num_sg = cpu_to_le32(max_num_sg),
	};
	struct virtio_rdma_rsp_mr r;
	struct vrdma_mr *mr;
	int err;

	if (type != IB_MR_TYPE_MEM_REG)
		return ERR_PTR(-EOPNOTSUPP);
	if (!max_num_sg || max_num_sg > dev->cfg.max_fast_reg_page_list_len)
		return ERR_PTR(-EINVAL);
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	vrdma_ctrl_req_init(&mr->map);
	err = vrdma_pt_alloc(&mr->pt, max_num_sg, GFP_KERNEL);
	if (err)
		goto err_free;
	err = vrdma_cmd(dev, VIRTIO_RDMA_CMD_CREATE_MR, &cmd, sizeof(cmd), &r,
			sizeof(r));
	if (err)
		goto err_free;
	vrdma_mr_fill(mr, &r);
	return &mr->ibmr;

err_free:
	vrdma_pt_free(&mr->pt);
	kfree(mr);
	return ERR_PTR(err);
}

static int vrdma_set_page(struct ib_mr *ibmr, u64 addr)
{
	struct vrdma_mr *mr = to_vmr(ibmr);

	if (mr->npages >= mr->pt.max_pages)
		return -ENOMEM;
	vrdma_pt_set(&mr->pt, mr->npages++, addr);
	return 0;
}

int vrdma_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		    unsigned int *sg_offset)
{
	struct vrdma_mr *mr = to_vmr(ibmr);
	struct virtio_rdma_cmd_map_mr_sg cmd = {};
	struct virtio_rdma_rsp_map_mr_sg r;
	int n, err;

	/* The device's pages are 4 KiB; ULPs on x86 ask for exactly that. */
	if (ibmr->page_size != VIRTIO_RDMA_PAGE_SIZE)
		return -EINVAL;
	/* An earlier map the device has yet to answer still reads the table. */
	if (vrdma_ctrl_req_busy(&mr->map))
		return -EAGAIN;
	mr->npages = 0;
	n = ib_sg_to_pages(ibmr, sg, sg_nents, sg_offset, vrdma_set_page);
	if (n <= 0 || !mr->npages)
		return n;
	cmd.mrn = cpu_to_le32(mr->mrn);
	cmd.npages = cpu_to_le32(mr->npages);
	cmd.start = cpu_to_le64(ibmr->iova);
	cmd.length = cpu_to_le64(ibmr->length);
	cmd.pages = cpu_to_le64(virt_to_phys(mr->pt.top));
	err = vrdma_cmd_atomic(to_vdev(ibmr->device), &mr->map,
			       VIRTIO_RDMA_CMD_MAP_MR_SG, &cmd, sizeof(cmd),
			       &r, sizeof(r));
	/* Not answered in time: a block driver retries on -EAGAIN. */
	if (err == -EINPROGRESS || err == -EBUSY)
		return -EAGAIN;
	return err ? err : n;
}

int vrdma_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct vrdma_mr *mr = to_vmr(ibmr);
	struct virtio_rdma_cmd_dereg_mr cmd = { .mrn = cpu_to_le32(mr->mrn) };
	int err;

	err = vrdma_cmd(to_vdev(ibmr->device), VIRTIO_RDMA_CMD_DEREG_MR, &cmd,
			sizeof(cmd), NULL, 0);
	if (err)
		return err;
	if (mr->umem)
		ib_umem_release(mr->umem);
	vrdma_pt_free(&mr->pt);
	kfree(mr);
	return 0;
}

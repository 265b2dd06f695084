// SPDX-License-Identifier: GPL-2.0
/*
 * Device, port, GID, context (and its doorbell mapping), PD, AH and CQ
 * verbs, and the ops table (SRQs: vrdma_srq.c).
 *
 * Everything here runs in process context except create_ah (the CM creates
 * address handles in atomic context): an AH is only a stored address
 * vector, no device command.
 */
#include <linux/if_vlan.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_mad.h>

#include "vrdma.h"

static int vrdma_query_device(struct ib_device *ib, struct ib_device_attr *a,
			      struct ib_udata *udata)
{
	struct vrdma_dev *dev = to_vdev(ib);
	const struct virtio_rdma_config *c = &dev->cfg;

	if (udata && (udata->inlen || udata->outlen))
		return -EINVAL;
	memset(a, 0, sizeof(*a));
	a->fw_ver = 0;
	a->sys_image_guid = c->sys_image_guid;
	a->max_mr_size = c->max_mr_size;
	a->page_size_cap = c->page_size_cap;
	a->vendor_id = c->vendor_id;
	a->vendor_part_id = c->vendor_part_id;
	a->hw_ver = c->hw_ver;
	a->max_qp = dev->nqp;
	a->max_qp_wr = vrdma_max_qp_wr(dev);
	/* Only the flags whose meaning the kernel and the ABI share. */
	a->device_cap_flags = c->device_cap_flags &
		(IB_DEVICE_RC_RNR_NAK_GEN | IB_DEVICE_MEM_MGT_EXTENSIONS |
		 IB_DEVICE_SYS_IMAGE_GUID);
	a->max_send_sge = c->max_send_sge;
	a->max_recv_sge = c->max_recv_sge;
	a->max_sge_rd = c->max_sge_rd;
	a->max_cq = dev->ncq;
	a->max_cqe = vrdma_max_cqe(dev);
	a->max_mr = c->max_mr;
	a->max_pd = c->max_pd;
	a->max_qp_rd_atom = c->max_qp_rd_atom;
	a->max_res_rd_atom = c->max_res_rd_atom;
	a->max_qp_init_rd_atom = c->max_qp_init_rd_atom;
	a->atomic_cap = c->atomic_cap == VIRTIO_RDMA_ATOMIC_HCA ? IB_ATOMIC_HCA :
								 IB_ATOMIC_NONE;
	a->max_ah = c->max_ah;
	a->max_fast_reg_page_list_len = c->max_fast_reg_page_list_len;
	a->max_pkeys = c->max_pkeys;
	a->local_ca_ack_delay = c->local_ca_ack_delay;
	/* 0 on a device without SRQs (vrdma_probe()); no resize (SRQ_RESIZE). */
	a->max_srq = c->max_srq;
	a->max_srq_wr = c->max_srq_wr;
	a->max_srq_sge = c->max_srq_sge;
	return 0;
}

static int vrdma_query_port(struct ib_device *ib, u32 port,
			    struct ib_port_attr *a)
{
	struct vrdma_dev *dev = to_vdev(ib);
	struct virtio_rdma_cmd_query_port cmd = { .port = cpu_to_le32(port) };
	struct virtio_rdma_port_attr r;
	int err, mtu;

	err = vrdma_cmd(dev, VIRTIO_RDMA_CMD_QUERY_PORT, &cmd, sizeof(cmd),
			&r, sizeof(r));
	if (err)
		return err;
	/* The core zeroes *a.  State and MTU follow the paired NIC. */
	a->max_mtu = min_t(u32, le32_to_cpu(r.max_mtu), IB_MTU_4096);
	a->active_mtu = min_t(u32, le32_to_cpu(r.active_mtu), IB_MTU_4096);
	mtu = vrdma_netdev_mtu(dev);
	if (mtu)
		a->active_mtu = min_t(u32, a->active_mtu, iboe_get_mtu(mtu));
	if (vrdma_port_up(dev)) {
		a->state = IB_PORT_ACTIVE;
		a->phys_state = IB_PORT_PHYS_STATE_LINK_UP;
	} else {
		a->state = IB_PORT_DOWN;
		a->phys_state = IB_PORT_PHYS_STATE_DISABLED;
	}
	a->gid_tbl_len = le32_to_cpu(r.gid_tbl_len);
	a->port_cap_flags = le32_to_cpu(r.port_cap_flags);
	a->max_msg_sz = le32_to_cpu(r.max_msg_sz);
	a->bad_pkey_cntr = le32_to_cpu(r.bad_pkey_cntr);
	a->qkey_viol_cntr = le32_to_cpu(r.qkey_viol_cntr);
	a->pkey_tbl_len = le16_to_cpu(r.pkey_tbl_len);
	a->active_width = r.active_width;
	a->active_speed = le16_to_cpu(r.active_speed);
	a->ip_gids = true;
	return 0;
}

static int vrdma_get_port_immutable(struct ib_device *ib, u32 port,
				    struct ib_port_immutable *im)
{
	struct ib_port_attr a = {};
	int err;

	err = ib_query_port(ib, port, &a);
	if (err)
		return err;
	im->pkey_tbl_len = a.pkey_tbl_len;
	im->gid_tbl_len = a.gid_tbl_len;
	im->core_cap_flags = RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
	im->max_mad_size = IB_MGMT_MAD_SIZE;
	return 0;
}

static enum rdma_link_layer vrdma_get_link_layer(struct ib_device *ib, u32 port)
{
	return IB_LINK_LAYER_ETHERNET;
}

static int vrdma_query_pkey(struct ib_device *ib, u32 port, u16 index, u16 *pkey)
{
	struct virtio_rdma_cmd_query_pkey cmd = {
		.port = cpu_to_le32(port),
		.index = cpu_to_le16(index),
	};
	struct virtio_rdma_rsp_query_pkey r;
	int err;

	err = vrdma_cmd(to_vdev(ib), VIRTIO_RDMA_CMD_QUERY_PKEY, &cmd,
			sizeof(cmd), &r, sizeof(r));
	if (!err)
		*pkey = le16_to_cpu(r.pkey);
	return err;
}

/* The RDMA core derives the GIDs from the NIC's addresses; we mirror them. */
static int vrdma_add_gid(const struct ib_gid_attr *attr, void **context)
{
	struct virtio_rdma_cmd_add_gid cmd = {};

	if (attr->ndev && is_vlan_dev(attr->ndev))
		return -EOPNOTSUPP;	/* ADD_GID carries no VLAN */
	if (attr->gid_type != IB_GID_TYPE_ROCE_UDP_ENCAP)
		return -EOPNOTSUPP;
	memcpy(cmd.gid, attr->gid.raw, sizeof(cmd.gid));
	cmd.gid_type = cpu_to_le32(VIRTIO_RDMA_GID_TYPE_ROCE_UDP_ENCAP);
	cmd.index = cpu_to_le16(attr->index);
	cmd.port_num = cpu_to_le32(attr->port_num);
	return vrdma_cmd(to_vdev(attr->device), VIRTIO_RDMA_CMD_ADD_GID, &cmd,
			 sizeof(cmd), NULL, 0);
}

static int vrdma_del_gid(const struct ib_gid_attr *attr, void **context)
{
	struct virtio_rdma_cmd_del_gid cmd = {
		.index = cpu_to_le16(attr->index),
		.port = cpu_to_le32(attr->port_num),
	};

	return vrdma_cmd(to_vdev(attr->device), VIRTIO_RDMA_CMD_DEL_GID, &cmd,
			 sizeof(cmd), NULL, 0);
}

static int vrdma_free_context_cmd(struct vrdma_dev *dev, u32 ctx)
{
	struct virtio_rdma_cmd_free_context cmd = { .ctx = cpu_to_le32(ctx) };
	int err;

	err = vrdma_cmd(dev, VIRTIO_RDMA_CMD_FREE_CONTEXT, &cmd, sizeof(cmd),
			NULL, 0);
	if (err)
		dev_warn(&dev->vdev->dev, "FREE_CONTEXT %u: %d\n", ctx, err);
	return err;
}

/*
 * A device context for the process, and its doorbell page as the one
 * thing it may mmap (at the offset the response gives).
 */
static int vrdma_alloc_ucontext(struct ib_ucontext *ibuc, struct ib_udata *udata)
{
	struct vrdma_dev *dev = to_vdev(ibuc->device);
	struct vrdma_ucontext *uc = to_vuc(ibuc);
	struct virtio_rdma_uresp_alloc_ucontext resp = {};
	struct virtio_rdma_rsp_alloc_context r;
	struct vrdma_mmap_entry *e;
	u32 ctx;
	int err;

	if (!udata || udata->outlen < sizeof(resp))
		return -EINVAL;	/* not the ring-capable provider */
	err = vrdma_cmd(dev, VIRTIO_RDMA_CMD_ALLOC_CONTEXT, NULL, 0, &r,
			sizeof(r));
	if (err)
		return err;
	ctx = le32_to_cpu(r.ctx);
	if (ctx == VIRTIO_RDMA_KERNEL_CTX || ctx > dev->cfg.max_ctx ||
	    (u64)(ctx + 1) * VIRTIO_RDMA_DB_PAGE > dev->db_len) {
		dev_err(&dev->vdev->dev, "device gave context %u: not usable\n", ctx);
		err = -EIO;
		if (ctx == VIRTIO_RDMA_KERNEL_CTX)
			return err;	/* the kernel's own: never freed */
		goto err_free_ctx;
	}
	e = kzalloc(sizeof(*e), GFP_KERNEL);
	if (!e) {
		err = -ENOMEM;
		goto err_free_ctx;
	}
	e->addr = dev->db_base + (phys_addr_t)ctx * VIRTIO_RDMA_DB_PAGE;
	err = rdma_user_mmap_entry_insert(ibuc, &e->rdma, PAGE_SIZE);
	if (err) {
		kfree(e);
		goto err_free_ctx;
	}
	uc->ctx = ctx;
	uc->db = e;
	resp.ctx = ctx;
	resp.db_mmap_offset = rdma_user_mmap_get_offset(&e->rdma);
	err = ib_copy_to_udata(udata, &resp, sizeof(resp));
	if (err)
		goto err_entry;
	return 0;

err_entry:
	rdma_user_mmap_entry_remove(&e->rdma);	/* never mapped: freed now */
	uc->db = NULL;
err_free_ctx:
	vrdma_free_context_cmd(dev, ctx);
	return err;
}

/*
 * Entry first, then FREE_CONTEXT.  uverbs calls this only when every
 * object of the context is destroyed (so the device finds it owning no
 * queue) and every mapping of its file is gone (a VMA holds the file, so
 * it is being released) or zapped (disassociation,
 * uverbs_user_mmap_disassociate()); removing the entry stops any later
 * mmap() of the page.  So once FREE_CONTEXT lets the device give the
 * context, and with it the doorbell page, to another process, no mapping
 * of this process can ring that process's queues.
 */
static void vrdma_dealloc_ucontext(struct ib_ucontext *ibuc)
{
	struct vrdma_ucontext *uc = to_vuc(ibuc);

	if (!uc->db)
		return;
	rdma_user_mmap_entry_remove(&uc->db->rdma);
	uc->db = NULL;
	vrdma_free_context_cmd(to_vdev(ibuc->device), uc->ctx);
}

/*
 * The core zaps the user mappings itself (the doorbell page included)
 * before it calls this; the context and its queues go with dealloc and
 * the destroy verbs, as on a close.
 */
static void vrdma_disassociate_ucontext(struct ib_ucontext *uc)
{
}

/*
 * The one mapping there is: the process's own doorbell page (its
 * context's entry; another context's offset is not found in this one),
 * one page, shared, not asked for PROT_EXEC, uncached (each doorbell is
 * one 8-byte MMIO write the device acts on at once).
 */
static int vrdma_mmap(struct ib_ucontext *ibuc, struct vm_area_struct *vma)
{
	struct rdma_user_mmap_entry *re;
	int err;

	if ((vma->vm_flags & VM_EXEC) || vma->vm_end - vma->vm_start != PAGE_SIZE)
		return -EINVAL;
	/* Only an entry of this context, of exactly its size, VM_SHARED. */
	re = rdma_user_mmap_entry_get(ibuc, vma);
	if (!re)
		return -EINVAL;
	err = rdma_user_mmap_io(ibuc, vma,
				PHYS_PFN(container_of(re, struct vrdma_mmap_entry,
						      rdma)->addr),
				PAGE_SIZE, pgprot_noncached(vma->vm_page_prot),
				re);
	rdma_user_mmap_entry_put(re);
	return err;
}

/* The entry's last reference is gone: removed, and no mapping left. */
static void vrdma_mmap_free(struct rdma_user_mmap_entry *re)
{
	kfree(container_of(re, struct vrdma_mmap_entry, rdma));
}

static int vrdma_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct virtio_rdma_rsp_create_pd r;
	int err;

	err = vrdma_cmd(to_vdev(ibpd->device), VIRTIO_RDMA_CMD_CREATE_PD, NULL,
			0, &r, sizeof(r));
	if (!err)
		to_vpd(ibpd)->pdn = le32_to_cpu(r.pdn);
	return err;
}

static int vrdma_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct virtio_rdma_cmd_destroy_pd cmd = {
		.pdn = cpu_to_le32(to_vpd(ibpd)->pdn),
	};

	return vrdma_cmd(to_vdev(ibpd->device), VIRTIO_RDMA_CMD_DESTROY_PD, &cmd,
			 sizeof(cmd), NULL, 0);
}

static int vrdma_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init,
			   struct ib_udata *udata)
{
	struct rdma_ah_attr *a = init->ah_attr;
	const struct ib_global_route *grh = rdma_ah_read_grh(a);
	struct vrdma_dev *dev = to_vdev(ibah->device);
	struct virtio_rdma_av *av = &to_vah(ibah)->av;

	if (a->type != RDMA_AH_ATTR_TYPE_ROCE ||
	    !(rdma_ah_get_ah_flags(a) & IB_AH_GRH))
		return -EINVAL;
	if (grh->sgid_index >= 16 ||
	    grh->sgid_index >= dev->ib.port_data[VRDMA_PORT].immutable.gid_tbl_len)
		return -EINVAL;
	memset(av, 0, sizeof(*av));
	av->port = cpu_to_le32(VRDMA_PORT);
	av->pdn = cpu_to_le32(to_vpd(ibah->pd)->pdn);
	av->sl_tclass_flowlabel =
		cpu_to_le32((u32)rdma_ah_get_sl(a) << 28 |
			    (u32)grh->traffic_class << 20 |
			    (grh->flow_label & 0xfffff));
	memcpy(av->dgid, grh->dgid.raw, sizeof(av->dgid));
	av->gid_index = grh->sgid_index;
	av->static_rate = rdma_ah_get_static_rate(a);
	av->hop_limit = grh->hop_limit;
	memcpy(av->dmac, a->roce.dmac, ETH_ALEN);
	/*
	 * create_user_ah: the ring-capable provider copies the AV into its UD
	 * send entries (uverbs runs this in process context).  The
	 * virtqueue-mode provider gives no room and gets nothing.
	 */
	if (udata && udata->outlen >= sizeof(struct virtio_rdma_uresp_create_ah)) {
		struct virtio_rdma_uresp_create_ah resp;

		memset(&resp, 0, sizeof(resp));
		resp.av = *av;
		return ib_copy_to_udata(udata, &resp, sizeof(resp));
	}
	return 0;
}

static int vrdma_destroy_ah(struct ib_ah *ibah, u32 flags)
{
	return 0;
}

/*
 * CREATE_CQ_RING of cq->ring (its caller made it) for context ctx;
 * the cqn in r, or a negative errno with the ring freed.
 */
static int vrdma_create_cq_ring(struct vrdma_dev *dev, struct vrdma_cq *cq,
				u32 ctx, u32 cqe,
				struct virtio_rdma_rsp_create_cq *r)
{
	struct virtio_rdma_cmd_create_cq_ring cmd = {
		.ctx = cpu_to_le32(ctx),
		.cqe = cpu_to_le32(cqe),
	};
	struct vrdma_pt pt;
	int err;

	err = vrdma_ring_desc(&cq->ring, &pt, &cmd.ring);
	if (!err)
		err = vrdma_cmd(dev, VIRTIO_RDMA_CMD_CREATE_CQ_RING, &cmd,
				sizeof(cmd), r, sizeof(*r));
	vrdma_pt_free(&pt);	/* the device walked it during the command */
	if (err)
		vrdma_ring_free(&cq->ring);
	cq->cons = 0;
	return err;
}

/*
 * A user CQ: the provider's ring (virtio_rdma_ucmd_create_cq),
 * checked against the request before the device hears of it, pinned.
 */
static int vrdma_user_cq_ring(struct vrdma_dev *dev, struct vrdma_cq *cq,
			      const struct ib_cq_init_attr *attr,
			      struct ib_udata *udata)
{
	struct virtio_rdma_ucmd_create_cq ucmd;
	int err;

	err = vrdma_udata_in(udata, &ucmd, sizeof(ucmd));
	if (err)
		return err;
	if (udata->outlen < sizeof(struct virtio_rdma_uresp_create_cq) ||
	    memchr_inv(ucmd.reserved, 0, sizeof(ucmd.reserved)) ||
	    !ucmd.ring_va || !PAGE_ALIGNED(ucmd.ring_va) ||
	    ucmd.log_entries > VIRTIO_RDMA_RING_MAX_LOG_ENTRIES ||
	    (1u << ucmd.log_entries) < attr->cqe)
		return -EINVAL;
	return vrdma_ring_get_user(&cq->ring, &dev->ib, ucmd.ring_va,
				   ucmd.log_entries, VIRTIO_RDMA_CQE_LOG_STRIDE);
}

static int vrdma_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
			   VRDMA_CREATE_CQ_LAST_ARG)
{
	struct ib_udata *ud = VRDMA_CREATE_CQ_UDATA;
	struct vrdma_dev *dev = to_vdev(ibcq->device);
	struct vrdma_cq *cq = to_vcq(ibcq);
	struct virtio_rdma_rsp_create_cq r;
	u32 ctx = VIRTIO_RDMA_KERNEL_CTX;
	bool user = ibcq->uobject;
	unsigned long flags;
	u32 cqn;
	int err;

	BUILD_BUG_ON(sizeof(struct virtio_rdma_cqe) !=
		     1u << VIRTIO_RDMA_CQE_LOG_STRIDE);
	if (attr->flags || attr->cqe < 1 || attr->cqe > vrdma_max_cqe(dev))
		return -EINVAL;
	if (user) {
		/* The provider polls the ring and arms it by doorbell itself. */
		err = vrdma_user_cq_ring(dev, cq, attr, ud);
		if (err)
			return err;
		ctx = rdma_udata_to_drv_context(ud, struct vrdma_ucontext,
						ibuc)->ctx;
		err = vrdma_create_cq_ring(dev, cq, ctx, attr->cqe, &r);
	} else {
		err = vrdma_ring_alloc(&cq->ring, attr->cqe,
				       sizeof(struct virtio_rdma_cqe));
		if (!err)
			err = vrdma_create_cq_ring(dev, cq, ctx, attr->cqe, &r);
	}
	if (err)
		return err;
	cqn = le32_to_cpu(r.cqn);
	if (cqn >= dev->ncq) {
		err = -EIO;
		goto err_destroy;
	}
	cq->cqn = cqn;
	cq->ctx = ctx;
	spin_lock_init(&cq->lock);
	ibcq->cqe = attr->cqe;
	if (user) {
		struct virtio_rdma_uresp_create_cq resp = { .cqn = cqn };

		err = ib_copy_to_udata(ud, &resp, sizeof(resp));
		if (err)
			goto err_destroy;
	}
	spin_lock_irqsave(&dev->cq_table_lock, flags);
	dev->cqs[cqn] = cq;
	spin_unlock_irqrestore(&dev->cq_table_lock, flags);
	return 0;

err_destroy:
	{
		struct virtio_rdma_cmd_destroy_cq d = { .cqn = r.cqn };

		/* A ring the device may still hold is left to it. */
		if (!vrdma_cmd(dev, VIRTIO_RDMA_CMD_DESTROY_CQ, &d, sizeof(d),
			       NULL, 0))
			vrdma_ring_free(&cq->ring);
	}
	return err;
}

static int vrdma_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct vrdma_dev *dev = to_vdev(ibcq->device);
	struct vrdma_cq *cq = to_vcq(ibcq);
	struct virtio_rdma_cmd_destroy_cq cmd = { .cqn = cpu_to_le32(cq->cqn) };
	unsigned long flags;
	int err;

	err = vrdma_cmd(dev, VIRTIO_RDMA_CMD_DESTROY_CQ, &cmd, sizeof(cmd),
			NULL, 0);
	if (err)
		return err;
	spin_lock_irqsave(&dev->cq_table_lock, flags);
	dev->cqs[cq->cqn] = NULL;
	spin_unlock_irqrestore(&dev->cq_table_lock, flags);
	vrdma_ring_free(&cq->ring);	/* the device let go of it: unpin */
	return 0;
}

const struct ib_device_ops vrdma_dev_ops = {
	.owner = THIS_MODULE,
	.driver_id = RDMA_DRIVER_UNKNOWN,
	/* libibverbs loads only a provider built for this ABI. */
	.uverbs_abi_ver = VIRTIO_RDMA_UVERBS_ABI_RINGS,

	.query_device = vrdma_query_device,
	.query_port = vrdma_query_port,
	.get_port_immutable = vrdma_get_port_immutable,
	.get_link_layer = vrdma_get_link_layer,
	.query_pkey = vrdma_query_pkey,
	.add_gid = vrdma_add_gid,
	.del_gid = vrdma_del_gid,
	.alloc_ucontext = vrdma_alloc_ucontext,
	.dealloc_ucontext = vrdma_dealloc_ucontext,
	.disassociate_ucontext = vrdma_disassociate_ucontext,
	.mmap = vrdma_mmap,
	.mmap_free = vrdma_mmap_free,
	.alloc_pd = vrdma_alloc_pd,
	.dealloc_pd = vrdma_dealloc_pd,
	.create_ah = vrdma_create_ah,
	.create_user_ah = vrdma_create_ah,
	.destroy_ah = vrdma_destroy_ah,
	.create_cq = vrdma_create_cq,
	.destroy_cq = vrdma_destroy_cq,
	.poll_cq = vrdma_poll_cq,
	.req_notify_cq = vrdma_req_notify_cq,
	.create_qp = vrdma_create_qp,
	.modify_qp = vrdma_modify_qp,
	.query_qp = vrdma_query_qp,
	.destroy_qp = vrdma_destroy_qp,
	.post_send = vrdma_post_send,
	.post_recv = vrdma_post_recv,
	.get_dma_mr = vrdma_get_dma_mr,
	.reg_user_mr = vrdma_reg_user_mr,
	.alloc_mr = vrdma_alloc_mr,
	.map_mr_sg = vrdma_map_mr_sg,
	.dereg_mr = vrdma_dereg_mr,
	.create_srq = vrdma_create_srq,
	.modify_srq = vrdma_modify_srq,
	.query_srq = vrdma_query_srq,
	.destroy_srq = vrdma_destroy_srq,
	.post_srq_recv = vrdma_post_srq_recv,

	INIT_RDMA_OBJ_SIZE(ib_ah, vrdma_ah, ibah),
	INIT_RDMA_OBJ_SIZE(ib_cq, vrdma_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_pd, vrdma_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, vrdma_qp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_srq, vrdma_srq, ibsrq),
	INIT_RDMA_OBJ_SIZE(ib_ucontext, vrdma_ucontext, ibuc),
};

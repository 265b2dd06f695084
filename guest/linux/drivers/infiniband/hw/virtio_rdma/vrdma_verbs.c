// SPDX-License-Identifier: GPL-2.0
/*
 * Device, port, GID, context, PD, AH and CQ verbs, and the ops table.
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
	a->max_qp = c->max_qp;
	a->max_qp_wr = c->max_qp_wr;
	/* Only the flags whose meaning the kernel and the ABI share. */
	a->device_cap_flags = c->device_cap_flags &
		(IB_DEVICE_RC_RNR_NAK_GEN | IB_DEVICE_MEM_MGT_EXTENSIONS |
		 IB_DEVICE_SYS_IMAGE_GUID);
	a->max_send_sge = c->max_send_sge;
	a->max_recv_sge = c->max_recv_sge;
	a->max_sge_rd = c->max_sge_rd;
	a->max_cq = c->max_cq;
	a->max_cqe = c->max_cqe;
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
	a->max_srq = 0;
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

static int vrdma_alloc_ucontext(struct ib_ucontext *uc, struct ib_udata *udata)
{
	return 0;
}

static void vrdma_dealloc_ucontext(struct ib_ucontext *uc)
{
}

/* Nothing is mapped into user space, so there is nothing to revoke. */
static void vrdma_disassociate_ucontext(struct ib_ucontext *uc)
{
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
	return 0;
}

static int vrdma_destroy_ah(struct ib_ah *ibah, u32 flags)
{
	return 0;
}

/*
 * RINGS: CREATE_CQ_RING of a zeroed ring of at least cqe entries for the
 * kernel's context; its cqn, or a negative errno with nothing left.
 */
static int vrdma_create_cq_ring(struct vrdma_dev *dev, struct vrdma_cq *cq,
				u32 cqe, struct virtio_rdma_rsp_create_cq *r)
{
	struct virtio_rdma_cmd_create_cq_ring cmd = {
		.ctx = cpu_to_le32(VIRTIO_RDMA_KERNEL_CTX),
		.cqe = cpu_to_le32(cqe),
	};
	struct vrdma_pt pt;
	int err;

	BUILD_BUG_ON(sizeof(struct virtio_rdma_cqe) !=
		     1u << VIRTIO_RDMA_CQE_LOG_STRIDE);
	err = vrdma_ring_alloc(&cq->ring, cqe, sizeof(struct virtio_rdma_cqe));
	if (err)
		return err;
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

static int vrdma_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
			   VRDMA_CREATE_CQ_LAST_ARG)
{
	struct vrdma_dev *dev = to_vdev(ibcq->device);
	struct vrdma_cq *cq = to_vcq(ibcq);
	struct virtio_rdma_cmd_create_cq cmd;
	struct virtio_rdma_rsp_create_cq r;
	unsigned long flags;
	u32 cqn;
	int err;

	if (attr->flags || attr->cqe < 1 || attr->cqe > dev->cfg.max_cqe)
		return -EINVAL;
	/* RINGS: the provider cannot poll a ring yet (vrdma_ring.c). */
	if (dev->rings && ibcq->uobject)
		return -EOPNOTSUPP;
	cmd.cqe = cpu_to_le32(attr->cqe);
	if (dev->rings)
		err = vrdma_create_cq_ring(dev, cq, attr->cqe, &r);
	else
		err = vrdma_cmd(dev, VIRTIO_RDMA_CMD_CREATE_CQ, &cmd,
				sizeof(cmd), &r, sizeof(r));
	if (err)
		return err;
	cqn = le32_to_cpu(r.cqn);
	if (cqn >= dev->max_cq) {
		err = -EIO;
		goto err_destroy;
	}
	cq->cqn = cqn;
	cq->cv = &dev->cqvqs[cqn];
	vrdma_ctrl_req_init(&cq->arm, cqn);
	spin_lock_init(&cq->lock);
	ibcq->cqe = attr->cqe;
	if (!dev->rings) {
		err = vrdma_cqvq_prepare(dev, cqn);
		if (err)
			goto err_destroy;
		vrdma_cqvq_drain(cq);	/* nothing of an earlier CQ may show */
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
	/* An abandoned arm came back before DESTROY_CQ: its event is moot. */
	clear_bit(cq->cqn, dev->ctrl_events);
	if (dev->rings)
		vrdma_ring_free(&cq->ring);	/* the device let go of it */
	else
		vrdma_cqvq_drain(cq);
	return 0;
}

const struct ib_device_ops vrdma_dev_ops = {
	.owner = THIS_MODULE,
	.driver_id = RDMA_DRIVER_UNKNOWN,
	.uverbs_abi_ver = 1,

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

	INIT_RDMA_OBJ_SIZE(ib_ah, vrdma_ah, ibah),
	INIT_RDMA_OBJ_SIZE(ib_cq, vrdma_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_pd, vrdma_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, vrdma_qp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_ucontext, vrdma_ucontext, ibuc),
};

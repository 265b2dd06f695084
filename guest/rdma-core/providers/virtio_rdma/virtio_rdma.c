// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * rdma-core provider for virtio-rdma-pci (the virtio_rdma kernel module).
 *
 * Every verb, the data path included, is a uverbs write() command: the
 * kernel driver owns the virtqueues and builds every descriptor, so nothing
 * of the device (vring, doorbell, guest-physical address) is mapped into the
 * process.  The module enables POST_SEND, POST_RECV, POLL_CQ and
 * REQ_NOTIFY_CQ in its uverbs_cmd_mask for this, and passes no
 * driver-private data in any command, so each ibv_cmd_* below is called with
 * an empty driver part.
 *
 * Built against the rdma-core source of the installed libibverbs (PABI 34
 * in Debian 12): only ibv_cmd_* that rdma-core 44 exports are used.
 */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include <infiniband/driver.h>
#include <infiniband/verbs.h>

/* The device's one ABI header, shared with QEMU and the kernel module. */
#include <hw/rdma/virtio-rdma-abi.h>

/* Virtio's PCI vendor id (PCI_VENDOR_ID_REDHAT_QUMRANET). */
#define VIRTIO_PCI_VENDOR 0x1af4

/* The kernel module's ops.uverbs_abi_ver. */
#define VIRTIO_RDMA_UVERBS_ABI 1

/*
 * ibv_cmd_post_send/post_recv build the whole command with alloca(), sized
 * by the WR list: post long lists a few WRs at a time.
 */
#define VIRTIO_RDMA_POST_CHUNK 16

struct vrdma_device {
	struct verbs_device ibv_dev;
};

struct vrdma_context {
	struct verbs_context ibv_ctx;
};

struct vrdma_qp {
	struct ibv_qp ibv_qp;
	/* What the kernel granted at create: bounds num_sge before alloca. */
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
};

static inline struct vrdma_qp *to_vqp(struct ibv_qp *ibqp)
{
	return container_of(ibqp, struct vrdma_qp, ibv_qp);
}

static const struct verbs_match_ent vrdma_match_table[] = {
	VERBS_PCI_MATCH(VIRTIO_PCI_VENDOR, VIRTIO_RDMA_PCI_DEVICE_ID, NULL),
	/* Only used when the device has no PCI parent in sysfs. */
	VERBS_NAME_MATCH("vrdma", NULL),
	{},
};

static int vrdma_query_device_ex(struct ibv_context *context,
				 const struct ibv_query_device_ex_input *input,
				 struct ibv_device_attr_ex *attr,
				 size_t attr_size)
{
	struct ib_uverbs_ex_query_device_resp resp;
	size_t resp_size = sizeof(resp);
	uint64_t fw;
	int ret;

	ret = ibv_cmd_query_device_any(context, input, attr, attr_size, &resp,
				       &resp_size);
	if (ret)
		return ret;

	fw = resp.base.fw_ver;
	snprintf(attr->orig_attr.fw_ver, sizeof(attr->orig_attr.fw_ver),
		 "%u.%u.%u", (unsigned int)(fw >> 32) & 0xffff,
		 (unsigned int)(fw >> 16) & 0xffff, (unsigned int)fw & 0xffff);
	return 0;
}

static int vrdma_query_port(struct ibv_context *context, uint8_t port,
			    struct ibv_port_attr *attr)
{
	struct ibv_query_port cmd;

	return ibv_cmd_query_port(context, port, attr, &cmd, sizeof(cmd));
}

static struct ibv_pd *vrdma_alloc_pd(struct ibv_context *context)
{
	struct ib_uverbs_alloc_pd_resp resp;
	struct ibv_alloc_pd cmd;
	struct ibv_pd *pd;

	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return NULL;
	if (ibv_cmd_alloc_pd(context, pd, &cmd, sizeof(cmd), &resp,
			     sizeof(resp))) {
		free(pd);
		return NULL;
	}
	return pd;
}

static int vrdma_dealloc_pd(struct ibv_pd *pd)
{
	int ret;

	ret = ibv_cmd_dealloc_pd(pd);
	if (ret)
		return ret;
	free(pd);
	return 0;
}

static struct ibv_mr *vrdma_reg_mr(struct ibv_pd *pd, void *addr,
				   size_t length, uint64_t hca_va, int access)
{
	struct ib_uverbs_reg_mr_resp resp;
	struct ibv_reg_mr cmd;
	struct verbs_mr *vmr;

	vmr = calloc(1, sizeof(*vmr));
	if (!vmr)
		return NULL;
	if (ibv_cmd_reg_mr(pd, addr, length, hca_va, access, vmr, &cmd,
			   sizeof(cmd), &resp, sizeof(resp))) {
		free(vmr);
		return NULL;
	}
	return &vmr->ibv_mr;
}

static int vrdma_dereg_mr(struct verbs_mr *vmr)
{
	int ret;

	ret = ibv_cmd_dereg_mr(vmr);
	if (ret)
		return ret;
	free(vmr);
	return 0;
}

static struct ibv_cq *vrdma_create_cq(struct ibv_context *context, int cqe,
				      struct ibv_comp_channel *channel,
				      int comp_vector)
{
	struct ib_uverbs_create_cq_resp resp;
	struct ibv_create_cq cmd;
	struct ibv_cq *cq;

	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return NULL;
	if (ibv_cmd_create_cq(context, cqe, channel, comp_vector, cq, &cmd,
			      sizeof(cmd), &resp, sizeof(resp))) {
		free(cq);
		return NULL;
	}
	return cq;
}

static int vrdma_destroy_cq(struct ibv_cq *cq)
{
	int ret;

	ret = ibv_cmd_destroy_cq(cq);
	if (ret)
		return ret;
	free(cq);
	return 0;
}

static struct ibv_qp *vrdma_create_qp(struct ibv_pd *pd,
				      struct ibv_qp_init_attr *attr)
{
	struct ib_uverbs_create_qp_resp resp;
	struct ibv_create_qp cmd;
	struct vrdma_qp *qp;

	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;
	if (ibv_cmd_create_qp(pd, &qp->ibv_qp, attr, &cmd, sizeof(cmd), &resp,
			      sizeof(resp))) {
		free(qp);
		return NULL;
	}
	/* ibv_cmd_create_qp wrote the granted capabilities back into attr. */
	qp->max_send_sge = attr->cap.max_send_sge;
	qp->max_recv_sge = attr->cap.max_recv_sge;
	return &qp->ibv_qp;
}

static int vrdma_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			  int attr_mask, struct ibv_qp_init_attr *init_attr)
{
	struct ibv_query_qp cmd;

	return ibv_cmd_query_qp(qp, attr, attr_mask, init_attr, &cmd,
				sizeof(cmd));
}

static int vrdma_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			   int attr_mask)
{
	struct ibv_modify_qp cmd;

	return ibv_cmd_modify_qp(qp, attr, attr_mask, &cmd, sizeof(cmd));
}

static int vrdma_destroy_qp(struct ibv_qp *qp)
{
	int ret;

	ret = ibv_cmd_destroy_qp(qp);
	if (ret)
		return ret;
	free(to_vqp(qp));
	return 0;
}

/*
 * Checks that keep ibv_cmd_post_send itself safe: its alloca is sized by the
 * SGE counts, and for UD it dereferences wr.ud.ah.  Everything else about a
 * WR (opcodes, keys, lengths, QP state) is the kernel's to judge.
 */
static int vrdma_send_wr_ok(struct vrdma_qp *qp, const struct ibv_send_wr *wr)
{
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->max_send_sge)
		return EINVAL;
	if (qp->ibv_qp.qp_type == IBV_QPT_UD && !wr->wr.ud.ah)
		return EINVAL;
	return 0;
}

static int vrdma_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
			   struct ibv_send_wr **bad_wr)
{
	struct vrdma_qp *qp = to_vqp(ibqp);
	struct ibv_send_wr *first, *last, *rest;
	unsigned int n;
	int ret;

	for (first = wr; first; first = rest) {
		/* Cut the list after at most VIRTIO_RDMA_POST_CHUNK valid WRs. */
		last = NULL;
		rest = first;
		ret = 0;
		for (n = 0; rest && n < VIRTIO_RDMA_POST_CHUNK; n++) {
			ret = vrdma_send_wr_ok(qp, rest);
			if (ret)
				break;
			last = rest;
			rest = rest->next;
		}
		if (last) {
			int cmd_ret;

			last->next = NULL;
			cmd_ret = ibv_cmd_post_send(ibqp, first, bad_wr);
			last->next = rest;
			if (cmd_ret)
				return cmd_ret;
		}
		if (ret) {
			*bad_wr = rest;
			return ret;
		}
	}
	return 0;
}

static int vrdma_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
			   struct ibv_recv_wr **bad_wr)
{
	struct vrdma_qp *qp = to_vqp(ibqp);
	struct ibv_recv_wr *first, *last, *rest;
	unsigned int n;
	int ret;

	for (first = wr; first; first = rest) {
		last = NULL;
		rest = first;
		ret = 0;
		for (n = 0; rest && n < VIRTIO_RDMA_POST_CHUNK; n++) {
			if (rest->num_sge < 0 ||
			    (uint32_t)rest->num_sge > qp->max_recv_sge) {
				ret = EINVAL;
				break;
			}
			last = rest;
			rest = rest->next;
		}
		if (last) {
			int cmd_ret;

			last->next = NULL;
			cmd_ret = ibv_cmd_post_recv(ibqp, first, bad_wr);
			last->next = rest;
			if (cmd_ret)
				return cmd_ret;
		}
		if (ret) {
			*bad_wr = rest;
			return ret;
		}
	}
	return 0;
}

static struct ibv_ah *vrdma_create_ah(struct ibv_pd *pd,
				      struct ibv_ah_attr *attr)
{
	struct ib_uverbs_create_ah_resp resp;
	struct ibv_ah *ah;

	ah = calloc(1, sizeof(*ah));
	if (!ah)
		return NULL;
	if (ibv_cmd_create_ah(pd, ah, attr, &resp, sizeof(resp))) {
		free(ah);
		return NULL;
	}
	return ah;
}

static int vrdma_destroy_ah(struct ibv_ah *ah)
{
	int ret;

	ret = ibv_cmd_destroy_ah(ah);
	if (ret)
		return ret;
	free(ah);
	return 0;
}

static void vrdma_free_context(struct ibv_context *ibctx)
{
	struct vrdma_context *ctx =
		container_of(ibctx, struct vrdma_context, ibv_ctx.context);

	verbs_uninit_context(&ctx->ibv_ctx);
	free(ctx);
}

/* No SRQ, MW, multicast or extended CQ: the ops left NULL fail EOPNOTSUPP. */
static const struct verbs_context_ops vrdma_ctx_ops = {
	.query_device_ex = vrdma_query_device_ex,
	.query_port = vrdma_query_port,
	.alloc_pd = vrdma_alloc_pd,
	.dealloc_pd = vrdma_dealloc_pd,
	.reg_mr = vrdma_reg_mr,
	.dereg_mr = vrdma_dereg_mr,
	.create_cq = vrdma_create_cq,
	.destroy_cq = vrdma_destroy_cq,
	.poll_cq = ibv_cmd_poll_cq,
	.req_notify_cq = ibv_cmd_req_notify_cq,
	.create_qp = vrdma_create_qp,
	.query_qp = vrdma_query_qp,
	.modify_qp = vrdma_modify_qp,
	.destroy_qp = vrdma_destroy_qp,
	.post_send = vrdma_post_send,
	.post_recv = vrdma_post_recv,
	.create_ah = vrdma_create_ah,
	.destroy_ah = vrdma_destroy_ah,
	.free_context = vrdma_free_context,
};

static struct verbs_context *vrdma_alloc_context(struct ibv_device *ibdev,
						 int cmd_fd,
						 void *private_data)
{
	struct ib_uverbs_get_context_resp resp;
	struct ibv_get_context cmd;
	struct vrdma_context *ctx;

	/* No driver id is assigned to this out-of-tree driver. */
	ctx = verbs_init_and_alloc_context(ibdev, cmd_fd, ctx, ibv_ctx,
					   RDMA_DRIVER_UNKNOWN);
	if (!ctx)
		return NULL;
	if (ibv_cmd_get_context(&ctx->ibv_ctx, &cmd, sizeof(cmd), &resp,
				sizeof(resp))) {
		verbs_uninit_context(&ctx->ibv_ctx);
		free(ctx);
		return NULL;
	}
	verbs_set_ops(&ctx->ibv_ctx, &vrdma_ctx_ops);
	return &ctx->ibv_ctx;
}

static struct verbs_device *vrdma_alloc_device(struct verbs_sysfs_dev *sysfs)
{
	struct vrdma_device *dev;

	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return NULL;
	return &dev->ibv_dev;
}

static void vrdma_uninit_device(struct verbs_device *verbs_device)
{
	free(container_of(verbs_device, struct vrdma_device, ibv_dev));
}

static const struct verbs_device_ops vrdma_dev_ops = {
	.name = "virtio_rdma",
	.match_min_abi_version = VIRTIO_RDMA_UVERBS_ABI,
	.match_max_abi_version = VIRTIO_RDMA_UVERBS_ABI,
	.match_table = vrdma_match_table,
	.alloc_device = vrdma_alloc_device,
	.uninit_device = vrdma_uninit_device,
	.alloc_context = vrdma_alloc_context,
};
PROVIDER_DRIVER(virtio_rdma, vrdma_dev_ops);

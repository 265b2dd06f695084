// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * rdma-core provider for virtio-rdma-pci (the virtio_rdma kernel module):
 * the verbs.  virtio_rdma.h says what the module's uverbs ABI 2 is;
 * ring.c is the data path.
 *
 * The control verbs are uverbs commands, with the driver data
 * of virtio-rdma-abi.h ("Kernel module <-> rdma-core provider"): a context
 * brings the process's doorbell page, a CQ or QP names its rings by their
 * address in our memory, an AH returns the address vector that UD send
 * entries carry, an SRQ names its ring as a CQ does.  Post (to SRQs too),
 * poll and arm are ring.c's, without a command.
 *
 * Built against the rdma-core source of the installed libibverbs (PABI 34
 * in Debian 12): only ibv_cmd_* that rdma-core 44 exports are used, with
 * the signatures 44 has (checked for each in docs/devel/rdma-core-tests.rst,
 * "The provider against libibverbs 44").
 *
 * The extended CQ polls one work completion per fetch and reads its
 * fields; the ibv_wr_* post API builds an ibv_send_wr list that
 * wr_complete posts through the same path as ibv_post_send.
 */
#include <config.h>

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "virtio_rdma.h"

/* Virtio's PCI vendor id (PCI_VENDOR_ID_REDHAT_QUMRANET). */
#define VIRTIO_PCI_VENDOR 0x1af4

struct vrdma_device {
	struct verbs_device ibv_dev;
};

/* Commands and responses with the module's driver data after the core's. */
struct vrdma_get_context_resp {
	struct ib_uverbs_get_context_resp ibv_resp;
	struct virtio_rdma_uresp_alloc_ucontext drv;
};

struct vrdma_create_cq_cmd {
	struct ibv_create_cq ibv_cmd;
	struct virtio_rdma_ucmd_create_cq drv;
};

struct vrdma_create_cq_resp {
	struct ib_uverbs_create_cq_resp ibv_resp;
	struct virtio_rdma_uresp_create_cq drv;
};

struct vrdma_create_cq_ex_cmd {
	struct ibv_create_cq_ex ibv_cmd;
	struct virtio_rdma_ucmd_create_cq drv;
};

struct vrdma_create_cq_ex_resp {
	struct ib_uverbs_ex_create_cq_resp ibv_resp;
	struct virtio_rdma_uresp_create_cq drv;
};

struct vrdma_create_qp_cmd {
	struct ibv_create_qp ibv_cmd;
	struct virtio_rdma_ucmd_create_qp drv;
};

struct vrdma_create_qp_resp {
	struct ib_uverbs_create_qp_resp ibv_resp;
	struct virtio_rdma_uresp_create_qp drv;
};

struct vrdma_create_ah_resp {
	struct ib_uverbs_create_ah_resp ibv_resp;
	struct virtio_rdma_uresp_create_ah drv;
};

struct vrdma_create_srq_cmd {
	struct ibv_create_srq ibv_cmd;
	struct virtio_rdma_ucmd_create_srq drv;
};

struct vrdma_create_srq_resp {
	struct ib_uverbs_create_srq_resp ibv_resp;
	struct virtio_rdma_uresp_create_srq drv;
};

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

/*
 * The CQ's ring of at least cqe CQEs, zeroed, named in the create
 * command's driver data; 0 or an errno.
 */
static int vrdma_cq_ring_prepare(struct vrdma_cq *cq, int cqe,
				 struct virtio_rdma_ucmd_create_cq *drv)
{
	int ret;

	if (cqe < 1)
		return EINVAL;
	ret = vrdma_uring_alloc(&cq->ring, cqe, sizeof(struct virtio_rdma_cqe));
	if (ret)
		return ret;
	memset(drv, 0, sizeof(*drv));
	drv->ring_va = (uintptr_t)cq->ring.buf;
	drv->log_entries = cq->ring.log_entries;
	return 0;
}

static struct ibv_cq *vrdma_create_cq(struct ibv_context *context, int cqe,
				      struct ibv_comp_channel *channel,
				      int comp_vector)
{
	struct vrdma_create_cq_resp resp = {};
	struct vrdma_create_cq_cmd cmd = {};
	struct vrdma_cq *cq;
	int ret;

	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return NULL;
	pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
	cq->locked = true;
	ret = vrdma_cq_ring_prepare(cq, cqe, &cmd.drv);
	if (ret)
		goto err;
	ret = ibv_cmd_create_cq(context, cqe, channel, comp_vector, &cq->vcq.cq,
				&cmd.ibv_cmd, sizeof(cmd), &resp.ibv_resp,
				sizeof(resp));
	if (ret)
		goto err;
	cq->cqn = resp.drv.cqn;
	return &cq->vcq.cq;

err:
	vrdma_uring_free(&cq->ring);
	pthread_spin_destroy(&cq->lock);
	free(cq);
	errno = ret;
	return NULL;
}

/* ---- extended CQ: one work completion of the ring per fetch ---------- */

/*
 * The fields a work completion carries: every standard wc_flag.  No completion timestamps (the device keeps none), no CVLAN,
 * flow tag or tag matching.
 */
#define VRDMA_CQ_WC_FLAGS IBV_WC_STANDARD_FLAGS

static int vrdma_cq_fetch(struct vrdma_cq *cq)
{
	struct ibv_cq_ex *cqx = &cq->vcq.cq_ex;
	int n;

	n = vrdma_ring_poll_one(cq, &cq->wc);
	if (n)
		return n;
	cqx->status = cq->wc.status;
	cqx->wr_id = cq->wc.wr_id;
	return 0;
}

static int vrdma_start_poll(struct ibv_cq_ex *cqx, struct ibv_poll_cq_attr *attr)
{
	struct vrdma_cq *cq = cqx_to_vcq(cqx);
	int ret;

	if (attr->comp_mask)
		return EINVAL;
	if (cq->locked)
		pthread_spin_lock(&cq->lock);
	ret = vrdma_cq_fetch(cq);
	/* No end_poll follows a failed start_poll. */
	if (ret && cq->locked)
		pthread_spin_unlock(&cq->lock);
	return ret;
}

static int vrdma_next_poll(struct ibv_cq_ex *cqx)
{
	return vrdma_cq_fetch(cqx_to_vcq(cqx));
}

static void vrdma_end_poll(struct ibv_cq_ex *cqx)
{
	struct vrdma_cq *cq = cqx_to_vcq(cqx);

	if (cq->locked)
		pthread_spin_unlock(&cq->lock);
}

static enum ibv_wc_opcode vrdma_read_opcode(struct ibv_cq_ex *cqx)
{
	return cqx_to_vcq(cqx)->wc.opcode;
}

static uint32_t vrdma_read_vendor_err(struct ibv_cq_ex *cqx)
{
	return cqx_to_vcq(cqx)->wc.vendor_err;
}

static uint32_t vrdma_read_byte_len(struct ibv_cq_ex *cqx)
{
	return cqx_to_vcq(cqx)->wc.byte_len;
}

/* The immediate data, or the invalidated rkey (IBV_WC_WITH_INV). */
static __be32 vrdma_read_imm_data(struct ibv_cq_ex *cqx)
{
	return cqx_to_vcq(cqx)->wc.imm_data;
}

static uint32_t vrdma_read_qp_num(struct ibv_cq_ex *cqx)
{
	return cqx_to_vcq(cqx)->wc.qp_num;
}

static uint32_t vrdma_read_src_qp(struct ibv_cq_ex *cqx)
{
	return cqx_to_vcq(cqx)->wc.src_qp;
}

static unsigned int vrdma_read_wc_flags(struct ibv_cq_ex *cqx)
{
	return cqx_to_vcq(cqx)->wc.wc_flags;
}

static uint32_t vrdma_read_slid(struct ibv_cq_ex *cqx)
{
	return cqx_to_vcq(cqx)->wc.slid;
}

static uint8_t vrdma_read_sl(struct ibv_cq_ex *cqx)
{
	return cqx_to_vcq(cqx)->wc.sl;
}

static uint8_t vrdma_read_dlid_path_bits(struct ibv_cq_ex *cqx)
{
	return cqx_to_vcq(cqx)->wc.dlid_path_bits;
}

/*
 * libibverbs (44 and 56.1 alike) has checked wc_flags against every flag it
 * knows and initializes the ibv_cq part (channel, cq_context, events) after
 * this returns.
 */
static struct ibv_cq_ex *vrdma_create_cq_ex(struct ibv_context *context,
					    struct ibv_cq_init_attr_ex *attr)
{
	struct vrdma_create_cq_ex_resp resp = {};
	struct vrdma_create_cq_ex_cmd cmd = {};
	struct ibv_cq_ex *cqx;
	struct vrdma_cq *cq;
	int ret;

	if (attr->wc_flags & ~(uint64_t)VRDMA_CQ_WC_FLAGS) {
		errno = EOPNOTSUPP;	/* e.g. completion timestamps */
		return NULL;
	}
	/* IBV_CQ_INIT_ATTR_MASK_PD: no parent domains. */
	if (attr->comp_mask & ~(uint32_t)IBV_CQ_INIT_ATTR_MASK_FLAGS) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	/* The kernel's CQ cannot ignore an overrun. */
	if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	    (attr->flags & ~(uint32_t)IBV_CREATE_CQ_ATTR_SINGLE_THREADED)) {
		errno = EOPNOTSUPP;
		return NULL;
	}

	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return NULL;
	ret = vrdma_cq_ring_prepare(cq, attr->cqe, &cmd.drv);
	if (ret) {
		free(cq);
		errno = ret;
		return NULL;
	}
	ret = ibv_cmd_create_cq_ex(context, attr, &cq->vcq, &cmd.ibv_cmd,
				   sizeof(cmd), &resp.ibv_resp, sizeof(resp), 0);
	if (ret) {
		vrdma_uring_free(&cq->ring);
		free(cq);
		errno = ret;
		return NULL;
	}
	cq->cqn = resp.drv.cqn;
	cq->locked = !((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
		       (attr->flags & IBV_CREATE_CQ_ATTR_SINGLE_THREADED));
	pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);

	cqx = &cq->vcq.cq_ex;
	cqx->start_poll = vrdma_start_poll;
	cqx->next_poll = vrdma_next_poll;
	cqx->end_poll = vrdma_end_poll;
	cqx->read_opcode = vrdma_read_opcode;
	cqx->read_vendor_err = vrdma_read_vendor_err;
	cqx->read_wc_flags = vrdma_read_wc_flags;
	cqx->read_byte_len = vrdma_read_byte_len;
	cqx->read_imm_data = vrdma_read_imm_data;
	cqx->read_qp_num = vrdma_read_qp_num;
	cqx->read_src_qp = vrdma_read_src_qp;
	cqx->read_slid = vrdma_read_slid;
	cqx->read_sl = vrdma_read_sl;
	cqx->read_dlid_path_bits = vrdma_read_dlid_path_bits;
	return cqx;
}

static int vrdma_destroy_cq(struct ibv_cq *ibcq)
{
	struct vrdma_cq *cq = to_vcq(ibcq);
	int ret;

	ret = ibv_cmd_destroy_cq(ibcq);
	if (ret)
		return ret;
	vrdma_uring_free(&cq->ring);	/* the device let go of it */
	pthread_spin_destroy(&cq->lock);
	free(cq);
	return 0;
}

/* Only once the device let go of the rings (destroyed, or never made). */
static void vrdma_qp_free(struct vrdma_qp *qp)
{
	if (qp->wrl.max_wr)
		pthread_spin_destroy(&qp->wrl.lock);
	free(qp->wrl.wr);
	free(qp->wrl.sge);
	free(qp->wrl.inline_stage);
	free(qp->wrl.inline_sge);
	vrdma_uwq_fini(&qp->sq);
	vrdma_uwq_fini(&qp->rq);
	free(qp);
}

/* The QP's rings for the capabilities asked, in the driver data. */
static int vrdma_qp_rings_prepare(struct vrdma_qp *qp,
				  const struct ibv_qp_init_attr *attr,
				  struct virtio_rdma_ucmd_create_qp *drv)
{
	int ret;

	ret = vrdma_uwq_init(&qp->sq, attr->cap.max_send_wr,
			     attr->cap.max_send_sge,
			     sizeof(struct virtio_rdma_sq_req));
	/* On an SRQ the receive cap is 0 (vrdma_qp_new): no RQ ring. */
	if (!ret)
		ret = vrdma_uwq_init(&qp->rq, attr->cap.max_recv_wr,
				     attr->cap.max_recv_sge,
				     sizeof(struct virtio_rdma_rq_req));
	if (ret)
		return ret;
	memset(drv, 0, sizeof(*drv));
	drv->sq_va = (uintptr_t)qp->sq.ring.buf;
	drv->rq_va = (uintptr_t)qp->rq.ring.buf;
	if (qp->sq.ring.buf) {
		drv->sq_log_entries = qp->sq.ring.log_entries;
		drv->sq_log_stride = qp->sq.ring.log_stride;
	}
	if (qp->rq.ring.buf) {
		drv->rq_log_entries = qp->rq.ring.log_entries;
		drv->rq_log_stride = qp->rq.ring.log_stride;
	}
	qp->sig_all = attr->sq_sig_all;
	return 0;
}

static struct vrdma_qp *vrdma_qp_new(struct ibv_pd *pd,
				     struct ibv_qp_init_attr *attr)
{
	struct vrdma_context *ctx = to_vctx(pd->context);
	uint32_t max_inline = attr->cap.max_inline_data;
	struct vrdma_create_qp_resp resp = {};
	struct vrdma_create_qp_cmd cmd = {};
	struct vrdma_qp *qp;
	int ret = 0;

	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;
	/*
	 * On an SRQ: no receive queue of its own (rq_va 0), so no receive cap
	 * for the module either (it grants 0 anyway).
	 */
	if (attr->srq) {
		attr->cap.max_recv_wr = 0;
		attr->cap.max_recv_sge = 0;
		qp->srq = true;
	}
	ret = vrdma_qp_rings_prepare(qp, attr, &cmd.drv);
	if (ret)
		goto err;
	/*
	 * Into the ibv_qp only: libibverbs 44 would write a verbs_qp's
	 * comp_mask at another offset than 56.1's (see
	 * vrdma_qpex_mask_offset); this provider owns that field.
	 */
	ret = ibv_cmd_create_qp(pd, &qp->vqp.qp, attr, &cmd.ibv_cmd, sizeof(cmd),
				&resp.ibv_resp, sizeof(resp));
	if (ret)
		goto err;
	/* ibv_cmd_create_qp wrote the granted capabilities back into attr. */
	qp->max_send_sge = attr->cap.max_send_sge;
	qp->max_recv_sge = attr->cap.max_recv_sge;
	qp->qpn = resp.drv.qpn;
	/* Inline data is the provider's (the module grants none). */
	ret = vrdma_uwq_inline_init(&qp->sq, pd, max_inline);
	if (!ret)
		ret = vrdma_qp_table_add(ctx, qp);
	if (ret) {
		ibv_cmd_destroy_qp(&qp->vqp.qp);
		goto err;
	}
	attr->cap.max_inline_data = qp->sq.inline_slot;
	return qp;

err:
	vrdma_qp_free(qp);
	errno = ret;
	return NULL;
}

static struct ibv_qp *vrdma_create_qp(struct ibv_pd *pd,
				      struct ibv_qp_init_attr *attr)
{
	struct vrdma_qp *qp = vrdma_qp_new(pd, attr);

	return qp ? &qp->vqp.qp : NULL;
}

static int vrdma_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			  int attr_mask, struct ibv_qp_init_attr *init_attr)
{
	struct ibv_query_qp cmd;
	int ret;

	ret = ibv_cmd_query_qp(qp, attr, attr_mask, init_attr, &cmd,
			       sizeof(cmd));
	/* Inline data is the provider's, the module reports none. */
	if (!ret) {
		attr->cap.max_inline_data = to_vqp(qp)->sq.inline_slot;
		init_attr->cap.max_inline_data = to_vqp(qp)->sq.inline_slot;
	}
	return ret;
}

/*
 * An SRQ's ring of at least max_wr receive entries of max_sge SGEs in our
 * memory, zeroed, named in the driver data; the module checks the
 * attributes against the device's limits and pins the ring.
 * ibv_post_srq_recv is ring.c's.
 */
static struct ibv_srq *vrdma_create_srq(struct ibv_pd *pd,
					struct ibv_srq_init_attr *attr)
{
	struct vrdma_create_srq_resp resp = {};
	struct vrdma_create_srq_cmd cmd = {};
	struct vrdma_srq *srq;
	int ret;

	/* An entry within a page (the ring's largest stride). */
	if (!attr->attr.max_wr || !attr->attr.max_sge ||
	    attr->attr.max_sge > (VIRTIO_RDMA_PAGE_SIZE -
				  sizeof(struct virtio_rdma_rq_req)) /
				 sizeof(struct virtio_rdma_sge)) {
		errno = EINVAL;
		return NULL;
	}
	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return NULL;
	ret = vrdma_uring_alloc(&srq->ring, attr->attr.max_wr,
				sizeof(struct virtio_rdma_rq_req) +
				attr->attr.max_sge *
				sizeof(struct virtio_rdma_sge));
	if (ret)
		goto err;
	cmd.drv.ring_va = (uintptr_t)srq->ring.buf;
	cmd.drv.log_entries = srq->ring.log_entries;
	cmd.drv.log_stride = srq->ring.log_stride;
	ret = ibv_cmd_create_srq(pd, &srq->ibsrq, attr, &cmd.ibv_cmd,
				 sizeof(cmd), &resp.ibv_resp, sizeof(resp));
	if (ret)
		goto err;
	/* ibv_cmd_create_srq wrote the granted attributes back into attr. */
	srq->srqn = resp.drv.srqn;
	srq->max_wr = attr->attr.max_wr;
	srq->max_sge = attr->attr.max_sge;
	pthread_spin_init(&srq->lock, PTHREAD_PROCESS_PRIVATE);
	return &srq->ibsrq;

err:
	vrdma_uring_free(&srq->ring);
	free(srq);
	errno = ret;
	return NULL;
}

/* Only the limit: no resize, the ring is the SRQ's size. */
static int vrdma_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr,
			    int attr_mask)
{
	struct ibv_modify_srq cmd;

	if (attr_mask & IBV_SRQ_MAX_WR)
		return EOPNOTSUPP;
	return ibv_cmd_modify_srq(srq, attr, attr_mask, &cmd, sizeof(cmd));
}

static int vrdma_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	struct ibv_query_srq cmd;

	return ibv_cmd_query_srq(srq, attr, &cmd, sizeof(cmd));
}

static int vrdma_destroy_srq(struct ibv_srq *ibsrq)
{
	struct vrdma_srq *srq = to_vsrq(ibsrq);
	int ret;

	ret = ibv_cmd_destroy_srq(ibsrq);
	if (ret)
		return ret;
	vrdma_uring_free(&srq->ring);	/* the device let go of it */
	pthread_spin_destroy(&srq->lock);
	free(srq);
	return 0;
}

static int vrdma_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			   int attr_mask)
{
	struct ibv_modify_qp cmd;
	int ret;

	ret = ibv_cmd_modify_qp(qp, attr, attr_mask, &cmd, sizeof(cmd));
	/* The device set the rings' counters to 0: so do we. */
	if (!ret && (attr_mask & IBV_QP_STATE) &&
	    attr->qp_state == IBV_QPS_RESET)
		vrdma_qp_rings_reset(to_vqp(qp));
	return ret;
}

static int vrdma_destroy_qp(struct ibv_qp *qp)
{
	struct vrdma_context *ctx = to_vctx(qp->context);
	int ret;

	ret = ibv_cmd_destroy_qp(qp);
	if (ret)
		return ret;
	vrdma_qp_table_del(ctx, to_vqp(qp));
	vrdma_qp_free(to_vqp(qp));
	return 0;
}

/* ---- the ibv_wr_* post API ------------------------------------------ */

/*
 * What the device executes through post_send, per QP type (the kernel
 * module's vrdma_wr_opcode): no LOCAL_INV (uverbs takes it from no user),
 * no BIND_MW (no memory windows), no TSO, ATOMIC_WRITE or FLUSH (not in the
 * device).
 */
static const uint64_t vrdma_send_ops[] = {
	[IBV_QPT_RC] = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
		       IBV_QP_EX_WITH_RDMA_WRITE |
		       IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
		       IBV_QP_EX_WITH_RDMA_READ |
		       IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
		       IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |
		       IBV_QP_EX_WITH_SEND_WITH_INV,
	[IBV_QPT_UC] = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
		       IBV_QP_EX_WITH_RDMA_WRITE |
		       IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM,
	[IBV_QPT_UD] = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM,
};

/* The send_ops_flags bit of each ibv_wr_opcode a wr_* call builds. */
static const uint64_t vrdma_wr_op_flag[] = {
	[IBV_WR_SEND] = IBV_QP_EX_WITH_SEND,
	[IBV_WR_SEND_WITH_IMM] = IBV_QP_EX_WITH_SEND_WITH_IMM,
	[IBV_WR_SEND_WITH_INV] = IBV_QP_EX_WITH_SEND_WITH_INV,
	[IBV_WR_RDMA_WRITE] = IBV_QP_EX_WITH_RDMA_WRITE,
	[IBV_WR_RDMA_WRITE_WITH_IMM] = IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM,
	[IBV_WR_RDMA_READ] = IBV_QP_EX_WITH_RDMA_READ,
	[IBV_WR_ATOMIC_CMP_AND_SWP] = IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP,
	[IBV_WR_ATOMIC_FETCH_AND_ADD] = IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD,
};

static void vrdma_wr_fail(struct vrdma_wr_list *l, int err)
{
	if (!l->err)
		l->err = err;
	l->cur = NULL;
}

/*
 * A new WR at the end of the list, from qpx's wr_id and wr_flags (inline is
 * what wr_set_inline_data says, not a flag); NULL after an error.
 */
static struct ibv_send_wr *vrdma_wr_new(struct ibv_qp_ex *qpx,
					enum ibv_wr_opcode op)
{
	struct vrdma_qp *qp = qpx_to_vqp(qpx);
	struct vrdma_wr_list *l = &qp->wrl;
	struct ibv_send_wr *wr;

	if (l->err)
		return NULL;
	if (!(l->ops & vrdma_wr_op_flag[op])) {
		vrdma_wr_fail(l, EINVAL);	/* not in send_ops_flags */
		return NULL;
	}
	if (l->n == l->max_wr) {
		vrdma_wr_fail(l, ENOMEM);	/* more than the send queue holds */
		return NULL;
	}
	wr = &l->wr[l->n++];
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = qpx->wr_id;
	wr->opcode = op;
	wr->send_flags = qpx->wr_flags & ~IBV_SEND_INLINE;
	wr->sg_list = &l->sge[(size_t)(wr - l->wr) * qp->max_send_sge];
	l->cur = wr;
	return wr;
}

/* The WR the wr_set_* calls fill; EINVAL when no wr_<op> came first. */
static struct ibv_send_wr *vrdma_wr_cur(struct ibv_qp_ex *qpx)
{
	struct vrdma_wr_list *l = &qpx_to_vqp(qpx)->wrl;

	if (!l->cur && !l->err)
		vrdma_wr_fail(l, EINVAL);
	return l->cur;
}

static void vrdma_wr_start(struct ibv_qp_ex *qpx)
{
	struct vrdma_wr_list *l = &qpx_to_vqp(qpx)->wrl;

	pthread_spin_lock(&l->lock);
	l->n = 0;
	l->cur = NULL;
	l->err = 0;
}

static void vrdma_wr_abort(struct ibv_qp_ex *qpx)
{
	struct vrdma_wr_list *l = &qpx_to_vqp(qpx)->wrl;

	l->n = 0;
	l->cur = NULL;
	pthread_spin_unlock(&l->lock);
}

/*
 * Post what was built, through vrdma_ring_post_send (its checks).
 * After a wr_* error nothing is posted; after the kernel refuses a WR, the
 * WRs before it are posted and the rest are not.  The first error is
 * returned either way.
 */
static int vrdma_wr_complete(struct ibv_qp_ex *qpx)
{
	struct vrdma_qp *qp = qpx_to_vqp(qpx);
	struct vrdma_wr_list *l = &qp->wrl;
	struct ibv_send_wr *bad;
	uint32_t i;
	int ret = l->err;

	if (!ret && l->n) {
		for (i = 0; i < l->n; i++)
			l->wr[i].next = i + 1 < l->n ? &l->wr[i + 1] : NULL;
		ret = vrdma_ring_post_send(&qp->vqp.qp, l->wr, &bad);
	}
	l->n = 0;
	l->cur = NULL;
	pthread_spin_unlock(&l->lock);
	return ret;
}

static void vrdma_wr_send(struct ibv_qp_ex *qpx)
{
	vrdma_wr_new(qpx, IBV_WR_SEND);
}

static void vrdma_wr_send_imm(struct ibv_qp_ex *qpx, __be32 imm_data)
{
	struct ibv_send_wr *wr = vrdma_wr_new(qpx, IBV_WR_SEND_WITH_IMM);

	if (wr)
		wr->imm_data = imm_data;
}

static void vrdma_wr_send_inv(struct ibv_qp_ex *qpx, uint32_t invalidate_rkey)
{
	struct ibv_send_wr *wr = vrdma_wr_new(qpx, IBV_WR_SEND_WITH_INV);

	if (wr)
		wr->invalidate_rkey = invalidate_rkey;
}

static void vrdma_wr_rdma(struct ibv_qp_ex *qpx, enum ibv_wr_opcode op,
			  uint32_t rkey, uint64_t remote_addr, __be32 imm_data)
{
	struct ibv_send_wr *wr = vrdma_wr_new(qpx, op);

	if (!wr)
		return;
	wr->wr.rdma.rkey = rkey;
	wr->wr.rdma.remote_addr = remote_addr;
	wr->imm_data = imm_data;
}

static void vrdma_wr_rdma_write(struct ibv_qp_ex *qpx, uint32_t rkey,
				uint64_t remote_addr)
{
	vrdma_wr_rdma(qpx, IBV_WR_RDMA_WRITE, rkey, remote_addr, 0);
}

static void vrdma_wr_rdma_write_imm(struct ibv_qp_ex *qpx, uint32_t rkey,
				    uint64_t remote_addr, __be32 imm_data)
{
	vrdma_wr_rdma(qpx, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, remote_addr,
		      imm_data);
}

static void vrdma_wr_rdma_read(struct ibv_qp_ex *qpx, uint32_t rkey,
			       uint64_t remote_addr)
{
	vrdma_wr_rdma(qpx, IBV_WR_RDMA_READ, rkey, remote_addr, 0);
}

static void vrdma_wr_atomic(struct ibv_qp_ex *qpx, enum ibv_wr_opcode op,
			    uint32_t rkey, uint64_t remote_addr,
			    uint64_t compare_add, uint64_t swap)
{
	struct ibv_send_wr *wr = vrdma_wr_new(qpx, op);

	if (!wr)
		return;
	wr->wr.atomic.rkey = rkey;
	wr->wr.atomic.remote_addr = remote_addr;
	wr->wr.atomic.compare_add = compare_add;
	wr->wr.atomic.swap = swap;
}

static void vrdma_wr_atomic_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey,
				    uint64_t remote_addr, uint64_t compare,
				    uint64_t swap)
{
	vrdma_wr_atomic(qpx, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, remote_addr,
			compare, swap);
}

static void vrdma_wr_atomic_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey,
				      uint64_t remote_addr, uint64_t add)
{
	vrdma_wr_atomic(qpx, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, remote_addr,
			add, 0);
}

static void vrdma_wr_set_ud_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah,
				 uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct ibv_send_wr *wr = vrdma_wr_cur(qpx);

	if (!wr)
		return;
	if (qpx->qp_base.qp_type != IBV_QPT_UD || !ah) {
		vrdma_wr_fail(&qpx_to_vqp(qpx)->wrl, EINVAL);
		return;
	}
	wr->wr.ud.ah = ah;
	wr->wr.ud.remote_qpn = remote_qpn;
	wr->wr.ud.remote_qkey = remote_qkey;
}

static void vrdma_wr_set_sge_list(struct ibv_qp_ex *qpx, size_t num_sge,
				  const struct ibv_sge *sg_list)
{
	struct vrdma_qp *qp = qpx_to_vqp(qpx);
	struct ibv_send_wr *wr = vrdma_wr_cur(qpx);

	if (!wr)
		return;
	if (num_sge > qp->max_send_sge) {
		vrdma_wr_fail(&qp->wrl, EINVAL);
		return;
	}
	if (num_sge)
		memcpy(wr->sg_list, sg_list, num_sge * sizeof(*sg_list));
	wr->num_sge = num_sge;
}

static void vrdma_wr_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey,
			     uint64_t addr, uint32_t length)
{
	struct ibv_sge sge = { .addr = addr, .length = length, .lkey = lkey };

	vrdma_wr_set_sge_list(qpx, 1, &sge);
}

/*
 * The data copied now into the WR's staging slot, posted as an inline send
 * (vrdma_ring_post_send copies it into the SQ's inline slot).  An empty
 * buffer list is a WR without SGEs.
 */
static void vrdma_wr_set_inline_data_list(struct ibv_qp_ex *qpx,
					  size_t num_buf,
					  const struct ibv_data_buf *buf_list)
{
	struct vrdma_qp *qp = qpx_to_vqp(qpx);
	struct vrdma_wr_list *l = &qp->wrl;
	struct ibv_send_wr *wr = vrdma_wr_cur(qpx);
	size_t i, len = 0, idx;
	char *stage;

	if (!wr)
		return;
	for (i = 0; i < num_buf; i++)
		len += buf_list[i].length;
	if (len && (!l->inline_stage || len > qp->sq.inline_slot)) {
		vrdma_wr_fail(l, EINVAL);
		return;
	}
	wr->num_sge = 0;
	if (!len)
		return;
	idx = (size_t)(wr - l->wr);
	stage = l->inline_stage + idx * qp->sq.inline_slot;
	for (i = 0, len = 0; i < num_buf; i++) {
		memcpy(stage + len, buf_list[i].addr, buf_list[i].length);
		len += buf_list[i].length;
	}
	l->inline_sge[idx] = (struct ibv_sge){ .addr = (uintptr_t)stage,
					       .length = len };
	wr->sg_list = &l->inline_sge[idx];
	wr->num_sge = 1;
	wr->send_flags |= IBV_SEND_INLINE;
}

static void vrdma_wr_set_inline_data(struct ibv_qp_ex *qpx, void *addr,
				     size_t length)
{
	struct ibv_data_buf buf = { .addr = addr, .length = length };

	vrdma_wr_set_inline_data_list(qpx, 1, &buf);
}

/*
 * The ops create_qp_ex refuses in send_ops_flags; here so that a call
 * anyway fails wr_complete rather than jumping to NULL.
 */
static void vrdma_wr_unsupported(struct ibv_qp_ex *qpx)
{
	vrdma_wr_fail(&qpx_to_vqp(qpx)->wrl, EOPNOTSUPP);
}

static void vrdma_wr_bind_mw(struct ibv_qp_ex *qpx, struct ibv_mw *mw,
			     uint32_t rkey,
			     const struct ibv_mw_bind_info *bind_info)
{
	vrdma_wr_unsupported(qpx);
}

static void vrdma_wr_local_inv(struct ibv_qp_ex *qpx, uint32_t invalidate_rkey)
{
	vrdma_wr_unsupported(qpx);
}

static void vrdma_wr_send_tso(struct ibv_qp_ex *qpx, void *hdr,
			      uint16_t hdr_sz, uint16_t mss)
{
	vrdma_wr_unsupported(qpx);
}

static void vrdma_wr_set_xrc_srqn(struct ibv_qp_ex *qpx, uint32_t remote_srqn)
{
	vrdma_wr_unsupported(qpx);
}

static void vrdma_wr_atomic_write(struct ibv_qp_ex *qpx, uint32_t rkey,
				  uint64_t remote_addr, const void *atomic_wr)
{
	vrdma_wr_unsupported(qpx);
}

static void vrdma_wr_flush(struct ibv_qp_ex *qpx, uint32_t rkey,
			   uint64_t remote_addr, size_t len, uint8_t type,
			   uint8_t level)
{
	vrdma_wr_unsupported(qpx);
}

/*
 * Where the running libibverbs' ibv_qp_to_qp_ex() reads a verbs_qp's
 * comp_mask.  struct verbs_qp is a union of ibv_qp and ibv_qp_ex followed by
 * comp_mask, and rdma-core 45 added wr_flush at the end of ibv_qp_ex: the
 * 56.1 headers this is compiled against put comp_mask 8 bytes after where
 * Debian's libibverbs 44 reads it (0x168, 0x160 on x86-64), and at 44's
 * offset lies this build's wr_flush.  So ask the library: a probe with
 * VERBS_QP_EX at this build's offset, then at wr_flush's.  An application
 * running on the older library was built against headers without wr_flush,
 * so that slot is free there.  0: neither works; no ibv_wr_* API then.
 */
static size_t vrdma_qpex_mask_offset(void)
{
	static const size_t off[] = {
		offsetof(struct verbs_qp, comp_mask),
		offsetof(struct verbs_qp, qp_ex.wr_flush),
	};
	const uint32_t mask = VERBS_QP_EX;
	struct verbs_qp probe;
	size_t i;

	for (i = 0; i < sizeof(off) / sizeof(off[0]); i++) {
		memset(&probe, 0, sizeof(probe));
		memcpy((char *)&probe + off[i], &mask, sizeof(mask));
		if (ibv_qp_to_qp_ex(&probe.qp) == &probe.qp_ex)
			return off[i];
	}
	return 0;
}

static int vrdma_qp_ex_init(struct vrdma_context *ctx, struct vrdma_qp *qp,
			    uint64_t ops, uint32_t max_send_wr)
{
	struct vrdma_wr_list *l = &qp->wrl;
	struct ibv_qp_ex *qpx = &qp->vqp.qp_ex;
	const uint32_t mask = VERBS_QP_EX;

	pthread_spin_init(&l->lock, PTHREAD_PROCESS_PRIVATE);
	l->ops = ops;
	l->max_wr = max_send_wr;
	l->wr = calloc(max_send_wr ? max_send_wr : 1, sizeof(*l->wr));
	l->sge = calloc((size_t)max_send_wr * qp->max_send_sge + 1,
			sizeof(*l->sge));
	if (!l->wr || !l->sge)
		return ENOMEM;
	if (qp->sq.inline_slot && max_send_wr) {
		l->inline_stage = calloc(max_send_wr, qp->sq.inline_slot);
		l->inline_sge = calloc(max_send_wr, sizeof(*l->inline_sge));
		if (!l->inline_stage || !l->inline_sge)
			return ENOMEM;
	}

	qpx->wr_start = vrdma_wr_start;
	qpx->wr_complete = vrdma_wr_complete;
	qpx->wr_abort = vrdma_wr_abort;
	qpx->wr_send = vrdma_wr_send;
	qpx->wr_send_imm = vrdma_wr_send_imm;
	qpx->wr_send_inv = vrdma_wr_send_inv;
	qpx->wr_rdma_write = vrdma_wr_rdma_write;
	qpx->wr_rdma_write_imm = vrdma_wr_rdma_write_imm;
	qpx->wr_rdma_read = vrdma_wr_rdma_read;
	qpx->wr_atomic_cmp_swp = vrdma_wr_atomic_cmp_swp;
	qpx->wr_atomic_fetch_add = vrdma_wr_atomic_fetch_add;
	qpx->wr_set_ud_addr = vrdma_wr_set_ud_addr;
	qpx->wr_set_sge = vrdma_wr_set_sge;
	qpx->wr_set_sge_list = vrdma_wr_set_sge_list;
	qpx->wr_set_inline_data = vrdma_wr_set_inline_data;
	qpx->wr_set_inline_data_list = vrdma_wr_set_inline_data_list;
	qpx->wr_bind_mw = vrdma_wr_bind_mw;
	qpx->wr_local_inv = vrdma_wr_local_inv;
	qpx->wr_send_tso = vrdma_wr_send_tso;
	qpx->wr_set_xrc_srqn = vrdma_wr_set_xrc_srqn;
	qpx->wr_atomic_write = vrdma_wr_atomic_write;
	qpx->wr_flush = vrdma_wr_flush;
	/* Last: on libibverbs 44 this overwrites (part of) wr_flush. */
	qp->vqp.comp_mask = 0;
	memcpy((char *)&qp->vqp + ctx->qpex_mask_off, &mask, sizeof(mask));
	return 0;
}

#define VRDMA_QP_INIT_ATTR_MASK                                                \
	(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS |                 \
	 IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)

/*
 * A PD's QP, with no creation flags, and the ibv_wr_* API for the
 * send_ops_flags the QP type has on this device; no XRC, RSS, TSO.
 */
static struct ibv_qp *vrdma_create_qp_ex(struct ibv_context *context,
					 struct ibv_qp_init_attr_ex *attr)
{
	struct vrdma_context *ctx = to_vctx(context);
	bool qpx = attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	struct ibv_qp_init_attr init;
	struct vrdma_qp *qp;
	uint64_t ops = 0;
	int ret;

	if (attr->comp_mask & ~(uint32_t)VRDMA_QP_INIT_ATTR_MASK) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd) {
		errno = EINVAL;
		return NULL;
	}
	if ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
	    attr->create_flags) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (qpx) {
		ops = attr->send_ops_flags;
		if (!ctx->qpex_mask_off ||
		    (unsigned int)attr->qp_type >=
			    sizeof(vrdma_send_ops) / sizeof(vrdma_send_ops[0]) ||
		    (ops & ~vrdma_send_ops[attr->qp_type])) {
			errno = EOPNOTSUPP;
			return NULL;
		}
	}

	init = (struct ibv_qp_init_attr){
		.qp_context = attr->qp_context,
		.send_cq = attr->send_cq,
		.recv_cq = attr->recv_cq,
		.srq = attr->srq,
		.cap = attr->cap,
		.qp_type = attr->qp_type,
		.sq_sig_all = attr->sq_sig_all,
	};
	qp = vrdma_qp_new(attr->pd, &init);
	if (!qp)
		return NULL;
	attr->cap = init.cap;
	if (qpx) {
		ret = vrdma_qp_ex_init(ctx, qp, ops, init.cap.max_send_wr);
		if (ret) {
			ibv_cmd_destroy_qp(&qp->vqp.qp);
			vrdma_qp_table_del(ctx, qp);
			vrdma_qp_free(qp);
			errno = ret;
			return NULL;
		}
	}
	return &qp->vqp.qp;
}

static struct ibv_ah *vrdma_create_ah(struct ibv_pd *pd,
				      struct ibv_ah_attr *attr)
{
	struct vrdma_create_ah_resp resp = {};
	struct vrdma_ah *ah;

	ah = calloc(1, sizeof(*ah));
	if (!ah)
		return NULL;
	if (ibv_cmd_create_ah(pd, &ah->ibah, attr, &resp.ibv_resp,
			      sizeof(resp))) {
		free(ah);
		return NULL;
	}
	ah->av = resp.drv.av;	/* what UD send entries carry */
	return &ah->ibah;
}

static int vrdma_destroy_ah(struct ibv_ah *ah)
{
	int ret;

	ret = ibv_cmd_destroy_ah(ah);
	if (ret)
		return ret;
	free(to_vah(ah));
	return 0;
}

static void vrdma_free_context(struct ibv_context *ibctx)
{
	struct vrdma_context *ctx = to_vctx(ibctx);
	unsigned int i;

	if (ctx->db)
		munmap(ctx->db, VIRTIO_RDMA_DB_PAGE);
	for (i = 0; i < VRDMA_QP_TABLE_SIZE; i++)
		free(ctx->qp_table[i]);
	pthread_mutex_destroy(&ctx->qp_table_lock);
	verbs_uninit_context(&ctx->ibv_ctx);
	free(ctx);
}

/*
 * The data path is ring.c's, with no command.  No MW, multicast or CQ
 * resize: the ops left NULL fail EOPNOTSUPP.
 */
static const struct verbs_context_ops vrdma_ctx_ops = {
	.query_device_ex = vrdma_query_device_ex,
	.query_port = vrdma_query_port,
	.alloc_pd = vrdma_alloc_pd,
	.dealloc_pd = vrdma_dealloc_pd,
	.reg_mr = vrdma_reg_mr,
	.dereg_mr = vrdma_dereg_mr,
	.create_cq = vrdma_create_cq,
	.create_cq_ex = vrdma_create_cq_ex,
	.destroy_cq = vrdma_destroy_cq,
	.poll_cq = vrdma_ring_poll_cq,
	.req_notify_cq = vrdma_ring_req_notify_cq,
	.create_qp = vrdma_create_qp,
	.create_qp_ex = vrdma_create_qp_ex,
	.query_qp = vrdma_query_qp,
	.modify_qp = vrdma_modify_qp,
	.destroy_qp = vrdma_destroy_qp,
	.post_send = vrdma_ring_post_send,
	.post_recv = vrdma_ring_post_recv,
	.create_ah = vrdma_create_ah,
	.destroy_ah = vrdma_destroy_ah,
	.free_context = vrdma_free_context,
	.create_srq = vrdma_create_srq,
	.modify_srq = vrdma_modify_srq,
	.query_srq = vrdma_query_srq,
	.destroy_srq = vrdma_destroy_srq,
	.post_srq_recv = vrdma_ring_post_srq_recv,
};

static struct verbs_context *vrdma_alloc_context(struct ibv_device *ibdev,
						 int cmd_fd,
						 void *private_data)
{
	struct vrdma_get_context_resp resp = {};
	struct ibv_get_context cmd;
	struct vrdma_context *ctx;

	/* No driver id is assigned to this out-of-tree driver. */
	ctx = verbs_init_and_alloc_context(ibdev, cmd_fd, ctx, ibv_ctx,
					   RDMA_DRIVER_UNKNOWN);
	if (!ctx)
		return NULL;
	pthread_mutex_init(&ctx->qp_table_lock, NULL);
	if (ibv_cmd_get_context(&ctx->ibv_ctx, &cmd, sizeof(cmd),
				&resp.ibv_resp, sizeof(resp)))
		goto err;
	/* Our doorbell page: the only part of the device we see. */
	ctx->db = mmap(NULL, VIRTIO_RDMA_DB_PAGE, PROT_WRITE, MAP_SHARED, cmd_fd,
		       resp.drv.db_mmap_offset);
	if (ctx->db == MAP_FAILED) {
		ctx->db = NULL;
		goto err;
	}
	verbs_set_ops(&ctx->ibv_ctx, &vrdma_ctx_ops);
	ctx->qpex_mask_off = vrdma_qpex_mask_offset();
	return &ctx->ibv_ctx;

err:
	pthread_mutex_destroy(&ctx->qp_table_lock);
	verbs_uninit_context(&ctx->ibv_ctx);
	free(ctx);
	return NULL;
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
	/* The module's only ABI: ABI 1 (every verb a command) is gone. */
	.match_min_abi_version = VIRTIO_RDMA_UVERBS_ABI_RINGS,
	.match_max_abi_version = VIRTIO_RDMA_UVERBS_ABI_RINGS,
	.match_table = vrdma_match_table,
	.alloc_device = vrdma_alloc_device,
	.uninit_device = vrdma_uninit_device,
	.alloc_context = vrdma_alloc_context,
};
PROVIDER_DRIVER(virtio_rdma, vrdma_dev_ops);

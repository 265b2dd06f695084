/* SPDX-License-Identifier: GPL-2.0 */
/*
 * virtio-rdma guest driver: shared definitions.
 *
 * The driver owns the control and event virtqueues.  CQs, QPs and SRQs
 * are rings in guest memory (VIRTIO_RDMA_F_RINGS, which the driver needs:
 * vrdma_ring.c, "Queues in guest memory" in the spec) announced by
 * doorbells.  Layouts come from the one ABI header the device, its core
 * and its tests share.  Kernel queues live in
 * vmalloc memory and ring context 0's page.  User queues live in the
 * process's own memory, pinned (ib_umem): each process gets a device
 * context and may mmap() its doorbell page, nothing else, and then posts,
 * polls and arms in user space (uverbs ABI VIRTIO_RDMA_UVERBS_ABI_RINGS,
 * the ring-capable provider).  User space still never sees a
 * guest-physical address: only its context, queue numbers, an mmap offset
 * and the address vectors of its AHs.
 *
 * Shared receive queues (vrdma_srq.c) are rings of receive requests, a
 * kernel SRQ's in vmalloc memory, a user SRQ's in the process's, that the
 * QPs created on it take from.
 */
#ifndef VRDMA_H
#define VRDMA_H

#include <linux/completion.h>
#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <linux/pci.h>
#include <linux/spinlock.h>
#include <linux/virtio.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

#include <hw/rdma/virtio-rdma-abi.h>

#include "vrdma_compat.h"

#define VRDMA_PORT 1

/* A control command's buffer, DMA-able (never on a stack). */
struct vrdma_ctrl_buf {
	u8 cmd;
	u8 pad[7];
	u8 req[256];
	u8 status_rsp[1 + 256];	/* status byte, then the response */
};

/* A buffer and its state (vrdma_ctrl.c): the device's, or one object's. */
struct vrdma_ctrl_req {
	struct vrdma_ctrl_buf buf;
	atomic_t state;
	struct completion done;	/* answered, for a sleeper */
};

struct vrdma_dev {
	struct ib_device ib;
	struct virtio_device *vdev;
	struct pci_dev *pdev;

	/* Config space, read once at probe. */
	struct virtio_rdma_config cfg;
	/*
	 * The CQ and QP number spaces (cfg.max_ring_cq, cfg.max_ring_qp):
	 * bound every cqn / qpn and size the per-number tables.
	 */
	u32 ncq, nqp;
	/* The kernel's doorbell page (context 0), vrdma_ring.c. */
	void __iomem *db;
	/* The doorbell region, whose page c user context c mmaps. */
	phys_addr_t db_base;
	u64 db_len;

	/* Control queue (vrdma_ctrl.c). */
	struct virtqueue *ctrl_vq;
	spinlock_t ctrl_lock;		/* the virtqueue, never held to wait */
	struct mutex ctrl_mutex;	/* sleepers, one at a time, in ctrl */
	struct vrdma_ctrl_req *ctrl;
	bool ctrl_dead;		/* the queue broke: nothing comes back */

	struct virtqueue *event_vq;
	struct virtio_rdma_event *events;
	unsigned int nevents;

	/* cqn -> live CQ, for notifications (taken from interrupts). */
	spinlock_t cq_table_lock;
	struct vrdma_cq **cqs;		/* [ncq] */
	/* wire QPN -> live QP, for completions (xa_lock taken irqsave). */
	struct xarray qps;
	/* CQEs dropped for naming no request outstanding on their CQ. */
	atomic64_t bad_cqes;
	/* queue index -> in use, so a QP's rings are never shared. [nqp] */
	unsigned long *qp_busy;
	/* srqn -> live SRQ, for its events (xa_lock taken irqsave). */
	struct xarray srqs;

	/* Pairing with the virtio-net at function 0 of our slot. */
	struct notifier_block nb;
	struct net_device *ndev;	/* held while paired, under RTNL */
	struct work_struct register_work;
	struct mutex reg_mutex;
	bool registered;
	bool removing;
};

/* What a user context may mmap: its doorbell page (vrdma_verbs.c). */
struct vrdma_mmap_entry {
	struct rdma_user_mmap_entry rdma;
	phys_addr_t addr;
};

struct vrdma_ucontext {
	struct ib_ucontext ibuc;
	/* The device context (ALLOC_CONTEXT) and its doorbell page. */
	u32 ctx;
	struct vrdma_mmap_entry *db;
};

struct vrdma_pd {
	struct ib_pd ibpd;
	u32 pdn;
};

struct vrdma_ah {
	struct ib_ah ibah;
	struct virtio_rdma_av av;
};

/* A two-level MR page table ("MR page tables" in the spec), vrdma_mr.c. */
/*
 * An MR page table (docs/specs/virtio-rdma.rst, "MR page tables"): level-2
 * pages list the data pages, level-1 pages the level-2 pages; above
 * 512 * 512 data pages a level-0 page lists the level-1 pages.  top is
 * what the device is given.
 */
struct vrdma_pt {
	u64 *top;
	u64 *l0;
	u64 **l1;
	u64 **l2;
	u32 max_pages;
};

/*
 * A queue in guest memory (vrdma_ring.c): 1 << log_entries entries of
 * 1 << log_stride bytes, then the trailer, in pages the device maps for
 * the queue's life.  A kernel queue's are zeroed vmalloc pages (va); a
 * user queue's are the process's, pinned (umem), and the driver never
 * reads or writes them.  Neither: no ring (vrdma_ring_present()).
 */
struct vrdma_ring {
	void *va;
	struct ib_umem *umem;
	u32 npages;
	u8 log_entries, log_stride;
	struct virtio_rdma_ring_trailer *trailer;	/* va's only */
};

struct vrdma_cq {
	struct ib_cq ibcq;
	u32 cqn;
	u32 ctx;			/* the device context's */
	struct vrdma_ring ring;		/* a user CQ's: ring.umem */
	u32 cons;			/* consumer counter (lock) */
	spinlock_t lock;
};

/* An outstanding work request: the device is given its tag, not wr_id. */
struct vrdma_wr_ent {
	u64 tag;	/* 0: free; | VRDMA_WR_DUE | VRDMA_WR_SIGNALED */
	u64 wr_id;	/* the ULP's (a kernel ULP's is its wr_cqe pointer) */
};
/* In vrdma_wr_ent.tag: a CQE is due (a signaled send, a receive). */
#define VRDMA_WR_DUE BIT_ULL(63)
/* ... and stays so after RESET: only such a request completes successfully. */
#define VRDMA_WR_SIGNALED BIT_ULL(62)
#define VRDMA_WR_FLAGS (VRDMA_WR_DUE | VRDMA_WR_SIGNALED)

/*
 * One work queue (SQ or RQ) of a QP: its ring, and the table of its
 * outstanding requests by tag (vrdma_qp.c, "Tags"); lock covers both,
 * vrdma_wc() takes it inside the CQ's lock.
 */
struct vrdma_wq {
	spinlock_t lock;
	u32 max_sge;
	u32 slot_len;		/* header + max_sge SGEs */
	struct vrdma_wr_ent *ents;	/* [nents], by tag & (nents - 1) */
	u32 nents;		/* a power of two, >= 2 * max_wr */
	u64 next_tag;		/* from 1, never reused */
	/* The queue in guest memory (vrdma_qp.c, "Rings"). */
	struct vrdma_ring ring;
	u32 max_wr;
	u32 prod;		/* producer counter: the doorbell's index */
	u64 done_tag;		/* requests up to this tag are complete */
};

/* The wr_id the device is given for the request posted next (wq->lock). */
static inline u64 vrdma_wq_tag(const struct vrdma_wq *wq)
{
	return wq->next_tag;
}

/*
 * A shared receive queue (vrdma_srq.c): a ring of receive
 * requests (virtio_rdma_rq_req + SGEs per entry) that the QPs created on
 * it take from, in ring order, each entry once.  A kernel SRQ's ring is
 * vmalloc memory and its requests carry tags, as a kernel RQ's do; but
 * its entries complete in no order (each on the QP that took it), so its
 * table gives each request a free entry, not the next one in turn
 * ("Tags" in vrdma_srq.c).  A user SRQ's ring is the process's, pinned;
 * the provider posts to it, and the module keeps no table.
 */
struct vrdma_srq {
	struct ib_srq ibsrq;
	u32 srqn;		/* 1..max_srq: commands, doorbells, events */
	u32 ctx;		/* the device context's (QPs of it only) */
	u32 max_wr, max_sge;	/* as granted: as asked */
	struct vrdma_ring ring;	/* a user SRQ's: ring.umem */
	/* A kernel SRQ's posting state and tag table, under lock. */
	spinlock_t lock;
	u32 prod;		/* producer counter: the doorbell's index */
	struct vrdma_wr_ent *ents;	/* [nents], by tag & (nents - 1) */
	u32 nents;		/* a power of two, >= 2 * max_wr */
	u32 ndue;		/* entries whose CQE is due */
	u64 next_tag;		/* from 1, never reused */
};

struct vrdma_qp {
	struct ib_qp ibqp;
	u32 qpn;		/* queue index: commands, doorbells */
	u32 wire_qpn;		/* ibqp.qp_num: what peers and CQEs name */
	u32 pdn;
	struct vrdma_wq sq, rq;
	struct vrdma_cq *scq, *rcq;	/* the only CQs their CQEs may come on */
	/*
	 * A user QP: its rings are the process's and so are its wr_ids (no
	 * tag table); uverbs cannot post to it, the provider does.
	 */
	bool user_rings;
	/*
	 * The SRQ it receives from instead of an RQ of its own (no RQ
	 * ring, no receive tags); it outlives the QP (the core counts its
	 * users), so pollers that hold the QP may use it.
	 */
	struct vrdma_srq *srq;
	struct ib_qp_cap cap;
	enum ib_sig_type sig_type;
	/*
	 * The state the last successful modify_qp set (RESET at create): the
	 * posts' "immediate errors".  The device may move the QP on to ERR or
	 * SQE by itself, where posting is allowed (it flushes).
	 */
	enum ib_qp_state state;
	/*
	 * Receive WRs posted and not yet polled: every one ends in exactly one
	 * CQE (success, error or flush), or is discarded by RESET.  A post
	 * beyond cap.max_recv_wr fails with -ENOMEM; like mlx5, a slot is free
	 * once its CQE was polled (ULPs reserve one for ib_drain_rq()).  CQEs
	 * from before a RESET polled after it make the count low, never high:
	 * the device refuses an extra WR itself (LOC_QP_OP_ERR).
	 */
	atomic_t rq_posted;
};

struct vrdma_mr {
	struct ib_mr ibmr;
	u32 mrn;
	struct ib_umem *umem;
	/* Fast registration: a two-level page table reused by every map. */
	struct vrdma_pt pt;
	u32 npages;
	/* map_mr_sg runs in atomic context, with this buffer. */
	struct vrdma_ctrl_req map;
};

static inline struct vrdma_dev *to_vdev(struct ib_device *ib)
{
	return container_of(ib, struct vrdma_dev, ib);
}
static inline struct vrdma_ucontext *to_vuc(struct ib_ucontext *u)
{
	return container_of(u, struct vrdma_ucontext, ibuc);
}
static inline struct vrdma_pd *to_vpd(struct ib_pd *p)
{
	return container_of(p, struct vrdma_pd, ibpd);
}
static inline struct vrdma_cq *to_vcq(struct ib_cq *c)
{
	return container_of(c, struct vrdma_cq, ibcq);
}
static inline struct vrdma_qp *to_vqp(struct ib_qp *q)
{
	return container_of(q, struct vrdma_qp, ibqp);
}
static inline struct vrdma_mr *to_vmr(struct ib_mr *m)
{
	return container_of(m, struct vrdma_mr, ibmr);
}
static inline struct vrdma_ah *to_vah(struct ib_ah *a)
{
	return container_of(a, struct vrdma_ah, ibah);
}
static inline struct vrdma_srq *to_vsrq(struct ib_srq *s)
{
	return container_of(s, struct vrdma_srq, ibsrq);
}

/*
 * A provider's request (uverbs driver data) of a verb, into the kernel:
 * at least len bytes, and any bytes beyond what this module knows zero.
 */
static inline int vrdma_udata_in(struct ib_udata *udata, void *req, size_t len)
{
	if (!udata || udata->inlen < len)
		return -EINVAL;
	if (ib_copy_from_udata(req, udata, len))
		return -EFAULT;
	if (udata->inlen > len &&
	    !ib_is_udata_cleared(udata, len, udata->inlen - len))
		return -EINVAL;
	return 0;
}

/*
 * The deepest CQ and the deepest SQ or RQ: the rings' bounds
 * (max_ring_cqe, max_ring_qp_wr), not the virtqueues' (max_cqe,
 * max_qp_wr), which the driver does not use.
 */
static inline u32 vrdma_max_cqe(const struct vrdma_dev *dev)
{
	return dev->cfg.max_ring_cqe;
}

static inline u32 vrdma_max_qp_wr(const struct vrdma_dev *dev)
{
	return dev->cfg.max_ring_qp_wr;
}

/* vrdma_ctrl.c */
int vrdma_ctrl_init(struct vrdma_dev *dev);
void vrdma_ctrl_fini(struct vrdma_dev *dev);
void vrdma_ctrl_req_init(struct vrdma_ctrl_req *r);
bool vrdma_ctrl_req_busy(struct vrdma_ctrl_req *r);
void vrdma_ctrl_reap(struct vrdma_dev *dev);
void vrdma_ctrl_vq_done(struct virtqueue *vq);
int vrdma_cmd(struct vrdma_dev *dev, u8 cmd, const void *req, size_t req_len,
	      void *rsp, size_t rsp_len);
int vrdma_cmd_atomic(struct vrdma_dev *dev, struct vrdma_ctrl_req *r, u8 cmd,
		     const void *req, size_t req_len, void *rsp, size_t rsp_len);

/* vrdma_netdev.c */
int vrdma_netdev_init(struct vrdma_dev *dev);
void vrdma_netdev_fini(struct vrdma_dev *dev);
bool vrdma_port_up(struct vrdma_dev *dev);
int vrdma_netdev_mtu(struct vrdma_dev *dev);

/* vrdma_verbs.c */
extern const struct ib_device_ops vrdma_dev_ops;

/* vrdma_mr.c */
int vrdma_pt_alloc(struct vrdma_pt *pt, u32 npages, gfp_t gfp);
void vrdma_pt_free(struct vrdma_pt *pt);
void vrdma_pt_set(struct vrdma_pt *pt, u32 i, u64 addr);
int vrdma_pt_from_umem(struct vrdma_pt *pt, struct ib_umem *umem, u32 npages);
struct ib_mr *vrdma_get_dma_mr(struct ib_pd *pd, int access);
struct ib_mr *vrdma_reg_user_mr(struct ib_pd *pd, u64 start, u64 length,
				u64 virt_addr, int access,
				struct ib_udata *udata);
struct ib_mr *vrdma_alloc_mr(struct ib_pd *pd, enum ib_mr_type type,
			     u32 max_num_sg);
int vrdma_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		    unsigned int *sg_offset);
int vrdma_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);

/* vrdma_qp.c */
int vrdma_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		    struct ib_udata *udata);
int vrdma_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		    struct ib_udata *udata);
int vrdma_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		   struct ib_qp_init_attr *init);
int vrdma_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);
int vrdma_uwq_check(u64 va, u8 log_entries, u8 log_stride, u32 max_wr,
		    u32 max_sge, size_t hdr);

/* vrdma_srq.c */
int vrdma_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		     struct ib_udata *udata);
int vrdma_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		     enum ib_srq_attr_mask mask, struct ib_udata *udata);
int vrdma_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr);
int vrdma_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata);
int vrdma_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			const struct ib_recv_wr **bad_wr);
bool vrdma_srq_complete(struct vrdma_srq *srq, u64 tag, u64 *wr_id);
void vrdma_srq_event(struct vrdma_dev *dev, u32 srqn, enum ib_event_type type);

/* vrdma_ring.c */
int vrdma_rings_init(struct vrdma_dev *dev);
void vrdma_rings_fini(struct vrdma_dev *dev);
int vrdma_ring_alloc(struct vrdma_ring *r, u32 min_entries, u32 entry_bytes);
int vrdma_ring_get_user(struct vrdma_ring *r, struct ib_device *ib, u64 va,
			u8 log_entries, u8 log_stride);
int vrdma_ring_desc(const struct vrdma_ring *r, struct vrdma_pt *pt,
		    struct virtio_rdma_ring *desc);
void vrdma_ring_free(struct vrdma_ring *r);
static inline void *vrdma_ring_entry(const struct vrdma_ring *r, u32 i)
{
	return r->va + ((size_t)(i & ((1u << r->log_entries) - 1)) << r->log_stride);
}
static inline u32 vrdma_ring_entries(const struct vrdma_ring *r)
{
	return 1u << r->log_entries;
}
/* The entries' bytes: the trailer's offset. */
static inline size_t vrdma_ring_entries_bytes(const struct vrdma_ring *r)
{
	return (size_t)1 << (r->log_entries + r->log_stride);
}
static inline bool vrdma_ring_present(const struct vrdma_ring *r)
{
	return r->va || r->umem;
}
void vrdma_doorbell(struct vrdma_dev *dev, enum virtio_rdma_db_type type,
		    u32 qn, u32 value);

/* vrdma_dp.c */
void vrdma_event_vq_done(struct virtqueue *vq);
int vrdma_event_init(struct vrdma_dev *dev);
/* vrdma_qp.c: a work queue's ring slots and tags (wq->lock held) */
bool vrdma_wq_complete(struct vrdma_wq *wq, u64 tag, bool success,
		       u64 *wr_id);
void *vrdma_wq_ring_slot(struct vrdma_wq *wq);
void vrdma_wq_ring_commit(struct vrdma_wq *wq, u64 wr_id, bool due);
void vrdma_qp_event(struct vrdma_dev *dev, u32 qpn, enum ib_event_type type);
size_t vrdma_build_recv(struct virtio_rdma_rq_req *r,
			const struct ib_recv_wr *wr, u64 tag);
int vrdma_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		    const struct ib_send_wr **bad_wr);
int vrdma_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		    const struct ib_recv_wr **bad_wr);
int vrdma_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc);
int vrdma_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);

#endif /* VRDMA_H */

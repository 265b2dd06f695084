// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Host-side test of the provider's rings data path (ring.c) with the
 * provider compiled in, on a doorbell "page" of plain memory: the SRQ
 * entries post_srq_recv writes and the doorbell value it rings once per
 * call, the room rule against the trailer's device_idx (ENOMEM), too many
 * SGEs (EINVAL), both with bad_wr; and the poll of a receive CQE of a QP
 * on an SRQ (the entry's wr_id, nothing of the QP's RQ).
 */
#include "virtio_rdma.c"

#include <string.h>

/* rdma-core builds with -DNDEBUG: a check that CHECK() would drop. */
#define CHECK(c)                                                               \
	do {                                                                   \
		if (!(c)) {                                                    \
			fprintf(stderr, "post_test: line %d: %s\n", __LINE__, \
				#c);                                           \
			exit(1);                                               \
		}                                                              \
	} while (0)

static struct vrdma_context srq_ctx;

static void check_srq_entry(struct vrdma_srq *srq, uint32_t i,
			    const struct ibv_recv_wr *wr)
{
	const struct virtio_rdma_rq_req *r =
		(void *)((char *)srq->ring.buf +
			 ((size_t)(i & ((1u << srq->ring.log_entries) - 1))
			  << srq->ring.log_stride));
	const struct virtio_rdma_sge *d = (const void *)(r + 1);
	int k;

	CHECK(le32toh(r->num_sge) == (uint32_t)wr->num_sge);
	CHECK(r->pad == 0);
	CHECK(le64toh(r->wr_id) == wr->wr_id);
	for (k = 0; k < wr->num_sge; k++) {
		CHECK(le64toh(d[k].addr) == wr->sg_list[k].addr);
		CHECK(le32toh(d[k].length) == wr->sg_list[k].length);
		CHECK(le32toh(d[k].lkey) == wr->sg_list[k].lkey);
	}
}

static void test_srq(void)
{
	struct vrdma_srq srq = { .srqn = 77, .max_wr = 3, .max_sge = 2 };
	struct ibv_sge sge[4][2];
	struct ibv_recv_wr r[4], *bad;
	uint64_t db = 0;
	int i;

	srq_ctx.db = &db;
	srq.ibsrq.context = &srq_ctx.ibv_ctx.context;
	pthread_spin_init(&srq.lock, PTHREAD_PROCESS_PRIVATE);
	/* 4 entries of 64 bytes (16 + 2 * 16 rounded up), max_wr 3. */
	CHECK(vrdma_uring_alloc(&srq.ring, 3, sizeof(struct virtio_rdma_rq_req) +
				2 * sizeof(struct virtio_rdma_sge)) == 0);
	CHECK(srq.ring.log_entries == 2 && srq.ring.log_stride == 6);
	memset(r, 0, sizeof(r));
	for (i = 0; i < 4; i++) {
		sge[i][0] = (struct ibv_sge){ .addr = 0x10000 + i,
					      .length = 100 + i,
					      .lkey = 0x500 + i };
		sge[i][1] = (struct ibv_sge){ .addr = 0x20000 + i,
					      .length = 200 + i,
					      .lkey = 0x600 + i };
		r[i].wr_id = 0xabc0 + i;
		r[i].sg_list = sge[i];
		r[i].num_sge = 1 + (i & 1);
		r[i].next = i + 1 < 4 ? &r[i + 1] : NULL;
	}

	/* Four WRs, room for three: three written, one doorbell, ENOMEM. */
	bad = NULL;
	CHECK(vrdma_ring_post_srq_recv(&srq.ibsrq, r, &bad) == ENOMEM);
	CHECK(bad == &r[3] && srq.prod == 3);
	for (i = 0; i < 3; i++)
		check_srq_entry(&srq, i, &r[i]);
	CHECK(le64toh(db) == VIRTIO_RDMA_DB(VIRTIO_RDMA_DB_SRQ, 77, 3));
	CHECK(le64toh(db) == (3ull << 32 | 2u << 24 | 77));

	/* Still full: nothing written, no doorbell. */
	db = 0;
	CHECK(vrdma_ring_post_srq_recv(&srq.ibsrq, &r[3], &bad) == ENOMEM);
	CHECK(bad == &r[3] && srq.prod == 3 && db == 0);

	/* The device took two: room for two, the fourth goes to slot 3. */
	srq.ring.trailer->device_idx = htole32(2);
	CHECK(vrdma_ring_post_srq_recv(&srq.ibsrq, &r[3], &bad) == 0);
	check_srq_entry(&srq, 3, &r[3]);
	CHECK(srq.prod == 4);
	CHECK(le64toh(db) == VIRTIO_RDMA_DB(VIRTIO_RDMA_DB_SRQ, 77, 4));

	/* Too many SGEs stops the list there, after the valid WR before it. */
	r[2].next = &r[1];
	r[1].num_sge = 3;
	r[1].next = NULL;
	CHECK(vrdma_ring_post_srq_recv(&srq.ibsrq, &r[2], &bad) == EINVAL);
	CHECK(bad == &r[1] && srq.prod == 5);
	check_srq_entry(&srq, 4, &r[2]);	/* wrapped: over r[0]'s slot */
	CHECK(le64toh(db) == VIRTIO_RDMA_DB(VIRTIO_RDMA_DB_SRQ, 77, 5));

	/* A device_idx ahead of the producer makes it look full. */
	srq.ring.trailer->device_idx = htole32(9);
	db = 0;
	r[1].num_sge = 1;
	CHECK(vrdma_ring_post_srq_recv(&srq.ibsrq, &r[1], &bad) == ENOMEM);
	CHECK(bad == &r[1] && srq.prod == 5 && db == 0);

	vrdma_uring_free(&srq.ring);
	pthread_spin_destroy(&srq.lock);
}

/*
 * A receive CQE of a QP on an SRQ: the entry's wr_id; a send CQE naming
 * no send request of it is dropped.
 */
static void test_srq_poll(void)
{
	struct vrdma_qp *qp = calloc(1, sizeof(*qp));
	struct vrdma_cq cq = {};
	struct virtio_rdma_cqe *e;
	struct ibv_wc wc[2];

	CHECK(qp);
	pthread_mutex_init(&srq_ctx.qp_table_lock, NULL);
	cq.vcq.cq.context = &srq_ctx.ibv_ctx.context;
	pthread_spin_init(&cq.lock, PTHREAD_PROCESS_PRIVATE);
	CHECK(vrdma_uring_alloc(&cq.ring, 4,
				sizeof(struct virtio_rdma_cqe)) == 0);
	qp->vqp.qp.qp_num = 0x345678;
	qp->vqp.qp.send_cq = &cq.vcq.cq;
	qp->vqp.qp.recv_cq = &cq.vcq.cq;
	qp->srq = true;
	CHECK(vrdma_uwq_init(&qp->sq, 0, 0,
			     sizeof(struct virtio_rdma_sq_req)) == 0);
	CHECK(vrdma_uwq_init(&qp->rq, 0, 0,
			     sizeof(struct virtio_rdma_rq_req)) == 0);
	CHECK(vrdma_qp_table_add(&srq_ctx, qp) == 0);

	e = cq.ring.buf;
	e[0].wc.wr_id = htole64(0xfeedbeefcafeull);
	e[0].wc.opcode = htole32(VIRTIO_RDMA_WC_RECV);
	e[0].wc.qp_num = htole32(0x345678);
	e[0].wc.byte_len = htole32(42);
	e[0].owner = 1;
	e[1].wc.wr_id = htole64(1);
	e[1].wc.opcode = htole32(VIRTIO_RDMA_WC_SEND);
	e[1].wc.qp_num = htole32(0x345678);
	e[1].owner = 1;
	CHECK(vrdma_ring_poll_cq(&cq.vcq.cq, 2, wc) == 1);
	CHECK(wc[0].wr_id == 0xfeedbeefcafeull && wc[0].opcode == IBV_WC_RECV &&
	      wc[0].status == IBV_WC_SUCCESS && wc[0].byte_len == 42 &&
	      wc[0].qp_num == 0x345678);
	CHECK(cq.cons == 2 && le32toh(cq.ring.trailer->driver_idx) == 2);

	vrdma_qp_table_del(&srq_ctx, qp);
	vrdma_uwq_fini(&qp->sq);
	vrdma_uwq_fini(&qp->rq);
	free(qp);
	vrdma_uring_free(&cq.ring);
	pthread_spin_destroy(&cq.lock);
	free(srq_ctx.qp_table[0x345678 >> VRDMA_QP_TABLE_SHIFT]);
	pthread_mutex_destroy(&srq_ctx.qp_table_lock);
}

int main(void)
{
	test_srq();
	test_srq_poll();

	printf("virtio_rdma post_test: ok\n");
	return 0;
}

// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Host-side test of the provider's post_send/post_recv splitting: the
 * provider is compiled in, ibv_cmd_post_send/recv are replaced by fakes that
 * record each call (this executable's definitions win over libibverbs').
 * Checks: lists go to the kernel in chunks of at most VIRTIO_RDMA_POST_CHUNK,
 * each chunk NULL-terminated; the caller's list is intact afterwards; a WR
 * with too many SGEs (or a UD WR without AH) stops the post at that WR with
 * EINVAL and bad_wr pointing at it, after the valid WRs before it were
 * posted; a kernel error is passed on with the kernel's bad_wr.
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

#define NWR 40

static struct {
	int calls;
	unsigned int len[8];
	const void *first[8];
	int fail_call;		/* 1-based call that fails, 0: none */
	unsigned int fail_at;	/* index in that call's chunk */
} fake;

static void fake_reset(void)
{
	memset(&fake, 0, sizeof(fake));
}

int ibv_cmd_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		      struct ibv_send_wr **bad_wr)
{
	int call = fake.calls++;
	unsigned int n;

	fake.first[call] = wr;
	for (n = 0; wr; wr = wr->next, n++) {
		CHECK(n < VIRTIO_RDMA_POST_CHUNK);
		if (call + 1 == fake.fail_call && n == fake.fail_at) {
			*bad_wr = wr;
			return EINVAL;
		}
	}
	fake.len[call] = n;
	return 0;
}

int ibv_cmd_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad_wr)
{
	int call = fake.calls++;
	unsigned int n;

	fake.first[call] = wr;
	for (n = 0; wr; wr = wr->next, n++)
		CHECK(n < VIRTIO_RDMA_POST_CHUNK);
	fake.len[call] = n;
	return 0;
}

static void chain_send(struct ibv_send_wr *w, struct ibv_ah *ah)
{
	int i;

	memset(w, 0, NWR * sizeof(*w));
	for (i = 0; i < NWR; i++) {
		w[i].wr_id = i;
		w[i].num_sge = 2;
		w[i].wr.ud.ah = ah;
		w[i].next = i + 1 < NWR ? &w[i + 1] : NULL;
	}
}

static void assert_chained_send(struct ibv_send_wr *w)
{
	int i;

	for (i = 0; i < NWR; i++)
		CHECK(w[i].next == (i + 1 < NWR ? &w[i + 1] : NULL));
}

int main(void)
{
	struct vrdma_qp rc = { .vqp.qp.qp_type = IBV_QPT_RC, .vqp.qp.state = IBV_QPS_RTS,
			       .max_send_sge = 2, .max_recv_sge = 1 };
	struct vrdma_qp ud = { .vqp.qp.qp_type = IBV_QPT_UD, .vqp.qp.state = IBV_QPS_RTS,
			       .max_send_sge = 2, .max_recv_sge = 1 };
	struct ibv_send_wr w[NWR], *bad;
	struct ibv_recv_wr r[NWR], *rbad;
	struct ibv_ah ah;
	int i;

	/* 40 valid WRs: 16 + 16 + 8, list intact. */
	fake_reset();
	chain_send(w, NULL);
	bad = NULL;
	CHECK(vrdma_post_send(&rc.vqp.qp, w, &bad) == 0);
	CHECK(fake.calls == 3 && fake.len[0] == 16 && fake.len[1] == 16 &&
	       fake.len[2] == 8);
	CHECK(fake.first[0] == &w[0] && fake.first[1] == &w[16] &&
	       fake.first[2] == &w[32]);
	CHECK(bad == NULL);
	assert_chained_send(w);

	/* WR 19 has 3 SGEs > 2: 16 + 3 posted, then EINVAL at WR 19. */
	fake_reset();
	chain_send(w, NULL);
	w[19].num_sge = 3;
	CHECK(vrdma_post_send(&rc.vqp.qp, w, &bad) == EINVAL);
	CHECK(bad == &w[19]);
	CHECK(fake.calls == 2 && fake.len[0] == 16 && fake.len[1] == 3);
	assert_chained_send(w);

	/* A negative count on the first WR: nothing reaches the kernel. */
	fake_reset();
	chain_send(w, NULL);
	w[0].num_sge = -1;
	CHECK(vrdma_post_send(&rc.vqp.qp, w, &bad) == EINVAL);
	CHECK(bad == &w[0] && fake.calls == 0);

	/* UD: a WR without AH would be dereferenced by ibv_cmd_post_send. */
	fake_reset();
	chain_send(w, &ah);
	w[5].wr.ud.ah = NULL;
	CHECK(vrdma_post_send(&ud.vqp.qp, w, &bad) == EINVAL);
	CHECK(bad == &w[5] && fake.calls == 1 && fake.len[0] == 5);
	assert_chained_send(w);

	/* The kernel refuses WR 2 of the second chunk: its bad_wr, no more. */
	fake_reset();
	chain_send(w, NULL);
	fake.fail_call = 2;
	fake.fail_at = 2;
	CHECK(vrdma_post_send(&rc.vqp.qp, w, &bad) == EINVAL);
	CHECK(bad == &w[18] && fake.calls == 2);
	assert_chained_send(w);

	/* Receive: the same splitting, bounded by max_recv_sge. */
	fake_reset();
	memset(r, 0, sizeof(r));
	for (i = 0; i < NWR; i++) {
		r[i].num_sge = 1;
		r[i].next = i + 1 < NWR ? &r[i + 1] : NULL;
	}
	CHECK(vrdma_post_recv(&rc.vqp.qp, r, &rbad) == 0);
	CHECK(fake.calls == 3 && fake.len[0] == 16 && fake.len[2] == 8);
	r[33].num_sge = 2;
	fake_reset();
	CHECK(vrdma_post_recv(&rc.vqp.qp, r, &rbad) == EINVAL);
	CHECK(rbad == &r[33] && fake.calls == 3 && fake.len[2] == 1);
	for (i = 0; i < NWR; i++)
		CHECK(r[i].next == (i + 1 < NWR ? &r[i + 1] : NULL));

	printf("virtio_rdma post_test: ok\n");
	return 0;
}

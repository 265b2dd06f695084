// SPDX-License-Identifier: GPL-2.0
/*
 * More QPs than a virtqueue per queue allows (at most 511): NQPS RC QPs in
 * one process, in loopback pairs on the device, all to RTS, then a SEND on
 * a sample of the pairs with its bytes checked, then all destroyed.  Times
 * each stage.  TAP output; exit status 1 if any case failed.
 *
 *   vrdma-qps DEVICE GID_INDEX NQPS
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rc_loopback.h"
#include "tap.h"

#define SAMPLE 32	/* pairs that move data */
#define MSG 64

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_mr *mr;
static union ibv_gid gid;
static int gid_index;
static unsigned char *buf;

/* SEND from @a's QP to @b's; @i picks the buffer slot and the pattern. */
static int roundtrip(struct ibv_qp *a, struct ibv_qp *b, int i)
{
	unsigned char *src = buf + 2 * i * MSG, *dst = src + MSG;
	struct ibv_sge ss = { (uintptr_t)src, MSG, mr->lkey };
	struct ibv_sge rs = { (uintptr_t)dst, MSG, mr->lkey };
	struct ibv_recv_wr rwr = { .wr_id = 2 * i + 1, .sg_list = &rs, .num_sge = 1 };
	struct ibv_send_wr swr = { .wr_id = 2 * i, .sg_list = &ss, .num_sge = 1,
				   .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_SIGNALED };
	struct ibv_recv_wr *rbad;
	struct ibv_send_wr *sbad;
	struct ibv_wc wc;
	double until = now_s() + 10;
	int got = 0;

	memset(src, 0x40 + i % 64, MSG);
	memset(dst, 0, MSG);
	if (ibv_post_recv(b, &rwr, &rbad) || ibv_post_send(a, &swr, &sbad))
		return -1;
	while (got < 2 && now_s() < until) {
		int n = ibv_poll_cq(cq, 1, &wc);

		if (n < 0 || (n == 1 && wc.status != IBV_WC_SUCCESS))
			return -1;
		got += n;
	}
	return got == 2 && !memcmp(src, dst, MSG) ? 0 : -1;
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	struct ibv_device_attr dattr;
	struct ibv_qp **qps;
	double t0, t_create, t_rts, t_data, t_destroy;
	int i, n, nqps, made = 0, up = 0, moved = 0, freed = 0;

	if (argc < 4 || (nqps = atoi(argv[3]) & ~1) < 2) {
		fprintf(stderr, "usage: %s DEVICE GID_INDEX NQPS\n", argv[0]);
		return 2;
	}
	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), argv[1]))
			ctx = ibv_open_device(list[i]);
	gid_index = atoi(argv[2]);
	if (!ctx || ibv_query_device(ctx, &dattr) ||
	    ibv_query_gid(ctx, 1, gid_index, &gid)) {
		fprintf(stderr, "cannot open %s\n", argv[1]);
		return 2;
	}
	qps = calloc(nqps, sizeof(*qps));
	buf = aligned_alloc(4096, 2 * SAMPLE * MSG);
	pd = ibv_alloc_pd(ctx);
	cq = pd ? ibv_create_cq(ctx, 4 * SAMPLE, NULL, NULL, 0) : NULL;
	mr = cq ? ibv_reg_mr(pd, buf, 2 * SAMPLE * MSG, IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!qps || !buf || !mr) {
		fprintf(stderr, "setup failed: %s\n", strerror(errno));
		return 2;
	}
	result(dattr.max_qp >= nqps + 2, "the device offers the QPs",
	       "max_qp %d, %d wanted", dattr.max_qp, nqps);

	t0 = now_s();
	for (i = 0; i < nqps; i++) {
		struct ibv_qp_init_attr ia = {
			.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 1, .max_recv_wr = 1,
				 .max_send_sge = 1, .max_recv_sge = 1 },
		};

		qps[i] = ibv_create_qp(pd, &ia);
		if (!qps[i])
			break;
		made++;
	}
	t_create = now_s();
	result(made == nqps, "every QP created", "%d of %d (%s)", made, nqps,
	       made == nqps ? "ok" : strerror(errno));
	for (i = 0; i + 1 < made; i += 2)
		if (!rc_to_rts(qps[i], qps[i + 1]->qp_num, &gid, gid_index,
			       IBV_ACCESS_LOCAL_WRITE) &&
		    !rc_to_rts(qps[i + 1], qps[i]->qp_num, &gid, gid_index,
			       IBV_ACCESS_LOCAL_WRITE))
			up += 2;
	t_rts = now_s();
	result(up == made && made == nqps, "every pair in RTS", "%d of %d", up,
	       nqps);
	for (i = 0; i < SAMPLE && up == nqps; i++) {
		int p = 2 * (int)((long)i * (nqps / 2) / SAMPLE);

		moved += !roundtrip(qps[p], qps[p + 1], i);
	}
	t_data = now_s();
	result(moved == SAMPLE, "a SEND on a sample of the pairs, bytes checked",
	       "%d of %d pairs", moved, SAMPLE);
	for (i = 0; i < made; i++)
		freed += !ibv_destroy_qp(qps[i]);
	t_destroy = now_s();
	result(freed == made, "every QP destroyed", "%d of %d", freed, made);
	printf("# %d QPs: create %.2f s, to RTS %.2f s, %d SENDs %.2f s, destroy %.2f s\n",
	       nqps, t_create - t0, t_rts - t_create, SAMPLE, t_data - t_rts,
	       t_destroy - t_data);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	printf("1..%d\n", ntest);
	return nfail ? 1 : 0;
}

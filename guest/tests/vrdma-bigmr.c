// SPDX-License-Identifier: GPL-2.0
/*
 * An MR above 1 GiB, the reach of a two-level page table: the module
 * builds a three-level one (docs/specs/virtio-rdma.rst, "MR page tables").
 * The region is one 1 MiB memfd mapped again and again (MIB times), so a
 * guest of less RAM registers it and only 256 pages are pinned, each many
 * times.  An RC loopback pair then writes a pattern into the MR at offsets
 * on both sides of 1 GiB and at its end, and reads it back, each checked
 * through the memfd: a page-table entry the device took wrongly shows as
 * bytes in the wrong place.  TAP output; exit status 1 if a case failed.
 *
 *   vrdma-bigmr DEVICE GID_INDEX MIB
 */
#define _GNU_SOURCE
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rc_loopback.h"
#include "tap.h"

#define CHUNK (1ul << 20)
#define MSG 256

static struct ibv_cq *cq;

/* One signaled RDMA @op of MSG bytes between @local and @remote. */
static int rdma(struct ibv_qp *qp, enum ibv_wr_opcode op, struct ibv_mr *local,
		void *buf, struct ibv_mr *remote, uint64_t raddr)
{
	struct ibv_sge sge = { (uintptr_t)buf, MSG, local->lkey };
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = raddr, .rkey = remote->rkey },
	}, *bad;
	struct ibv_wc wc;
	double until = now_s() + 10;
	int n = 0;

	if (ibv_post_send(qp, &wr, &bad))
		return -1;
	while (!n && now_s() < until)
		n = ibv_poll_cq(cq, 1, &wc);
	return n == 1 && wc.status == IBV_WC_SUCCESS ? 0 : -1;
}

int main(int argc, char **argv)
{
	const unsigned int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				 IBV_ACCESS_REMOTE_READ;
	struct ibv_device **list;
	struct ibv_device_attr dattr;
	struct ibv_context *ctx = NULL;
	struct ibv_qp *qp[2] = { NULL, NULL };
	struct ibv_mr *big = NULL, *small;
	struct ibv_pd *pd;
	union ibv_gid gid;
	unsigned char *base, *view, *buf;
	unsigned long mib, i;
	double t0, t_reg;
	int n, fd, gid_index, ok = 0, want = 0;

	if (argc < 4 || (mib = strtoul(argv[3], NULL, 0)) < 2) {
		fprintf(stderr, "usage: %s DEVICE GID_INDEX MIB\n", argv[0]);
		return 2;
	}
	list = ibv_get_device_list(&n);
	for (i = 0; list && i < (unsigned long)n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), argv[1]))
			ctx = ibv_open_device(list[i]);
	gid_index = atoi(argv[2]);
	if (!ctx || ibv_query_device(ctx, &dattr) ||
	    ibv_query_gid(ctx, 1, gid_index, &gid)) {
		fprintf(stderr, "cannot open %s\n", argv[1]);
		return 2;
	}
	/* MIB aliases of one memfd; the first is the view bytes are checked in. */
	fd = memfd_create("vrdma-bigmr", 0);
	base = mmap(NULL, mib * CHUNK, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS |
		    MAP_NORESERVE, -1, 0);
	if (fd < 0 || ftruncate(fd, CHUNK) || base == MAP_FAILED) {
		fprintf(stderr, "setup failed: %s\n", strerror(errno));
		return 2;
	}
	for (i = 0; i < mib; i++)
		if (mmap(base + i * CHUNK, CHUNK, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED) {
			fprintf(stderr, "alias %lu: %s\n", i, strerror(errno));
			return 2;
		}
	view = base;
	buf = aligned_alloc(4096, 2 * MSG);
	pd = ibv_alloc_pd(ctx);
	cq = pd ? ibv_create_cq(ctx, 8, NULL, NULL, 0) : NULL;
	small = cq ? ibv_reg_mr(pd, buf, 2 * MSG, IBV_ACCESS_LOCAL_WRITE) : NULL;
	for (i = 0; small && i < 2; i++) {
		struct ibv_qp_init_attr ia = {
			.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 2, .max_recv_wr = 1,
				 .max_send_sge = 1, .max_recv_sge = 1 },
		};

		qp[i] = ibv_create_qp(pd, &ia);
	}
	if (!qp[0] || !qp[1] || rc_to_rts(qp[0], qp[1]->qp_num, &gid, gid_index, acc) ||
	    rc_to_rts(qp[1], qp[0]->qp_num, &gid, gid_index, acc)) {
		fprintf(stderr, "QP setup failed: %s\n", strerror(errno));
		return 2;
	}
	result(dattr.max_mr_size >= mib * CHUNK, "max_mr_size holds the MR",
	       "max_mr_size %llu, %lu MiB wanted",
	       (unsigned long long)dattr.max_mr_size, mib);

	t0 = now_s();
	big = ibv_reg_mr(pd, base, mib * CHUNK, acc);
	t_reg = now_s() - t0;
	result(big != NULL, "ibv_reg_mr of the whole region", "%lu MiB in %.2f s (%s)",
	       mib, t_reg, big ? "ok" : strerror(errno));

	/* Either side of 1 GiB (the first three-level entry) and the end. */
	for (i = 0; big && i < 4; i++) {
		const uint64_t offs[4] = { (1ul << 30) - MSG, 1ul << 30,
					   (1ul << 30) + 4096 * 513 + 100,
					   mib * CHUNK - MSG };
		uint64_t off = offs[i];

		if (off + MSG > mib * CHUNK)
			continue;
		want++;
		memset(buf, 0x11 + i, MSG);
		memset(view + off % CHUNK, 0, MSG);
		if (rdma(qp[0], IBV_WR_RDMA_WRITE, small, buf, big,
			 (uintptr_t)base + off) ||
		    memcmp(view + off % CHUNK, buf, MSG))
			continue;
		memset(view + off % CHUNK, 0x77 - i, MSG);
		if (!rdma(qp[0], IBV_WR_RDMA_READ, small, buf + MSG, big,
			  (uintptr_t)base + off) &&
		    !memcmp(buf + MSG, view + off % CHUNK, MSG))
			ok++;
	}
	result(big && ok == want, "RDMA WRITE and READ at offsets around 1 GiB and the end",
	       "%d of %d, bytes checked through the memfd", ok, want);
	result(!big || !ibv_dereg_mr(big), "ibv_dereg_mr", NULL);
	printf("# %lu MiB MR: registered in %.2f s\n", mib, t_reg);
	ibv_destroy_qp(qp[0]);
	ibv_destroy_qp(qp[1]);
	ibv_dereg_mr(small);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	printf("1..%d\n", ntest);
	return nfail ? 1 : 0;
}

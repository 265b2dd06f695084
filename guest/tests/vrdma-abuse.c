// SPDX-License-Identifier: GPL-2.0
/*
 * What a hostile local user can do to a verbs device, tried through
 * unmodified libibverbs on one device: two RC QPs of the device connected
 * to each other (the device loops frames to its own GID).  Every case must
 * end in a clean error -- a refused verb or an error completion -- and the
 * device must keep working: the last case moves data again.  TAP output;
 * exit status 1 if any case failed.
 *
 * Also what a user can do with the one part of our device it may map, its
 * doorbell page (the rings in user memory of the module's uverbs ABI 2):
 * map other offsets, map it executable, ring doorbells for every queue
 * number with indexes beyond any ring; and inline data (the provider's):
 * from memory no MR covers, reused at once, too long, on an opcode that
 * carries no data of its own.
 *
 *   vrdma-abuse DEVICE [GID_INDEX]
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "tap.h"

#define BUF_SIZE (64 * 1024)
#define CQ_DEPTH 256

static struct ibv_context *ctx;
static struct ibv_device_attr dattr;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_qp *qa, *qb;
static struct ibv_mr *mr;
static char *buf;
static union ibv_gid gid;
static int gid_index = -1;

/* One completion within timeout_ms; 0 if none came. */
static int wait_wc(struct ibv_cq *c, struct ibv_wc *wc, int timeout_ms)
{
	double end = now_ms() + timeout_ms;

	do {
		int n = ibv_poll_cq(c, 1, wc);

		if (n)
			return n;
		usleep(1000);
	} while (now_ms() < end);
	return 0;
}

/* Throw away whatever completions are left (after a QP went to ERR). */
static void drain_cq(struct ibv_cq *c)
{
	struct ibv_wc wc;

	while (wait_wc(c, &wc, 200) > 0)
		;
}

static int to_rts(struct ibv_qp *qp, uint32_t dest)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
	};

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dest;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = gid;
	a.ah_attr.grh.sgid_index = gid_index;
	a.ah_attr.grh.hop_limit = 1;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 10;
	a.retry_cnt = 2;
	a.rnr_retry = 2;
	a.max_rd_atomic = 1;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
			     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
			     IBV_QP_MAX_QP_RD_ATOMIC);
}

static struct ibv_qp *new_qp(uint32_t max_sge)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 64, .max_recv_wr = 64,
			 .max_send_sge = max_sge, .max_recv_sge = max_sge },
	};

	return ibv_create_qp(pd, &ia);
}

/* (Re)connect qa <-> qb from whatever state they are in. */
static int reconnect(void)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };

	if (ibv_modify_qp(qa, &a, IBV_QP_STATE) || ibv_modify_qp(qb, &a, IBV_QP_STATE))
		return -1;
	drain_cq(cq);
	return to_rts(qa, qb->qp_num) || to_rts(qb, qa->qp_num);
}

static int post_recv(struct ibv_qp *qp, void *addr, uint32_t len, uint32_t lkey)
{
	struct ibv_sge s = { .addr = (uintptr_t)addr, .length = len, .lkey = lkey };
	struct ibv_recv_wr wr = { .wr_id = 2, .sg_list = &s, .num_sge = 1 }, *bad;

	return ibv_post_recv(qp, &wr, &bad);
}

static int post_one(struct ibv_qp *qp, enum ibv_wr_opcode op, struct ibv_sge *s,
		    int nsge, uint64_t raddr, uint32_t rkey, unsigned int flags)
{
	struct ibv_send_wr wr = {
		.wr_id = 1, .sg_list = s, .num_sge = nsge, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED | flags,
		.wr.rdma = { .remote_addr = raddr, .rkey = rkey },
	}, *bad = NULL;

	return ibv_post_send(qp, &wr, &bad);
}

/* A send on qa completes with an error status (any). */
static void expect_send_error(const char *name, struct ibv_sge *s, int nsge,
			      enum ibv_wr_opcode op, uint64_t raddr, uint32_t rkey)
{
	struct ibv_wc wc;
	int err;

	if (reconnect()) {
		result(0, name, "reconnect failed");
		return;
	}
	post_recv(qb, buf + BUF_SIZE / 2, 4096, mr->lkey);
	err = post_one(qa, op, s, nsge, raddr, rkey, 0);
	if (err) {
		result(1, name, "refused at post (%s)", strerror(err));
		return;
	}
	while (wait_wc(cq, &wc, 3000) > 0)
		if (wc.qp_num == qa->qp_num && wc.wr_id == 1)
			break;
	if (wc.qp_num != qa->qp_num || wc.wr_id != 1)
		result(0, name, "no completion");
	else
		result(wc.status != IBV_WC_SUCCESS, name, "status %s",
		       ibv_wc_status_str(wc.status));
}

/* A message moves from qa to qb byte-exact: the device still works. */
static int roundtrip(const char *name)
{
	struct ibv_sge s = { .addr = (uintptr_t)buf, .length = 1000, .lkey = mr->lkey };
	struct ibv_wc wc;
	int got_send = 0, got_recv = 0, i;

	if (reconnect()) {
		result(0, name, "reconnect failed");
		return -1;
	}
	for (i = 0; i < 1000; i++)
		buf[i] = (char)(i * 7 + 3);
	memset(buf + BUF_SIZE / 2, 0, 1000);
	if (post_recv(qb, buf + BUF_SIZE / 2, 4096, mr->lkey) ||
	    post_one(qa, IBV_WR_SEND, &s, 1, 0, 0, 0)) {
		result(0, name, "post failed");
		return -1;
	}
	while ((!got_send || !got_recv) && wait_wc(cq, &wc, 5000) > 0) {
		if (wc.status != IBV_WC_SUCCESS)
			break;
		got_send |= wc.qp_num == qa->qp_num;
		got_recv |= wc.qp_num == qb->qp_num && wc.byte_len == 1000;
	}
	i = got_send && got_recv && !memcmp(buf, buf + BUF_SIZE / 2, 1000);
	result(i, name, i ? NULL : "status %s, send %d recv %d",
	       ibv_wc_status_str(wc.status), got_send, got_recv);
	return i ? 0 : -1;
}

static void mr_cases(void)
{
	struct ibv_mr *m;
	void *none;

	m = ibv_reg_mr(pd, buf, 0, IBV_ACCESS_LOCAL_WRITE);
	result(!m, "reg_mr zero length is refused", m ? "accepted" : NULL);
	m = ibv_reg_mr(pd, (void *)0x1000, 4096, IBV_ACCESS_LOCAL_WRITE);
	result(!m, "reg_mr of an unmapped address is refused", m ? "accepted" : NULL);
	none = mmap(NULL, 1 << 20, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	m = ibv_reg_mr(pd, none, 1 << 20, IBV_ACCESS_LOCAL_WRITE);
	result(!m, "reg_mr of PROT_NONE memory is refused", m ? "accepted" : NULL);
	munmap(none, 1 << 20);
	m = ibv_reg_mr(pd, buf, dattr.max_mr_size + 4096, IBV_ACCESS_LOCAL_WRITE);
	result(!m, "reg_mr longer than max_mr_size is refused", m ? "accepted" : NULL);
	m = ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_REMOTE_WRITE);
	result(!m, "reg_mr REMOTE_WRITE without LOCAL_WRITE is refused",
	       m ? "accepted" : NULL);
	m = ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_ON_DEMAND | IBV_ACCESS_LOCAL_WRITE);
	result(!m, "reg_mr ON_DEMAND is refused", m ? "accepted" : NULL);
	if (m)
		ibv_dereg_mr(m);
	result(ibv_dealloc_pd(pd) != 0, "dealloc_pd with live QPs and MRs is refused",
	       NULL);
}

static void post_cases(void)
{
	struct ibv_sge s[64];
	struct ibv_send_wr wr = { .sg_list = s, .opcode = IBV_WR_SEND }, *bad = NULL;
	struct ibv_recv_wr rwr = { .sg_list = s }, *rbad = NULL;
	struct ibv_mr *gone;
	uint32_t i;
	int err;

	for (i = 0; i < 64; i++)
		s[i] = (struct ibv_sge){ (uintptr_t)buf, 8, mr->lkey };
	wr.num_sge = 64;
	err = ibv_post_send(qa, &wr, &bad);
	result(err && bad == &wr, "post_send with more SGEs than the QP has is refused",
	       "%s", strerror(err));
	rwr.num_sge = 64;
	err = ibv_post_recv(qa, &rwr, &rbad);
	result(err && rbad == &rwr, "post_recv with more SGEs than the QP has is refused",
	       "%s", strerror(err));
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_INLINE;
	err = ibv_post_send(qa, &wr, &bad);
	result(err != 0, "post_send INLINE (not offered) is refused", "%s", strerror(err));
	wr.send_flags = 0;
	wr.opcode = (enum ibv_wr_opcode)0x55;
	err = ibv_post_send(qa, &wr, &bad);
	result(err != 0, "post_send with an unknown opcode is refused", "%s", strerror(err));

	s[0] = (struct ibv_sge){ (uintptr_t)buf, 64, mr->lkey ^ 0x5a5a00 };
	expect_send_error("send with a bad lkey completes in error", s, 1,
			  IBV_WR_SEND, 0, 0);
	s[0] = (struct ibv_sge){ (uintptr_t)buf, 64, mr->lkey };
	expect_send_error("write with a bad rkey completes in error", s, 1,
			  IBV_WR_RDMA_WRITE, (uintptr_t)buf, mr->rkey ^ 0x5a5a00);
	expect_send_error("write past the remote MR completes in error", s, 1,
			  IBV_WR_RDMA_WRITE, (uintptr_t)buf + BUF_SIZE - 8, mr->rkey);
	s[0] = (struct ibv_sge){ (uintptr_t)buf + BUF_SIZE - 8, 64, mr->lkey };
	expect_send_error("send past the local MR completes in error", s, 1,
			  IBV_WR_SEND, 0, 0);
	s[0] = (struct ibv_sge){ (uintptr_t)buf, 0x80000000u, mr->lkey };
	s[1] = (struct ibv_sge){ (uintptr_t)buf, 0x80000000u, mr->lkey };
	expect_send_error("SGEs adding up past 2^31 complete in error", s, 2,
			  IBV_WR_SEND, 0, 0);
	s[0] = (struct ibv_sge){ (uintptr_t)buf, 64, mr->lkey };
	expect_send_error("an atomic on a misaligned address completes in error", s, 1,
			  IBV_WR_ATOMIC_FETCH_AND_ADD, (uintptr_t)buf + 3, mr->rkey);

	gone = ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE);
	if (gone) {
		uint32_t lkey = gone->lkey;

		ibv_dereg_mr(gone);
		s[0] = (struct ibv_sge){ (uintptr_t)buf, 64, lkey };
		expect_send_error("send with a deregistered MR's lkey completes in error",
				  s, 1, IBV_WR_SEND, 0, 0);
	}
}

/* Posting in every state a QP can be in: refused or completed in error. */
static void state_cases(void)
{
	static const enum ibv_qp_state states[] = {
		IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_ERR,
	};
	static const char *const names[] = { "RESET", "INIT", "RTR", "ERR" };
	struct ibv_sge s = { (uintptr_t)buf, 64, mr->lkey };
	char name[96];
	unsigned int i;

	for (i = 0; i < 4; i++) {
		struct ibv_qp *q = new_qp(1);
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
		struct ibv_wc wc;
		int err, n;

		snprintf(name, sizeof(name), "send posted in %s: refused or an error completion",
			 names[i]);
		if (!q) {
			result(0, name, "create_qp failed");
			continue;
		}
		if (states[i] != IBV_QPS_RESET)
			ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				      IBV_QP_ACCESS_FLAGS);
		if (states[i] == IBV_QPS_RTR) {
			memset(&a, 0, sizeof(a));
			a.qp_state = IBV_QPS_RTR;
			a.path_mtu = IBV_MTU_1024;
			a.dest_qp_num = qb->qp_num;
			a.ah_attr.is_global = 1;
			a.ah_attr.grh.dgid = gid;
			a.ah_attr.grh.sgid_index = gid_index;
			a.ah_attr.port_num = 1;
			ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				      IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				      IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
		}
		if (states[i] == IBV_QPS_ERR) {
			a.qp_state = IBV_QPS_ERR;
			ibv_modify_qp(q, &a, IBV_QP_STATE);
		}
		err = post_one(q, IBV_WR_SEND, &s, 1, 0, 0, 0);
		n = err ? 0 : wait_wc(cq, &wc, 2000);
		result(err || (n && wc.status != IBV_WC_SUCCESS), name,
		       err ? "refused (%s)" : n ? "status %s" : "no completion",
		       err ? strerror(err) : n ? ibv_wc_status_str(wc.status) : "");
		ibv_destroy_qp(q);
	}
}

struct race {
	struct ibv_qp *qp;
	volatile int stop;
	unsigned long posted;
};

static void *poster(void *arg)
{
	struct race *r = arg;
	struct ibv_sge s = { (uintptr_t)buf, 64, mr->lkey };

	while (!r->stop)
		if (!post_one(r->qp, IBV_WR_RDMA_WRITE, &s, 1, (uintptr_t)buf, mr->rkey, 0))
			r->posted++;
		else
			usleep(100);
	return NULL;
}

/* Posting from one thread while another moves the QP to ERR and polls. */
static void race_cases(void)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	struct race r = { .qp = qa };
	pthread_t t;
	struct ibv_wc wc[16];
	double end;

	if (reconnect()) {
		result(0, "posting races a move to ERR", "reconnect failed");
		return;
	}
	pthread_create(&t, NULL, poster, &r);
	end = now_ms() + 1500;
	while (now_ms() < end)
		ibv_poll_cq(cq, 16, wc);
	ibv_modify_qp(qa, &a, IBV_QP_STATE);
	end = now_ms() + 500;
	while (now_ms() < end)
		ibv_poll_cq(cq, 16, wc);
	r.stop = 1;
	pthread_join(t, NULL);
	drain_cq(cq);
	result(r.posted > 0, "posting races a move to ERR", "%lu posted", r.posted);
}

/* Create QPs until the device refuses; then everything is given back. */
static void exhaust_cases(void)
{
	struct ibv_qp **q = calloc(dattr.max_qp + 1, sizeof(*q));
	int n = 0, i;

	while (n <= dattr.max_qp && (q[n] = new_qp(1)))
		n++;
	result(n > 0 && n <= dattr.max_qp, "creating QPs past the limit is refused",
	       "%d created (max_qp %d)", n, dattr.max_qp);
	for (i = 0; i < n; i++)
		ibv_destroy_qp(q[i]);
	free(q);
}

/*
 * Async events of type within timeout_ms, until qa's and qb's came: sets
 * *a and *b for those seen (other events are acked and ignored).
 */
static void wait_async(enum ibv_event_type type, int timeout_ms, int *a, int *b)
{
	double end = now_ms() + timeout_ms;
	struct pollfd p = { .fd = ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;

	*a = *b = 0;
	while (!(*a && *b) && now_ms() < end) {
		if (poll(&p, 1, 100) <= 0)
			continue;
		if (ibv_get_async_event(ctx, &ev))
			break;
		if (ev.event_type == type) {
			*a |= ev.element.qp == qa;
			*b |= ev.element.qp == qb;
		}
		ibv_ack_async_event(&ev);
	}
}

/*
 * The doorbell page.  The provider mapped it at the context's one
 * mmap offset (the first: 0); a second mapping of it is the user's own.
 * Doorbells for every queue number: the device takes those for this
 * context's queues (an index beyond the ring breaks the QP: QP_FATAL, its
 * work flushed) and ignores the rest -- the kernel's QP1, other processes'
 * queues -- which the roundtrip at the end and the lab's later cases use.
 */
static void ring_cases(void)
{
	const long pg = sysconf(_SC_PAGESIZE);
	int fd = ctx->cmd_fd, fatal_a, fatal_b;
	volatile uint64_t *db;
	struct ibv_sge s = { .addr = (uintptr_t)buf, .length = 64, .lkey = mr->lkey };
	struct ibv_wc wc = { .status = IBV_WC_SUCCESS };
	void *p;
	uint32_t qn;
	int got;

	p = mmap(NULL, pg, PROT_WRITE, MAP_SHARED, fd, 64 * pg);
	result(p == MAP_FAILED, "mmap of an offset that is no doorbell page is refused",
	       "%s", p == MAP_FAILED ? strerror(errno) : "mapped");
	if (p != MAP_FAILED)
		munmap(p, pg);
	p = mmap(NULL, pg, PROT_WRITE | PROT_EXEC, MAP_SHARED, fd, 0);
	result(p == MAP_FAILED, "an executable mapping of the doorbell page is refused",
	       "%s", p == MAP_FAILED ? strerror(errno) : "mapped");
	if (p != MAP_FAILED)
		munmap(p, pg);
	p = mmap(NULL, 2 * pg, PROT_WRITE, MAP_SHARED, fd, 0);
	result(p == MAP_FAILED, "a two-page mapping of the doorbell page is refused",
	       "%s", p == MAP_FAILED ? strerror(errno) : "mapped");
	if (p != MAP_FAILED)
		munmap(p, 2 * pg);
	db = mmap(NULL, pg, PROT_WRITE, MAP_SHARED, fd, 0);
	result(db != MAP_FAILED, "the context's own doorbell page maps", "%s",
	       db == MAP_FAILED ? strerror(errno) : "mapped");
	if (db == MAP_FAILED)
		return;
	/*
	 * Two receives on qb, one consumed by a SEND from qa: the device took
	 * both (one doorbell, drained before qa's send), so the other is
	 * outstanding in the device when the storm breaks the QP.  (An entry
	 * not yet taken when a ring breaks is never read, nor completed.)
	 */
	if (reconnect() || post_recv(qb, buf + BUF_SIZE / 2, 4096, mr->lkey) ||
	    post_recv(qb, buf + BUF_SIZE / 2, 4096, mr->lkey) ||
	    post_one(qa, IBV_WR_SEND, &s, 1, 0, 0, 0)) {
		result(0, "a SEND and two receives before the doorbell storm", NULL);
		munmap((void *)db, pg);
		return;
	}
	for (got = 0; got < 2 && wait_wc(cq, &wc, 5000) > 0 &&
		      wc.status == IBV_WC_SUCCESS; got++)
		;
	result(got == 2, "a SEND and two receives before the doorbell storm",
	       "%d of 2 completions", got);
	/* RQ, then SQ doorbells beyond any ring; CQ arms with bad flags. */
	for (qn = 0; qn < 4096; qn++) {
		db[0] = (uint64_t)0x80000000u << 32 | 1u << 24 | qn;
		db[0] = (uint64_t)0x80000000u << 32 | 0u << 24 | qn;
		db[0] = (uint64_t)0xffu << 32 | 3u << 24 | qn;
	}
	db[1] = 1;	/* offsets other than 0 are ignored */
	wait_async(IBV_EVENT_QP_FATAL, 5000, &fatal_a, &fatal_b);
	result(fatal_a && fatal_b, "doorbells beyond the rings break our QPs (QP_FATAL)",
	       "qa %s, qb %s", fatal_a ? "fatal" : "no event", fatal_b ? "fatal" : "no event");
	wc.status = IBV_WC_SUCCESS;
	got = wait_wc(cq, &wc, 3000);	/* before result()'s arguments read wc */
	result(got && wc.status == IBV_WC_WR_FLUSH_ERR &&
	       wc.wr_id == 2 && wc.qp_num == qb->qp_num,
	       "the broken QP's receive is flushed", "status %s wr_id %llu",
	       ibv_wc_status_str(wc.status), (unsigned long long)wc.wr_id);
	drain_cq(cq);
	munmap((void *)db, pg);
	result(!reconnect(), "the QPs come back through RESET", NULL);
}

/*
 * Inline sends.  A QP asking for 128 bytes of inline data gets at
 * least that; a SEND of 100 bytes from a buffer no MR covers, overwritten
 * right after the post, arrives as it was at the post; more than granted,
 * or inline on an RDMA READ, is refused at post.
 */
static void inline_cases(void)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 2,
			 .max_recv_sge = 1, .max_inline_data = 128 },
	};
	struct ibv_qp *sv_a = qa;
	char src[300], *dst = buf + BUF_SIZE / 2;
	struct ibv_sge s = { .addr = (uintptr_t)src, .length = 100 };
	struct ibv_send_wr wr = {
		.wr_id = 7, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE,
	}, *bad;
	struct ibv_wc wc;
	int i, got = 0, ok;

	qa = ibv_create_qp(pd, &ia);
	result(qa && ia.cap.max_inline_data >= 128,
	       "a QP with 128 bytes of inline data", "granted %u",
	       qa ? ia.cap.max_inline_data : 0);
	if (!qa) {
		qa = sv_a;
		return;
	}
	if (reconnect()) {
		result(0, "an inline SEND arrives as it was at the post", "reconnect failed");
		goto out;
	}
	for (i = 0; i < (int)sizeof(src); i++)
		src[i] = (char)(i * 5 + 1);
	memset(dst, 0, 200);
	ok = !post_recv(qb, dst, 4096, mr->lkey) && !ibv_post_send(qa, &wr, &bad);
	memset(src, 0xee, sizeof(src));	/* the caller's buffer is free */
	while (ok && got < 2 && wait_wc(cq, &wc, 5000) > 0 &&
	       wc.status == IBV_WC_SUCCESS)
		got++;
	for (i = 0; i < 100 && dst[i] == (char)(i * 5 + 1); i++)
		;
	result(got == 2 && i == 100 && !dst[100],
	       "an inline SEND from memory no MR covers arrives as it was at the post",
	       "%d completions, %d bytes equal", got, i);
	s.length = 129 > ia.cap.max_inline_data ? 129 : ia.cap.max_inline_data + 1;
	result(ibv_post_send(qa, &wr, &bad) == EINVAL,
	       "inline data beyond max_inline_data is refused at post", NULL);
	s.length = 8;
	wr.opcode = IBV_WR_RDMA_READ;
	wr.wr.rdma.remote_addr = (uintptr_t)buf;
	wr.wr.rdma.rkey = mr->rkey;
	result(ibv_post_send(qa, &wr, &bad) == EINVAL,
	       "inline on an RDMA READ is refused at post", NULL);
out:
	drain_cq(cq);
	ibv_destroy_qp(qa);
	qa = sv_a;
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	struct ibv_port_attr pattr;
	int i, n;

	if (argc < 2) {
		fprintf(stderr, "usage: %s DEVICE [GID_INDEX]\n", argv[0]);
		return 2;
	}
	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), argv[1]))
			ctx = ibv_open_device(list[i]);
	if (!ctx || ibv_query_device(ctx, &dattr) || ibv_query_port(ctx, 1, &pattr)) {
		fprintf(stderr, "cannot open %s\n", argv[1]);
		return 2;
	}
	if (argc > 2) {
		gid_index = atoi(argv[2]);
		ibv_query_gid(ctx, 1, gid_index, &gid);
	} else {
		for (i = 0; i < pattr.gid_tbl_len && gid_index < 0; i++)
			if (!ibv_query_gid(ctx, 1, i, &gid) &&
			    gid.raw[10] == 0xff && gid.raw[11] == 0xff)
				gid_index = i;	/* an IPv4 GID: the guest's address */
	}
	if (gid_index < 0) {
		fprintf(stderr, "no IPv4 GID on %s\n", argv[1]);
		return 2;
	}
	buf = aligned_alloc(4096, BUF_SIZE);
	pd = ibv_alloc_pd(ctx);
	cq = pd ? ibv_create_cq(ctx, CQ_DEPTH, NULL, NULL, 0) : NULL;
	mr = cq ? ibv_reg_mr(pd, buf, BUF_SIZE, IBV_ACCESS_LOCAL_WRITE |
			     IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			     IBV_ACCESS_REMOTE_ATOMIC) : NULL;
	qa = mr ? new_qp(4) : NULL;
	qb = qa ? new_qp(4) : NULL;
	if (!qb) {
		fprintf(stderr, "setup failed: %s\n", strerror(errno));
		return 2;
	}
	if (roundtrip("a SEND between two QPs of the device (setup)"))
		return 1;
	mr_cases();
	post_cases();
	state_cases();
	race_cases();
	exhaust_cases();
	ring_cases();
	inline_cases();
	result(ibv_destroy_cq(cq) != 0, "destroy_cq with QPs on it is refused", NULL);
	roundtrip("the device still moves data after all of the above");

	ibv_destroy_qp(qa);
	ibv_destroy_qp(qb);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	printf("1..%d\n", ntest);
	return nfail ? 1 : 0;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * A control-queue storm: ASKERS processes loop ibv_query_port (one
 * QUERY_PORT control command each: arming a CQ is a doorbell on the rings,
 * no command) on every CPU while one more process registers and
 * deregisters a large buffer in a loop, the slowest command a guest can
 * ask of the device.  The driver must neither spin while it waits nor give
 * up on the queue: every process finishes without an error, the askers
 * slept for their answers (a voluntary context switch for at least one
 * query in 8: a driver that spins has next to none), and a control command
 * after the storm still works.  The kernel log is the caller's to judge
 * (lockup and RCU stall reports).  TAP output; exit status 1 if any case
 * failed.
 *
 *   vrdma-storm DEVICE SECONDS ASKERS MR_MIB
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tap.h"

static const char *dev_name;

static struct ibv_context *open_dev(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;
	int i;

	for (i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), dev_name))
			ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	return ctx;
}

/* A child's report, written whole to the pipe (well under PIPE_BUF). */
struct report {
	char kind;	/* 'a': an asker, 'r': the registrar */
	int ok;
	long count;
	long sleeps;	/* voluntary context switches */
	double max_ms;
	char text[160];
};

static void send_report(int fd, const struct report *r)
{
	if (write(fd, r, sizeof(*r)) != sizeof(*r))
		_exit(2);
}

static void ru_sleeps(struct report *r)
{
	struct rusage ru;

	if (!getrusage(RUSAGE_SELF, &ru))
		r->sleeps = ru.ru_nvcsw;
}

/* One asker: a context of its own, QUERY_PORT again and again until the end. */
static void asker(int fd, double end)
{
	struct report r = { .kind = 'a', .ok = 1 };
	struct ibv_context *ctx = open_dev();
	struct ibv_port_attr attr;

	if (!ctx) {
		r.ok = 0;
		snprintf(r.text, sizeof(r.text), "no context: %s", strerror(errno));
		send_report(fd, &r);
		_exit(1);
	}
	while (now_s() < end) {
		double t0 = now_s(), ms;
		int err = ibv_query_port(ctx, 1, &attr);

		ms = (now_s() - t0) * 1e3;
		if (ms > r.max_ms)
			r.max_ms = ms;
		if (err) {
			r.ok = 0;
			snprintf(r.text, sizeof(r.text), "query %ld: %s", r.count, strerror(err));
			break;
		}
		r.count++;
	}
	ru_sleeps(&r);
	send_report(fd, &r);
	ibv_close_device(ctx);
	_exit(!r.ok);
}

/* The slow commands: REG_USER_MR / DEREG_MR of a large buffer. */
static void registrar(int fd, double end, size_t len)
{
	struct report r = { .kind = 'r', .ok = 1 };
	struct ibv_context *ctx = open_dev();
	struct ibv_pd *pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	char *buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	if (!pd || buf == MAP_FAILED) {
		r.ok = 0;
		snprintf(r.text, sizeof(r.text), "no PD or buffer: %s", strerror(errno));
		send_report(fd, &r);
		_exit(1);
	}
	while (now_s() < end) {
		double t0 = now_s(), ms;
		struct ibv_mr *mr = ibv_reg_mr(pd, buf, len, IBV_ACCESS_LOCAL_WRITE);

		ms = (now_s() - t0) * 1e3;
		if (!mr) {
			r.ok = 0;
			snprintf(r.text, sizeof(r.text), "reg_mr %ld: %s", r.count, strerror(errno));
			break;
		}
		if (ms > r.max_ms)
			r.max_ms = ms;
		if (ibv_dereg_mr(mr)) {
			r.ok = 0;
			snprintf(r.text, sizeof(r.text), "dereg_mr %ld failed", r.count);
			break;
		}
		r.count++;
	}
	send_report(fd, &r);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	_exit(!r.ok);
}

int main(int argc, char **argv)
{
	int i, nchild, pfd[2], askers, status, all_ok = 1;
	long queries = 0, sleeps = 0, regs = 0;
	double seconds, end, ask_max = 0, reg_max = 0;
	struct ibv_context *ctx;
	struct ibv_port_attr attr;
	struct ibv_cq *cq;
	struct ibv_pd *pd;
	struct report r;
	size_t mr_len;
	char why[200] = "";

	if (argc != 5) {
		fprintf(stderr, "usage: %s DEVICE SECONDS ASKERS MR_MIB\n", argv[0]);
		return 2;
	}
	dev_name = argv[1];
	seconds = atof(argv[2]);
	askers = atoi(argv[3]);
	mr_len = (size_t)atol(argv[4]) << 20;
	if (pipe(pfd))
		return 2;
	end = now_s() + seconds;
	nchild = askers + 1;
	for (i = 0; i < nchild; i++) {
		pid_t pid = fork();

		if (pid < 0)
			return 2;
		if (pid == 0) {
			close(pfd[0]);
			if (i == 0)
				registrar(pfd[1], end, mr_len);
			asker(pfd[1], end);
		}
	}
	close(pfd[1]);
	for (i = 0; i < nchild && read(pfd[0], &r, sizeof(r)) == sizeof(r); i++) {
		if (!r.ok) {
			all_ok = 0;
			snprintf(why, sizeof(why), "%s", r.text);
		}
		if (r.kind == 'r') {
			regs += r.count;
			reg_max = r.max_ms;
		} else {
			queries += r.count;
			sleeps += r.sleeps;
			if (r.max_ms > ask_max)
				ask_max = r.max_ms;
		}
	}
	for (i = 0; i < nchild; i++) {
		if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
			all_ok = 0;
	}
	result(all_ok && i == nchild && queries && regs, "storm",
	       "%d askers: %ld queries (longest %.0f ms); %ld reg_mr of %zu MiB (longest %.0f ms)%s%s",
	       askers, queries, ask_max, regs, mr_len >> 20, reg_max,
	       why[0] ? "; " : "", why);
	/*
	 * An answer that is in before the asker waits costs no sleep, and how
	 * often that happens is the host's timing: seen 0.27 to 0.81 switches
	 * per query on the sleeping driver (6.12 and 6.1, one CI run), 0.017
	 * on the driver that spun.
	 */
	result(queries && sleeps >= queries / 8, "askers-slept",
	       "%ld voluntary context switches in %ld queries", sleeps, queries);

	ctx = open_dev();
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	cq = ctx ? ibv_create_cq(ctx, 4, NULL, NULL, 0) : NULL;
	result(pd && cq && !ibv_req_notify_cq(cq, 0) && !ibv_query_port(ctx, 1, &attr), "alive",
	       "a PD, a CQ, an arm and a query after the storm%s%s", pd && cq ? "" : ": ",
	       pd && cq ? "" : strerror(errno));
	return nfail ? 1 : 0;
}

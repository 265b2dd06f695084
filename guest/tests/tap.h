/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the guest test programs share: TAP result lines (the lab reads
 * them) and a monotonic clock.  Header-only: each program is one gcc
 * command (tests/lab/test_driver.py build_program).
 */
#ifndef VRDMA_GUEST_TAP_H
#define VRDMA_GUEST_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

static int ntest, nfail;

/* "ok N - NAME[: details]"; @fmt may be NULL. */
static inline void result(int ok, const char *name, const char *fmt, ...)
{
	va_list ap;

	ntest++;
	printf("%s %d - %s", ok ? "ok" : "not ok", ntest, name);
	if (fmt) {
		printf(": ");
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
	}
	printf("\n");
	fflush(stdout);
	if (!ok)
		nfail++;
}

static inline double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static inline double now_ms(void)
{
	return now_s() * 1e3;
}

#endif

/*
 * virtio-rdma soft-RoCE engine: scheduling and timers.
 *
 * Work that cannot be done at once (sending a WQE's packets, a long READ
 * reply, frames looped back between two of our QPs) waits in two bounded
 * FIFOs: the run queue of QPs (each at most once) and the loopback queue.
 * vrdma_core_run() takes at most kLoopBudget looped-back frames and sends
 * at most kRunBudget packets, kQpBudget per QP per turn (round robin); a QP
 * with more to do goes to the back.  Whenever work appears outside run(),
 * the host's kick asks for a run() (once until it comes).
 *
 * Timers: every QP keeps its own deadlines (retransmit, RNR) on now_ns()'s
 * clock; the host has one timer, armed for the earliest.  A deadline later
 * than the one armed does not re-arm it: the timer then fires early, every
 * QP's deadlines are looked at, and the timer is armed for the next one.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <algorithm>
#include <cstring>

#include "../core.h"
#include "engine.h"

namespace vrdma::soft_roce {

Engine::Engine(const VrdmaLimits &lim)
    : runq(lim.max_qp), loop_buf(size_t{kLoopSlots} * kMaxFrame),
      loop_len(kLoopSlots), tx(kMaxFrame)
{
}

uint64_t now(const VrdmaCore &c)
{
    return c.host.now_ns();
}

void kick(VrdmaCore &c)
{
    if (!eng(c).kicked) {
        eng(c).kicked = true;
        c.host.kick();
    }
}

void schedule(VrdmaCore &c, Qp &qp)
{
    Engine &g = eng(c);
    if (!eng(qp).in_runq) {
        eng(qp).in_runq = true;
        g.runq[(g.runq_head + g.runq_count) % g.runq.size()] = qp.index;
        g.runq_count++;
    }
    kick(c);
}

void arm_timer(VrdmaCore &c, uint64_t deadline)
{
    if (c.host.has_timer() && deadline < eng(c).timer_armed) {
        eng(c).timer_armed = deadline;
        c.host.timer_mod(deadline);
    }
}

void Engine::reset(VrdmaCore &c)
{
    Engine &g = *this;
    g.runq_head = g.runq_count = 0;
    g.loop_head = g.loop_count = 0;
    g.kicked = false;
    if (g.timer_armed != UINT64_MAX) {
        g.timer_armed = UINT64_MAX;
        c.host.timer_mod(UINT64_MAX);
    }
}

namespace {

bool run_once(VrdmaCore &c)
{
    Engine &g = eng(c);

    /* Frames between our own QPs, oldest first; new ones wait a turn. */
    for (unsigned n = std::min<uint32_t>(g.loop_count, kLoopBudget); n; n--) {
        const uint32_t slot = g.loop_head;
        receive(c,
                std::span<const uint8_t>(&g.loop_buf[size_t{slot} * kMaxFrame],
                                         g.loop_len[slot]),
                true);
        g.loop_head = (g.loop_head + 1) % kLoopSlots;
        g.loop_count--;
    }

    unsigned budget = kRunBudget;
    /* A QP that comes back has used its turn's budget: this ends. */
    while (budget && g.runq_count) {
        const uint32_t qpn = g.runq[g.runq_head];
        g.runq_head = (g.runq_head + 1) % g.runq.size();
        g.runq_count--;
        Qp *qp = c.qps.at(qpn);
        if (!qp || !eng(*qp).in_runq) {
            continue;
        }
        eng(*qp).in_runq = false;
        /* A ring QP's window takes what its rings hold (an entry a packet). */
        const RingPull pull = qp_rings_pull(c, *qp);
        budget -= std::min<unsigned>(budget, pull.taken);
        unsigned qp_budget = std::min(budget, kQpBudget);
        const unsigned start = qp_budget;
        const Progress r = resp_flush(c, *qp, qp_budget);
        const Progress s = req_run(c, *qp, qp_budget);
        budget -= start - qp_budget;
        /* (A completion on the way may have queued it again already.) */
        if ((r == Progress::kBudget || s == Progress::kBudget || pull.more) &&
            !eng(*qp).in_runq) {
            eng(*qp).in_runq = true;
            g.runq[(g.runq_head + g.runq_count) % g.runq.size()] = qpn;
            g.runq_count++;
        }
    }
    return g.runq_count || g.loop_count;
}

} // namespace

bool Engine::run(VrdmaCore &c)
{
    kicked = true; /* no kicks from inside: the return value says it */
    const bool more = run_once(c);
    kicked = more;
    return more;
}

void Engine::timer(VrdmaCore &c)
{
    timer_armed = UINT64_MAX;
    const uint64_t t = now(c);
    uint64_t next = UINT64_MAX;
    c.qps.for_each([&](uint32_t, Qp &qp) {
        comp_timer(c, qp, t);
        for (uint64_t d : {eng(qp).comp.retrans_deadline, eng(qp).comp.rnr_deadline}) {
            if (d && d < next) {
                next = d;
            }
        }
    });
    if (next != UINT64_MAX) {
        arm_timer(c, next);
    }
}

} // namespace vrdma::soft_roce

extern "C" {

const char *vrdma_drop_name(VrdmaDrop why)
{
    switch (why) {
#define VRDMA_DROP_FRAME_(up, camel, low, doc)                              \
    case VRDMA_DROP_##up: return #low;
#define VRDMA_DROP_PACKET_(up, low, doc) case VRDMA_DROP_##up: return #low;
    VRDMA_DROPS_FRAME(VRDMA_DROP_FRAME_)
    VRDMA_DROPS_PACKET(VRDMA_DROP_PACKET_)
#undef VRDMA_DROP_FRAME_
#undef VRDMA_DROP_PACKET_
    case VRDMA_DROP__COUNT: break;
    }
    return "?";
}

} // extern "C"

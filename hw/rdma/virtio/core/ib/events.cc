/*
 * virtio-rdma ibverbs backend: the host device's asynchronous events, and
 * what the guest sees of them.
 *
 * The guest's asynchronous events are few (VIRTIO_RDMA_F_RINGS: the
 * spec's "Async events"), so most become the state the guest can query:
 *   QP fatal, request / access error   the QP is in ERR (QUERY_QP), one
 *                                      QP_FATAL; the host flushes its work
 *   port error / port active           QUERY_PORT says DOWN / ACTIVE
 *   device fatal                       every QP in ERR, the port DOWN
 *   CQ error (the host CQ overran)     every QP completing to the CQ in
 *                                      ERR, a CQ overrun counted, CQ_ERR
 *   SRQ limit reached                  the guest's SRQ_LIMIT, disarmed
 *   SRQ error                          the SRQ broken: SRQ_ERR (srq.cc)
 * The rest (last WQE reached, GID change, ...) are counted only: GIDs are
 * looked up afresh each time they are used.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <fcntl.h>

#include "../core.h"
#include "state.h"

namespace vrdma::ib {

namespace {

constexpr unsigned kAsyncBudget = 32; /* events per turn */

void all_qps_to_error(VrdmaCore &c)
{
    c.qps.for_each([&c](uint32_t, Qp &qp) { qp_enter_error(c, qp); });
}

} // namespace

bool Backend::async_nonblocking()
{
    const int fd = dev_->context()->async_fd;
    const int fl = fcntl(fd, F_GETFL);
    return fl >= 0 && fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0;
}

void Backend::async_events(VrdmaCore &c)
{
    for (unsigned n = 0; n < kAsyncBudget; n++) {
        ibv_async_event ev;
        if (verbs().get_async_event(dev_->context(), &ev)) {
            return; /* EAGAIN: none left; level-triggered, so more wake us */
        }
        async_count++;
        switch (ev.event_type) {
        case IBV_EVENT_QP_FATAL:
        case IBV_EVENT_QP_REQ_ERR:
        case IBV_EVENT_QP_ACCESS_ERR:
            host_qp_fatal(c, ev.element.qp->qp_num);
            break;
        case IBV_EVENT_PORT_ERR:
            if (static_cast<unsigned>(ev.element.port_num) == dev_->port()) {
                c.port.link_up = false;
            }
            break;
        case IBV_EVENT_PORT_ACTIVE:
            if (static_cast<unsigned>(ev.element.port_num) == dev_->port()) {
                c.port.link_up = true;
            }
            break;
        case IBV_EVENT_DEVICE_FATAL:
            all_qps_to_error(c);
            c.port.link_up = false;
            break;
        case IBV_EVENT_CQ_ERR:
            host_cq_overrun(c, ev.element.cq);
            break;
        case IBV_EVENT_SRQ_LIMIT_REACHED:
        case IBV_EVENT_SRQ_ERR:
            host_srq_event(c, ev.element.srq, ev.event_type);
            break;
        case IBV_EVENT_QP_LAST_WQE_REACHED:
            /*
             * A QP on an SRQ left it (ERR, or its last receive done): no
             * error of the QP's, which its own events or CQEs report, and
             * the guest ABI has no such event.
             */
            break;
        default:
            break;
        }
        verbs().ack_async_event(&ev); /* before the object may be destroyed */
    }
}

/*
 * A host QP's own error: the guest's QP to ERR and one QP_FATAL by its
 * queue index, as a broken ring gives (rings.cc).  One already in ERR
 * (an earlier event, an error CQE, MODIFY_QP) gets no second event: the
 * guest knows, and the host may report one failure more than once.
 */
void Backend::host_qp_fatal(VrdmaCore &c, uint32_t wire_qpn)
{
    Qp *qp = c.qp_by_wire(wire_qpn);
    if (!qp || qp->state() == VIRTIO_RDMA_QPS_ERR) {
        return; /* a destroyed QP's, or known already */
    }
    qp_enter_error(c, *qp);
    c.host.async_event(VIRTIO_RDMA_EVENT_QP_FATAL, qp->index);
}

/*
 * The host CQ overran before we polled it (rxe drops the CQE and lets the
 * QP go on): a completion is lost, of which QP is unknown, so every QP
 * completing to that CQ goes to ERR, host QP included, as a guest CQ
 * overrun puts its QP there (the spec's "Completion queues").  At most
 * max_qp QPs per event, kAsyncBudget events per turn.
 */
void Backend::host_cq_overrun(VrdmaCore &c, ibv_cq *h)
{
    const auto cqn =
        static_cast<uint32_t>(reinterpret_cast<uintptr_t>(h->cq_context));
    if (cqn >= cqs_.size() || cqs_[cqn] != h) {
        return; /* a CQ of a destroyed guest CQ (the graveyard's) */
    }
    stats.cq_overruns++;
    /* The guest's CQ overran, as far as it can tell: its event, by the CQN. */
    c.host.async_event(VIRTIO_RDMA_EVENT_CQ_ERR, cqn);
    c.qps.for_each([&](uint32_t, Qp &qp) {
        if (qp.send_cqn == cqn || qp.recv_cqn == cqn) {
            qp_enter_error(c, qp);
        }
    });
}

} // namespace vrdma::ib

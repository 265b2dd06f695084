/*
 * virtio-rdma ibverbs backend: the host device's asynchronous events, and
 * what the guest sees of them.
 *
 * The guest ABI has no asynchronous events, so each becomes the state the
 * guest can query:
 *   QP fatal, request / access error   the QP is in ERR (QUERY_QP); the
 *                                      host flushes its work
 *   port error / port active           QUERY_PORT says DOWN / ACTIVE
 *   device fatal                       every QP in ERR, the port DOWN
 * The rest (CQ error, SRQ, GID change, ...) are counted only: a host CQ
 * overrun shows as its QPs' completions in error, and GIDs are looked up
 * afresh each time they are used.
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
    c.qps.for_each([](uint32_t, Qp &qp) {
        qp.attr.qp_state = VIRTIO_RDMA_QPS_ERR;
    });
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
        if (ibv_get_async_event(dev_->context(), &ev)) {
            return; /* EAGAIN: none left; level-triggered, so more wake us */
        }
        async_count++;
        switch (ev.event_type) {
        case IBV_EVENT_QP_FATAL:
        case IBV_EVENT_QP_REQ_ERR:
        case IBV_EVENT_QP_ACCESS_ERR:
            qp_failed(c, ev.element.qp->qp_num);
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
        default:
            break;
        }
        ibv_ack_async_event(&ev); /* before the object may be destroyed */
    }
}

} // namespace vrdma::ib

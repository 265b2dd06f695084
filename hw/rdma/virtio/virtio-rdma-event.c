/*
 * virtio-rdma: the event queue (virtqueue 1).  dp_bh (virtio-rdma.c) calls
 * virtio_rdma_event_flush() after the engine's turn: the CQ events and
 * async events the engine staged (virtio_rdma_engine_take_events) become
 * records in the buffers the driver posted, at most one per object and
 * type, under the BQL and outside the core's lock.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bitmap.h"
#include "qemu/iov.h"
#include "qemu/main-loop.h"
#include "exec/memory.h"
#include "hw/virtio/virtio.h"
#include "virtio-rdma.h"
#include "trace.h"

/*
 * Every buffer of @elem is guest RAM.  virtqueue_pop() maps anything else
 * through a bounce buffer, which the device would write back to MMIO (or
 * has filled from it): such a virtqueue is broken.
 */
bool virtio_rdma_elem_in_ram(const VirtQueueElement *elem)
{
    ram_addr_t offset;
    unsigned i;

    for (i = 0; i < elem->out_num + elem->in_num; i++) {
        const struct iovec *v = i < elem->out_num ? &elem->out_sg[i] :
                                &elem->in_sg[i - elem->out_num];

        if (v->iov_len && !memory_region_from_host(v->iov_base, &offset)) {
            return false;
        }
    }
    return true;
}

/* A broken ring: virtio_error(), the element is given back unused. */
void virtio_rdma_not_ram(VirtIORdma *r, VirtQueue *vq, VirtQueueElement *elem)
{
    unsigned idx = virtio_get_queue_index(vq);

    trace_virtio_rdma_err_ring_not_ram(idx);
    virtio_error(VIRTIO_DEVICE(r), "virtio-rdma: a buffer on vq %u is not "
                 "guest RAM", idx);
    virtqueue_detach_element(vq, elem, 0);
}

/*
 * One record into the next buffer the driver posted on the event queue.
 * @returns 1 when written, 0 when there is no buffer (the event stays
 * pending), -1 when the virtqueue is broken: a buffer that is not RAM or
 * shorter than a record.
 */
static int virtio_rdma_event_put(VirtIORdma *r, uint32_t type,
                                 uint32_t handle)
{
    VirtIODevice *vdev = VIRTIO_DEVICE(r);
    VirtQueue *vq = r->event_vq;
    struct virtio_rdma_event ev = {
        .type = cpu_to_le32(type),
        .handle = cpu_to_le32(handle),
    };
    VirtQueueElement *elem = virtqueue_pop(vq, sizeof(*elem));

    if (!elem) {
        trace_virtio_rdma_event_no_buffer(type, handle);
        return 0;
    }
    if (!virtio_rdma_elem_in_ram(elem)) {
        virtio_rdma_not_ram(r, vq, elem);
        g_free(elem);
        return -1;
    }
    if (iov_size(elem->in_sg, elem->in_num) < sizeof(ev)) {
        trace_virtio_rdma_err_event_buffer(
            iov_size(elem->in_sg, elem->in_num));
        virtio_error(vdev, "virtio-rdma: event queue buffer too small "
                     "for an event");
        virtqueue_detach_element(vq, elem, 0);
        g_free(elem);
        return -1;
    }
    iov_from_buf(elem->in_sg, elem->in_num, 0, &ev, sizeof(ev));
    virtqueue_push(vq, elem, sizeof(ev));
    g_free(elem);
    trace_virtio_rdma_event_written(type, handle);
    return 1;
}

/*
 * The pending events of one type, a bit per object in @pending (@nbits),
 * each cleared once written.  @returns false when the rest must wait: no
 * buffer left, or the ring broke.
 */
static bool virtio_rdma_event_flush_type(VirtIORdma *r, uint32_t type,
                                         unsigned long *pending,
                                         unsigned long nbits, unsigned *n)
{
    unsigned long i;
    int ret;

    for (i = find_first_bit(pending, nbits); i < nbits;
         i = find_next_bit(pending, nbits, i + 1)) {
        ret = virtio_rdma_event_put(r, type, i);
        if (ret <= 0) {
            return false;
        }
        clear_bit(i, pending);
        (*n)++;
    }
    return true;
}

/*
 * The pending events, each into the next buffer the driver posted on the
 * event queue, then one notification: armed CQs' events, then the async
 * events of VIRTIO_RDMA_F_RINGS.  At most one event per object and type
 * waits (the bitmaps; arming is one-shot); with no buffer left the rest
 * stay pending until the driver adds buffers and kicks.
 */
void virtio_rdma_event_flush(VirtIORdma *r)
{
    VirtIODevice *vdev = VIRTIO_DEVICE(r);
    unsigned n = 0;

    assert(bql_locked());
    if (vdev->broken || !(vdev->status & VIRTIO_CONFIG_S_DRIVER_OK)) {
        return;
    }
    virtio_rdma_engine_take_events(r, r->ev_pending, r->ev_async);
    if (virtio_rdma_event_flush_type(r, VIRTIO_RDMA_EVENT_CQ, r->ev_pending,
                                     r->ncq, &n)) {
        for (unsigned i = 0; i < VIRTIO_RDMA_ASYNC_TYPES; i++) {
            const uint32_t type = VIRTIO_RDMA_ASYNC_TYPE(i);

            if (!virtio_rdma_event_flush_type(r, type, r->ev_async[i],
                                              virtio_rdma_async_bits(r, type),
                                              &n)) {
                break;
            }
        }
    }
    if (n) {
        virtio_notify(vdev, r->event_vq);
    }
}

/* The driver added event buffers: pending events go out in dp_bh. */
void virtio_rdma_handle_event(VirtIODevice *vdev, VirtQueue *vq)
{
    qemu_bh_schedule(VIRTIO_RDMA(vdev)->dp_bh);
}

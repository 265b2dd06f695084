/*
 * virtio-rdma core: the host, as the core sees it -- a facade over
 * VrdmaHostOps (include/hw/rdma/virtio-rdma-core.h).
 *
 * The host may leave any group's ops NULL but memory's map, unmap and read
 * (vrdma_core_new() refuses that).  The facade fills the gaps once, at
 * creation, with what a host without them means: no GID or refusal
 * reports, no CQ interrupts, no clock and no
 * timer, no wire.  So no caller tests an op for NULL; the two features a
 * caller must know about are asked for by name (can_write_gpa(),
 * has_timer()).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_VIRTIO_CORE_HOST_H
#define HW_RDMA_VIRTIO_CORE_HOST_H

#include <cstddef>
#include <cstdint>

#include "hw/rdma/virtio-rdma-core.h"

namespace vrdma {

class Host {
public:
    explicit Host(const VrdmaHostOps &ops);

    /* ---- memory ---- */
    void *map(uint64_t gpa, uint64_t len, bool is_write) const
    {
        return ops_.mem.map(ops_.opaque, gpa, len, is_write);
    }
    void unmap(void *host, uint64_t len, bool is_write) const
    {
        ops_.mem.unmap(ops_.opaque, host, len, is_write);
    }
    bool read(uint64_t gpa, void *buf, uint64_t len) const
    {
        return ops_.mem.read(ops_.opaque, gpa, buf, len) == 0;
    }
    /* A host without mem.write: DMA MRs cannot be written through. */
    bool can_write_gpa() const { return can_write_; }
    bool write(uint64_t gpa, const void *buf, uint64_t len) const
    {
        return ops_.mem.write(ops_.opaque, gpa, buf, len) == 0;
    }

    /*
     * The guest's RAM ranges (at most @max in @out); 0 from a host that
     * does not list them.
     */
    size_t ram_ranges(VrdmaRamRange *out, size_t max) const
    {
        return ops_.mem.ram_ranges(ops_.opaque, out, max);
    }

    /* ---- events ---- */
    void gid_changed(uint32_t port, uint32_t index, const uint8_t gid[16],
                     uint32_t type, bool added) const
    {
        ops_.events.gid_changed(ops_.opaque, port, index, gid, type, added);
    }
    void guest_error(uint8_t cmd, VrdmaErr err, const char *field,
                     uint64_t a, uint64_t b) const
    {
        ops_.events.guest_error(ops_.opaque, cmd, err, field, a, b);
    }

    /* An async event for object @handle. */
    void async_event(uint32_t type, uint32_t handle) const
    {
        ops_.events.async_event(ops_.opaque, type, handle);
    }

    /* ---- completions ---- */
    void cq_notify(uint32_t cqn) const { ops_.cq.notify(ops_.opaque, cqn); }

    /* ---- time ---- */
    /* A host with a clock and a timer: retransmit and RNR timers run. */
    bool has_timer() const { return has_timer_; }
    uint64_t now_ns() const { return ops_.time.now_ns(ops_.opaque); }
    void timer_mod(uint64_t deadline_ns) const
    {
        ops_.time.timer_mod(ops_.opaque, deadline_ns);
    }
    void kick() const { ops_.time.kick(ops_.opaque); }

    /* ---- the soft-RoCE backend's wire ---- */
    void net_send(const void *frame, size_t len) const
    {
        ops_.wire.send(ops_.opaque, frame, len);
    }
    void wire_drop(const char *why, uint32_t qpn) const
    {
        ops_.wire.drop(ops_.opaque, why, qpn);
    }

    /* ---- the event loop, for a backend on a host device ---- */
    bool can_watch_fd() const { return ops_.loop.fd_watch != nullptr; }
    /* Only where can_watch_fd(): @ready NULL stops watching @fd. */
    void fd_watch(int fd, void (*ready)(void *ctx), void *ctx) const
    {
        ops_.loop.fd_watch(ops_.opaque, fd, ready, ctx);
    }

    /* A host that runs blocking work on a worker thread (loop.defer). */
    bool can_defer() const
    {
        return ops_.loop.defer != nullptr && ops_.loop.ctrl_done != nullptr;
    }
    /* Only where can_defer(). */
    void defer(int (*work)(void *), void (*done)(void *, int), void *ctx) const
    {
        ops_.loop.defer(ops_.opaque, work, done, ctx);
    }
    /*
     * The command vrdma_core_ctrl() left pending is answered with @status
     * and @rsp_len bytes of response (guest order).
     */
    void ctrl_done(uint8_t status, const void *rsp, size_t rsp_len) const
    {
        ops_.loop.ctrl_done(ops_.opaque, status, rsp, rsp_len);
    }

    /* ---- the MAD link (rdmacm-mux), for the ibverbs backend's GSI QP ---- */
    bool has_mad_link() const { return ops_.mad.send != nullptr; }
    /* Only where has_mad_link(): @returns false if the MAD was lost. */
    bool mad_send(const VrdmaMad &m) const
    {
        return ops_.mad.send(ops_.opaque, &m) == 0;
    }

private:
    VrdmaHostOps ops_;
    bool can_write_;
    bool has_timer_;
};

} // namespace vrdma

#endif

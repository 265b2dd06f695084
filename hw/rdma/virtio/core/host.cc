/*
 * virtio-rdma core: the host facade (host.h): the ops a host left out
 * become what their absence means.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "host.h"

namespace vrdma {

namespace {

int no_write(void *, uint64_t, const void *, uint64_t)
{
    return -1;
}
size_t no_ram_ranges(void *, VrdmaRamRange *, size_t)
{
    return 0;
}
void no_gid_changed(void *, uint32_t, uint32_t, const uint8_t *, uint32_t,
                    bool)
{
}
void no_guest_error(void *, uint8_t, VrdmaErr, const char *, uint64_t,
                    uint64_t)
{
}
void no_async_event(void *, uint32_t, uint32_t)
{
}

void no_cq_notify(void *, uint32_t)
{
}
uint64_t no_clock(void *)
{
    return 0;
}
void no_timer(void *, uint64_t)
{
}
void no_kick(void *)
{
}
void no_wire_send(void *, const void *, size_t)
{
}
void no_wire_drop(void *, const char *, uint32_t)
{
}

template <typename F>
void fill(F &op, F dflt)
{
    if (!op) {
        op = dflt;
    }
}

} // namespace

Host::Host(const VrdmaHostOps &ops)
    : ops_(ops), can_write_(ops.mem.write != nullptr),
      has_timer_(ops.time.now_ns && ops.time.timer_mod)
{
    fill(ops_.mem.write, &no_write);
    fill(ops_.mem.ram_ranges, &no_ram_ranges);
    fill(ops_.events.gid_changed, &no_gid_changed);
    fill(ops_.events.guest_error, &no_guest_error);
    fill(ops_.events.async_event, &no_async_event);
    fill(ops_.cq.notify, &no_cq_notify);
    fill(ops_.time.now_ns, &no_clock);
    fill(ops_.time.timer_mod, &no_timer);
    fill(ops_.time.kick, &no_kick);
    fill(ops_.wire.send, &no_wire_send);
    fill(ops_.wire.drop, &no_wire_drop);
}

} // namespace vrdma

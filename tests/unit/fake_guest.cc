/*
 * A fake guest for unit tests (see fake_guest.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "fake_guest.h"

#include <sys/mman.h>

#include <cstring>
#include <new>
#include <tuple>

namespace vrdma_test {

FakeGuest::FakeGuest(bool shared_ram)
    : ops_{.opaque = this,
           .mem = {.map = &FakeGuest::map,
                   .unmap = &FakeGuest::unmap,
                   .read = &FakeGuest::read,
                   .write = &FakeGuest::write,
                   .ram_ranges = nullptr}, /* for a host device's backend */
           .events = {.gid_changed = &FakeGuest::gid_changed,
                      .guest_error = &FakeGuest::guest_error,
                      .async_event = &FakeGuest::async_event},
           .cq = {},
           .time = {},
           .wire = {},
           .loop = {},
           .mad = {}},
      ram0_(zeroed(kRam0.size, shared_ram)),
      ram1_(zeroed(kRam1.size, shared_ram))
{
}

FakeGuest::Ram FakeGuest::zeroed(uint64_t size, bool shared)
{
    void *p = mmap(nullptr, size, PROT_READ | PROT_WRITE,
                   (shared ? MAP_SHARED : MAP_PRIVATE) | MAP_ANONYMOUS |
                       MAP_NORESERVE,
                   -1, 0);
    if (p == MAP_FAILED) {
        throw std::bad_alloc();
    }
    return Ram(static_cast<uint8_t *>(p), Unmap{size});
}

void FakeGuest::Unmap::operator()(uint8_t *p) const
{
    munmap(p, size);
}

uint8_t *FakeGuest::host(uint64_t gpa, uint64_t len)
{
    uint64_t end;
    if (len == 0 || __builtin_add_overflow(gpa, len, &end)) {
        return nullptr;
    }
    if (gpa >= kRam0.base && end <= kRam0.base + kRam0.size) {
        return ram0_.get() + (gpa - kRam0.base);
    }
    if (gpa >= kRam1.base && end <= kRam1.base + kRam1.size) {
        return ram1_.get() + (gpa - kRam1.base);
    }
    return nullptr;
}

void FakeGuest::poke64(uint64_t gpa, uint64_t v)
{
    uint8_t *p = host(gpa, 8);
    for (int i = 0; i < 8; i++) {
        p[i] = static_cast<uint8_t>(v >> (8 * i));
    }
}

void *FakeGuest::map(void *opaque, uint64_t gpa, uint64_t len, bool is_write)
{
    auto *g = static_cast<FakeGuest *>(opaque);
    uint8_t *p = g->host(gpa, len);
    if (!p) {
        return nullptr;
    }
    g->maps++;
    g->write_maps += is_write;
    g->live_[std::make_tuple(static_cast<void *>(p), len, is_write)]++;
    return p;
}

void FakeGuest::unmap(void *opaque, void *host, uint64_t len, bool is_write)
{
    auto *g = static_cast<FakeGuest *>(opaque);
    auto it = g->live_.find(std::make_tuple(host, len, is_write));
    if (it == g->live_.end()) {
        g->bad_unmaps++;
        return;
    }
    if (--it->second == 0) {
        g->live_.erase(it);
    }
    g->unmaps++;
}

int FakeGuest::read(void *opaque, uint64_t gpa, void *buf, uint64_t len)
{
    auto *g = static_cast<FakeGuest *>(opaque);
    g->reads++;
    const uint8_t *p = g->host(gpa, len);
    if (!p) {
        return -1;
    }
    std::memcpy(buf, p, len);
    return 0;
}

int FakeGuest::write(void *opaque, uint64_t gpa, const void *buf, uint64_t len)
{
    auto *g = static_cast<FakeGuest *>(opaque);
    uint8_t *p = g->host(gpa, len);
    if (!p) {
        return -1;
    }
    std::memcpy(p, buf, len);
    return 0;
}

void FakeGuest::gid_changed(void *opaque, uint32_t port, uint32_t index,
                            const uint8_t gid[16], uint32_t gid_type,
                            bool added)
{
    auto *g = static_cast<FakeGuest *>(opaque);
    GidEvent e{port, index, {}, gid_type, added};
    std::memcpy(e.gid.data(), gid, 16);
    g->gid_events.push_back(e);
}

void FakeGuest::async_event(void *opaque, uint32_t type, uint32_t handle)
{
    static_cast<FakeGuest *>(opaque)->async_events.push_back({type, handle});
}

void FakeGuest::guest_error(void *opaque, uint8_t cmd, VrdmaErr err,
                            const char *field, uint64_t a, uint64_t b)
{
    static_cast<FakeGuest *>(opaque)->errors.push_back(
        {cmd, err, a, b, field});
}

} // namespace vrdma_test

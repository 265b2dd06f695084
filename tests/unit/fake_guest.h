/*
 * A fake guest for unit tests: sparse guest RAM behind VrdmaHostOps.
 *
 * Guest RAM is two ranges with a hole between them (kRam0, kRam1).  map()
 * succeeds only for ranges entirely inside one of them and counts live
 * mappings, so a test can assert that every map was unmapped.  With
 * @shared_ram, RAM is a shared mapping, as QEMU's memory backends are for
 * an ibverbs device (its MR windows are second mappings of guest pages).  Refusals
 * (guest_error) and GID events are recorded.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef TESTS_UNIT_FAKE_GUEST_H
#define TESTS_UNIT_FAKE_GUEST_H

#include <array>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "hw/rdma/virtio-rdma-core.h"

namespace vrdma_test {

struct GuestError {
    uint8_t cmd;
    VrdmaErr err;
    uint64_t a;
    uint64_t b;
    std::string field; /* the request field the refusal names */
};

struct AsyncEvent {
    uint32_t type; /* enum virtio_rdma_event_type */
    uint32_t handle;
};

struct GidEvent {
    uint32_t port;
    uint32_t index;
    std::array<uint8_t, 16> gid;
    uint32_t gid_type;
    bool added;
};

class FakeGuest {
public:
    struct Range {
        uint64_t base;
        uint64_t size;
    };
    /*
     * 4 MiB at 0, a hole, 128 MiB at 4 GiB (addresses above 32 bits; room
     * for the deepest rings and thousands of objects).
     */
    static constexpr Range kRam0 = {0x0, 4ull << 20};
    static constexpr Range kRam1 = {4ull << 30, 128ull << 20};
    static constexpr uint64_t kHole = 64ull << 20; /* not RAM */

    explicit FakeGuest(bool shared_ram = false);
    FakeGuest(const FakeGuest &) = delete;
    FakeGuest &operator=(const FakeGuest &) = delete;

    const VrdmaHostOps &ops() const { return ops_; }

    /* Host pointer of [gpa, gpa + len) if it is all RAM, else nullptr. */
    uint8_t *host(uint64_t gpa, uint64_t len = 1);
    void poke64(uint64_t gpa, uint64_t v); /* little-endian store */

    uint64_t maps = 0;
    uint64_t unmaps = 0;
    uint64_t write_maps = 0; /* maps with is_write */
    uint64_t bad_unmaps = 0; /* unmap of something not mapped */
    uint64_t reads = 0;
    uint64_t live_maps() const { return maps - unmaps; }

    std::vector<GuestError> errors;
    std::vector<GidEvent> gid_events;
    std::vector<AsyncEvent> async_events;

private:
    static void *map(void *opaque, uint64_t gpa, uint64_t len, bool is_write);
    static void unmap(void *opaque, void *host, uint64_t len, bool is_write);
    static int read(void *opaque, uint64_t gpa, void *buf, uint64_t len);
    static int write(void *opaque, uint64_t gpa, const void *buf, uint64_t len);
    static void gid_changed(void *opaque, uint32_t port, uint32_t index,
                            const uint8_t gid[16], uint32_t gid_type,
                            bool added);
    static void guest_error(void *opaque, uint8_t cmd, VrdmaErr err,
                            const char *field, uint64_t a, uint64_t b);
    static void async_event(void *opaque, uint32_t type, uint32_t handle);

    /*
     * Anonymous mappings, not a std::vector or calloc: pages nobody touches
     * cost nothing, and giving them back neither clears nor quarantines
     * them (ASan's calloc does, at 128 MiB a guest; the fuzzer builds two
     * guests per input, the unit tests two per test).
     */
    struct Unmap {
        uint64_t size = 0;
        void operator()(uint8_t *p) const;
    };
    using Ram = std::unique_ptr<uint8_t[], Unmap>;
    static Ram zeroed(uint64_t size, bool shared);

    VrdmaHostOps ops_;
    Ram ram0_;
    Ram ram1_;
    /* Live mappings: (host, len, is_write) -> count. */
    std::map<std::tuple<void *, uint64_t, bool>, uint64_t> live_;
};

} // namespace vrdma_test

#endif

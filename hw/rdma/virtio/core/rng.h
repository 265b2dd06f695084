/*
 * virtio-rdma core: the per-core pseudo-random generator that makes the
 * names a peer could otherwise guess -- an MR slot's first key byte, which
 * free slot a new QP takes -- unpredictable.
 *
 * splitmix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number
 * generators", OOPSLA 2014): a 64-bit counter stepped by the golden-ratio
 * odd constant, each value scrambled by two xor-shift-multiplies.  Not a
 * cryptographic generator: its job is that names differ from boot to boot
 * and do not follow from one another in an obvious way; the seed (from the
 * host's entropy: qemu_guest_getrandom) carries the secret.
 *
 * Seed 0 turns it off: the core then names things as it always did (the
 * lowest free QP slot, key bytes from 1), which unit tests rely on.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_VIRTIO_CORE_RNG_H
#define HW_RDMA_VIRTIO_CORE_RNG_H

#include <cstdint>

namespace vrdma {

class Rng {
public:
    explicit Rng(uint64_t seed) : state_(seed), on_(seed != 0) {}

    /* False for seed 0: callers keep their deterministic choice. */
    bool on() const { return on_; }

    uint64_t next()
    {
        uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }

    /* Uniform enough in [0, n), n >= 1 (multiply-shift, no division). */
    uint32_t below(uint32_t n)
    {
        return static_cast<uint32_t>(((next() >> 32) * n) >> 32);
    }

private:
    uint64_t state_;
    bool on_;
};

} // namespace vrdma

#endif

/*
 * virtio-rdma core: wire QP numbers (see wire_qpn.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "wire_qpn.h"

#include <algorithm>
#include <bit>
#include <cassert>

namespace vrdma {

WireQpnTable::WireQpnTable(uint32_t max_qp)
{
    const size_t n = std::bit_ceil(std::max<size_t>(2 * size_t{max_qp}, 4));
    slots_.assign(n, Slot{});
    mask_ = n - 1;
    shift_ = 32 - std::countr_zero(n);
}

/*
 * Fibonacci hashing (the product's top bits): wire QPNs are random, but
 * without the feature they are the queue indexes 1, 2, 3...
 */
size_t WireQpnTable::home(uint32_t wire) const
{
    return static_cast<size_t>((wire * 0x9E3779B1u) >> shift_) & mask_;
}

std::optional<uint32_t> WireQpnTable::find(uint32_t wire) const
{
    if (!wire) {
        return std::nullopt;
    }
    for (size_t i = home(wire);; i = (i + 1) & mask_) {
        const Slot &s = slots_[i];
        if (s.wire == wire) {
            return s.qpn;
        }
        if (!s.wire) {
            return std::nullopt;
        }
    }
}

void WireQpnTable::insert(uint32_t wire, uint32_t qpn)
{
    assert(wire && wire < roce::kQpnMulticast && live_ < slots_.size() / 2);
    size_t i = home(wire);
    while (slots_[i].wire) {
        assert(slots_[i].wire != wire);
        i = (i + 1) & mask_;
    }
    slots_[i] = Slot{wire, qpn};
    live_++;
}

void WireQpnTable::release(uint32_t wire)
{
    size_t i = home(wire);
    while (slots_[i].wire != wire) {
        assert(slots_[i].wire);
        i = (i + 1) & mask_;
    }
    /* Backward shift: pull later entries of the cluster into the hole. */
    size_t hole = i;
    for (size_t j = (i + 1) & mask_; slots_[j].wire; j = (j + 1) & mask_) {
        const size_t h = home(slots_[j].wire);
        /* j's entry may move to the hole unless its home is in (hole, j]. */
        const bool stays = hole <= j ? (hole < h && h <= j)
                                     : (hole < h || h <= j);
        if (!stays) {
            slots_[hole] = slots_[j];
            hole = j;
        }
    }
    slots_[hole] = Slot{};
    live_--;
    recent_[recent_next_] = wire;
    recent_next_ = (recent_next_ + 1) % kRecent;
}

void WireQpnTable::clear()
{
    std::fill(slots_.begin(), slots_.end(), Slot{});
    live_ = 0;
}

bool WireQpnTable::recently_freed(uint32_t wire) const
{
    return std::find(recent_.begin(), recent_.end(), wire) != recent_.end();
}

uint32_t WireQpnTable::pick(Rng &rng) const
{
    /* 2 .. 0xfffffe: 0xfffffd values. */
    constexpr uint32_t kFirst = 2;
    constexpr uint32_t kCount = roce::kQpnMulticast - kFirst;

    for (unsigned t = 0; t < kTries; t++) {
        const uint32_t w = kFirst + rng.below(kCount);
        if (!find(w) && !recently_freed(w)) {
            return w;
        }
    }
    /* Live QPNs are at most 16384 of 16.7 million: this ends quickly. */
    uint32_t w = kFirst + rng.below(kCount);
    while (find(w)) {
        w = w + 1 < roce::kQpnMulticast ? w + 1 : kFirst;
    }
    return w;
}

} // namespace vrdma

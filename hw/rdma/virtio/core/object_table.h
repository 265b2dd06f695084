/*
 * virtio-rdma core: a fixed-size table of objects.
 *
 * Objects are owned by their slot (std::unique_ptr).  The caller picks the
 * free slot: the lowest (PDs, CQs, MRs), or for QPs one at random
 * (nth_free(), qp.cc) so a peer cannot guess QP numbers.  PDs and
 * MRs are named by handles: generation << 16 | index, where the slot's
 * generation (1..0xffff, never 0) is bumped every time its object is freed,
 * so a stale handle no longer names anything.  CQs and QPs are named by
 * their plain index (it selects their virtqueues).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_VIRTIO_CORE_OBJECT_TABLE_H
#define HW_RDMA_VIRTIO_CORE_OBJECT_TABLE_H

#include <cassert>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>

#include "hw/rdma/virtio-rdma-abi.h"

namespace vrdma {

inline constexpr unsigned kHandleIndexBits = 16;
inline constexpr uint32_t kHandleIndexMask = (1u << kHandleIndexBits) - 1;
inline constexpr uint16_t kFirstGeneration = 1;

static_assert(VIRTIO_RDMA_LIMIT_MAX - 1 <= kHandleIndexMask,
              "every index must fit the handle's index bits");

template <typename T>
class ObjectTable {
public:
    explicit ObjectTable(uint32_t capacity)
        : slots_(std::make_unique<Slot[]>(capacity)), capacity_(capacity)
    {
    }
    ObjectTable(const ObjectTable &) = delete;
    ObjectTable &operator=(const ObjectTable &) = delete;

    uint32_t capacity() const { return capacity_; }
    uint32_t live() const { return live_; }

    /* The lowest free index in [first, end), if any. */
    std::optional<uint32_t> lowest_free(uint32_t first = 0,
                                        uint32_t end = UINT32_MAX) const
    {
        for (uint32_t i = first; i < end && i < capacity(); i++) {
            if (!slots_[i].obj) {
                return i;
            }
        }
        return std::nullopt;
    }

    /* Free slots in [first, end) (end at most the capacity). */
    uint32_t free_count(uint32_t first, uint32_t end = UINT32_MAX) const
    {
        uint32_t n = 0;
        for (uint32_t i = first; i < end && i < capacity(); i++) {
            n += !slots_[i].obj;
        }
        return n;
    }

    /* The @n-th (from 0) free slot in [first, end), if any. */
    std::optional<uint32_t> nth_free(uint32_t first, uint32_t n,
                                     uint32_t end = UINT32_MAX) const
    {
        for (uint32_t i = first; i < end && i < capacity(); i++) {
            if (!slots_[i].obj && n-- == 0) {
                return i;
            }
        }
        return std::nullopt;
    }

    /* The object at @index, or nullptr if out of range or free. */
    T *at(uint32_t index) const
    {
        return index < capacity() ? slots_[index].obj.get() : nullptr;
    }

    /* The object named by @handle, or nullptr if bad or stale. */
    T *find(uint32_t handle) const
    {
        const uint32_t index = handle & kHandleIndexMask;
        if (index >= capacity()) {
            return nullptr;
        }
        const Slot &s = slots_[index];
        if (!s.obj || s.gen != handle >> kHandleIndexBits) {
            return nullptr;
        }
        return s.obj.get();
    }

    uint32_t handle_of(uint32_t index) const
    {
        return static_cast<uint32_t>(slots_[index].gen) << kHandleIndexBits |
               index;
    }

    /* Puts @obj into the free slot @index. */
    T *insert(uint32_t index, std::unique_ptr<T> obj)
    {
        assert(index < capacity() && !slots_[index].obj && obj);
        slots_[index].obj = std::move(obj);
        live_++;
        return slots_[index].obj.get();
    }

    /* Frees the object at @index; its handle goes stale. */
    void erase(uint32_t index)
    {
        Slot &s = slots_[index];
        assert(s.obj);
        s.obj.reset();
        s.gen = s.gen == UINT16_MAX ? kFirstGeneration
                                  : static_cast<uint16_t>(s.gen + 1);
        live_--;
    }

    /* Frees every object; the table is as new (generations restart). */
    void clear()
    {
        for (uint32_t i = 0; i < capacity_; i++) {
            slots_[i].obj.reset();
            slots_[i].gen = kFirstGeneration;
        }
        live_ = 0;
    }

    /* f(index, object) for every live object, lowest index first. */
    template <typename F>
    void for_each(F &&f) const
    {
        for (uint32_t i = 0; i < capacity(); i++) {
            if (slots_[i].obj) {
                f(i, *slots_[i].obj);
            }
        }
    }

private:
    struct Slot {
        std::unique_ptr<T> obj;
        uint16_t gen = kFirstGeneration;
    };
    /*
     * The table never grows: a plain array and its size as a value.  (With
     * a std::vector, GCC 12 at -O2 could not fold size() in the bounds
     * checks of at()/find() before -Warray-bounds ran, and warned about the
     * out-of-range branch those checks make unreachable.)
     */
    std::unique_ptr<Slot[]> slots_;
    uint32_t capacity_;
    uint32_t live_ = 0;
};

} // namespace vrdma

#endif

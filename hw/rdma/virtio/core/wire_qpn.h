/*
 * virtio-rdma core: wire QP numbers (VIRTIO_RDMA_F_WIRE_QPN).
 *
 * A QP has a queue index (which virtqueues, what control commands name)
 * and a wire QPN (what peers address: BTH destination QP, DETH source QP,
 * CQE qp_num / src_qp).  Without the feature the two are equal.  With it,
 * the GSI QP is wire 1 and every other QP gets a random 24-bit number,
 * never 0, 1 or 0xffffff (IBA: multicast), unique among live QPs and not
 * one of the last kRecent numbers freed, so a late packet for a destroyed
 * QP does not reach its successor.
 *
 * The table maps wire QPN -> queue index for every received packet: open
 * addressing with linear probing in a power-of-two array of at least twice
 * max_qp slots, allocated once; deletion shifts the following entries back,
 * so there are no tombstones and a lookup never probes more than the
 * longest cluster.  No allocation after construction.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_VIRTIO_CORE_WIRE_QPN_H
#define HW_RDMA_VIRTIO_CORE_WIRE_QPN_H

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "rng.h"
#include "roce/iba.h"

namespace vrdma {

class WireQpnTable {
public:
    /* Recently freed wire QPNs a new QP does not get. */
    static constexpr unsigned kRecent = 64;

    explicit WireQpnTable(uint32_t max_qp);

    /* Queue index of the live QP numbered @wire on the wire. */
    std::optional<uint32_t> find(uint32_t wire) const;
    /* @wire must be free and valid (1..0xfffffe). */
    void insert(uint32_t wire, uint32_t qpn);
    /* Frees @wire (a live one) and remembers it as recently freed. */
    void release(uint32_t wire);
    /* Every entry goes; the recently-freed memory stays. */
    void clear();

    /*
     * A random wire QPN for a new QP: 2..0xfffffe, not live, and not
     * recently freed unless that cannot be found quickly (only the first
     * kTries draws avoid them; then any free number is taken).
     */
    uint32_t pick(Rng &rng) const;

    bool recently_freed(uint32_t wire) const;
    uint32_t live() const { return live_; }
    size_t capacity() const { return slots_.size(); }

private:
    static constexpr unsigned kTries = 32;

    struct Slot {
        uint32_t wire = 0; /* 0: empty (0 is never a wire QPN) */
        uint32_t qpn = 0;
    };

    size_t home(uint32_t wire) const;

    std::vector<Slot> slots_;
    size_t mask_;
    unsigned shift_;
    uint32_t live_ = 0;
    std::array<uint32_t, kRecent> recent_{};
    unsigned recent_next_ = 0;
};

} // namespace vrdma

#endif

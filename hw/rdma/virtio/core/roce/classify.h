/*
 * virtio-rdma soft-RoCE: is a frame RoCEv2 by its L2/L3/L4 headers, and to
 * which address -- the one classifier both the core (recv.cc) and the C
 * device's receive filter use, so the two never disagree about a frame.
 * The C entry point is vrdma_frame_roce_dst() (virtio-rdma-core.h, where
 * the rule is written down); this is its C++ face.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_VIRTIO_CORE_ROCE_CLASSIFY_H
#define HW_RDMA_VIRTIO_CORE_ROCE_CLASSIFY_H

#include <span>

#include "frame.h"
#include "hw/rdma/virtio-rdma-core.h"

namespace vrdma::roce {

/* @returns whether @f is RoCEv2 by its headers; if so, *dst is its dGID. */
inline bool roce_dst(std::span<const uint8_t> f, Gid *dst) noexcept
{
    return vrdma_frame_roce_dst(f.data(), f.size(), dst->data());
}

} // namespace vrdma::roce

#endif

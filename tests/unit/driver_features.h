/*
 * The device features the tests' driver negotiates, in both fixtures
 * (core_fixture.h, dp_harness.h): the rings data path with wire QP numbers
 * and the event queue, as the guest driver does.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef TESTS_UNIT_DRIVER_FEATURES_H
#define TESTS_UNIT_DRIVER_FEATURES_H

#include <cstdint>

#include "hw/rdma/virtio-rdma-abi.h"

namespace vrdma_test {

inline constexpr uint64_t kRingFeatures = 1ull << VIRTIO_RDMA_F_WIRE_QPN |
                                          1ull << VIRTIO_RDMA_F_EVENT_QUEUE |
                                          1ull << VIRTIO_RDMA_F_RINGS;

} // namespace vrdma_test

#endif

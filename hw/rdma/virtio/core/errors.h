/*
 * virtio-rdma core: the result of a command step and how a refusal maps to
 * the status byte the guest sees.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_VIRTIO_CORE_ERRORS_H
#define HW_RDMA_VIRTIO_CORE_ERRORS_H

#include <cstdint>

#include "hw/rdma/virtio-rdma-core.h"

namespace vrdma {

/*
 * Outcome of a command handler.  On refusal, @a and @b are the values the
 * guest_error() trace point shows: the offending value, then the bound or
 * the object it was checked against.
 */
struct [[nodiscard]] Status {
    VrdmaErr err = VRDMA_ERR_NONE;
    uint64_t a = 0;
    uint64_t b = 0;

    bool ok() const { return err == VRDMA_ERR_NONE; }
};

inline constexpr Status kOk{};

inline Status fail(VrdmaErr err, uint64_t a = 0, uint64_t b = 0)
{
    return Status{err, a, b};
}

/* The status byte (enum virtio_rdma_status) the guest sees for @err. */
uint8_t status_of(VrdmaErr err);

} // namespace vrdma

#endif

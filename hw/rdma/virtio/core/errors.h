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
 * Outcome of a command handler.  On refusal, @field names the request
 * field that failed as the ABI struct spells it ("send_cqn",
 * "attrs.path_mtu"; "request" / "response" for their sizes), and @a and @b
 * are the values the guest_error() trace point shows with it: the
 * offending value, then the bound or the object it was checked against.
 */
struct [[nodiscard]] Status {
    VrdmaErr err = VRDMA_ERR_NONE;
    uint64_t a = 0;
    uint64_t b = 0;
    const char *field = nullptr; /* a string literal */
    /*
     * Not refused, not done: a backend started blocking host work and the
     * command completes later (core.h, VrdmaCore::pending).
     */
    bool deferred = false;

    bool ok() const { return err == VRDMA_ERR_NONE && !deferred; }
};

inline constexpr Status kOk{};
inline constexpr Status kDeferred{VRDMA_ERR_NONE, 0, 0, nullptr, true};

/* Refuses because of request field @field (a string literal). */
inline Status fail(VrdmaErr err, const char *field, uint64_t a = 0,
                   uint64_t b = 0)
{
    return Status{err, a, b, field};
}

/*
 * A refusal from a helper that does not know which request field its input
 * came from (page_table.h): its caller sets Status::field.
 */
inline Status fail(VrdmaErr err, uint64_t a = 0, uint64_t b = 0)
{
    return Status{err, a, b, nullptr};
}

/* The status byte (enum virtio_rdma_status) the guest sees for @err. */
uint8_t status_of(VrdmaErr err);

} // namespace vrdma

#endif

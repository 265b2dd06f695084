/*
 * virtio-rdma core: the Modify QP state machine (IBA 10.3.1, "QP state
 * transitions", and the attribute table of IBA 11.2.4.2 "Modify Queue
 * Pair"; the same table as Linux's qp_state_table in ib_modify_qp_is_ok).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_VIRTIO_CORE_QP_STATE_H
#define HW_RDMA_VIRTIO_CORE_QP_STATE_H

#include <cstdint>

#include "errors.h"
#include "hw/rdma/virtio-rdma-core.h"

namespace vrdma {

inline constexpr uint32_t kQpNumStates = VIRTIO_RDMA_QPS_ERR + 1;

/* Every attr_mask bit the ABI defines (ib_qp_attr_mask bits 0..20, 25). */
inline constexpr uint32_t kQpAttrKnown =
    ((1u << 21) - 1) | VIRTIO_RDMA_QP_RATE_LIMIT;
/* Defined, but this device does not support them (no APM, no resize). */
inline constexpr uint32_t kQpAttrUnsupported =
    VIRTIO_RDMA_QP_ALT_PATH | VIRTIO_RDMA_QP_PATH_MIG_STATE |
    VIRTIO_RDMA_QP_CAP;

/* @returns whether a QP may go from @cur to @next (both any u32). */
bool qp_transition_valid(uint32_t cur, uint32_t next);

struct QpAttrRule {
    uint32_t required; /* attributes that must be given */
    uint32_t optional; /* attributes that may be given */
};

/*
 * Attributes of the transition @cur -> @next for @qp_type (RC, UC, UD or
 * GSI), not counting STATE and CUR_STATE.  {0, 0} for an invalid
 * transition or another QP type.
 */
QpAttrRule qp_transition_attrs(uint32_t cur, uint32_t next, uint8_t qp_type);

/*
 * The state-machine checks of MODIFY_QP, in order: a CUR_STATE that is not
 * the current state or an invalid transition -> BAD_STATE; an unknown or
 * unsupported attribute, a missing required one or one the transition does
 * not allow -> BAD_MASK.  @mask is the full attr_mask; without STATE the
 * transition is cur -> cur.
 */
Status qp_check_modify(uint32_t cur, uint8_t qp_type, uint32_t mask,
                       uint32_t new_state, uint32_t cur_state_attr);

} // namespace vrdma

#endif

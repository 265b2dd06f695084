/*
 * virtio-rdma core: the Modify QP state machine (see qp_state.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qp_state.h"

#include <array>

namespace vrdma {

namespace {

enum TypeSlot { kRc, kUc, kUd, kGsi, kNumTypeSlots };

struct Transition {
    bool valid = false;
    std::array<uint32_t, kNumTypeSlots> required{};
    std::array<uint32_t, kNumTypeSlots> optional{};
};

using Table = std::array<std::array<Transition, kQpNumStates>, kQpNumStates>;

constexpr uint32_t STATE_ = VIRTIO_RDMA_QP_STATE;
constexpr uint32_t CUR_STATE_ = VIRTIO_RDMA_QP_CUR_STATE;
constexpr uint32_t EN_SQD_ = VIRTIO_RDMA_QP_EN_SQD_ASYNC_NOTIFY;
constexpr uint32_t ACCESS_ = VIRTIO_RDMA_QP_ACCESS_FLAGS;
constexpr uint32_t PKEY_ = VIRTIO_RDMA_QP_PKEY_INDEX;
constexpr uint32_t PORT_ = VIRTIO_RDMA_QP_PORT;
constexpr uint32_t QKEY_ = VIRTIO_RDMA_QP_QKEY;
constexpr uint32_t AV_ = VIRTIO_RDMA_QP_AV;
constexpr uint32_t MTU_ = VIRTIO_RDMA_QP_PATH_MTU;
constexpr uint32_t TIMEOUT_ = VIRTIO_RDMA_QP_TIMEOUT;
constexpr uint32_t RETRY_ = VIRTIO_RDMA_QP_RETRY_CNT;
constexpr uint32_t RNR_RETRY_ = VIRTIO_RDMA_QP_RNR_RETRY;
constexpr uint32_t RQ_PSN_ = VIRTIO_RDMA_QP_RQ_PSN;
constexpr uint32_t RD_ATOMIC_ = VIRTIO_RDMA_QP_MAX_QP_RD_ATOMIC;
constexpr uint32_t ALT_PATH_ = VIRTIO_RDMA_QP_ALT_PATH;
constexpr uint32_t MIN_RNR_ = VIRTIO_RDMA_QP_MIN_RNR_TIMER;
constexpr uint32_t SQ_PSN_ = VIRTIO_RDMA_QP_SQ_PSN;
constexpr uint32_t DEST_RD_ATOMIC_ = VIRTIO_RDMA_QP_MAX_DEST_RD_ATOMIC;
constexpr uint32_t MIG_ = VIRTIO_RDMA_QP_PATH_MIG_STATE;
constexpr uint32_t DEST_QPN_ = VIRTIO_RDMA_QP_DEST_QPN;

Transition valid_only()
{
    Transition t;
    t.valid = true;
    return t;
}

Transition rule(std::array<uint32_t, kNumTypeSlots> req,
                std::array<uint32_t, kNumTypeSlots> opt)
{
    Transition t;
    t.valid = true;
    t.required = req;
    t.optional = opt;
    return t;
}

/*
 * Rows: current state, columns: next state; per type {RC, UC, UD, GSI}.
 * ALT_PATH and PATH_MIG_STATE appear as IBA allows them; MODIFY_QP refuses
 * them before this table is consulted (kQpAttrUnsupported).
 */
Table make_table()
{
    enum { RESET, INIT, RTR, RTS, SQD, SQE, ERR };
    Table t{};

    /* Any state -> RESET and any state -> ERR, with no attributes. */
    for (auto &row : t) {
        row[RESET] = valid_only();
        row[ERR] = valid_only();
    }
    t[RESET][INIT] = rule({PKEY_ | PORT_ | ACCESS_, PKEY_ | PORT_ | ACCESS_,
                           PKEY_ | PORT_ | QKEY_, PKEY_ | QKEY_},
                          {});
    t[INIT][INIT] = rule({}, {PKEY_ | PORT_ | ACCESS_, PKEY_ | PORT_ | ACCESS_,
                              PKEY_ | PORT_ | QKEY_, PKEY_ | QKEY_});
    t[INIT][RTR] = rule({AV_ | MTU_ | DEST_QPN_ | RQ_PSN_ | DEST_RD_ATOMIC_ |
                             MIN_RNR_,
                         AV_ | MTU_ | DEST_QPN_ | RQ_PSN_, 0, 0},
                        {ALT_PATH_ | ACCESS_ | PKEY_, ALT_PATH_ | ACCESS_ | PKEY_,
                         PKEY_ | QKEY_, PKEY_ | QKEY_});
    t[RTR][RTS] = rule({TIMEOUT_ | RETRY_ | RNR_RETRY_ | SQ_PSN_ | RD_ATOMIC_,
                        SQ_PSN_, SQ_PSN_, SQ_PSN_},
                       {ALT_PATH_ | ACCESS_ | MIN_RNR_ | MIG_,
                        ALT_PATH_ | ACCESS_ | MIG_, QKEY_, QKEY_});
    t[RTS][RTS] = rule({}, {ACCESS_ | ALT_PATH_ | MIG_ | MIN_RNR_,
                            ACCESS_ | ALT_PATH_ | MIG_, QKEY_, QKEY_});
    t[RTS][SQD] = rule({}, {EN_SQD_, EN_SQD_, EN_SQD_, EN_SQD_});
    t[SQD][RTS] = rule({}, {ALT_PATH_ | ACCESS_ | MIN_RNR_ | MIG_,
                            ALT_PATH_ | ACCESS_ | MIG_, QKEY_, QKEY_});
    t[SQD][SQD] = rule({}, {PORT_ | AV_ | TIMEOUT_ | RETRY_ | RNR_RETRY_ |
                                RD_ATOMIC_ | DEST_RD_ATOMIC_ | ALT_PATH_ |
                                ACCESS_ | PKEY_ | MIN_RNR_ | MIG_,
                            AV_ | ALT_PATH_ | ACCESS_ | PKEY_ | MIG_,
                            PKEY_ | QKEY_, PKEY_ | QKEY_});
    t[SQE][RTS] = rule({}, {0, ACCESS_, QKEY_, QKEY_});
    return t;
}

const Table &table()
{
    static const Table kTable = make_table();
    return kTable;
}

int type_slot(uint8_t qp_type)
{
    switch (qp_type) {
    case VIRTIO_RDMA_QPT_RC:
        return kRc;
    case VIRTIO_RDMA_QPT_UC:
        return kUc;
    case VIRTIO_RDMA_QPT_UD:
        return kUd;
    case VIRTIO_RDMA_QPT_GSI:
        return kGsi;
    default:
        return -1;
    }
}

} // namespace

bool qp_transition_valid(uint32_t cur, uint32_t next)
{
    return cur < kQpNumStates && next < kQpNumStates &&
           table()[cur][next].valid;
}

QpAttrRule qp_transition_attrs(uint32_t cur, uint32_t next, uint8_t qp_type)
{
    const int slot = type_slot(qp_type);
    if (slot < 0 || !qp_transition_valid(cur, next)) {
        return {};
    }
    const Transition &t = table()[cur][next];
    return {t.required[slot], t.optional[slot]};
}

Status qp_check_modify(uint32_t cur, uint8_t qp_type, uint32_t mask,
                       uint32_t new_state, uint32_t cur_state_attr)
{
    const uint32_t next = (mask & STATE_) ? new_state : cur;
    const uint32_t attrs = mask & ~(STATE_ | CUR_STATE_);

    if (mask & ~kQpAttrKnown) {
        return fail(VRDMA_ERR_BAD_MASK, "attr_mask", mask,
                    mask & ~kQpAttrKnown);
    }
    if ((mask & CUR_STATE_) && cur_state_attr != cur) {
        return fail(VRDMA_ERR_BAD_STATE, "attrs.cur_qp_state", cur_state_attr,
                    cur);
    }
    if (!qp_transition_valid(cur, next)) {
        return fail(VRDMA_ERR_BAD_STATE, "attrs.qp_state", cur, next);
    }
    if (attrs & kQpAttrUnsupported) {
        return fail(VRDMA_ERR_BAD_MASK, "attr_mask", mask,
                    attrs & kQpAttrUnsupported);
    }
    const QpAttrRule r = qp_transition_attrs(cur, next, qp_type);
    if ((attrs & r.required) != r.required) {
        return fail(VRDMA_ERR_BAD_MASK, "attr_mask", mask,
                    r.required & ~attrs); /* missing */
    }
    if (attrs & ~(r.required | r.optional)) {
        return fail(VRDMA_ERR_BAD_MASK, "attr_mask", mask,
                    attrs & ~(r.required | r.optional)); /* not allowed */
    }
    return kOk;
}

} // namespace vrdma

/*
 * The modify-QP state machine: every (current, next) pair for each QP
 * type, through the table and through MODIFY_QP, and the attribute masks
 * each transition requires and allows.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <tuple>

#include "qp_fixture.h"
#include "qp_state.h"

namespace vrdma_test {
namespace {

const uint8_t kTypes[] = {VIRTIO_RDMA_QPT_RC, VIRTIO_RDMA_QPT_UC,
                          VIRTIO_RDMA_QPT_UD, VIRTIO_RDMA_QPT_GSI};

std::string type_name(uint8_t t)
{
    switch (t) {
    case VIRTIO_RDMA_QPT_RC: return "RC";
    case VIRTIO_RDMA_QPT_UC: return "UC";
    case VIRTIO_RDMA_QPT_UD: return "UD";
    case VIRTIO_RDMA_QPT_GSI: return "GSI";
    default: return "T" + std::to_string(t);
    }
}

const char *state_name(uint32_t s)
{
    static const char *const n[] = {"RESET", "INIT", "RTR", "RTS",
                                    "SQD", "SQE", "ERR"};
    return s < std::size(n) ? n[s] : "BAD";
}

using Pair = std::tuple<uint8_t, uint32_t, uint32_t>; /* type, cur, next */

std::string pair_name(const ::testing::TestParamInfo<Pair> &info)
{
    const auto [type, cur, next] = info.param;
    return type_name(type) + "_" + state_name(cur) + "_to_" + state_name(next);
}

/* ---- the table itself: all 7x7 pairs ---- */

class QpStateTable : public ::testing::TestWithParam<Pair> {};

TEST_P(QpStateTable, LegalExactlyAsIba)
{
    const auto [type, cur, next] = GetParam();
    const bool legal = legal_transition(cur, next);
    EXPECT_EQ(vrdma::qp_transition_valid(cur, next), legal);

    const uint32_t req = required_attrs(type, cur, next);
    const VrdmaErr err =
        vrdma::qp_check_modify(cur, type, M_STATE | req, next, 0).err;
    EXPECT_EQ(err, legal ? VRDMA_ERR_NONE : VRDMA_ERR_BAD_STATE)
        << vrdma_err_name(err);
    if (legal) {
        EXPECT_EQ(vrdma::qp_transition_attrs(cur, next, type).required, req);
    }
}

INSTANTIATE_TEST_SUITE_P(
    AllPairs, QpStateTable,
    ::testing::Combine(::testing::ValuesIn(kTypes), ::testing::Range(0u, 7u),
                       ::testing::Range(0u, 7u)),
    pair_name);

TEST(QpStateTableEdges, OutOfRangeStates)
{
    EXPECT_FALSE(vrdma::qp_transition_valid(7, RESET));
    EXPECT_FALSE(vrdma::qp_transition_valid(RESET, 7));
    EXPECT_FALSE(vrdma::qp_transition_valid(0xffffffff, 0xffffffff));
    EXPECT_EQ(vrdma::qp_check_modify(RESET, VIRTIO_RDMA_QPT_RC, M_STATE, 7, 0)
                  .err,
              VRDMA_ERR_BAD_STATE);
    /* SMI is not a supported type: nothing is required or allowed. */
    EXPECT_EQ(vrdma::qp_transition_attrs(RESET, INIT, VIRTIO_RDMA_QPT_SMI)
                  .required,
              0u);
}

TEST(QpStateTableEdges, SqeToRtsOptionals)
{
    EXPECT_EQ(vrdma::qp_check_modify(SQE, VIRTIO_RDMA_QPT_UD,
                                     M_STATE | M_QKEY, RTS, 0).err,
              VRDMA_ERR_NONE);
    EXPECT_EQ(vrdma::qp_check_modify(SQE, VIRTIO_RDMA_QPT_UC,
                                     M_STATE | M_ACCESS, RTS, 0).err,
              VRDMA_ERR_NONE);
    EXPECT_EQ(vrdma::qp_check_modify(SQE, VIRTIO_RDMA_QPT_UD,
                                     M_STATE | M_CUR_STATE, RTS, SQE).err,
              VRDMA_ERR_NONE);
    EXPECT_EQ(vrdma::qp_check_modify(SQE, VIRTIO_RDMA_QPT_UD,
                                     M_STATE | M_PKEY, RTS, 0).err,
              VRDMA_ERR_BAD_MASK);
}

/* ---- through MODIFY_QP, from every state a QP can be driven to ---- */

class QpStateCmd : public QpTest, public ::testing::WithParamInterface<Pair> {};

TEST_P(QpStateCmd, TransitionThroughModifyQp)
{
    const auto [type, cur, next] = GetParam();
    const uint32_t qpn = new_qp(type);
    drive(qpn, type, cur);
    const uint32_t req = required_attrs(type, cur, next);

    if (legal_transition(cur, next)) {
        EXPECT_EQ(move(qpn, next, req), VIRTIO_RDMA_OK);
        EXPECT_EQ(state_of(qpn), next);
    } else {
        virtio_rdma_qp_attr a = good_attrs();
        a.qp_state = next;
        expect_refused(VIRTIO_RDMA_CMD_MODIFY_QP,
                       virtio_rdma_cmd_modify_qp{.qpn = qpn,
                                                 .attr_mask = M_STATE | req,
                                                 .attrs = a},
                       VRDMA_ERR_BAD_STATE);
        EXPECT_EQ(state_of(qpn), cur);
    }
}

/* SQE is entered only by the device on an error, never by MODIFY_QP. */
INSTANTIATE_TEST_SUITE_P(
    Reachable, QpStateCmd,
    ::testing::Combine(::testing::Values(VIRTIO_RDMA_QPT_RC,
                                         VIRTIO_RDMA_QPT_UD),
                       ::testing::Values(RESET, INIT, RTR, RTS, SQD, ERR),
                       ::testing::Range(0u, 7u)),
    pair_name);

/* ---- masks ---- */

class QpMask : public QpTest, public ::testing::WithParamInterface<uint8_t> {};

TEST_P(QpMask, EveryRequiredAttributeIsRequired)
{
    const uint8_t type = GetParam();
    const uint32_t steps[][2] = {{RESET, INIT}, {INIT, RTR}, {RTR, RTS}};
    const uint32_t qpn = new_qp(type);

    for (const auto &step : steps) {
        const uint32_t req = required_attrs(type, step[0], step[1]);
        for (uint32_t bit = 1; bit; bit <<= 1) {
            if (!(req & bit)) {
                continue;
            }
            virtio_rdma_qp_attr a = good_attrs();
            a.qp_state = step[1];
            SCOPED_TRACE(std::string(state_name(step[0])) + " missing bit " +
                         std::to_string(__builtin_ctz(bit)));
            expect_refused(VIRTIO_RDMA_CMD_MODIFY_QP,
                           virtio_rdma_cmd_modify_qp{
                               .qpn = qpn,
                               .attr_mask = M_STATE | (req & ~bit),
                               .attrs = a},
                           VRDMA_ERR_BAD_MASK);
            EXPECT_EQ(guest_.errors.back().b, bit) << "reports what is missing";
            EXPECT_EQ(guest_.errors.back().field, "attr_mask");
            EXPECT_EQ(state_of(qpn), step[0]);
        }
        ASSERT_EQ(move(qpn, step[1], req), VIRTIO_RDMA_OK);
    }
}

TEST_P(QpMask, AttributesNotAllowedByTheTransition)
{
    const uint8_t type = GetParam();
    const uint32_t qpn = new_qp(type);
    const uint32_t req = required_attrs(type, RESET, INIT);
    /* Not allowed in RESET->INIT for any type: AV, PATH_MTU, SQ_PSN. */
    for (uint32_t extra : {M_AV, M_MTU, M_SQ_PSN, M_TIMEOUT, M_EN_SQD,
                           M_RATE_LIMIT}) {
        virtio_rdma_qp_attr a = good_attrs();
        a.qp_state = INIT;
        expect_refused(VIRTIO_RDMA_CMD_MODIFY_QP,
                       virtio_rdma_cmd_modify_qp{
                           .qpn = qpn, .attr_mask = M_STATE | req | extra,
                           .attrs = a},
                       VRDMA_ERR_BAD_MASK);
    }
    /* ->RESET and ->ERR take no attributes. */
    for (uint32_t next : {RESET, ERR}) {
        virtio_rdma_qp_attr a = good_attrs();
        a.qp_state = next;
        expect_refused(VIRTIO_RDMA_CMD_MODIFY_QP,
                       virtio_rdma_cmd_modify_qp{
                           .qpn = qpn, .attr_mask = M_STATE | M_PKEY,
                           .attrs = a},
                       VRDMA_ERR_BAD_MASK);
    }
    EXPECT_EQ(state_of(qpn), RESET);
}

TEST_P(QpMask, UnsupportedAndUnknownBits)
{
    const uint8_t type = GetParam();
    const uint32_t qpn = new_qp(type);
    drive(qpn, type, RTS);
    const uint32_t bad[] = {M_ALT_PATH, M_MIG, M_CAP, 1u << 21, 1u << 22,
                            1u << 23,   1u << 24, 1u << 26, 1u << 31};
    for (uint32_t bit : bad) {
        virtio_rdma_qp_attr a = good_attrs();
        a.qp_state = RTS;
        expect_refused(VIRTIO_RDMA_CMD_MODIFY_QP,
                       virtio_rdma_cmd_modify_qp{
                           .qpn = qpn, .attr_mask = M_STATE | bit, .attrs = a},
                       VRDMA_ERR_BAD_MASK);
    }
    /* An unknown bit is a mask error even when the transition is bad too. */
    virtio_rdma_qp_attr a = good_attrs();
    a.qp_state = INIT;
    expect_refused(VIRTIO_RDMA_CMD_MODIFY_QP,
                   virtio_rdma_cmd_modify_qp{
                       .qpn = qpn, .attr_mask = M_STATE | (1u << 30),
                       .attrs = a},
                   VRDMA_ERR_BAD_MASK);
    EXPECT_EQ(state_of(qpn), RTS);
}

TEST_P(QpMask, CurStateMustMatch)
{
    const uint8_t type = GetParam();
    const uint32_t qpn = new_qp(type);
    drive(qpn, type, RTR);
    const uint32_t req = required_attrs(type, RTR, RTS);
    virtio_rdma_qp_attr a = good_attrs();
    a.qp_state = RTS;
    a.cur_qp_state = INIT;
    expect_refused(VIRTIO_RDMA_CMD_MODIFY_QP,
                   virtio_rdma_cmd_modify_qp{
                       .qpn = qpn, .attr_mask = M_STATE | M_CUR_STATE | req,
                       .attrs = a},
                   VRDMA_ERR_BAD_STATE);
    a.cur_qp_state = 99;
    expect_refused(VIRTIO_RDMA_CMD_MODIFY_QP,
                   virtio_rdma_cmd_modify_qp{
                       .qpn = qpn, .attr_mask = M_STATE | M_CUR_STATE | req,
                       .attrs = a},
                   VRDMA_ERR_BAD_STATE);
    a.cur_qp_state = RTR;
    EXPECT_EQ(modify_qp(qpn, M_STATE | M_CUR_STATE | req, a), VIRTIO_RDMA_OK);
    EXPECT_EQ(state_of(qpn), RTS);
}

TEST_P(QpMask, WithoutStateTheMaskIsCheckedAsCurToCur)
{
    const uint8_t type = GetParam();
    const uint32_t qpn = new_qp(type);
    /* RESET->RESET takes nothing: an empty mask is a no-op. */
    EXPECT_EQ(modify_qp(qpn, 0, good_attrs()), VIRTIO_RDMA_OK);
    expect_refused(VIRTIO_RDMA_CMD_MODIFY_QP,
                   virtio_rdma_cmd_modify_qp{.qpn = qpn, .attr_mask = M_PKEY,
                                             .attrs = good_attrs()},
                   VRDMA_ERR_BAD_MASK);
    drive(qpn, type, INIT);
    /* INIT->INIT: P_Key index is allowed for every type. */
    EXPECT_EQ(modify_qp(qpn, M_PKEY, good_attrs()), VIRTIO_RDMA_OK);
    ASSERT_EQ(move(qpn, RTR, required_attrs(type, INIT, RTR)), VIRTIO_RDMA_OK);
    /* RTR->RTR is not a transition. */
    expect_refused(VIRTIO_RDMA_CMD_MODIFY_QP,
                   virtio_rdma_cmd_modify_qp{.qpn = qpn, .attr_mask = 0,
                                             .attrs = good_attrs()},
                   VRDMA_ERR_BAD_STATE);
    EXPECT_EQ(state_of(qpn), RTR);
}

INSTANTIATE_TEST_SUITE_P(Types, QpMask, ::testing::ValuesIn(kTypes),
                         [](const auto &info) { return type_name(info.param); });

} // namespace
} // namespace vrdma_test

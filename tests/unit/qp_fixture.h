/*
 * Test fixture for QPs: a PD, a CQ, GID 0, attribute values that pass
 * every check, and a helper that walks a QP to a given state.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef TESTS_UNIT_QP_FIXTURE_H
#define TESTS_UNIT_QP_FIXTURE_H

#include "core_fixture.h"

namespace vrdma_test {

enum : uint32_t {
    RESET = VIRTIO_RDMA_QPS_RESET,
    INIT = VIRTIO_RDMA_QPS_INIT,
    RTR = VIRTIO_RDMA_QPS_RTR,
    RTS = VIRTIO_RDMA_QPS_RTS,
    SQD = VIRTIO_RDMA_QPS_SQD,
    SQE = VIRTIO_RDMA_QPS_SQE,
    ERR = VIRTIO_RDMA_QPS_ERR,
};

enum : uint32_t {
    M_STATE = VIRTIO_RDMA_QP_STATE,
    M_CUR_STATE = VIRTIO_RDMA_QP_CUR_STATE,
    M_EN_SQD = VIRTIO_RDMA_QP_EN_SQD_ASYNC_NOTIFY,
    M_ACCESS = VIRTIO_RDMA_QP_ACCESS_FLAGS,
    M_PKEY = VIRTIO_RDMA_QP_PKEY_INDEX,
    M_PORT = VIRTIO_RDMA_QP_PORT,
    M_QKEY = VIRTIO_RDMA_QP_QKEY,
    M_AV = VIRTIO_RDMA_QP_AV,
    M_MTU = VIRTIO_RDMA_QP_PATH_MTU,
    M_TIMEOUT = VIRTIO_RDMA_QP_TIMEOUT,
    M_RETRY = VIRTIO_RDMA_QP_RETRY_CNT,
    M_RNR_RETRY = VIRTIO_RDMA_QP_RNR_RETRY,
    M_RQ_PSN = VIRTIO_RDMA_QP_RQ_PSN,
    M_RD_ATOMIC = VIRTIO_RDMA_QP_MAX_QP_RD_ATOMIC,
    M_ALT_PATH = VIRTIO_RDMA_QP_ALT_PATH,
    M_MIN_RNR = VIRTIO_RDMA_QP_MIN_RNR_TIMER,
    M_SQ_PSN = VIRTIO_RDMA_QP_SQ_PSN,
    M_DEST_RD_ATOMIC = VIRTIO_RDMA_QP_MAX_DEST_RD_ATOMIC,
    M_MIG = VIRTIO_RDMA_QP_PATH_MIG_STATE,
    M_CAP = VIRTIO_RDMA_QP_CAP,
    M_DEST_QPN = VIRTIO_RDMA_QP_DEST_QPN,
    M_RATE_LIMIT = VIRTIO_RDMA_QP_RATE_LIMIT,
};

/*
 * The test's own copy of the IBA 11.2.4.2 required attributes (the
 * oracle; the core has its own table).  0 for transitions without any.
 */
inline uint32_t required_attrs(uint8_t type, uint32_t cur, uint32_t next)
{
    const bool rc = type == VIRTIO_RDMA_QPT_RC;
    const bool uc = type == VIRTIO_RDMA_QPT_UC;
    const bool ud = type == VIRTIO_RDMA_QPT_UD;
    if (cur == RESET && next == INIT) {
        return rc || uc ? M_PKEY | M_PORT | M_ACCESS
               : ud     ? M_PKEY | M_PORT | M_QKEY
                        : M_PKEY | M_QKEY;
    }
    if (cur == INIT && next == RTR) {
        return rc   ? M_AV | M_MTU | M_DEST_QPN | M_RQ_PSN | M_DEST_RD_ATOMIC |
                          M_MIN_RNR
               : uc ? M_AV | M_MTU | M_DEST_QPN | M_RQ_PSN
                    : 0;
    }
    if (cur == RTR && next == RTS) {
        return rc ? M_TIMEOUT | M_RETRY | M_RNR_RETRY | M_SQ_PSN | M_RD_ATOMIC
                  : M_SQ_PSN;
    }
    return 0;
}

/* The transitions the brief allows (IBA 10.3.1). */
inline bool legal_transition(uint32_t cur, uint32_t next)
{
    if (next == RESET || next == ERR) {
        return true;
    }
    switch (cur) {
    case RESET: return next == INIT;
    case INIT: return next == INIT || next == RTR;
    case RTR: return next == RTS;
    case RTS: return next == RTS || next == SQD;
    case SQD: return next == RTS || next == SQD;
    case SQE: return next == RTS;
    default: return false;
    }
}

class QpTest : public CoreTest {
protected:
    void SetUp() override
    {
        CoreTest::SetUp();
        pdn_ = create_pd();
        cqn_ = create_cq();
        ASSERT_EQ(add_gid(0, 0xfe), VIRTIO_RDMA_OK);
    }

    /* Values that pass every check. */
    static virtio_rdma_qp_attr good_attrs()
    {
        virtio_rdma_qp_attr a{};
        a.qkey = 0x01234567; /* rdma_cm's RDMA_PS_UDP Q_Key */
        a.rq_psn = 0x123456;
        a.sq_psn = 0xabcdef;
        a.dest_qp_num = 0x42;
        a.qp_access_flags = VIRTIO_RDMA_ACCESS_LOCAL_WRITE |
                            VIRTIO_RDMA_ACCESS_REMOTE_READ;
        a.path_mtu = VIRTIO_RDMA_MTU_1024;
        a.pkey_index = 0;
        a.en_sqd_async_notify = 1;
        a.max_rd_atomic = 16;
        a.max_dest_rd_atomic = 16;
        a.min_rnr_timer = 31;
        a.port_num = 1;
        a.timeout = 31;
        a.retry_cnt = 7;
        a.rnr_retry = 7;
        a.ah_attr.ah_flags = VIRTIO_RDMA_AH_GRH;
        a.ah_attr.port_num = 1;
        a.ah_attr.grh.sgid_index = 0;
        a.ah_attr.grh.hop_limit = 64;
        a.ah_attr.grh.flow_label = 0x12345;
        std::memset(a.ah_attr.grh.dgid, 0x99, 16);
        std::memset(a.ah_attr.dmac, 0x02, 6);
        return a;
    }

    uint32_t new_qp(uint8_t type)
    {
        return create_qp(qp_req(pdn_, type, cqn_));
    }

    uint8_t move(uint32_t qpn, uint32_t next, uint32_t attrs)
    {
        virtio_rdma_qp_attr a = good_attrs();
        a.qp_state = next;
        return modify_qp(qpn, M_STATE | attrs, a);
    }

    uint32_t state_of(uint32_t qpn) { return query_qp(qpn).qp_state; }

    /* Walks QP @qpn (in RESET) to @target along the usual path. */
    void drive(uint32_t qpn, uint8_t type, uint32_t target)
    {
        static const uint32_t path[] = {RESET, INIT, RTR, RTS, SQD};
        if (target == ERR) {
            ASSERT_EQ(move(qpn, ERR, 0), VIRTIO_RDMA_OK);
            return;
        }
        for (size_t i = 1; i < std::size(path) && path[i - 1] != target; i++) {
            ASSERT_EQ(move(qpn, path[i],
                           required_attrs(type, path[i - 1], path[i])),
                      VIRTIO_RDMA_OK)
                << "to " << path[i];
        }
        ASSERT_EQ(state_of(qpn), target);
    }

    uint32_t pdn_ = 0;
    uint32_t cqn_ = 0;
};

} // namespace vrdma_test

#endif

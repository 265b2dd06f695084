/*
 * The fixture of the rings data path's tests: two nodes with
 * VIRTIO_RDMA_F_RINGS, an RC pair of ring QPs between them on ring CQs,
 * and a buffer on each side.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef TESTS_UNIT_RING_FIXTURE_H
#define TESTS_UNIT_RING_FIXTURE_H

#include <memory>

#include "ring_driver.h"

namespace vrdma_test {

inline constexpr uint32_t kSignaled = VIRTIO_RDMA_SEND_SIGNALED;

class RingPair : public DpTest {
protected:
    void SetUp() override
    {
        DpTest::SetUp();
        a->set_features(kRingFeatures);
        b->set_features(kRingFeatures);
    }

    /* RC ring QPs a<->b in RTS on CQs of @log_cq entries; SQ/RQ 2^log_wr. */
    void up(uint8_t log_wr = 2, uint8_t log_cq = 2)
    {
        ca = std::make_unique<RingCq>(*a, 0, 1u << log_cq, log_cq);
        cb = std::make_unique<RingCq>(*b, 0, 1u << log_cq, log_cq);
        qa = std::make_unique<RingQp>(*a, 0, pd_a, VIRTIO_RDMA_QPT_RC, *ca,
                                      *ca, log_wr);
        qb = std::make_unique<RingQp>(*b, 0, pd_b, VIRTIO_RDMA_QPT_RC, *cb,
                                      *cb, log_wr);
        connect_pair(*a, qa->qpn, *b, qb->qpn, VIRTIO_RDMA_QPT_RC, Conn{},
                     true);
        connect_pair(*b, qb->qpn, *a, qa->qpn, VIRTIO_RDMA_QPT_RC, Conn{},
                     false);
        src = buffer(*a, pd_a, 1 << 16);
        dst = buffer(*b, pd_b, 1 << 16);
    }

    /* Runs both cores' turns and the wire until nothing moves. */
    void settle()
    {
        for (int i = 0; i < 8; i++) {
            rings_drain(*a);
            rings_drain(*b);
            ASSERT_TRUE(wire.pump());
        }
    }

    uint8_t cq_ring_cmd(const virtio_rdma_cmd_create_cq_ring &r)
    {
        virtio_rdma_rsp_create_cq rsp{};
        return a->ctrl(VIRTIO_RDMA_CMD_CREATE_CQ_RING, r, &rsp);
    }

    std::unique_ptr<RingCq> ca, cb;
    std::unique_ptr<RingQp> qa, qb;
    MrInfo src, dst;
};

} // namespace vrdma_test

#endif

/*
 * libFuzzer target: the rings data path (VIRTIO_RDMA_F_RINGS) -- what a
 * guest can write into its rings and doorbells.
 *
 * Each input runs on two fresh cores (the unit tests' harness and its
 * rings driver, tests/unit/ring_driver.h) with the ring features
 * negotiated: on each a user context, ring CQs of 4 entries, an RC ring QP
 * pair connected, receives posted; and a second pair whose b side
 * receives from a 4-entry SRQ of b's.  The input is then a list of
 * operations:
 *
 *   byte 0 (kind)  what follows
 *   0 scribble     a selector, an offset and bytes written into one of
 *                  the rings' memory (entries and trailers, SQ/RQ/CQ, the
 *                  SRQ)
 *   1 doorbell     a context selector and a raw 64-bit doorbell value
 *   2 send         a well-formed send request (fuzzed opcode, flags,
 *                  lengths) into a's SQ ring, then its doorbell
 *   3 receive      a well-formed receive request into b's RQ ring, rung
 *   4 command      a control command and raw request bytes, to b (ring
 *                  commands reach fuzzed rings; a ring's pages are RAM or
 *                  not as the bytes say)
 *   5 turn         ring turns and the wire until idle (bounded)
 *   6 poll         the driver consumes what the CQ rings hold
 *   7 memory       guest RAM under one ring's page goes away
 *   8 time         the clock jumps (retransmit / RNR timers fire)
 *   9 srq receive  a well-formed receive request into b's SRQ, rung
 *   10 srq send    a send request as 2, on the pair whose b is on the SRQ
 *
 * with a 2-byte length before the bytes of 0 and 4.  At the end the turns
 * and the wire run until idle.  Besides the sanitizers' findings, a failed
 * harness check (guest mappings leaked when a node is destroyed) aborts.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "fuzz_input.h"
#include "ring_driver.h"

namespace {

using vrdma_test::Bytes;
using vrdma_test::Conn;
using vrdma_test::DpTest;
using vrdma_test::MrInfo;
using vrdma_test::Node;
using vrdma_test::RingCq;
using vrdma_test::RingMem;
using vrdma_test::RingQp;
using vrdma_test::RingSrq;
using vrdma_test::Wire;
using vrdma_test::kAllAccess;

constexpr uint64_t kMaxSteps = 20000;

using vrdma_fuzz::harness_failures;
using vrdma_fuzz::Input;

struct Setup {
    Wire wire;
    Node a{&wire, 0}, b{&wire, 1};
    uint32_t ctx_a = 0, ctx_b = 0;
    std::unique_ptr<RingCq> ca, cb;
    std::unique_ptr<RingQp> qa, qb;
    std::unique_ptr<RingSrq> srq;
    std::unique_ptr<RingQp> qa2, qb2; /* qb2 receives from srq */
    MrInfo src, dst;

    Setup()
    {
        for (Node *n : {&a, &b}) {
            n->keep_cqes = false;
            n->add_gid(0, n->gid);
            n->set_features(vrdma_test::kRingFeatures);
        }
        ctx_a = vrdma_test::alloc_context(a);
        ctx_b = vrdma_test::alloc_context(b);
        const uint32_t pa = a.create_pd(), pb = b.create_pd();
        ca = std::make_unique<RingCq>(a, ctx_a, 4, 2);
        cb = std::make_unique<RingCq>(b, ctx_b, 4, 2);
        qa = std::make_unique<RingQp>(a, ctx_a, pa, VIRTIO_RDMA_QPT_RC, *ca,
                                      *ca, 2);
        qb = std::make_unique<RingQp>(b, ctx_b, pb, VIRTIO_RDMA_QPT_RC, *cb,
                                      *cb, 2);
        srq = std::make_unique<RingSrq>(b, ctx_b, pb, 2);
        qa2 = std::make_unique<RingQp>(a, ctx_a, pa, VIRTIO_RDMA_QPT_RC, *ca,
                                       *ca, 2);
        qb2 = std::make_unique<RingQp>(b, ctx_b, pb, VIRTIO_RDMA_QPT_RC, *cb,
                                       *cb, 2, 4, srq.get());
        src = a.reg_mr(pa, a.alloc(16384), 16384, kAllAccess);
        dst = b.reg_mr(pb, b.alloc(16384), 16384, kAllAccess);
        Conn conn;
        conn.rnr_retry = 3; /* not 7: see fuzz_engine.cc */
        DpTest::connect_pair(a, qa->qpn, b, qb->qpn, VIRTIO_RDMA_QPT_RC, conn,
                             true);
        DpTest::connect_pair(b, qb->qpn, a, qa->qpn, VIRTIO_RDMA_QPT_RC, conn,
                             false);
        DpTest::connect_pair(a, qa2->qpn, b, qb2->qpn, VIRTIO_RDMA_QPT_RC,
                             conn, true);
        DpTest::connect_pair(b, qb2->qpn, a, qa2->qpn, VIRTIO_RDMA_QPT_RC,
                             conn, false);
        for (uint64_t i = 0; i < 2; i++) {
            qb->post_recv(i, {{dst.addr + i * 4096, 4096, dst.lkey}});
            srq->post(i, {{dst.addr + i * 4096, 4096, dst.lkey}});
        }
    }

    /* One of the rings: a's and b's SQ, RQ and CQ, or b's SRQ. */
    const RingMem &ring(uint8_t sel, Node **n)
    {
        *n = sel & 1 ? &b : &a;
        RingQp &q = sel & 1 ? *qb : *qa;
        RingCq &c = sel & 1 ? *cb : *ca;
        switch ((sel >> 1) % 4) {
        case 0: return q.sq;
        case 1: return q.rq;
        case 2: return c.mem;
        default: *n = &b; return srq->mem;
        }
    }

    void scribble(Input &in)
    {
        Node *n;
        const RingMem &m = ring(in.u8(), &n);
        const uint64_t size = (uint64_t{m.entries()} << m.desc.log_stride) +
                              sizeof(virtio_rdma_ring_trailer);
        const uint64_t off = in.u16() % size;
        const Bytes bytes = in.bytes(in.u16());
        const uint64_t len = std::min<uint64_t>(bytes.size(), size - off);
        if (len) {
            std::memcpy(n->mem(m.gpa + off, len), bytes.data(), len);
        }
    }

    void send(Input &in, RingQp &q)
    {
        static constexpr uint32_t kOps[] = {
            VIRTIO_RDMA_WR_SEND, VIRTIO_RDMA_WR_SEND_WITH_IMM,
            VIRTIO_RDMA_WR_RDMA_WRITE, VIRTIO_RDMA_WR_RDMA_READ,
            VIRTIO_RDMA_WR_ATOMIC_FETCH_AND_ADD,
        };
        const uint32_t op = kOps[in.u8() % std::size(kOps)];
        const uint8_t flags = in.u8();
        const uint32_t len = in.u16() % 20000;
        const uint32_t off = in.u16() % 20000;
        vrdma_test::SendWr w;
        w.op(op).id(in.u16()).flags(flags & 0x0F);
        w.sge(src.addr + off, len, src.lkey);
        if (op == VIRTIO_RDMA_WR_ATOMIC_FETCH_AND_ADD) {
            w.atomic(dst.addr + (off & ~7u), dst.rkey, off, 0);
        } else {
            w.rdma(dst.addr + off, dst.rkey);
        }
        q.post_send(w);
    }

    void run(Input &in)
    {
        while (in.n) {
            switch (in.u8() % 11) {
            case 0:
                scribble(in);
                break;
            case 1: {
                const uint8_t sel = in.u8();
                Node &n = sel & 1 ? b : a;
                vrdma_core_doorbell(n.core, (sel >> 1) % 3, in.u64());
                break;
            }
            case 2:
                send(in, *qa);
                break;
            case 3: {
                const uint32_t len = in.u16() % 20000;
                const uint32_t off = in.u16() % 20000;
                qb->post_recv(in.u16(), {{dst.addr + off, len, dst.lkey}});
                break;
            }
            case 4: {
                const uint8_t cmd = in.u8();
                const Bytes req = in.bytes(in.u16());
                uint8_t rsp[VRDMA_CTRL_RSP_MAX];
                b.ctrl_raw(cmd, req.data(), req.size(), rsp, sizeof(rsp));
                break;
            }
            case 5:
                settle();
                break;
            case 6:
                while (ca->poll()) {
                }
                while (cb->poll()) {
                }
                break;
            case 7: {
                Node *n;
                const RingMem &m = ring(in.u8(), &n);
                vrdma_core_invalidate_host_range(n->core, n->mem(m.gpa), 4096);
                break;
            }
            case 8:
                wire.now += uint64_t{in.u16()} << 20;
                wire.pump(kMaxSteps);
                break;
            case 9: {
                const uint32_t len = in.u16() % 20000;
                const uint32_t off = in.u16() % 20000;
                srq->post(in.u16(), {{dst.addr + off, len, dst.lkey}});
                break;
            }
            case 10:
                send(in, *qa2);
                break;
            }
        }
        settle();
    }

    void settle()
    {
        for (int i = 0; i < 4; i++) {
            vrdma_test::rings_drain(a);
            vrdma_test::rings_drain(b);
            wire.pump(kMaxSteps);
        }
    }
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const int failures = harness_failures();
    {
        Setup s;
        if (harness_failures() != failures) {
            std::abort(); /* the set-up itself broke */
        }
        Input in{data, size};
        s.run(in);
    } /* the nodes' destructors check that no guest mapping leaked */
    if (harness_failures() != failures) {
        std::abort();
    }
    return 0;
}

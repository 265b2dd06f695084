/*
 * Data path, RC (and UC): every opcode byte-exact in guest memory,
 * segmentation at MTU 256/1024/4096, PSN wrap, AckReq cadence, loss of
 * each kind of packet and its repair (NAK, timeout, read replay, atomic
 * replay), duplicates, RNR with the timer table, retry exhaustion, every
 * NAK the responder sends and what the requester makes of it, flushes
 * after an error, max_rd_atomic, fences, the PSN window, SQD, UC.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <set>

#include "dp_harness.h"
#include "roce/frame.h"
#include "roce/headers.h"

namespace vrdma_test {
namespace {

namespace roce = vrdma::roce;

constexpr uint32_t kSignaled = VIRTIO_RDMA_SEND_SIGNALED;
constexpr uint64_t kBuf = 512 * 1024;

/* What a test needs to know of a frame on the wire. */
struct Pkt {
    bool ok = false;
    int src = -1;
    uint8_t opcode = 0;
    uint32_t psn = 0;
    bool ack_req = false;
    size_t payload = 0;
    uint8_t syndrome = 0;
    uint32_t dma_len = 0;
};

Pkt parse(const Wire::Frame &f)
{
    Pkt k;
    roce::Packet p;
    if (roce::parse_frame(f.data, &p) != roce::ParseError::kNone) {
        return k;
    }
    k.ok = true;
    k.src = f.src;
    k.opcode = p.opcode;
    k.psn = p.bth().psn();
    k.ack_req = p.bth().ack_req();
    k.payload = p.payload.size();
    if (p.info->has(roce::Hdr::kAeth)) {
        k.syndrome = p.aeth().syndrome();
    }
    if (p.info->has(roce::Hdr::kReth)) {
        k.dma_len = p.reth().dma_len();
    }
    return k;
}

bool is_read_resp(uint8_t op)
{
    return op >= roce::kRcReadResponseFirst && op <= roce::kRcReadResponseOnly;
}

class DpRc : public DpTest {
protected:
    void SetUp() override { DpTest::SetUp(); }

    void up(const Conn &c = Conn{}, uint8_t type = VIRTIO_RDMA_QPT_RC)
    {
        conn = c;
        std::tie(qa, qb) = connect(type, c);
        src = buffer(*a, pd_a, kBuf);
        dst = buffer(*b, pd_b, kBuf);
        wire.capture = true;
    }

    SendWr send(uint64_t id, uint32_t len, uint64_t off = 0) const
    {
        return SendWr()
            .op(VIRTIO_RDMA_WR_SEND)
            .id(id)
            .flags(kSignaled)
            .sge(src.addr + off, len, src.lkey);
    }
    SendWr write(uint64_t id, uint32_t len, uint64_t off = 0) const
    {
        return SendWr()
            .op(VIRTIO_RDMA_WR_RDMA_WRITE)
            .id(id)
            .flags(kSignaled)
            .sge(src.addr + off, len, src.lkey)
            .rdma(dst.addr + off, dst.rkey);
    }
    SendWr read(uint64_t id, uint32_t len, uint64_t off = 0) const
    {
        return SendWr()
            .op(VIRTIO_RDMA_WR_RDMA_READ)
            .id(id)
            .flags(kSignaled)
            .sge(src.addr + off, len, src.lkey)
            .rdma(dst.addr + off, dst.rkey);
    }
    void recv(uint64_t id, uint32_t len, uint64_t off = 0)
    {
        b->post_recv(qb, id, {{dst.addr + off, len, dst.lkey}});
    }

    void expect_cqe(Node &n, uint32_t cqn, uint64_t wr_id, uint32_t status,
                    uint32_t opcode)
    {
        const virtio_rdma_cq_req c = n.pop_cqe(cqn);
        EXPECT_EQ(c.wr_id, wr_id);
        EXPECT_EQ(c.status, status) << "wr_id " << wr_id;
        EXPECT_EQ(c.opcode, opcode) << "wr_id " << wr_id;
    }

    std::vector<Pkt> sent_by(int node)
    {
        std::vector<Pkt> v;
        for (const Wire::Frame &f : wire.captured) {
            if (f.src == node) {
                v.push_back(parse(f));
            }
        }
        return v;
    }

    /* A tap that loses the first @n frames @pred picks. */
    void lose(std::function<bool(const Pkt &)> pred, int n = 1)
    {
        auto left = std::make_shared<int>(n);
        wire.tap = [pred, left](Wire::Frame &f) {
            if (*left > 0 && pred(parse(f))) {
                --*left;
                return false;
            }
            return true;
        };
    }

    Conn conn;
    uint32_t qa = 0, qb = 0;
    MrInfo src, dst;
};

/* ---- every opcode, byte-exact ---- */

TEST_F(DpRc, SendIsByteExact)
{
    up();
    a->fill(src.addr, 10000, 1);
    std::memset(b->mem(dst.addr), 0x5A, 20000);
    recv(1, 12000, 100);
    a->post_send(qa, send(2, 10000));
    ASSERT_TRUE(wire.pump());
    expect_cqe(*a, cq_a, 2, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_SEND);
    const virtio_rdma_cq_req r = b->pop_cqe(cq_b);
    EXPECT_EQ(r.status, VIRTIO_RDMA_WC_SUCCESS);
    EXPECT_EQ(r.opcode, VIRTIO_RDMA_WC_RECV);
    EXPECT_EQ(r.byte_len, 10000u);
    EXPECT_EQ(r.src_qp, a->wire_qpn(qa));
    EXPECT_EQ(r.qp_num, b->wire_qpn(qb));
    EXPECT_EQ(r.wc_flags, VIRTIO_RDMA_WC_GRH);
    EXPECT_TRUE(b->check(dst.addr + 100, 10000, 1));
    EXPECT_EQ(b->mem(dst.addr)[99], 0x5A);
    EXPECT_EQ(b->mem(dst.addr)[10100], 0x5A);
}

TEST_F(DpRc, SendWithImmediate)
{
    up();
    a->fill(src.addr, 64, 2);
    recv(1, 64);
    a->post_send(qa, send(2, 64).op(VIRTIO_RDMA_WR_SEND_WITH_IMM).imm(0x01020304));
    ASSERT_TRUE(wire.pump());
    const virtio_rdma_cq_req s = a->pop_cqe(cq_a);
    EXPECT_EQ(s.status, VIRTIO_RDMA_WC_SUCCESS);
    EXPECT_EQ(s.wc_flags, VIRTIO_RDMA_WC_WITH_IMM);
    const virtio_rdma_cq_req r = b->pop_cqe(cq_b);
    EXPECT_EQ(r.wc_flags, VIRTIO_RDMA_WC_GRH | VIRTIO_RDMA_WC_WITH_IMM);
    const uint8_t be[4] = {1, 2, 3, 4};
    EXPECT_EQ(std::memcmp(&r.ex, be, 4), 0);
    EXPECT_TRUE(b->check(dst.addr, 64, 2));
}

TEST_F(DpRc, WriteIsByteExactAndConsumesNoReceive)
{
    up();
    a->fill(src.addr + 123, 70000, 3);
    std::memset(b->mem(dst.addr), 0x5A, 80000);
    recv(1, 64);
    a->post_send(qa, write(2, 70000, 123));
    ASSERT_TRUE(wire.pump());
    expect_cqe(*a, cq_a, 2, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_RDMA_WRITE);
    EXPECT_EQ(b->cq_size(cq_b), 0u);
    EXPECT_TRUE(b->check(dst.addr + 123, 70000, 3));
    EXPECT_EQ(b->mem(dst.addr)[122], 0x5A);
    EXPECT_EQ(b->mem(dst.addr)[70123], 0x5A);
}

TEST_F(DpRc, WriteWithImmediateCompletesAReceive)
{
    up();
    a->fill(src.addr, 5000, 4);
    std::memset(b->mem(dst.addr + 200000), 0x77, 64);
    b->post_recv(qb, 1, {{dst.addr + 200000, 64, dst.lkey}});
    a->post_send(qa, write(2, 5000)
                         .op(VIRTIO_RDMA_WR_RDMA_WRITE_WITH_IMM)
                         .imm(0xCAFEF00D));
    ASSERT_TRUE(wire.pump());
    expect_cqe(*a, cq_a, 2, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_RDMA_WRITE);
    const virtio_rdma_cq_req r = b->pop_cqe(cq_b);
    EXPECT_EQ(r.wr_id, 1u);
    EXPECT_EQ(r.status, VIRTIO_RDMA_WC_SUCCESS);
    EXPECT_EQ(r.opcode, VIRTIO_RDMA_WC_RECV_RDMA_WITH_IMM);
    EXPECT_EQ(r.byte_len, 5000u);
    EXPECT_EQ(r.wc_flags, VIRTIO_RDMA_WC_GRH | VIRTIO_RDMA_WC_WITH_IMM);
    const uint8_t be[4] = {0xCA, 0xFE, 0xF0, 0x0D};
    EXPECT_EQ(std::memcmp(&r.ex, be, 4), 0);
    EXPECT_TRUE(b->check(dst.addr, 5000, 4));
    EXPECT_EQ(b->mem(dst.addr + 200000)[0], 0x77) << "receive buffer untouched";
}

TEST_F(DpRc, ReadIsByteExact)
{
    up();
    b->fill(dst.addr + 7, 30001, 5);
    std::memset(a->mem(src.addr), 0x5A, 40000);
    a->post_send(qa, read(1, 30001, 7));
    ASSERT_TRUE(wire.pump());
    const virtio_rdma_cq_req c = a->pop_cqe(cq_a);
    EXPECT_EQ(c.status, VIRTIO_RDMA_WC_SUCCESS);
    EXPECT_EQ(c.opcode, VIRTIO_RDMA_WC_RDMA_READ);
    EXPECT_EQ(c.byte_len, 30001u);
    EXPECT_TRUE(a->check(src.addr + 7, 30001, 5));
    EXPECT_EQ(a->mem(src.addr)[6], 0x5A);
    EXPECT_EQ(a->mem(src.addr)[30008], 0x5A);
    EXPECT_EQ(b->cq_size(cq_b), 0u);
}

TEST_F(DpRc, ZeroLengthOperations)
{
    up();
    recv(1, 64);
    a->post_send(qa, SendWr().op(VIRTIO_RDMA_WR_SEND).id(2).flags(kSignaled));
    a->post_send(qa, SendWr()
                         .op(VIRTIO_RDMA_WR_RDMA_WRITE)
                         .id(3)
                         .flags(kSignaled)
                         .rdma(0, 0)); /* C9-88: no key needed */
    a->post_send(qa, SendWr()
                         .op(VIRTIO_RDMA_WR_RDMA_READ)
                         .id(4)
                         .flags(kSignaled)
                         .rdma(0, 0));
    ASSERT_TRUE(wire.pump());
    expect_cqe(*a, cq_a, 2, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_SEND);
    expect_cqe(*a, cq_a, 3, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_RDMA_WRITE);
    expect_cqe(*a, cq_a, 4, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_RDMA_READ);
    const virtio_rdma_cq_req r = b->pop_cqe(cq_b);
    EXPECT_EQ(r.status, VIRTIO_RDMA_WC_SUCCESS);
    EXPECT_EQ(r.byte_len, 0u);
}

TEST_F(DpRc, AtomicsReturnTheOriginalValue)
{
    up();
    const uint64_t word = dst.addr + 4096;
    b->guest.poke64(word, 100);
    b->guest.poke64(word + 8, 7);
    auto atomic = [&](uint64_t id, uint32_t op, uint64_t at, uint64_t ca,
                      uint64_t swap, uint64_t result_off) {
        a->post_send(qa, SendWr()
                             .op(op)
                             .id(id)
                             .flags(kSignaled)
                             .sge(src.addr + result_off, 8, src.lkey)
                             .atomic(at, dst.rkey, ca, swap));
    };
    atomic(1, VIRTIO_RDMA_WR_ATOMIC_CMP_AND_SWP, word, 100, 555, 0); /* hit */
    atomic(2, VIRTIO_RDMA_WR_ATOMIC_CMP_AND_SWP, word, 100, 666, 8); /* miss */
    atomic(3, VIRTIO_RDMA_WR_ATOMIC_FETCH_AND_ADD, word + 8, 0x1000000000ull,
           0, 16);
    ASSERT_TRUE(wire.pump());
    expect_cqe(*a, cq_a, 1, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_COMP_SWAP);
    expect_cqe(*a, cq_a, 2, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_COMP_SWAP);
    const virtio_rdma_cq_req f = a->pop_cqe(cq_a);
    EXPECT_EQ(f.opcode, VIRTIO_RDMA_WC_FETCH_ADD);
    EXPECT_EQ(f.byte_len, 8u);
    uint64_t v[3];
    std::memcpy(v, a->mem(src.addr, 24), 24);
    EXPECT_EQ(v[0], 100u);
    EXPECT_EQ(v[1], 555u);
    EXPECT_EQ(v[2], 7u);
    uint64_t m[2];
    std::memcpy(m, b->mem(word, 16), 16);
    EXPECT_EQ(m[0], 555u);
    EXPECT_EQ(m[1], 0x1000000007ull);
}

TEST_F(DpRc, ScatterGatherBothSides)
{
    Conn c;
    c.mtu = VIRTIO_RDMA_MTU_256;
    up(c);
    a->fill(src.addr, 1000, 6);
    /* Gather 1000 bytes from three pieces, scatter into four. */
    SendWr wr = SendWr().op(VIRTIO_RDMA_WR_SEND).id(1).flags(kSignaled);
    wr.sge(src.addr, 300, src.lkey)
        .sge(src.addr + 300, 1, src.lkey)
        .sge(src.addr + 301, 699, src.lkey);
    b->post_recv(qb, 2,
                 {{dst.addr, 10, dst.lkey},
                  {dst.addr + 1000, 0, dst.lkey},
                  {dst.addr + 2000, 490, dst.lkey},
                  {dst.addr + 3000, 600, dst.lkey}});
    a->post_send(qa, wr);
    ASSERT_TRUE(wire.pump());
    EXPECT_EQ(b->pop_cqe(cq_b).byte_len, 1000u);
    b->fill(dst.addr + 100000, 1000, 6);
    const uint8_t *want = b->mem(dst.addr + 100000, 1000);
    EXPECT_EQ(0, std::memcmp(b->mem(dst.addr), want, 10));
    EXPECT_EQ(0, std::memcmp(b->mem(dst.addr + 2000), want + 10, 490));
    EXPECT_EQ(0, std::memcmp(b->mem(dst.addr + 3000), want + 500, 500));
}

TEST_F(DpRc, ManyOperationsCompleteInOrder)
{
    up();
    b->fill(dst.addr + 300000, 20000, 9);
    a->fill(src.addr, 100000, 8);
    for (int i = 0; i < 8; i++) {
        recv(100 + i, 20000, 100000 + 20000 * i);
    }
    std::vector<uint64_t> want;
    uint64_t id = 0;
    for (int i = 0; i < 4; i++) {
        want.push_back(id);
        a->post_send(qa, write(id++, 5000, 5000 * i));
        want.push_back(id);
        a->post_send(qa, read(id++, 5000, 300000 + 5000 * i));
        if (i == 0) {
            want.push_back(id);
        }
        a->post_send(qa, send(id++, 5000, 20000 + 5000 * i)
                             .flags(i ? 0 : kSignaled));
        want.push_back(id);
        a->post_send(qa, write(id++, 3000, 40000 + 3000 * i)
                             .op(VIRTIO_RDMA_WR_RDMA_WRITE_WITH_IMM)
                             .imm(i));
    }
    ASSERT_TRUE(wire.pump());
    std::vector<uint64_t> got;
    while (a->cq_size(cq_a)) {
        const virtio_rdma_cq_req c = a->pop_cqe(cq_a);
        EXPECT_EQ(c.status, VIRTIO_RDMA_WC_SUCCESS);
        got.push_back(c.wr_id);
    }
    EXPECT_EQ(got, want);
    EXPECT_EQ(b->cq_size(cq_b), 8u);
    for (int i = 0; i < 4; i++) {
        EXPECT_EQ(0, std::memcmp(a->mem(src.addr + 5000 * i),
                                 b->mem(dst.addr + 5000 * i), 5000));
        EXPECT_EQ(0, std::memcmp(a->mem(src.addr + 300000 + 5000 * i),
                                 b->mem(dst.addr + 300000 + 5000 * i), 5000));
    }
}

/* ---- segmentation ---- */

struct SegCase {
    uint32_t mtu_enum;
    uint32_t opcode;
};

class DpSeg : public DpRc, public ::testing::WithParamInterface<SegCase> {
};

TEST_P(DpSeg, PacketsCarryTheMtu)
{
    const SegCase &p = GetParam();
    Conn c;
    c.mtu = p.mtu_enum;
    up(c);
    const uint32_t mtu = 128u << p.mtu_enum;
    const uint32_t sizes[] = {1, mtu - 1, mtu, mtu + 1, 5 * mtu + 7};
    uint32_t seed = 20;
    for (uint32_t len : sizes) {
        wire.captured.clear();
        seed++;
        if (p.opcode == VIRTIO_RDMA_WR_RDMA_READ) {
            b->fill(dst.addr, len, seed);
            a->post_send(qa, read(seed, len));
        } else {
            a->fill(src.addr, len, seed);
            if (p.opcode == VIRTIO_RDMA_WR_SEND) {
                recv(seed, len);
                a->post_send(qa, send(seed, len));
            } else {
                a->post_send(qa, write(seed, len));
            }
        }
        ASSERT_TRUE(wire.pump());
        expect_cqe(*a, cq_a, seed, VIRTIO_RDMA_WC_SUCCESS,
                   p.opcode == VIRTIO_RDMA_WR_SEND ? VIRTIO_RDMA_WC_SEND
                   : p.opcode == VIRTIO_RDMA_WR_RDMA_READ
                       ? VIRTIO_RDMA_WC_RDMA_READ
                       : VIRTIO_RDMA_WC_RDMA_WRITE);
        if (p.opcode == VIRTIO_RDMA_WR_RDMA_READ) {
            EXPECT_TRUE(a->check(src.addr, len, seed));
        } else {
            EXPECT_TRUE(b->check(dst.addr, len, seed));
        }
        if (p.opcode == VIRTIO_RDMA_WR_SEND) {
            EXPECT_EQ(b->pop_cqe(cq_b).byte_len, len);
        }
        /* The data packets: requests, or for a READ the responses. */
        const int from = p.opcode == VIRTIO_RDMA_WR_RDMA_READ ? 1 : 0;
        std::vector<Pkt> data;
        for (const Pkt &k : sent_by(from)) {
            if (k.payload || from == 0) {
                data.push_back(k);
            }
        }
        const uint32_t n = (len + mtu - 1) / mtu;
        ASSERT_EQ(data.size(), n) << "len " << len;
        for (uint32_t i = 0; i < n; i++) {
            EXPECT_EQ(data[i].payload, i + 1 < n ? mtu : len - (n - 1) * mtu);
            EXPECT_EQ(data[i].psn, (data[0].psn + i) & 0xFFFFFF);
        }
        if (p.opcode == VIRTIO_RDMA_WR_RDMA_READ) {
            const std::vector<Pkt> req = sent_by(0);
            ASSERT_EQ(req.size(), 1u) << "one READ request";
            EXPECT_EQ(req[0].dma_len, len);
            EXPECT_EQ(data[0].opcode, n == 1 ? roce::kRcReadResponseOnly
                                             : roce::kRcReadResponseFirst);
            EXPECT_EQ(data[n - 1].psn, (req[0].psn + n - 1) & 0xFFFFFF);
        } else {
            EXPECT_TRUE(data[n - 1].ack_req);
        }
    }
}

INSTANTIATE_TEST_SUITE_P(
    MtuOp, DpSeg,
    ::testing::Values(SegCase{VIRTIO_RDMA_MTU_256, VIRTIO_RDMA_WR_SEND},
                      SegCase{VIRTIO_RDMA_MTU_256, VIRTIO_RDMA_WR_RDMA_WRITE},
                      SegCase{VIRTIO_RDMA_MTU_256, VIRTIO_RDMA_WR_RDMA_READ},
                      SegCase{VIRTIO_RDMA_MTU_1024, VIRTIO_RDMA_WR_SEND},
                      SegCase{VIRTIO_RDMA_MTU_1024, VIRTIO_RDMA_WR_RDMA_WRITE},
                      SegCase{VIRTIO_RDMA_MTU_1024, VIRTIO_RDMA_WR_RDMA_READ},
                      SegCase{VIRTIO_RDMA_MTU_4096, VIRTIO_RDMA_WR_SEND},
                      SegCase{VIRTIO_RDMA_MTU_4096, VIRTIO_RDMA_WR_RDMA_WRITE},
                      SegCase{VIRTIO_RDMA_MTU_4096, VIRTIO_RDMA_WR_RDMA_READ}),
    [](const auto &info) {
        return std::to_string(128u << info.param.mtu_enum) +
               (info.param.opcode == VIRTIO_RDMA_WR_SEND   ? "_send"
                : info.param.opcode == VIRTIO_RDMA_WR_RDMA_READ ? "_read"
                                                           : "_write");
    });

TEST_F(DpRc, PsnsWrapAround)
{
    up(); /* b starts at 0xFFFFF0 */
    b->fill(dst.addr, 40 * 1024, 30);
    a->post_recv(qa, 1, {{src.addr, 40 * 1024, src.lkey}});
    b->post_send(qb, SendWr()
                         .op(VIRTIO_RDMA_WR_SEND)
                         .id(2)
                         .flags(kSignaled)
                         .sge(dst.addr, 40 * 1024, dst.lkey));
    ASSERT_TRUE(wire.pump());
    expect_cqe(*b, cq_b, 2, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_SEND);
    EXPECT_EQ(a->pop_cqe(cq_a).byte_len, 40u * 1024);
    EXPECT_TRUE(a->check(src.addr, 40 * 1024, 30));
    const std::vector<Pkt> v = sent_by(1);
    EXPECT_EQ(b->stats().retransmits, 0u);
    EXPECT_EQ(v.front().psn, 0xFFFFF0u);
    EXPECT_EQ(v.back().psn, (0xFFFFF0u + 39) & 0xFFFFFF);
}

/* rxe: AckReq on the last packet and when more than 64 went without. */
TEST_F(DpRc, AckRequestCadence)
{
    Conn c;
    c.mtu = VIRTIO_RDMA_MTU_256;
    up(c);
    recv(1, 200 * 256);
    a->post_send(qa, send(2, 200 * 256));
    ASSERT_TRUE(wire.pump());
    const std::vector<Pkt> req = sent_by(0);
    ASSERT_EQ(req.size(), 200u);
    std::vector<size_t> asked;
    for (size_t i = 0; i < req.size(); i++) {
        if (req[i].ack_req) {
            asked.push_back(i + 1);
        }
    }
    EXPECT_EQ(asked, (std::vector<size_t>{66, 132, 198, 200}));
    /* The responder answers exactly those. */
    const std::vector<Pkt> acks = sent_by(1);
    ASSERT_EQ(acks.size(), 4u);
    for (const Pkt &k : acks) {
        EXPECT_EQ(k.opcode, roce::kRcAcknowledge);
        EXPECT_EQ(k.syndrome, 0x1F) << "rxe's ACK syndrome";
    }
    EXPECT_EQ(acks.back().psn, req.back().psn);
}

/* ---- loss and its repair ---- */

TEST_F(DpRc, LostMiddlePacketIsNakedAndResent)
{
    up();
    a->fill(src.addr, 10 * 1024, 40);
    recv(1, 10 * 1024);
    lose([](const Pkt &k) { return k.src == 0 && k.opcode == roce::kRcSendMiddle; });
    a->post_send(qa, send(2, 10 * 1024));
    ASSERT_TRUE(wire.pump());
    expect_cqe(*a, cq_a, 2, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_SEND);
    EXPECT_EQ(b->pop_cqe(cq_b).byte_len, 10u * 1024);
    EXPECT_TRUE(b->check(dst.addr, 10 * 1024, 40));
    EXPECT_EQ(b->stats().naks_sent, 1u) << "one NAK for the whole gap";
    EXPECT_EQ(a->stats().naks_received, 1u);
    EXPECT_EQ(a->stats().retry_timeouts, 0u) << "no timeout needed";
    EXPECT_GT(a->stats().retransmits, 0u);
    bool nak = false;
    for (const Pkt &k : sent_by(1)) {
        nak |= k.syndrome == roce::kAethNakPsnSeqErr;
    }
    EXPECT_TRUE(nak);
}

TEST_F(DpRc, LostLastPacketIsResentAfterTheTimeout)
{
    up();
    recv(1, 3000);
    lose([](const Pkt &k) { return k.src == 0 && k.opcode == roce::kRcSendLast; });
    const uint64_t t0 = wire.now;
    a->post_send(qa, send(2, 3000));
    ASSERT_TRUE(wire.pump_until([&] { return a->cq_size(cq_a) == 1; }));
    expect_cqe(*a, cq_a, 2, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_SEND);
    EXPECT_EQ(b->cq_size(cq_b), 1u);
    EXPECT_EQ(a->stats().retry_timeouts, 1u);
    /* IBA C9-140: 4.096 us * 2^14. */
    EXPECT_EQ(wire.now - t0, 4096ull << 14);
    ASSERT_TRUE(wire.pump());
}

TEST_F(DpRc, LostAckMeansADuplicateThatIsAckedAgain)
{
    up();
    recv(1, 3000);
    lose([](const Pkt &k) { return k.src == 1 && k.opcode == roce::kRcAcknowledge; });
    a->post_send(qa, send(2, 3000));
    ASSERT_TRUE(wire.pump());
    expect_cqe(*a, cq_a, 2, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_SEND);
    EXPECT_EQ(b->cq_size(cq_b), 1u) << "delivered once";
    EXPECT_GE(b->stats().duplicates, 1u);
}

TEST_F(DpRc, LostReadResponseIsReplayedFromTheGap)
{
    Conn c;
    c.mtu = VIRTIO_RDMA_MTU_256;
    up(c);
    b->fill(dst.addr, 256 * 20, 41);
    int seen = 0;
    wire.tap = [&](Wire::Frame &f) {
        const Pkt k = parse(f);
        return !(k.src == 1 && is_read_resp(k.opcode) && ++seen == 5);
    };
    a->post_send(qa, read(1, 256 * 20));
    ASSERT_TRUE(wire.pump());
    expect_cqe(*a, cq_a, 1, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_RDMA_READ);
    EXPECT_TRUE(a->check(src.addr, 256 * 20, 41));
    /* The second READ request asks for the rest only. */
    const std::vector<Pkt> req = sent_by(0);
    ASSERT_GE(req.size(), 2u);
    EXPECT_EQ(req[1].opcode, roce::kRcReadRequest);
    EXPECT_EQ(req[1].psn, (req[0].psn + 4) & 0xFFFFFF);
    EXPECT_EQ(req[1].dma_len, 256u * 16);
    EXPECT_GE(b->stats().duplicates, 1u);
}

TEST_F(DpRc, LostReadRequestIsResent)
{
    up();
    b->fill(dst.addr, 5000, 42);
    lose([](const Pkt &k) { return k.src == 0 && k.opcode == roce::kRcReadRequest; });
    a->post_send(qa, read(1, 5000));
    ASSERT_TRUE(wire.pump());
    expect_cqe(*a, cq_a, 1, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_RDMA_READ);
    EXPECT_TRUE(a->check(src.addr, 5000, 42));
    EXPECT_EQ(a->stats().retry_timeouts, 1u);
}

/* The atomic runs once; its replay returns the saved original value. */
TEST_F(DpRc, LostAtomicAckIsAnsweredFromTheSavedValue)
{
    up();
    const uint64_t word = dst.addr + 64;
    b->guest.poke64(word, 10);
    lose([](const Pkt &k) {
        return k.src == 1 && k.opcode == roce::kRcAtomicAcknowledge;
    });
    a->post_send(qa, SendWr()
                         .op(VIRTIO_RDMA_WR_ATOMIC_FETCH_AND_ADD)
                         .id(1)
                         .flags(kSignaled)
                         .sge(src.addr, 8, src.lkey)
                         .atomic(word, dst.rkey, 5, 0));
    ASSERT_TRUE(wire.pump());
    expect_cqe(*a, cq_a, 1, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_FETCH_ADD);
    uint64_t orig, now_v;
    std::memcpy(&orig, a->mem(src.addr), 8);
    std::memcpy(&now_v, b->mem(word), 8);
    EXPECT_EQ(orig, 10u);
    EXPECT_EQ(now_v, 15u) << "added once, not twice";
    EXPECT_EQ(b->stats().duplicates, 1u);
}

TEST_F(DpRc, DuplicatedRequestsAreExecutedOnce)
{
    up();
    for (int i = 0; i < 8; i++) {
        recv(i, 4096, 4096 * i);
    }
    wire.tap = [&](Wire::Frame &f) {
        if (f.src == 0) {
            wire.q.push_back(f); /* every request twice */
        }
        return true;
    };
    a->fill(src.addr, 8 * 4096, 43);
    for (int i = 0; i < 8; i++) {
        a->post_send(qa, send(i, 3000 + i, 4096 * i));
    }
    const uint64_t word = dst.addr + 100000;
    b->guest.poke64(word, 1);
    a->post_send(qa, SendWr()
                         .op(VIRTIO_RDMA_WR_ATOMIC_FETCH_AND_ADD)
                         .id(9)
                         .flags(kSignaled)
                         .sge(src.addr + 200000, 8, src.lkey)
                         .atomic(word, dst.rkey, 1, 0));
    ASSERT_TRUE(wire.pump());
    EXPECT_EQ(a->cq_size(cq_a), 9u);
    ASSERT_EQ(b->cq_size(cq_b), 8u);
    for (int i = 0; i < 8; i++) {
        const virtio_rdma_cq_req r = b->pop_cqe(cq_b);
        EXPECT_EQ(r.wr_id, uint64_t(i));
        EXPECT_EQ(r.byte_len, 3000u + i);
    }
    uint64_t v;
    std::memcpy(&v, b->mem(word), 8);
    EXPECT_EQ(v, 2u);
    EXPECT_GE(b->stats().duplicates, 9u);
}

/*
 * A late duplicate of a finished READ replays it from its responder
 * resource; a new READ that needs that resource takes it over instead of
 * being refused as "too many" (regression: the replay used to block it).
 */
TEST_F(DpRc, DuplicateReadReplayGivesWayToANewRead)
{
    Conn c;
    c.mtu = VIRTIO_RDMA_MTU_256;
    c.max_rd_atomic = 1;
    c.max_dest_rd_atomic = 1;
    up(c);
    b->fill(dst.addr, 64 * 256, 70);
    a->post_send(qa, read(1, 64 * 256));
    ASSERT_TRUE(wire.pump());
    expect_cqe(*a, cq_a, 1, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_RDMA_READ);
    Bytes dup;
    for (const Wire::Frame &f : wire.captured) {
        if (parse(f).opcode == roce::kRcReadRequest) {
            dup = f.data;
        }
    }
    ASSERT_FALSE(dup.empty());
    EXPECT_TRUE(b->receive(dup)); /* the replay starts, most of it queued */
    b->fill(dst.addr + 100000, 1000, 71);
    a->post_send(qa, read(2, 1000, 100000));
    a->kicked = false;
    vrdma_core_run(a->core); /* the new READ request is on the wire */
    ASSERT_TRUE(wire.pump());
    expect_cqe(*a, cq_a, 2, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_RDMA_READ);
    EXPECT_TRUE(a->check(src.addr + 100000, 1000, 71));
    EXPECT_EQ(b->qp_state(qb), VIRTIO_RDMA_QPS_RTS);
    EXPECT_EQ(b->stats().naks_sent, 0u);
}

/*
 * Duplicate READ requests are answered in the order they came.  The
 * requester went back to READ 1 while the replay of READ 2 was going out,
 * and its go-back-N asks for READ 2 again: READ 1 is answered first.
 * (Regression: READ 2's reply restarted in place ahead of READ 1, so each
 * retry restarted it again and READ 1 ran out of retries.)
 */
TEST_F(DpRc, DuplicateReadsAreAnsweredInTheOrderTheyCame)
{
    Conn c;
    c.mtu = VIRTIO_RDMA_MTU_256;
    up(c);
    constexpr uint32_t kLen = 32 * 256;
    b->fill(dst.addr, 2 * kLen, 72);
    a->post_send(qa, read(1, kLen));
    a->post_send(qa, read(2, kLen, kLen));
    ASSERT_TRUE(wire.pump());
    expect_cqe(*a, cq_a, 1, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_RDMA_READ);
    expect_cqe(*a, cq_a, 2, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_RDMA_READ);
    std::vector<Bytes> req;
    for (const Wire::Frame &f : wire.captured) {
        if (parse(f).opcode == roce::kRcReadRequest) {
            req.push_back(f.data);
        }
    }
    ASSERT_EQ(req.size(), 2u);
    const uint32_t last1 = (parse(Wire::Frame{0, 1, req[0]}).psn + 31) & 0xFFFFFF;
    const uint32_t last2 = (parse(Wire::Frame{0, 1, req[1]}).psn + 31) & 0xFFFFFF;
    const size_t before = wire.captured.size();
    EXPECT_TRUE(b->receive(req[1])); /* its replay starts, most of it queued */
    EXPECT_TRUE(b->receive(req[0]));
    EXPECT_TRUE(b->receive(req[1]));
    ASSERT_TRUE(wire.pump());
    size_t end1 = 0, end2 = 0;
    for (size_t i = before; i < wire.captured.size(); i++) {
        const Pkt k = parse(wire.captured[i]);
        if (k.src == 1 && is_read_resp(k.opcode)) {
            if (k.psn == last1) {
                end1 = i;
            } else if (k.psn == last2) {
                end2 = i;
            }
        }
    }
    ASSERT_NE(end1, 0u) << "READ 1 was not answered again";
    ASSERT_NE(end2, 0u) << "READ 2 was not answered again";
    EXPECT_LT(end1, end2) << "READ 2's replay stayed ahead of READ 1's";
    EXPECT_EQ(a->cq_size(cq_a), 0u) << "replays complete nothing";
}

/* ---- RNR ---- */

TEST_F(DpRc, RnrUntilTheReceiveIsPosted)
{
    Conn c;
    c.min_rnr_timer = 14; /* 1.28 ms */
    up(c);
    a->fill(src.addr, 100, 44);
    a->post_send(qa, send(1, 100));
    ASSERT_TRUE(wire.pump_until([&] { return b->stats().rnr_naks_sent == 3; }));
    EXPECT_EQ(a->cq_size(cq_a), 0u);
    EXPECT_EQ(a->qp_state(qa), VIRTIO_RDMA_QPS_RTS);
    recv(2, 100);
    ASSERT_TRUE(wire.pump());
    expect_cqe(*a, cq_a, 1, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_SEND);
    EXPECT_EQ(b->pop_cqe(cq_b).wr_id, 2u);
    EXPECT_TRUE(b->check(dst.addr, 100, 44));
    EXPECT_EQ(a->stats().rnr_naks_received, 3u);
    for (const Pkt &k : sent_by(1)) {
        if ((k.syndrome & 0xE0) == 0x20) {
            EXPECT_EQ(k.syndrome, 0x20 | 14);
        }
    }
}

TEST_F(DpRc, RnrWaitsTheTimerFromTheTable)
{
    Conn c;
    c.min_rnr_timer = 18; /* 5.12 ms */
    up(c);
    a->post_send(qa, send(1, 10));
    ASSERT_TRUE(wire.pump_until([&] { return b->stats().rnr_naks_sent == 1; }));
    const uint64_t t0 = wire.now;
    const uint64_t frames = wire.frames;
    ASSERT_TRUE(wire.pump_until([&] { return wire.frames > frames; }));
    EXPECT_EQ(wire.now - t0, 5120000u);
}

TEST_F(DpRc, RnrRetryExhausted)
{
    Conn c;
    c.rnr_retry = 2;
    up(c);
    a->post_send(qa, send(1, 10));
    a->post_send(qa, send(2, 10).flags(0));
    ASSERT_TRUE(wire.pump());
    expect_cqe(*a, cq_a, 1, VIRTIO_RDMA_WC_RNR_RETRY_EXC_ERR,
               VIRTIO_RDMA_WC_SEND);
    expect_cqe(*a, cq_a, 2, VIRTIO_RDMA_WC_WR_FLUSH_ERR, VIRTIO_RDMA_WC_SEND);
    EXPECT_EQ(b->stats().rnr_naks_sent, 3u) << "the first try and 2 retries";
    EXPECT_EQ(a->qp_state(qa), VIRTIO_RDMA_QPS_ERR);
}

TEST_F(DpRc, RnrRetrySevenIsForever)
{
    up(); /* rnr_retry 7, 10 us */
    a->post_send(qa, send(1, 10));
    ASSERT_TRUE(wire.pump_until([&] { return b->stats().rnr_naks_sent == 50; }));
    EXPECT_EQ(a->qp_state(qa), VIRTIO_RDMA_QPS_RTS);
    recv(2, 10);
    ASSERT_TRUE(wire.pump());
    expect_cqe(*a, cq_a, 1, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_SEND);
}

/*
 * The packets after an RNR-NAKed FIRST are out of sequence for the
 * responder, which NAKs them: part of the same RNR episode, not a
 * transport error, so retry_cnt is not used up.
 */
TEST_F(DpRc, RnrOfAMultiPacketSendDoesNotUseUpRetries)
{
    Conn c;
    c.retry_cnt = 0;
    up(c);
    a->fill(src.addr, 20000, 45);
    a->post_send(qa, send(1, 20000));
    ASSERT_TRUE(wire.pump_until([&] { return b->stats().rnr_naks_sent == 20; }));
    EXPECT_EQ(a->qp_state(qa), VIRTIO_RDMA_QPS_RTS);
    EXPECT_EQ(a->cq_size(cq_a), 0u);
    recv(2, 20000);
    ASSERT_TRUE(wire.pump());
    expect_cqe(*a, cq_a, 1, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_SEND);
    EXPECT_TRUE(b->check(dst.addr, 20000, 45));
}

/* ---- retry exhaustion and the timer ---- */

TEST_F(DpRc, RetryExhaustedAfterRetryCntTimeouts)
{
    Conn c;
    c.retry_cnt = 3;
    c.timeout = 10; /* 4.19 ms */
    up(c);
    wire.tap = [](Wire::Frame &f) { return f.src != 0; };
    const uint64_t t0 = wire.now;
    a->post_send(qa, send(1, 10));
    a->post_send(qa, send(2, 10));
    ASSERT_TRUE(wire.pump());
    expect_cqe(*a, cq_a, 1, VIRTIO_RDMA_WC_RETRY_EXC_ERR, VIRTIO_RDMA_WC_SEND);
    expect_cqe(*a, cq_a, 2, VIRTIO_RDMA_WC_WR_FLUSH_ERR, VIRTIO_RDMA_WC_SEND);
    EXPECT_EQ(a->stats().retry_timeouts, 4u);
    /* Both packets, sent 1 + 3 times. */
    EXPECT_EQ(sent_by(0).size(), 8u);
    EXPECT_EQ(wire.now - t0, 4 * (4096ull << 10));
    EXPECT_EQ(a->deadline, UINT64_MAX) << "no timer left";
}

TEST_F(DpRc, TimeoutZeroWaitsForever)
{
    Conn c;
    c.timeout = 0;
    up(c);
    wire.tap = [](Wire::Frame &f) { return f.src != 0; };
    a->post_send(qa, send(1, 10));
    ASSERT_TRUE(wire.pump());
    EXPECT_EQ(a->deadline, UINT64_MAX);
    EXPECT_EQ(a->cq_size(cq_a), 0u);
    EXPECT_EQ(sent_by(0).size(), 1u);
}

/* ---- NAKs from the responder ---- */

struct NakCase {
    const char *name;
    uint32_t a_status;    /* what the requester completes with */
    uint8_t syndrome;     /* the NAK on the wire */
    int32_t b_recv_status; /* the responder's receive completion, -1: none */
};

class DpNak : public DpRc, public ::testing::WithParamInterface<NakCase> {
};

TEST_P(DpNak, ErrorCompletionsAndFlushOnBothSides)
{
    const std::string name = GetParam().name;
    Conn c;
    if (name == "no_rd_atomic_resources") {
        c.max_dest_rd_atomic = 0;
    }
    up(c);
    const uint32_t other_pd = b->create_pd();
    const MrInfo foreign = buffer(*b, other_pd, 4096);
    const MrInfo ro = buffer(*b, pd_b, 4096,
                             VIRTIO_RDMA_ACCESS_LOCAL_WRITE |
                                 VIRTIO_RDMA_ACCESS_REMOTE_READ);
    const MrInfo wo = buffer(*b, pd_b, 4096,
                             VIRTIO_RDMA_ACCESS_LOCAL_WRITE |
                                 VIRTIO_RDMA_ACCESS_REMOTE_WRITE);
    auto qp_access = [&](uint32_t acc) {
        virtio_rdma_qp_attr at{};
        at.qp_state = VIRTIO_RDMA_QPS_RTS;
        at.qp_access_flags = acc;
        ASSERT_EQ(b->modify(qb, VIRTIO_RDMA_QP_STATE |
                                    VIRTIO_RDMA_QP_ACCESS_FLAGS,
                            at),
                  VIRTIO_RDMA_OK);
    };
    constexpr uint32_t lw = VIRTIO_RDMA_ACCESS_LOCAL_WRITE;
    SendWr wr;
    auto atomic_at = [&](uint64_t at, uint32_t rkey) {
        return SendWr()
            .op(VIRTIO_RDMA_WR_ATOMIC_FETCH_AND_ADD)
            .id(1)
            .flags(kSignaled)
            .sge(src.addr, 8, src.lkey)
            .atomic(at, rkey, 1, 0);
    };
    if (name == "write_qp_no_remote_write") {
        qp_access(lw | VIRTIO_RDMA_ACCESS_REMOTE_READ);
        wr = write(1, 100);
    } else if (name == "read_qp_no_remote_read") {
        qp_access(lw | VIRTIO_RDMA_ACCESS_REMOTE_WRITE);
        wr = read(1, 100);
    } else if (name == "atomic_qp_no_remote_atomic") {
        qp_access(lw | VIRTIO_RDMA_ACCESS_REMOTE_WRITE);
        wr = atomic_at(dst.addr, dst.rkey);
    } else if (name == "atomic_misaligned") {
        wr = atomic_at(dst.addr + 4, dst.rkey);
    } else if (name == "no_rd_atomic_resources") {
        wr = read(1, 100);
    } else if (name == "bad_rkey") {
        wr = write(1, 100).rdma(dst.addr, dst.rkey ^ 0x10);
    } else if (name == "rkey_of_another_pd") {
        wr = write(1, 100).rdma(foreign.addr, foreign.rkey);
    } else if (name == "write_past_the_end") {
        wr = write(1, 100).rdma(dst.addr + kBuf - 50, dst.rkey);
    } else if (name == "write_before_the_start") {
        wr = write(1, 100).rdma(dst.addr - 4096, dst.rkey);
    } else if (name == "write_no_remote_write_bit") {
        wr = write(1, 100).rdma(ro.addr, ro.rkey);
    } else if (name == "read_no_remote_read_bit") {
        wr = read(1, 100).rdma(wo.addr, wo.rkey);
    } else if (name == "atomic_no_remote_atomic_bit") {
        wr = atomic_at(wo.addr, wo.rkey);
    } else if (name == "receive_too_small") {
        recv(10, 1000);
        wr = send(1, 2000);
    } else if (name == "receive_bad_lkey") {
        b->post_recv(qb, 10, {{dst.addr, 1000, dst.lkey ^ 0x10}});
        wr = send(1, 100);
    }
    a->post_send(qa, wr);
    a->post_send(qa, send(2, 10));
    a->post_send(qa, send(3, 10).flags(0));
    b->post_recv(qb, 11, {{dst.addr, 100, dst.lkey}});
    ASSERT_TRUE(wire.pump());

    const virtio_rdma_cq_req e = a->pop_cqe(cq_a);
    EXPECT_EQ(e.wr_id, 1u);
    EXPECT_EQ(e.status, GetParam().a_status);
    expect_cqe(*a, cq_a, 2, VIRTIO_RDMA_WC_WR_FLUSH_ERR, VIRTIO_RDMA_WC_SEND);
    expect_cqe(*a, cq_a, 3, VIRTIO_RDMA_WC_WR_FLUSH_ERR, VIRTIO_RDMA_WC_SEND);
    EXPECT_EQ(a->qp_state(qa), VIRTIO_RDMA_QPS_ERR);
    EXPECT_EQ(b->qp_state(qb), VIRTIO_RDMA_QPS_ERR);
    EXPECT_EQ(b->stats().naks_sent, 1u);
    EXPECT_EQ(a->stats().naks_received, 1u);
    bool found = false;
    for (const Pkt &k : sent_by(1)) {
        found |= k.opcode == roce::kRcAcknowledge &&
                 k.syndrome == GetParam().syndrome;
    }
    EXPECT_TRUE(found) << "NAK " << std::hex << int(GetParam().syndrome);
    /* The responder: the receive WQE in progress, then flushes. */
    if (GetParam().b_recv_status >= 0) {
        const virtio_rdma_cq_req r = b->pop_cqe(cq_b);
        EXPECT_EQ(r.wr_id, 10u);
        EXPECT_EQ(r.status, uint32_t(GetParam().b_recv_status));
    }
    const virtio_rdma_cq_req f = b->pop_cqe(cq_b);
    EXPECT_EQ(f.wr_id, 11u);
    EXPECT_EQ(f.status, VIRTIO_RDMA_WC_WR_FLUSH_ERR);
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, DpNak,
    ::testing::Values(
        NakCase{"write_qp_no_remote_write", VIRTIO_RDMA_WC_REM_INV_REQ_ERR,
                0x61, -1},
        NakCase{"read_qp_no_remote_read", VIRTIO_RDMA_WC_REM_INV_REQ_ERR, 0x61,
                -1},
        NakCase{"atomic_qp_no_remote_atomic", VIRTIO_RDMA_WC_REM_INV_REQ_ERR,
                0x61, -1},
        NakCase{"atomic_misaligned", VIRTIO_RDMA_WC_REM_INV_REQ_ERR, 0x61, -1},
        NakCase{"no_rd_atomic_resources", VIRTIO_RDMA_WC_REM_INV_REQ_ERR, 0x61,
                -1},
        NakCase{"bad_rkey", VIRTIO_RDMA_WC_REM_ACCESS_ERR, 0x62, -1},
        NakCase{"rkey_of_another_pd", VIRTIO_RDMA_WC_REM_ACCESS_ERR, 0x62, -1},
        NakCase{"write_past_the_end", VIRTIO_RDMA_WC_REM_ACCESS_ERR, 0x62, -1},
        NakCase{"write_before_the_start", VIRTIO_RDMA_WC_REM_ACCESS_ERR, 0x62,
                -1},
        NakCase{"write_no_remote_write_bit", VIRTIO_RDMA_WC_REM_ACCESS_ERR,
                0x62, -1},
        NakCase{"read_no_remote_read_bit", VIRTIO_RDMA_WC_REM_ACCESS_ERR, 0x62,
                -1},
        NakCase{"atomic_no_remote_atomic_bit", VIRTIO_RDMA_WC_REM_ACCESS_ERR,
                0x62, -1},
        NakCase{"receive_too_small", VIRTIO_RDMA_WC_REM_INV_REQ_ERR, 0x61,
                VIRTIO_RDMA_WC_LOC_LEN_ERR},
        NakCase{"receive_bad_lkey", VIRTIO_RDMA_WC_REM_OP_ERR, 0x63,
                VIRTIO_RDMA_WC_LOC_PROT_ERR}),
    [](const auto &info) { return info.param.name; });

TEST_F(DpRc, ReceiveIntoMrWithoutLocalWriteIsRemoteOperationalError)
{
    up();
    const MrInfo rdonly = buffer(*b, pd_b, 4096, VIRTIO_RDMA_ACCESS_REMOTE_READ);
    b->post_recv(qb, 10, {{rdonly.addr, 1000, rdonly.lkey}});
    a->post_send(qa, send(1, 100));
    ASSERT_TRUE(wire.pump());
    EXPECT_EQ(a->pop_cqe(cq_a).status, VIRTIO_RDMA_WC_REM_OP_ERR);
    EXPECT_EQ(b->pop_cqe(cq_b).status, VIRTIO_RDMA_WC_LOC_PROT_ERR);
}

/* ---- ordering rules ---- */

TEST_F(DpRc, MaxRdAtomicBoundsOutstandingReads)
{
    Conn c;
    c.max_rd_atomic = 1;
    up(c);
    for (int i = 0; i < 4; i++) {
        a->post_send(qa, read(i, 3000, 4096 * i));
    }
    ASSERT_TRUE(wire.pump());
    EXPECT_EQ(a->cq_size(cq_a), 4u);
    int outstanding = 0, most = 0;
    for (const Wire::Frame &f : wire.captured) {
        const Pkt k = parse(f);
        if (k.src == 0 && k.opcode == roce::kRcReadRequest) {
            most = std::max(most, ++outstanding);
        }
        if (k.src == 1 && (k.opcode == roce::kRcReadResponseLast ||
                           k.opcode == roce::kRcReadResponseOnly)) {
            outstanding--;
        }
    }
    EXPECT_EQ(most, 1);
}

TEST_F(DpRc, FenceWaitsForEarlierReads)
{
    up();
    recv(1, 100);
    a->post_send(qa, read(2, 20000));
    a->post_send(qa, send(3, 100).flags(kSignaled | VIRTIO_RDMA_SEND_FENCE));
    ASSERT_TRUE(wire.pump());
    expect_cqe(*a, cq_a, 2, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_RDMA_READ);
    expect_cqe(*a, cq_a, 3, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_SEND);
    /* The SEND left only after the last read response arrived. */
    bool read_done = false;
    for (const Wire::Frame &f : wire.captured) {
        const Pkt k = parse(f);
        if (k.src == 1 && k.opcode == roce::kRcReadResponseLast) {
            read_done = true;
        }
        if (k.src == 0 && k.opcode == roce::kRcSendOnly) {
            EXPECT_TRUE(read_done);
        }
    }
}

TEST_F(DpRc, UnfencedSendOvertakesTheReadReply)
{
    up();
    recv(1, 100);
    a->post_send(qa, read(2, 20000));
    a->post_send(qa, send(3, 100));
    ASSERT_TRUE(wire.pump());
    expect_cqe(*a, cq_a, 2, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_RDMA_READ);
    expect_cqe(*a, cq_a, 3, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_SEND);
    const std::vector<Pkt> req = sent_by(0);
    ASSERT_EQ(req.size(), 2u);
    EXPECT_EQ(req[1].opcode, roce::kRcSendOnly);
    /* The SEND's ACK comes after every read response (PSN order). */
    const std::vector<Pkt> rsp = sent_by(1);
    EXPECT_EQ(rsp.back().opcode, roce::kRcAcknowledge);
    EXPECT_EQ(rsp.back().psn, req[1].psn);
}

TEST_F(DpRc, WindowOf128Psns)
{
    Conn c;
    c.mtu = VIRTIO_RDMA_MTU_256;
    c.retry_cnt = 0;
    up(c);
    wire.tap = [](Wire::Frame &f) { return f.src != 1; }; /* no ACK arrives */
    recv(1, 300 * 256);
    a->post_send(qa, send(2, 300 * 256));
    ASSERT_TRUE(wire.pump());
    EXPECT_EQ(sent_by(0).size(), 128u);
    expect_cqe(*a, cq_a, 2, VIRTIO_RDMA_WC_RETRY_EXC_ERR, VIRTIO_RDMA_WC_SEND);
}

/*
 * At MTU 4096 the window is 64 KiB (16 packets), not 128 PSNs: a QEMU dgram
 * socket's receive buffer holds about 24 such frames.  The packet that
 * fills the window asks for the ACK that reopens it.
 */
TEST_F(DpRc, WindowOf64KiBAtMtu4096)
{
    Conn c;
    c.mtu = VIRTIO_RDMA_MTU_4096;
    c.retry_cnt = 0;
    up(c);
    wire.tap = [](Wire::Frame &f) { return f.src != 1; }; /* no ACK arrives */
    a->post_send(qa, write(2, 256 * 1024));
    ASSERT_TRUE(wire.pump());
    const std::vector<Pkt> req = sent_by(0);
    ASSERT_EQ(req.size(), 16u);
    EXPECT_TRUE(req.back().ack_req) << "the window is full: ask for an ACK";
    expect_cqe(*a, cq_a, 2, VIRTIO_RDMA_WC_RETRY_EXC_ERR,
               VIRTIO_RDMA_WC_RDMA_WRITE);
}

/*
 * Never more than 64 KiB unacknowledged on the wire, and the window keeps
 * moving without a timeout: AckReq every half window.
 */
class DpRcWindow : public DpRc, public ::testing::WithParamInterface<uint32_t> {
};

TEST_P(DpRcWindow, BytesInFlightStayWithinTheWindow)
{
    const uint32_t mtu = GetParam();
    Conn c;
    c.mtu = mtu;
    up(c);
    const uint64_t bytes = 128u << mtu; /* the MTU in bytes */
    const uint64_t window = std::min<uint64_t>(64 * 1024, 128 * bytes);
    a->fill(src.addr, kBuf, 44);
    a->post_send(qa, write(1, kBuf / 2));
    a->post_send(qa, write(2, kBuf / 2, kBuf / 2));
    ASSERT_TRUE(wire.pump());
    expect_cqe(*a, cq_a, 1, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_RDMA_WRITE);
    expect_cqe(*a, cq_a, 2, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_RDMA_WRITE);
    EXPECT_TRUE(b->check(dst.addr, kBuf, 44));
    EXPECT_EQ(a->stats().retry_timeouts, 0u);
    EXPECT_EQ(a->stats().retransmits, 0u);
    /* In the order sent: an ACK was sent before A could know of it. */
    uint32_t acked = conn.psn_a;
    int32_t most = 0;
    size_t acks = 0;
    for (const Wire::Frame &f : wire.captured) {
        const Pkt k = parse(f);
        ASSERT_TRUE(k.ok);
        if (k.src == 1) {
            acked = (k.psn + 1) & 0xFFFFFF;
            acks++;
            continue;
        }
        const int32_t ahead =
            static_cast<int32_t>(((k.psn - acked) & 0xFFFFFF) << 8) >> 8;
        most = std::max(most, ahead + 1);
    }
    EXPECT_LE(uint64_t(most) * bytes, window) << "packets " << most;
    EXPECT_EQ(uint64_t(most) * bytes, window) << "the window is used";
    EXPECT_GE(acks, kBuf / bytes / std::min<uint64_t>(64, window / bytes / 2 + 2))
        << "an ACK every half window";
}

INSTANTIATE_TEST_SUITE_P(Mtu, DpRcWindow,
                         ::testing::Values(VIRTIO_RDMA_MTU_256,
                                           VIRTIO_RDMA_MTU_1024,
                                           VIRTIO_RDMA_MTU_2048,
                                           VIRTIO_RDMA_MTU_4096),
                         [](const auto &info) {
                             return std::to_string(128u << info.param);
                         });

/*
 * After a loss the requester resends a small burst (4 packets) and grows
 * the window again as ACKs come, instead of resending the whole window.
 */
TEST_F(DpRc, SlowStartAfterANak)
{
    Conn c;
    c.mtu = VIRTIO_RDMA_MTU_4096;
    up(c);
    a->fill(src.addr, kBuf, 45);
    int seen = 0;
    wire.tap = [&](Wire::Frame &f) {
        const Pkt k = parse(f);
        return !(k.src == 0 && ++seen == 20); /* once */
    };
    a->post_send(qa, write(1, kBuf));
    ASSERT_TRUE(wire.pump());
    expect_cqe(*a, cq_a, 1, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_RDMA_WRITE);
    EXPECT_TRUE(b->check(dst.addr, kBuf, 45));
    EXPECT_EQ(a->stats().retry_timeouts, 0u) << "the NAK repairs it";
    EXPECT_EQ(b->stats().naks_sent, 1u);
    /* Requests resent between the NAK and B's next frame: one burst. */
    std::vector<size_t> bursts;
    bool after_nak = false;
    uint32_t hi = conn.psn_a;
    bool first = true;
    for (const Wire::Frame &f : wire.captured) {
        const Pkt k = parse(f);
        if (k.src == 1) {
            if (k.syndrome == roce::kAethNakPsnSeqErr) {
                after_nak = true;
                bursts.push_back(0);
            } else if (after_nak && bursts.back()) {
                bursts.push_back(0); /* the next burst, after an ACK */
            }
            continue;
        }
        const bool resent =
            !first && (static_cast<int32_t>(((k.psn - hi) & 0xFFFFFF) << 8) >>
                       8) <= 0;
        if (first || !resent) {
            hi = k.psn;
            first = false;
        }
        if (after_nak && resent) {
            bursts.back()++;
        }
    }
    ASSERT_GE(bursts.size(), 2u);
    EXPECT_LE(bursts[0], 4u) << "kCwndMin packets first";
    EXPECT_GT(bursts[0], 0u);
    EXPECT_LE(a->stats().retransmits, 16u)
        << "at most the lost packet and the rest of its window";
}

TEST_F(DpRc, SqdStopsAtAMessageBoundary)
{
    up();
    for (int i = 0; i < 3; i++) {
        recv(i, 100);
    }
    a->post_send(qa, send(10, 100));
    ASSERT_EQ(a->to_state(qa, VIRTIO_RDMA_QPS_SQD), VIRTIO_RDMA_OK);
    a->post_send(qa, send(11, 100));
    ASSERT_TRUE(wire.pump());
    EXPECT_EQ(wire.frames, 0u);
    EXPECT_EQ(a->cq_size(cq_a), 0u);
    ASSERT_EQ(a->to_state(qa, VIRTIO_RDMA_QPS_RTS), VIRTIO_RDMA_OK);
    ASSERT_TRUE(wire.pump());
    expect_cqe(*a, cq_a, 10, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_SEND);
    expect_cqe(*a, cq_a, 11, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_SEND);
}

/* ---- more ---- */

TEST_F(DpRc, Ipv6Connection)
{
    a->add_gid(1, gid_v6(1));
    b->add_gid(1, gid_v6(2));
    Conn c;
    c.sgid_index = 1;
    up(c);
    a->fill(src.addr, 9000, 80);
    recv(1, 9000);
    a->post_send(qa, send(2, 9000));
    a->post_send(qa, read(3, 5000, 100000));
    b->fill(dst.addr + 100000, 5000, 81);
    ASSERT_TRUE(wire.pump());
    expect_cqe(*a, cq_a, 2, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_SEND);
    expect_cqe(*a, cq_a, 3, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_RDMA_READ);
    EXPECT_TRUE(b->check(dst.addr, 9000, 80));
    EXPECT_TRUE(a->check(src.addr + 100000, 5000, 81));
    roce::Packet p;
    ASSERT_EQ(roce::parse_frame(wire.captured[0].data, &p),
              roce::ParseError::kNone);
    EXPECT_TRUE(p.ipv6);
    EXPECT_EQ(p.sgid, gid_v6(1));
    EXPECT_EQ(p.dgid, gid_v6(2));
    EXPECT_EQ(p.flow_label, 0u);
}

/*
 * A send completion that finds its CQ ring full (one entry, nobody
 * consuming it) is lost and counted, the QP goes to ERR, the CQ gets a
 * CQ_ERR event.
 */
TEST_F(DpRc, SendCqOverrunPutsTheQpInErr)
{
    up();
    const uint32_t full = a->create_cq(1);
    const uint32_t q = a->create_qp(pd_a, VIRTIO_RDMA_QPT_RC, full, full);
    const uint32_t peer = b->create_qp(pd_b, VIRTIO_RDMA_QPT_RC, cq_b, cq_b);
    connect_pair(*a, q, *b, peer, VIRTIO_RDMA_QPT_RC, conn, true);
    connect_pair(*b, peer, *a, q, VIRTIO_RDMA_QPT_RC, conn, false);
    b->post_recv(peer, 1, {{dst.addr, 100, dst.lkey}});
    b->post_recv(peer, 2, {{dst.addr, 100, dst.lkey}});
    a->hold_cq(full);
    a->post_send(q, send(3, 10));
    a->post_send(q, send(4, 10));
    ASSERT_TRUE(wire.pump());
    EXPECT_EQ(a->stats().cq_overruns, 1u);
    EXPECT_EQ(a->qp_state(q), VIRTIO_RDMA_QPS_ERR);
    ASSERT_FALSE(a->async_events.empty());
    EXPECT_EQ(a->async_events[0].type, VIRTIO_RDMA_EVENT_CQ_ERR);
    EXPECT_EQ(a->async_events[0].handle, full);
    /* The ring holds the first completion; the second was lost. */
    a->hold_cq(full, false);
    expect_cqe(*a, full, 3, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_SEND);
    EXPECT_EQ(a->cq_size(full), 0u);
}

TEST_F(DpRc, SendWithInvalidateOfAWrongKey)
{
    up();
    recv(1, 100);
    recv(2, 100);
    a->post_send(qa, send(3, 10).op(VIRTIO_RDMA_WR_SEND_WITH_INV).inv(dst.rkey));
    ASSERT_TRUE(wire.pump());
    /* dst is a user MR: only fast-registration MRs can be invalidated. */
    expect_cqe(*a, cq_a, 3, VIRTIO_RDMA_WC_REM_INV_REQ_ERR,
               VIRTIO_RDMA_WC_SEND);
    const virtio_rdma_cq_req r = b->pop_cqe(cq_b);
    EXPECT_EQ(r.wr_id, 1u);
    EXPECT_EQ(r.status, VIRTIO_RDMA_WC_REM_INV_REQ_ERR);
    expect_cqe(*b, cq_b, 2, VIRTIO_RDMA_WC_WR_FLUSH_ERR, VIRTIO_RDMA_WC_RECV);
    EXPECT_EQ(b->qp_state(qb), VIRTIO_RDMA_QPS_ERR);
}

TEST_F(DpRc, SeveralQpsShareTheWire)
{
    up();
    constexpr int kPairs = 6;
    std::vector<std::pair<uint32_t, uint32_t>> qps;
    for (int i = 0; i < kPairs; i++) {
        qps.push_back(connect());
    }
    wire.faults = Faults{0.02, 0.01, 0.02, 0};
    for (int i = 0; i < kPairs; i++) {
        a->fill(src.addr + 80000 * i, 80000, 90 + i);
        b->post_recv(qps[i].second, i, {{dst.addr + 80000 * i, 80000, dst.lkey}});
        a->post_send(qps[i].first, send(100 + i, 80000, 80000 * i));
    }
    ASSERT_TRUE(wire.pump());
    EXPECT_EQ(a->cq_size(cq_a), size_t{kPairs});
    EXPECT_EQ(b->cq_size(cq_b), size_t{kPairs});
    while (a->cq_size(cq_a)) {
        EXPECT_EQ(a->pop_cqe(cq_a).status, VIRTIO_RDMA_WC_SUCCESS);
    }
    for (int i = 0; i < kPairs; i++) {
        EXPECT_TRUE(b->check(dst.addr + 80000 * i, 80000, 90 + i));
    }
    /*
     * Round robin, 64 packets per QP and turn: the second QP starts before
     * the first one's 79 packets are all out.
     */
    std::set<uint32_t> early;
    for (size_t i = 0; i < 79 && i < wire.captured.size(); i++) {
        roce::Packet p;
        if (roce::parse_frame(wire.captured[i].data, &p) ==
            roce::ParseError::kNone) {
            early.insert(p.bth().qpn());
        }
    }
    EXPECT_GT(early.size(), 1u);
}

/* ---- UC ---- */

TEST_F(DpRc, UcSendAndWriteWithImmediate)
{
    up(Conn{}, VIRTIO_RDMA_QPT_UC);
    a->fill(src.addr, 9000, 50);
    recv(1, 9000);
    b->post_recv(qb, 2, {{dst.addr + 100000, 16, dst.lkey}});
    a->post_send(qa, send(3, 9000));
    a->post_send(qa, write(4, 5000, 20000).op(VIRTIO_RDMA_WR_RDMA_WRITE_WITH_IMM).imm(7));
    ASSERT_TRUE(wire.pump());
    expect_cqe(*a, cq_a, 3, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_SEND);
    expect_cqe(*a, cq_a, 4, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_RDMA_WRITE);
    EXPECT_EQ(b->pop_cqe(cq_b).byte_len, 9000u);
    const virtio_rdma_cq_req w = b->pop_cqe(cq_b);
    EXPECT_EQ(w.opcode, VIRTIO_RDMA_WC_RECV_RDMA_WITH_IMM);
    EXPECT_EQ(w.byte_len, 5000u);
    EXPECT_TRUE(b->check(dst.addr, 9000, 50));
    for (const Pkt &k : sent_by(1)) {
        ADD_FAILURE() << "UC responder sent opcode " << int(k.opcode);
    }
}

TEST_F(DpRc, UcLostPacketDropsTheWholeMessage)
{
    up(Conn{}, VIRTIO_RDMA_QPT_UC);
    a->fill(src.addr, 9000, 51);
    recv(1, 9000);
    lose([](const Pkt &k) { return k.opcode == roce::kUcSendMiddle; });
    a->post_send(qa, send(2, 9000));
    a->post_send(qa, send(3, 9000));
    ASSERT_TRUE(wire.pump());
    expect_cqe(*a, cq_a, 2, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_SEND);
    expect_cqe(*a, cq_a, 3, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_SEND);
    const virtio_rdma_cq_req r = b->pop_cqe(cq_b);
    EXPECT_EQ(r.wr_id, 1u);
    EXPECT_EQ(r.byte_len, 9000u);
    EXPECT_EQ(b->cq_size(cq_b), 0u) << "the broken message never completes";
    EXPECT_GT(b->drops(VRDMA_DROP_UC_MESSAGE), 0u);
    EXPECT_TRUE(b->check(dst.addr, 9000, 51));
    EXPECT_EQ(b->qp_state(qb), VIRTIO_RDMA_QPS_RTS);
}

TEST_F(DpRc, UcBadRkeyDropsSilently)
{
    up(Conn{}, VIRTIO_RDMA_QPT_UC);
    a->post_send(qa, write(1, 100).rdma(dst.addr, dst.rkey ^ 0x10));
    ASSERT_TRUE(wire.pump());
    expect_cqe(*a, cq_a, 1, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_RDMA_WRITE);
    EXPECT_EQ(b->drops(VRDMA_DROP_UC_ACCESS), 1u);
    EXPECT_EQ(b->qp_state(qb), VIRTIO_RDMA_QPS_RTS);
}

} // namespace
} // namespace vrdma_test

namespace vrdma_test {
namespace {

/* ---- MRs whose guest memory went away (invalidate_host_range) ---- */

class DpInvalidate : public DpRc {
protected:
    /* Guest memory under byte @off of @mr on @n goes away. */
    static void gone(Node &n, const MrInfo &mr, uint64_t off, uint64_t len = 1)
    {
        vrdma_core_invalidate_host_range(n.core, n.mem(mr.addr + off), len);
    }
};

/* Every page of the MR is unmapped at once, and the MR fails local use. */
TEST_F(DpInvalidate, LocalUseIsLocProtErr)
{
    up();
    recv(1, 4096);
    const uint64_t live = a->guest.live_maps();
    VrdmaStats st;
    vrdma_core_get_stats(a->core, &st);
    const uint64_t mapped = st.mapped_pages;
    gone(*a, src, kBuf - 1); /* the last byte of the last page */
    EXPECT_EQ(a->guest.live_maps(), live - kBuf / 4096) << "all its pages";
    EXPECT_EQ(vrdma_core_mapped_pages(a->core), mapped - kBuf / 4096);

    a->post_send(qa, send(2, 100));
    ASSERT_TRUE(wire.pump());
    expect_cqe(*a, cq_a, 2, VIRTIO_RDMA_WC_LOC_PROT_ERR, VIRTIO_RDMA_WC_SEND);
    EXPECT_EQ(a->qp_state(qa), VIRTIO_RDMA_QPS_ERR);
    EXPECT_EQ(b->cq_size(cq_b), 0u) << "nothing was sent";
}

struct RemoteOp {
    const char *name;
    uint32_t wc_opcode;
    std::function<SendWr(const DpRc &, const MrInfo &src, const MrInfo &dst)>
        wr;
};

class DpInvalidateRemote : public DpInvalidate,
                           public ::testing::WithParamInterface<RemoteOp> {
};

/* A peer's READ, WRITE or atomic on it: NAK remote access error. */
TEST_P(DpInvalidateRemote, IsRemAccessErr)
{
    up();
    b->fill(dst.addr, kBuf, 9);
    gone(*b, dst, 4096 + 17, 3); /* a few bytes inside its second page */
    a->post_send(qa, GetParam().wr(*this, src, dst));
    ASSERT_TRUE(wire.pump());
    expect_cqe(*a, cq_a, 1, VIRTIO_RDMA_WC_REM_ACCESS_ERR,
               GetParam().wc_opcode);
    EXPECT_EQ(a->qp_state(qa), VIRTIO_RDMA_QPS_ERR);
    EXPECT_TRUE(b->check(dst.addr, kBuf, 9)) << "its memory untouched";
}

INSTANTIATE_TEST_SUITE_P(
    Ops, DpInvalidateRemote,
    ::testing::Values(
        RemoteOp{"write", VIRTIO_RDMA_WC_RDMA_WRITE,
                 [](const DpRc &, const MrInfo &s, const MrInfo &d) {
                     return SendWr().op(VIRTIO_RDMA_WR_RDMA_WRITE).id(1)
                         .flags(VIRTIO_RDMA_SEND_SIGNALED)
                         .sge(s.addr, 100, s.lkey).rdma(d.addr, d.rkey);
                 }},
        RemoteOp{"read", VIRTIO_RDMA_WC_RDMA_READ,
                 [](const DpRc &, const MrInfo &s, const MrInfo &d) {
                     return SendWr().op(VIRTIO_RDMA_WR_RDMA_READ).id(1)
                         .flags(VIRTIO_RDMA_SEND_SIGNALED)
                         .sge(s.addr, 100, s.lkey).rdma(d.addr, d.rkey);
                 }},
        RemoteOp{"atomic", VIRTIO_RDMA_WC_FETCH_ADD,
                 [](const DpRc &, const MrInfo &s, const MrInfo &d) {
                     return SendWr().op(VIRTIO_RDMA_WR_ATOMIC_FETCH_AND_ADD)
                         .id(1).flags(VIRTIO_RDMA_SEND_SIGNALED)
                         .sge(s.addr, 8, s.lkey).atomic(d.addr, d.rkey, 1, 0);
                 }}),
    [](const auto &info) { return info.param.name; });

/*
 * DEREG_MR of an invalidated MR works and unmaps nothing twice; a range
 * that no MR page overlaps and a DMA MR are left alone.
 */
TEST_F(DpInvalidate, DeregStillWorksOthersUnaffected)
{
    up();
    const MrInfo dma = b->dma_mr(pd_b, kAllAccess);
    const uint64_t spare = b->alloc(4096); /* in no MR */
    vrdma_core_invalidate_host_range(b->core, b->mem(spare), 4096);
    vrdma_core_invalidate_host_range(b->core, b->mem(dst.addr), 0);
    a->fill(src.addr, 100, 3);
    a->post_send(qa, write(1, 100));
    ASSERT_TRUE(wire.pump());
    expect_cqe(*a, cq_a, 1, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_RDMA_WRITE);

    const uint64_t unmaps = b->guest.unmaps;
    gone(*b, dst, 0, kBuf);
    EXPECT_EQ(b->guest.unmaps, unmaps + kBuf / 4096);
    gone(*b, dst, 0, kBuf); /* again: nothing left to unmap */
    EXPECT_EQ(b->guest.unmaps, unmaps + kBuf / 4096);
    EXPECT_EQ(b->dereg_mr(dst.mrn), VIRTIO_RDMA_OK);
    EXPECT_EQ(b->guest.unmaps, unmaps + kBuf / 4096);
    EXPECT_EQ(b->guest.bad_unmaps, 0u);

    /* The DMA MR (guest-physical, no pages) still takes a WRITE. */
    a->post_send(qa, SendWr().op(VIRTIO_RDMA_WR_RDMA_WRITE).id(2)
                         .flags(kSignaled).sge(src.addr, 100, src.lkey)
                         .rdma(spare, dma.rkey));
    ASSERT_TRUE(wire.pump());
    expect_cqe(*a, cq_a, 2, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_RDMA_WRITE);
    EXPECT_TRUE(b->check(spare, 100, 3));
}

/* REG_MR of an invalidated fast-registration MR fails until a new map. */
TEST_F(DpInvalidate, FastRegisterFailsUntilMappedAgain)
{
    up();
    const uint64_t mem = a->alloc(8192), mem2 = a->alloc(8192);
    const MrInfo fr = a->fast_mr(pd_a, mem, 8192);
    const MrInfo ok = a->fast_mr(pd_a, mem2, 8192); /* the control */
    vrdma_core_invalidate_host_range(a->core, a->mem(mem + 4096), 4096);
    auto next = [](uint32_t k) { return (k & ~0xFFu) | ((k + 1) & 0xFF); };
    a->post_send(qa, SendWr().op(VIRTIO_RDMA_WR_REG_MR).id(0)
                         .flags(kSignaled).reg(ok.mrn, next(ok.lkey),
                                               kAllAccess));
    a->post_send(qa, SendWr().op(VIRTIO_RDMA_WR_REG_MR).id(1)
                         .flags(kSignaled).reg(fr.mrn, next(fr.lkey),
                                               kAllAccess));
    ASSERT_TRUE(wire.pump());
    expect_cqe(*a, cq_a, 0, VIRTIO_RDMA_WC_SUCCESS, VIRTIO_RDMA_WC_REG_MR);
    expect_cqe(*a, cq_a, 1, VIRTIO_RDMA_WC_LOC_QP_OP_ERR,
               VIRTIO_RDMA_WC_REG_MR);
    EXPECT_EQ(a->dereg_mr(fr.mrn), VIRTIO_RDMA_OK);
}

} // namespace
} // namespace vrdma_test

/*
 * rdmacm-mux: GID requests are rate-limited per client (each costs a read
 * of the host GID table and a log line in a root daemon): over its bucket a
 * client's requests wait, unread, and its log lines are bounded.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "mux_fixture.h"

namespace rdmacm_mux::test {
namespace {

constexpr uint64_t kSec = 1000000000;

class ClaimRateTest : public MuxTest {
protected:
    /* Sends @n claims of @gid at once; the GID_ACKs that come back. */
    unsigned burst(Conn &c, unsigned n, const Gid &gid)
    {
        std::vector<uint8_t> bytes;
        for (unsigned i = 0; i < n; i++) {
            auto m = gid_msg(RDMACM_MUX_GID_ADD, 100 + i, gid);
            bytes.insert(bytes.end(), m.begin(), m.end());
        }
        put(c, bytes);
        return answered(c);
    }
    /* GID_ACKs that have come, in order of the requests. */
    unsigned answered(Conn &c)
    {
        unsigned n = 0;
        while (auto m = get(c)) {
            EXPECT_EQ(m->type(), RDMACM_MUX_GID_ACK);
            EXPECT_EQ(le32toh(m->as<rdmacm_mux_gid_ack>().req_seq),
                      next_seq++);
            n++;
        }
        return n;
    }
    uint32_t next_seq = 100;
};

TEST_F(ClaimRateTest, RequestsBeyondTheBucketWaitTheirTurn)
{
    cfg.gid_rate = 10;
    cfg.gid_burst = 4;
    Conn &a = hello();
    unsigned reads = port.gid_reads;
    /* Ten claims of an address not on the host: each reads the table. */
    EXPECT_EQ(burst(a, 10, gid_of(77)), 4u);
    EXPECT_EQ(port.gid_reads, reads + 4);
    EXPECT_EQ(mux->stats().gid_throttled, 1u);

    clock_ns += kSec / 10; /* one token */
    EXPECT_EQ(answered(a), 1u);
    clock_ns += kSec; /* a full bucket, no more */
    EXPECT_EQ(answered(a), 4u);
    clock_ns += kSec / 10; /* the last, in order */
    EXPECT_EQ(answered(a), 1u);
    EXPECT_EQ(port.gid_reads, reads + 10);
    EXPECT_FALSE(closed(a));
}

TEST_F(ClaimRateTest, AThrottledClientDoesNotSlowTheOthers)
{
    cfg.gid_rate = 1;
    cfg.gid_burst = 2;
    Conn &a = hello();
    Conn &b = hello();
    EXPECT_EQ(burst(a, 20, gid_of(77)), 2u);
    EXPECT_EQ(claim(b, gid_of(1)), RDMACM_MUX_OK);
    /* MADs still reach a while its requests wait. */
    ASSERT_EQ(claim(b, gid_of(2)), RDMACM_MUX_OK);
    port.deliver(host_mad(2));
    EXPECT_TRUE(get(b));
}

TEST_F(ClaimRateTest, AThrottledClientThatHangsUpIsClosed)
{
    cfg.gid_rate = 1;
    cfg.gid_burst = 1;
    Conn &a = hello();
    EXPECT_EQ(burst(a, 5, gid_of(77)), 1u);
    close(a.fd);
    a.fd = -1;
    pump();
    EXPECT_EQ(mux->client_count(), 0u);
}

TEST_F(ClaimRateTest, RefusalLinesOfOneClientAreBounded)
{
    /* A bucket big enough to let 200 through: the log is bounded on its
     * own. */
    cfg.gid_rate = 1000;
    cfg.gid_burst = 1000;
    Conn &a = hello();
    logs.clear();
    EXPECT_EQ(burst(a, 200, gid_of(77)), 200u);
    size_t lines = 0;
    for (const std::string &l : logs) {
        lines += l.find("GID_ADD") != std::string::npos;
    }
    EXPECT_GE(lines, 1u);
    EXPECT_LE(lines, 40u);
}

} // namespace
} // namespace rdmacm_mux::test

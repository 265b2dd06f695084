/*
 * rdmacm-mux: a client cannot hold its slot without speaking -- the HELLO
 * deadline, the unfinished-message timeout, the idle timeout of a client
 * that holds nothing -- and the loop wakes up for them by itself.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <sys/eventfd.h>

#include <atomic>
#include <thread>

#include "mux_fixture.h"

namespace rdmacm_mux::test {
namespace {

constexpr uint64_t kSec = 1000000000;

TEST_F(MuxTest, ClientWithoutHelloIsClosedAtTheDeadline)
{
    cfg.hello_timeout_ns = 5 * kSec;
    Conn &silent = connect();
    Conn &slow = connect();
    /* Half a HELLO does not count. */
    auto h = hello_msg();
    put(slow, std::vector<uint8_t>(h.begin(), h.begin() + 20));
    clock_ns += 5 * kSec - 1;
    pump();
    EXPECT_EQ(mux->client_count(), 2u);
    clock_ns += 1;
    EXPECT_TRUE(closed(silent));
    EXPECT_TRUE(closed(slow));
    EXPECT_EQ(mux->client_count(), 0u);
    EXPECT_EQ(mux->stats().clients_timed_out, 2u);
}

TEST_F(MuxTest, UnfinishedMessageIsClosedAfterTheTimeout)
{
    cfg.partial_timeout_ns = 5 * kSec;
    cfg.idle_timeout_ns = 0;
    Conn &a = hello();
    Conn &b = hello();
    /* a trickles a GID_ADD a byte at a time, never finishing. */
    auto add = gid_msg(RDMACM_MUX_GID_ADD, 2, gid_of(1));
    for (size_t i = 0; i + 1 < add.size(); i++) {
        put(a, {add[i]});
        clock_ns += kSec / 2;
        pump();
        if (mux->client_count() < 2) {
            break;
        }
    }
    EXPECT_TRUE(closed(a));
    EXPECT_EQ(mux->stats().clients_timed_out, 1u);
    /* b, which only kept quiet, stays. */
    EXPECT_EQ(claim(b, gid_of(1)), RDMACM_MUX_OK);
}

TEST_F(MuxTest, IdleClientIsClosedOnlyWhileItHoldsNoGid)
{
    cfg.idle_timeout_ns = 60 * kSec;
    Conn &idle = hello();
    Conn &holder = hello();
    Conn &chatty = hello();
    ASSERT_EQ(claim(holder, gid_of(1)), RDMACM_MUX_OK);
    for (int i = 0; i < 3; i++) {
        clock_ns += 30 * kSec;
        EXPECT_EQ(claim(chatty, gid_of(77)), RDMACM_MUX_NOT_ON_HOST);
    }
    EXPECT_TRUE(closed(idle));
    EXPECT_FALSE(closed(holder));
    EXPECT_FALSE(closed(chatty));
    EXPECT_EQ(mux->stats().clients_timed_out, 1u);
    /* The holder's GID is still routed to it. */
    port.deliver(host_mad(1));
    EXPECT_TRUE(get(holder));
}

TEST_F(MuxTest, TimeoutsOfZeroAreOff)
{
    cfg.hello_timeout_ns = 0;
    cfg.partial_timeout_ns = 0;
    cfg.idle_timeout_ns = 0;
    Conn &silent = connect();
    Conn &idle = hello();
    clock_ns += 365ull * 24 * 3600 * kSec;
    EXPECT_FALSE(closed(silent));
    EXPECT_FALSE(closed(idle));
}

/* With the real clock: poll(-1) comes back by itself for a deadline. */
TEST_F(MuxTest, PollWakesUpForTheHelloDeadline)
{
    cfg.now_ns = nullptr;
    cfg.hello_timeout_ns = 100000000; /* 100 ms */
    start();
    /* If poll(-1) slept through the deadline, this wakes it after 20 s. */
    int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    std::atomic<bool> watchdog{false}, done{false};
    std::string err;
    ASSERT_TRUE(mux->watch(efd, [&] { watchdog = true; }, &err)) << err;
    std::thread t([&] {
        for (int i = 0; i < 200 && !done; i++) {
            usleep(100000);
        }
        uint64_t one = 1;
        EXPECT_EQ(write(efd, &one, sizeof(one)), 8);
    });
    connect();
    while (mux->client_count() && !watchdog) {
        mux->poll(-1);
    }
    done = true;
    t.join();
    close(efd);
    EXPECT_FALSE(watchdog) << "poll(-1) did not wake for the HELLO deadline";
    EXPECT_EQ(mux->stats().clients_timed_out, 1u);
}

} // namespace
} // namespace rdmacm_mux::test

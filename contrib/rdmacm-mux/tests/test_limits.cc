/*
 * rdmacm-mux: bounds -- each client's output queue, its MAD rate, the
 * number of clients, in all and per peer, who may connect (SO_PEERCRED
 * through a real socket).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <stdlib.h>
#include <sys/un.h>

#include "mux_fixture.h"

namespace rdmacm_mux::test {
namespace {

/* Shrinks the socket buffers of @c's pair so the mux's queue fills soon. */
void small_buffers(int client_fd)
{
    int small = 4096;
    setsockopt(client_fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    setsockopt(client_fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
}

TEST_F(MuxTest, MadsBeyondTheQueueOfASlowClientAreDropped)
{
    cfg.queue_mads = 4;
    Conn &a = hello();
    Conn &b = hello();
    small_buffers(a.fd);
    ASSERT_EQ(claim(a, gid_of(1)), RDMACM_MUX_OK);
    ASSERT_EQ(claim(b, gid_of(2)), RDMACM_MUX_OK);

    /* a does not read while 300 MADs (~95 KB) arrive for it. */
    const unsigned total = 300;
    for (unsigned i = 0; i < total; i++) {
        port.deliver(host_mad(1));
        if (i % 32 == 0) {
            pump();
        }
    }
    pump();
    uint64_t dropped = rx(Drop::queue_full);
    EXPECT_GT(dropped, 0u);
    /* The slow client does not hold up the other one. */
    port.deliver(host_mad(2));
    EXPECT_TRUE(get(b));

    unsigned got = 0;
    while (auto m = get(a)) {
        EXPECT_EQ(m->type(), RDMACM_MUX_MAD_RECV);
        got++;
    }
    EXPECT_EQ(got + dropped, total);
    /* Socket buffers + at most queue_mads MADs were ever held for it. */
    EXPECT_LT(got, total);

    /* Once it reads again, MADs flow again. */
    port.deliver(host_mad(1));
    EXPECT_TRUE(get(a));
    EXPECT_EQ(rx(Drop::queue_full), dropped);
}

TEST_F(MuxTest, ClientThatNeverReadsItsRepliesIsClosed)
{
    cfg.queue_mads = 1;
    cfg.gid_burst = 1000000; /* not the GID request bucket's test */
    Conn &a = hello();
    Conn &b = hello();
    small_buffers(a.fd);
    auto del = gid_msg(RDMACM_MUX_GID_DEL, 3, gid_of(1));
    /* Each GID_DEL asks for a GID_ACK a never reads. */
    bool gone = false;
    for (int i = 0; i < 20000 && !gone; i++) {
        ssize_t n = send(a.fd, del.data(), del.size(),
                         MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && errno != EAGAIN) {
            gone = true; /* EPIPE/ECONNRESET: the mux hung up */
        }
        mux->poll(0);
        gone = gone || mux->client_count() == 1;
    }
    EXPECT_TRUE(gone);
    EXPECT_EQ(mux->client_count(), 1u);
    EXPECT_EQ(claim(b, gid_of(1)), RDMACM_MUX_OK);
}

TEST_F(MuxTest, MadSendsAreRateLimitedPerClient)
{
    cfg.mad_rate = 10;
    cfg.mad_burst = 3;
    Conn &a = hello();
    Conn &b = hello();
    ASSERT_EQ(claim(a, gid_of(1)), RDMACM_MUX_OK);
    ASSERT_EQ(claim(b, gid_of(2)), RDMACM_MUX_OK);
    auto send_n = [&](Conn &c, const Gid &g, int n) {
        for (int i = 0; i < n; i++) {
            put(c, mad_send_msg(g));
        }
        pump();
    };

    send_n(a, gid_of(1), 5); /* the burst, then two over */
    EXPECT_EQ(port.sent.size(), 3u);
    EXPECT_EQ(tx(Drop::rate), 2u);
    send_n(b, gid_of(2), 1); /* b has its own bucket */
    EXPECT_EQ(port.sent.size(), 4u);

    clock_ns += 100000000; /* 1/rate: one more token */
    send_n(a, gid_of(1), 2);
    EXPECT_EQ(port.sent.size(), 5u);
    EXPECT_EQ(tx(Drop::rate), 3u);

    clock_ns += 3600ull * 1000000000; /* idle for an hour: still 3 */
    send_n(a, gid_of(1), 5);
    EXPECT_EQ(port.sent.size(), 8u);
    EXPECT_EQ(tx(Drop::rate), 5u);
}

TEST_F(MuxTest, ClientCountIsBounded)
{
    cfg.max_clients = 2;
    Conn &a = hello();
    hello();
    Conn &c = connect();
    EXPECT_EQ(c.id, 0u);
    EXPECT_TRUE(closed(c));
    EXPECT_EQ(mux->stats().clients_refused, 1u);
    close(a.fd);
    a.fd = -1;
    pump();
    Conn &d = hello();
    EXPECT_NE(d.id, 0u);
}

TEST_F(MuxTest, OnePeerCannotTakeEverySlot)
{
    cfg.max_clients = 6;
    cfg.max_per_pid = 2;
    cfg.max_per_uid = 4;
    /* pid 100 (uid 1000) tries to take every slot. */
    EXPECT_NE(connect({100, 1000, 1000, {}}).id, 0u);
    EXPECT_NE(connect({100, 1000, 1000, {}}).id, 0u);
    Conn &third = connect({100, 1000, 1000, {}});
    EXPECT_EQ(third.id, 0u);
    EXPECT_TRUE(closed(third));
    /* Its uid from other processes: up to the uid's cap. */
    EXPECT_NE(connect({101, 1000, 1000, {}}).id, 0u);
    EXPECT_NE(connect({102, 1000, 1000, {}}).id, 0u);
    EXPECT_EQ(connect({103, 1000, 1000, {}}).id, 0u);
    EXPECT_EQ(mux->stats().clients_refused, 2u);
    /* Another uid still gets in. */
    EXPECT_NE(connect({200, 2000, 2000, {}}).id, 0u);
    bool named = false;
    for (const std::string &l : logs) {
        named = named || l.find("--max-per-pid") != std::string::npos;
    }
    EXPECT_TRUE(named) << "the refusal names the option";
}

TEST_F(MuxTest, PeerSlotsComeBackWhenItsClientsLeave)
{
    cfg.max_per_pid = 1;
    Conn &a = connect({100, 1000, 1000, {}});
    ASSERT_NE(a.id, 0u);
    EXPECT_EQ(connect({100, 1000, 1000, {}}).id, 0u);
    close(a.fd);
    a.fd = -1;
    pump();
    EXPECT_NE(connect({100, 1000, 1000, {}}).id, 0u);
}

TEST_F(MuxTest, ManyVmsUnderOneUidFitTheDefaults)
{
    /* libvirt runs every QEMU as one user: the defaults take a full
     * house of them, a few devices each. */
    Config defaults;
    for (size_t i = 0; i < defaults.max_clients; i++) {
        pid_t pid = 1000 + static_cast<pid_t>(i / 2); /* two devices each */
        EXPECT_NE(connect({pid, 64055, 64055, {}}).id, 0u) << i;
    }
    EXPECT_EQ(mux->stats().clients_refused, 0u);
}

TEST_F(MuxTest, AllowListIsByUidOrGroup)
{
    cfg.allow_uids = {4242};
    cfg.allow_gids = {5353};
    EXPECT_EQ(connect({1, 4242, 1, {}}).id, 1u);
    EXPECT_EQ(connect({2, 1000, 5353, {}}).id, 2u);
    EXPECT_EQ(connect({3, 1000, 1000, {27, 5353}}).id, 3u);
    Conn &no = connect({4, 1000, 1000, {27}});
    EXPECT_EQ(no.id, 0u);
    EXPECT_TRUE(closed(no));
    EXPECT_EQ(mux->stats().clients_refused, 1u);
}

/* The accept path: a real UNIX socket, SO_PEERCRED, the allow-list. */
class MuxListenerTest : public MuxTest {
protected:
    void SetUp() override
    {
        MuxTest::SetUp();
        char tmpl[] = "/tmp/rdmacm-mux-test.XXXXXX";
        ASSERT_TRUE(mkdtemp(tmpl));
        dir = tmpl;
        path = dir + "/mux.sock";
    }
    void TearDown() override
    {
        MuxTest::TearDown();
        if (lfd >= 0) {
            close(lfd);
        }
        unlink(path.c_str());
        rmdir(dir.c_str());
    }
    void listen_here()
    {
        start();
        lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        sockaddr_un sa{};
        sa.sun_family = AF_UNIX;
        std::strncpy(sa.sun_path, path.c_str(), sizeof(sa.sun_path) - 1);
        ASSERT_EQ(bind(lfd, reinterpret_cast<sockaddr *>(&sa), sizeof(sa)),
                  0);
        ASSERT_EQ(listen(lfd, 4), 0);
        std::string err;
        ASSERT_TRUE(mux->set_listener(lfd, &err)) << err;
    }
    Conn &dial()
    {
        conns.push_back(std::make_unique<Conn>());
        Conn &c = *conns.back();
        c.fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_un sa{};
        sa.sun_family = AF_UNIX;
        std::strncpy(sa.sun_path, path.c_str(), sizeof(sa.sun_path) - 1);
        EXPECT_EQ(::connect(c.fd, reinterpret_cast<sockaddr *>(&sa),
                            sizeof(sa)),
                  0);
        pump();
        return c;
    }

    std::string dir, path;
    int lfd = -1;
};

TEST_F(MuxListenerTest, AcceptedClientIsKnownByItsCredentials)
{
    listen_here();
    Conn &c = dial();
    EXPECT_EQ(mux->stats().clients_accepted, 1u);
    put(c, hello_msg());
    auto m = get(c);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->type(), RDMACM_MUX_HELLO_ACK);
    bool logged = false;
    std::string who = "pid " + std::to_string(getpid()) + " uid " +
                      std::to_string(getuid());
    for (const std::string &l : logs) {
        logged = logged || l.find(who) != std::string::npos;
    }
    EXPECT_TRUE(logged) << "the connect line names pid and uid";
}

TEST_F(MuxListenerTest, ClientNotOnTheAllowListIsClosed)
{
    cfg.allow_uids = {getuid() + 1};
    listen_here();
    Conn &c = dial();
    EXPECT_TRUE(closed(c));
    EXPECT_EQ(mux->stats().clients_refused, 1u);
    EXPECT_EQ(mux->client_count(), 0u);
}

} // namespace
} // namespace rdmacm_mux::test

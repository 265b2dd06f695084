/*
 * rdmacm-mux: log lines -- a full stderr (a stalled journal, a pipe nobody
 * reads) costs lines, counted, never the loop; what a client wrote is
 * escaped before it reaches a line.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <fcntl.h>

#include <chrono>
#include <future>
#include <thread>

#include "mux_fixture.h"

namespace rdmacm_mux::test {
namespace {

/* Fills the pipe whose write end is @w, leaving the end as it was. */
void fill_pipe(int w)
{
    int fl = fcntl(w, F_GETFL);
    ASSERT_EQ(fcntl(w, F_SETFL, fl | O_NONBLOCK), 0);
    char buf[4096] = {};
    while (write(w, buf, sizeof(buf)) > 0) {
    }
    while (write(w, buf, 1) > 0) {
    }
    ASSERT_EQ(fcntl(w, F_SETFL, fl), 0);
}

std::string drain_pipe(int r)
{
    int fl = fcntl(r, F_GETFL);
    fcntl(r, F_SETFL, fl | O_NONBLOCK);
    std::string s;
    char buf[4096];
    ssize_t n;
    while ((n = read(r, buf, sizeof(buf))) > 0) {
        s.append(buf, static_cast<size_t>(n));
    }
    fcntl(r, F_SETFL, fl);
    return s;
}

TEST(Log, FullStderrDropsLinesInsteadOfBlocking)
{
    set_log_sink(nullptr); /* the real one, to stderr */
    int p[2];
    ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
    fill_pipe(p[1]);
    int saved = dup(2);
    ASSERT_GE(saved, 0);
    ASSERT_EQ(dup2(p[1], 2), 2);
    int flags_before = fcntl(2, F_GETFL);
    uint64_t dropped = log_lines_dropped();

    auto done = std::async(std::launch::async, [] {
        log(Level::error, "a line nobody has room for");
    });
    bool returned =
        done.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
    int flags_after = fcntl(2, F_GETFL);
    if (!returned) {
        /* Let the blocked write finish so the test can end. */
        while (done.wait_for(std::chrono::milliseconds(10)) !=
               std::future_status::ready) {
            drain_pipe(p[0]);
        }
    }
    std::string old = drain_pipe(p[0]);
    EXPECT_TRUE(returned) << "log() blocked on a full stderr";
    EXPECT_EQ(flags_after, flags_before)
        << "stderr's file status flags are shared: left as they were";
    EXPECT_EQ(log_lines_dropped(), dropped + 1);

    /* With room again, the next line says what was lost. */
    log(Level::error, "and this one");
    std::string got = drain_pipe(p[0]);
    dup2(saved, 2);
    close(saved);
    close(p[0]);
    close(p[1]);
    EXPECT_EQ(old.find("nobody has room"), std::string::npos);
    EXPECT_NE(got.find("1 log line dropped"), std::string::npos) << got;
    EXPECT_NE(got.find("rdmacm-mux: error: and this one\n"), std::string::npos)
        << got;
}

TEST(Log, EscapeKeepsPrintableAsciiOnly)
{
    EXPECT_EQ(escape("mlx5_0"), "mlx5_0");
    EXPECT_EQ(escape(std::string_view("a\nb\x1b[2J\\\x7f\xff", 10)),
              "a\\x0ab\\x1b[2J\\x5c\\x7f\\xff");
}

TEST_F(MuxTest, HelloIbdevIsLoggedEscaped)
{
    Conn &c = connect();
    put(c, hello_msg("rxe0\nrdmacm-mux: info: forged\x1b[8m"));
    auto m = get(c);
    ASSERT_TRUE(m);
    EXPECT_EQ(le32toh(m->as<rdmacm_mux_hello_ack>().status),
              RDMACM_MUX_WRONG_PORT);
    bool named = false;
    for (const std::string &l : logs) {
        for (char ch : l) {
            ASSERT_TRUE(ch >= 0x20 && ch < 0x7f) << "in: " << l;
        }
        named = named ||
                l.find("rxe0\\x0ardmacm-mux: info: forged\\x1b[8m") !=
                    std::string::npos;
    }
    EXPECT_TRUE(named);
}

} // namespace
} // namespace rdmacm_mux::test

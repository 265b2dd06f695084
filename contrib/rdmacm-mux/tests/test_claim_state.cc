/*
 * rdmacm-mux: claims and reservations outlive the mux in its state file
 * (--state-dir): a restarted mux keeps every claim reserved for its owner
 * (issue 25 item 6); the file is written whole or not at all, and a bad one
 * is refused with a log line, the mux starting with nothing reserved.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <fcntl.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "claim_state.h"
#include "mux_fixture.h"

namespace rdmacm_mux::test {
namespace {

class ClaimState : public MuxTest {
protected:
    void SetUp() override
    {
        MuxTest::SetUp();
        char tmpl[] = "/tmp/rdmacm-mux-state-XXXXXX";
        ASSERT_TRUE(mkdtemp(tmpl));
        dir = tmpl;
        cfg.state_dir = dir;
        cfg.claim_grace_ns = 600 * kSec;
        file = dir + "/claims-rxe0-1";
    }
    void TearDown() override
    {
        MuxTest::TearDown();
        std::filesystem::remove_all(dir);
    }

    /* The mux process ends (any way: nothing runs at its end) and another
     * starts over the same state directory. */
    void restart()
    {
        mux.reset();
        start();
    }

    std::string read_file()
    {
        std::ifstream f(file);
        std::stringstream s;
        s << f.rdbuf();
        return s.str();
    }
    void write_file(const std::string &text)
    {
        std::ofstream(file) << text;
        chmod(file.c_str(), 0600);
    }
    bool logged(const std::string &what)
    {
        for (const auto &l : logs) {
            if (l.find(what) != std::string::npos) {
                return true;
            }
        }
        return false;
    }

    std::string dir, file;
};

TEST_F(ClaimState, ClaimsAndReservationsSurviveAMuxRestart)
{
    Conn &a = hello("vm-a", kTenNet);
    Conn &b = hello("vm-b", kTenNet);
    ASSERT_EQ(claim(a, gid_of(1)), RDMACM_MUX_OK);  /* held at the restart */
    ASSERT_EQ(claim(b, gid_of(2)), RDMACM_MUX_OK);
    ASSERT_EQ(claim(b, gid_of(2), RDMACM_MUX_GID_DEL), RDMACM_MUX_OK);
    restart();
    /* Another tenant connects first after the restart. */
    Conn &c = hello("vm-c", kTenNet);
    EXPECT_EQ(claim(c, gid_of(1)), RDMACM_MUX_RESERVED);
    EXPECT_EQ(claim(c, gid_of(2)), RDMACM_MUX_RESERVED);
    EXPECT_EQ(claim(c, gid_of(3)), RDMACM_MUX_OK);
    /* The owners come back (QEMU's reconnect-ms) and resume. */
    Conn &a2 = hello("vm-a", kTenNet);
    Conn &b2 = hello("vm-b", kTenNet);
    EXPECT_EQ(claim(a2, gid_of(1)), RDMACM_MUX_OK);
    EXPECT_EQ(claim(b2, gid_of(2)), RDMACM_MUX_OK);
}

TEST_F(ClaimState, AClaimHeldAtTheRestartGetsTheWholeGraceFromTheStart)
{
    Conn &a = hello("vm-a", kTenNet);
    ASSERT_EQ(claim(a, gid_of(1)), RDMACM_MUX_OK);
    wall_ns += 3600 * kSec; /* the mux was down for an hour */
    restart();
    Conn &c = hello("vm-c", kTenNet);
    clock_ns += 600 * kSec - 1;
    EXPECT_EQ(claim(c, gid_of(1)), RDMACM_MUX_RESERVED);
    clock_ns += 1;
    EXPECT_EQ(claim(c, gid_of(1)), RDMACM_MUX_OK);
}

TEST_F(ClaimState, AReservationEndsWhenItWouldHaveWhileTheMuxWasDown)
{
    Conn &a = hello("vm-a", kTenNet);
    ASSERT_EQ(claim(a, gid_of(1)), RDMACM_MUX_OK);
    ASSERT_EQ(claim(a, gid_of(1), RDMACM_MUX_GID_DEL), RDMACM_MUX_OK);
    ASSERT_EQ(claim(a, gid_of(2)), RDMACM_MUX_OK);
    ASSERT_EQ(claim(a, gid_of(2), RDMACM_MUX_GID_DEL), RDMACM_MUX_OK);
    mux.reset();
    wall_ns += 300 * kSec;
    start();
    Conn &c = hello("vm-c", kTenNet);
    clock_ns += 300 * kSec - kSec; /* the file counts in seconds */
    EXPECT_EQ(claim(c, gid_of(1)), RDMACM_MUX_RESERVED);
    clock_ns += kSec;
    EXPECT_EQ(claim(c, gid_of(1)), RDMACM_MUX_OK);
    /* Down longer than the grace: nothing left. */
    mux.reset();
    wall_ns += 601 * kSec;
    start();
    Conn &d = hello("vm-d", kTenNet);
    EXPECT_EQ(claim(d, gid_of(2)), RDMACM_MUX_OK);
}

TEST_F(ClaimState, AShorterGraceAfterTheRestartApplies)
{
    Conn &a = hello("vm-a", kTenNet);
    ASSERT_EQ(claim(a, gid_of(1)), RDMACM_MUX_OK);
    ASSERT_EQ(claim(a, gid_of(1), RDMACM_MUX_GID_DEL), RDMACM_MUX_OK);
    cfg.claim_grace_ns = 10 * kSec;
    restart();
    Conn &c = hello("vm-c", kTenNet);
    clock_ns += 10 * kSec;
    EXPECT_EQ(claim(c, gid_of(1)), RDMACM_MUX_OK);
}

TEST_F(ClaimState, TheFileIsReplacedWholeAndOnlyTheMuxCanReadIt)
{
    Conn &a = hello("vm-a", kTenNet);
    ASSERT_EQ(claim(a, gid_of(1)), RDMACM_MUX_OK);
    clock_ns += kSec; /* written within 100 ms of the change */
    pump();
    std::string text = read_file();
    EXPECT_EQ(text.rfind("rdmacm-mux claims 1\n", 0), 0u) << text;
    EXPECT_NE(text.find("0000:0000:0000:0000:0000:ffff:0a00:0001 held vm-a\n"),
              std::string::npos)
        << text;
    struct stat st;
    ASSERT_EQ(stat(file.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    /* Nothing else is left in the directory (no temporary file). */
    size_t n = 0;
    for (auto &e : std::filesystem::directory_iterator(dir)) {
        (void)e;
        n++;
    }
    EXPECT_EQ(n, 1u);
}

TEST_F(ClaimState, ABadFileIsLoggedAndNothingIsReserved)
{
    const char *bad[] = {
        "",                                        /* empty */
        "rdmacm-mux claims 2\n",                   /* another format */
        "rdmacm-mux claims 1\nnot a line\n",
        "rdmacm-mux claims 1\n"
        "0000:0000:0000:0000:0000:ffff:0a00:000g held vm-a\n",
        "rdmacm-mux claims 1\n"                    /* owner with a tab */
        "0000:0000:0000:0000:0000:ffff:0a00:0001 held vm\ta\n",
        "rdmacm-mux claims 1\n"                    /* no newline at the end */
        "0000:0000:0000:0000:0000:ffff:0a00:0001 held vm-a",
        "rdmacm-mux claims 1\n"
        "0000:0000:0000:0000:0000:ffff:0a00:0001 99999999999999999999 a\n",
    };
    for (const char *text : bad) {
        SCOPED_TRACE(text);
        logs.clear();
        write_file(text);
        restart();
        EXPECT_TRUE(logged(file)) << "no log line names the file";
        Conn &c = hello("vm-c", kTenNet);
        EXPECT_EQ(claim(c, gid_of(1)), RDMACM_MUX_OK);
        close(c.fd);
        c.fd = -1;
        pump();
        std::filesystem::remove(file);
    }
}

TEST_F(ClaimState, ASymlinkOrAHugeFileIsNotRead)
{
    /* Even root's own directory: the mux reads a regular file, bounded. */
    std::string target = dir + "/elsewhere";
    {
        std::ofstream(target)
            << "rdmacm-mux claims 1\n"
               "0000:0000:0000:0000:0000:ffff:0a00:0001 held vm-a\n";
    }
    ASSERT_EQ(symlink(target.c_str(), file.c_str()), 0);
    restart();
    Conn &c = hello("vm-c", kTenNet);
    EXPECT_EQ(claim(c, gid_of(1)), RDMACM_MUX_OK);
    EXPECT_TRUE(logged(file));

    mux.reset();
    std::filesystem::remove(file);
    std::string big = "rdmacm-mux claims 1\n";
    while (big.size() <= kClaimStateMaxBytes) {
        big += "0000:0000:0000:0000:0000:ffff:0a00:0001 held vm-a\n";
    }
    write_file(big);
    logs.clear();
    start();
    Conn &d = hello("vm-d", kTenNet);
    EXPECT_EQ(claim(d, gid_of(2)), RDMACM_MUX_OK);
    EXPECT_TRUE(logged(file));
}

TEST_F(ClaimState, AnUnwritableDirectoryIsLoggedAndTheMuxGoesOn)
{
    Conn &a = hello("vm-a", kTenNet);
    std::filesystem::remove_all(dir);
    EXPECT_EQ(claim(a, gid_of(1)), RDMACM_MUX_OK);
    clock_ns += kSec;
    pump();
    EXPECT_TRUE(logged("cannot save"));
    ASSERT_EQ(mkdir(dir.c_str(), 0700), 0);
}

} // namespace
} // namespace rdmacm_mux::test

/*
 * rdmacm-mux: the listening socket gets its mode and group without any
 * call that resolves its path after bind(): someone who may write the
 * socket's directory could by then have put a symlink (to a file of
 * theirs to take, or of root's) in its place.
 *
 * bind() is wrapped here so that a test can play that someone: right after
 * the real bind, the new socket file is swapped for a symlink -- but only
 * in the directory the test calls shared, as such a user could only do.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <grp.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <functional>

#include "mux_fixture.h"
#include "unix_socket.h"

namespace {
std::function<void(const std::string &)> after_bind;
}

extern "C" int bind(int fd, const sockaddr *sa, socklen_t len)
{
    using Bind = int (*)(int, const sockaddr *, socklen_t);
    static Bind real = reinterpret_cast<Bind>(dlsym(RTLD_NEXT, "bind"));
    int ret = real(fd, sa, len);
    if (!ret && after_bind && sa->sa_family == AF_UNIX) {
        after_bind(reinterpret_cast<const sockaddr_un *>(sa)->sun_path);
    }
    return ret;
}

namespace rdmacm_mux::test {
namespace {

class SocketTest : public ::testing::Test {
protected:
    void SetUp() override
    {
        char tmpl[] = "/tmp/rdmacm-mux-sock.XXXXXX";
        ASSERT_TRUE(mkdtemp(tmpl));
        dir = tmpl;
        path = dir + "/mux.sock";
        victim = dir + "/victim";
        int fd = open(victim.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
        ASSERT_GE(fd, 0);
        close(fd);
        ASSERT_EQ(chmod(victim.c_str(), 0600), 0);
        /* A group that is not ours already, if we may pick one (root). */
        struct group *g = getuid() == 0 ? getgrgid(65534) : nullptr;
        g = g ? g : getgrgid(getgid());
        ASSERT_TRUE(g);
        group = g->gr_name;
        gid = g->gr_gid;
    }
    void TearDown() override
    {
        after_bind = nullptr;
        if (l.fd >= 0) {
            close(l.fd);
        }
        unlink(path.c_str());
        unlink(victim.c_str());
        rmdir(dir.c_str());
    }

    std::string dir, path, victim, group;
    gid_t gid = 0;
    Listener l;
};

TEST_F(SocketTest, SocketIs0660WithItsGroup)
{
    std::string err;
    ASSERT_TRUE(listen_at(path, group, &l, &err)) << err;
    struct stat st;
    ASSERT_EQ(lstat(path.c_str(), &st), 0);
    EXPECT_TRUE(S_ISSOCK(st.st_mode));
    EXPECT_EQ(st.st_mode & 07777, 0660u);
    EXPECT_EQ(st.st_gid, gid);
    EXPECT_EQ(st.st_ino, l.ino);
    /* Nothing else is left in the directory. */
    size_t entries = 0;
    if (DIR *d = opendir(dir.c_str())) {
        while (dirent *e = readdir(d)) {
            entries += e->d_name[0] != '.';
        }
        closedir(d);
    }
    EXPECT_EQ(entries, 2u); /* mux.sock, victim */
}

TEST_F(SocketTest, NothingFollowsTheSocketPathAfterBind)
{
    after_bind = [&](const std::string &bound) {
        if (bound.substr(0, bound.rfind('/')) == dir) {
            ASSERT_EQ(unlink(bound.c_str()), 0);
            ASSERT_EQ(symlink(victim.c_str(), bound.c_str()), 0);
        }
    };
    std::string err;
    listen_at(path, group, &l, &err);
    struct stat st;
    ASSERT_EQ(stat(victim.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0600u) << "chmod followed the symlink";
    EXPECT_EQ(st.st_gid, getgid()) << "chown followed the symlink";
}

TEST_F(SocketTest, LeftoverSocketIsReplacedALiveOneIsNot)
{
    std::string err;
    ASSERT_TRUE(listen_at(path, "", &l, &err)) << err;
    Listener second;
    EXPECT_FALSE(listen_at(path, "", &second, &err));
    EXPECT_NE(err.find("another rdmacm-mux is listening"), std::string::npos)
        << err;
    close(l.fd);
    l = Listener{};
    ASSERT_TRUE(listen_at(path, "", &l, &err)) << err;
}

TEST_F(SocketTest, PathThatIsNotASocketIsRefused)
{
    std::string err;
    EXPECT_FALSE(listen_at(victim, "", &l, &err));
    EXPECT_NE(err.find("not a socket"), std::string::npos) << err;
}

} // namespace
} // namespace rdmacm_mux::test

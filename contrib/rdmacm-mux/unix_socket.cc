/*
 * rdmacm-mux: the listening UNIX socket (unix_socket.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "unix_socket.h"

#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace rdmacm_mux {

namespace {

/* The address of @path; false when it does not fit sun_path. */
bool unix_addr(const std::string &path, sockaddr_un *sa, std::string *err)
{
    *sa = sockaddr_un{};
    sa->sun_family = AF_UNIX;
    if (path.size() >= sizeof(sa->sun_path)) {
        *err = "socket path too long: " + path;
        return false;
    }
    std::memcpy(sa->sun_path, path.c_str(), path.size() + 1);
    return true;
}

} // namespace

/* Checked before the port is opened, so that a second mux on the same
 * socket says so instead of tripping over the port's CM agent. */
bool socket_path_free(const std::string &path, std::string *err)
{
    sockaddr_un sa;
    if (!unix_addr(path, &sa, err)) {
        return false;
    }
    struct stat st;
    if (lstat(path.c_str(), &st)) {
        return true;
    }
    if (!S_ISSOCK(st.st_mode)) {
        *err = path + " exists and is not a socket";
        return false;
    }
    int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    bool alive = probe >= 0 && connect(probe, reinterpret_cast<sockaddr *>(&sa),
                                       sizeof(sa)) == 0;
    if (probe >= 0) {
        close(probe);
    }
    if (alive) {
        *err = "another rdmacm-mux is listening on " + path;
        return false;
    }
    return true;
}

bool listen_at(const std::string &path, const std::string &group_name,
               Listener *out, std::string *err)
{
    sockaddr_un sa;
    if (!socket_path_free(path, err) || !unix_addr(path, &sa, err)) {
        return false;
    }
    gid_t gid = static_cast<gid_t>(-1);
    if (!group_name.empty()) {
        struct group *g = getgrnam(group_name.c_str());
        if (!g) {
            *err = "no group '" + group_name + "'";
            return false;
        }
        gid = g->gr_gid;
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        *err = std::string("socket: ") + std::strerror(errno);
        return false;
    }
    unlink(path.c_str());
    /*
     * The socket file gets its mode and group as bind() creates it, not
     * from chmod()/chown() of @path afterwards: by then whoever may write
     * the directory could have put a symlink there, and root would change
     * the file it points to.  bind() makes the file with the mode the
     * umask leaves (0660: no moment where others may connect) and with
     * our effective group, which is @group_name's for the call (root may
     * take any group; anyone else only their own).  A set-group-ID
     * directory gives the file its own group instead: checked below.
     */
    gid_t egid = getegid();
    if (gid != static_cast<gid_t>(-1) && gid != egid && setegid(gid)) {
        *err = "cannot create the socket with group '" + group_name +
               "': " + std::strerror(errno) +
               " (run the mux as root, or as that group)";
        close(fd);
        return false;
    }
    mode_t old = umask(0117);
    int ret = bind(fd, reinterpret_cast<sockaddr *>(&sa), sizeof(sa));
    int bind_errno = errno;
    umask(old);
    if (getegid() != egid && setegid(egid)) {
        /* Cannot happen (we were that group a moment ago); no half-way
         * identity may go on. */
        std::abort();
    }
    if (ret) {
        *err = "bind " + path + ": " + std::strerror(bind_errno);
        close(fd);
        return false;
    }
    if (listen(fd, 16)) {
        *err = std::string("listen: ") + std::strerror(errno);
        unlink(path.c_str());
        close(fd);
        return false;
    }
    /* lstat: only to know our file again at exit (and to check the group);
     * nothing is changed through the path. */
    struct stat st {};
    lstat(path.c_str(), &st);
    if (gid != static_cast<gid_t>(-1) && S_ISSOCK(st.st_mode) &&
        st.st_gid != gid) {
        *err = path + " has group " + std::to_string(st.st_gid) + ", not '" +
               group_name + "' (a set-group-ID directory?)";
        unlink(path.c_str());
        close(fd);
        return false;
    }
    out->fd = fd;
    out->dev = st.st_dev;
    out->ino = st.st_ino;
    return true;
}

} // namespace rdmacm_mux

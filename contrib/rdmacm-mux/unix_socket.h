/*
 * rdmacm-mux: the listening UNIX socket -- whether a path may become ours,
 * and binding it with its mode and group.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef RDMACM_MUX_UNIX_SOCKET_H
#define RDMACM_MUX_UNIX_SOCKET_H

#include <sys/types.h>

#include <string>

namespace rdmacm_mux {

/*
 * Whether @path may become our socket: absent, or a socket file nobody
 * answers on (a leftover, replaced).  One that answers belongs to a running
 * mux.  @returns false with the reason in @err.
 */
bool socket_path_free(const std::string &path, std::string *err);

/* The listening socket listen_at() made, and the file it bound. */
struct Listener {
    int fd = -1;
    dev_t dev = 0;  /* the socket file, to remove only our own at exit */
    ino_t ino = 0;
};

/*
 * Binds a listening socket at @path with mode 0660 and group @group_name
 * (unless empty), replacing a leftover socket file.  @returns false with
 * the reason in @err.
 */
bool listen_at(const std::string &path, const std::string &group_name,
               Listener *out, std::string *err);

} // namespace rdmacm_mux

#endif /* RDMACM_MUX_UNIX_SOCKET_H */

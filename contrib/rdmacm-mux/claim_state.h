/*
 * rdmacm-mux: the claims that outlive the process -- the state file under
 * --state-dir that a restarted mux reads to keep each claim reserved for
 * its owner (docs/tools/rdmacm-mux.rst, "Claims").
 *
 * Text, one claim a line after a header line:
 *
 *   rdmacm-mux claims 1
 *   <GID, sysfs form> held <owner>        claimed when it was written
 *   <GID, sysfs form> <unix seconds> <owner>   reserved until then
 *
 * Written whole to a temporary file and renamed over the old one, so a
 * reader sees one complete version.  Read back strictly: the file is
 * root's, but it is input all the same; anything off and it is ignored
 * whole (the caller logs why and starts with nothing reserved).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef RDMACM_MUX_CLAIM_STATE_H
#define RDMACM_MUX_CLAIM_STATE_H

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "host_port.h"

namespace rdmacm_mux {

/* Bounds of what is read: a file this size holds far more lines than a mux
 * can have claims and reservations (--max-reservations at most 65536). */
constexpr size_t kClaimStateMaxBytes = 16u << 20;
constexpr size_t kClaimStateMaxLines = 200000;

/* One line: the GID's owner (HELLO's owner, never empty) and, for a
 * reservation, when it ends (CLOCK_REALTIME, whole seconds, at most
 * 9999999999). */
struct SavedClaim {
    std::string owner;
    bool held = false;
    uint64_t until_s = 0;
};
using SavedClaims = std::map<Gid, SavedClaim>;

/* HELLO's owner rule: 1..RDMACM_MUX_OWNER_LEN-1 bytes of printable ASCII
 * other than space. */
bool valid_owner(std::string_view s);

/* The GID as sysfs writes it: eight groups of four hex digits. */
std::string gid_text(const Gid &g);

std::string format_claims(const SavedClaims &claims);
/* @returns false with @err (which line, what) if @text is not exactly
 * what format_claims writes. */
bool parse_claims(std::string_view text, SavedClaims *out, std::string *err);

/*
 * Reads @path: a regular file (not through a symlink) owned by our
 * effective uid, at most kClaimStateMaxBytes.  @returns false with @err;
 * *@missing tells an absent file (a first start) from a bad one.
 */
bool read_claims_file(const std::string &path, std::string *text,
                      bool *missing, std::string *err);
/* Writes @text as @path, mode 0600: a temporary file beside it, fsync'd,
 * renamed over @path.  @returns false with @err. */
bool write_claims_file(const std::string &path, const std::string &text,
                       std::string *err);

} // namespace rdmacm_mux

#endif /* RDMACM_MUX_CLAIM_STATE_H */

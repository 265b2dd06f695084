/*
 * virtio-rdma core: a device's GID allow-list (property allowed-gids):
 * parsing the property's text and asking whether a GID is on the list.
 * The type, VrdmaGidAllow, is in virtio-rdma-core.h (the device and the MAD
 * link share it).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_VIRTIO_CORE_GID_ALLOW_H
#define HW_RDMA_VIRTIO_CORE_GID_ALLOW_H

#include <cstdint>
#include <string>
#include <string_view>

#include "hw/rdma/virtio-rdma-core.h"

namespace vrdma {

/*
 * Parses @text: entries separated by ';' and/or whitespace (a comma would
 * need doubling in -device), each an IPv4 address a.b.c.d[/n] (n 0..32;
 * the GID ::ffff:a.b.c.d, prefix 96 + n) or an IPv6 address [/n] (n
 * 0..128), without a prefix length a single address.  Refused: an entry
 * that is neither, a prefix length out of range, bits set past it (say
 * 10.1.0.0/16, not 10.1.2.3/16: a typo must not widen the list), more than
 * VRDMA_GID_ALLOW_MAX entries, and a text with no entry.  @returns true
 * and fills @out; or false, @out untouched and @why naming the entry.
 */
bool parse_gid_allow(std::string_view text, VrdmaGidAllow &out,
                     std::string &why);

/* Whether @gid (network order) lies in one of @allow's prefixes. */
bool gid_allowed(const VrdmaGidAllow &allow, const uint8_t gid[16]);

/* Whether every prefix of @allow is well-formed (len, host bits, n). */
bool gid_allow_valid(const VrdmaGidAllow &allow);

/* @gid as text: a.b.c.d for an IPv4-mapped GID, else IPv6 notation. */
std::string gid_text(const uint8_t gid[16]);

} // namespace vrdma

#endif

/*
 * rdmacm-mux: the host RDMA port as the mux sees it -- one CM MAD agent and
 * the port's GID table.  The seam between the mux (mux.h, no RDMA headers)
 * and libibumad/libibverbs (umad_port.cc); the unit tests put a fake here.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef RDMACM_MUX_HOST_PORT_H
#define RDMACM_MUX_HOST_PORT_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cm_mad.h"

namespace rdmacm_mux {

using Gid = std::array<uint8_t, 16>;

enum class GidType : uint8_t { ib, roce_v1, roce_v2 };

/* One valid entry of the host port's GID table. */
struct HostGid {
    Gid gid;
    uint32_t index;
    GidType type;
};

/*
 * The global route of a MAD on the host port (ib_user_mad's address, host
 * byte order).  Send: gid_index is the source, remote_gid the destination.
 * Receive: gid_index is the local GID the MAD arrived on, remote_gid its
 * sender (ib_umad fills both so the reply can use them as they are).
 */
struct MadAddr {
    Gid remote_gid{};
    uint32_t gid_index = 0;
    uint32_t flow_label = 0;
    uint16_t pkey_index = 0;
    uint8_t tclass = 0;
    uint8_t hop_limit = 0;
    bool grh = true;
};

/* A MAD read from the host port. */
struct ReceivedMad {
    MadAddr addr;
    uint32_t status = 0;  /* ib_user_mad.status: 0 or an errno */
    size_t len = 0;       /* MAD bytes the host delivered */
    std::array<uint8_t, kMadLen> mad{}; /* the first min(len, 256) */
};

class HostPort {
public:
    virtual ~HostPort() = default;

    virtual const std::string &device() const = 0;
    virtual uint32_t port() const = 0;
    /* Polls readable when recv_mad() may have a MAD. */
    virtual int mad_fd() const = 0;
    /* Polls readable when the port has events (drain_events()); or -1. */
    virtual int event_fd() const = 0;

    /*
     * Sends one MAD to QP1 at @addr with the GSI Q_Key, no response
     * expected (timeout 0, retries 0).  @returns 0 or a negative errno.
     */
    virtual int send_mad(const MadAddr &addr, const uint8_t *mad,
                         size_t len) = 0;
    /*
     * Reads one MAD without blocking.  @returns 1 with @out filled, 0 when
     * there is none, a negative errno when the port is unusable.
     */
    virtual int recv_mad(ReceivedMad *out) = 0;
    /*
     * The port's valid GID entries into @out.  @returns false (and logs why)
     * when the table cannot be read.
     */
    virtual bool gid_table(std::vector<HostGid> *out) = 0;
    /*
     * The GID at @index as the port holds it now (one entry, read fresh).
     * @returns false when it cannot be read or the entry is empty.
     */
    virtual bool gid_at(uint32_t index, Gid *out) = 0;
    virtual uint32_t pkey_table_len() const = 0;
    /* Handles the port's pending events; true if the GID table changed. */
    virtual bool drain_events() = 0;
};

} // namespace rdmacm_mux

#endif /* RDMACM_MUX_HOST_PORT_H */

/*
 * rdmacm-mux: the real host port -- the CM MAD agent through libibumad, the
 * GID and P_Key tables and port events through libibverbs.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef RDMACM_MUX_UMAD_PORT_H
#define RDMACM_MUX_UMAD_PORT_H

#include <memory>
#include <string>
#include <vector>

#include "host_port.h"

struct ibv_context;

namespace rdmacm_mux {

class UmadPort final : public HostPort {
public:
    /*
     * Opens port @port of host RDMA device @device and registers the CM
     * agent (class 0x07 version 2, method Send).  @returns nullptr with a
     * message for the user in @err: which devices or ports exist, and when
     * ib_cm holds the CM class, what to unload.
     */
    static std::unique_ptr<UmadPort> open(const std::string &device,
                                          uint32_t port, std::string *err);
    ~UmadPort() override;

    const std::string &device() const override { return device_; }
    uint32_t port() const override { return port_; }
    int mad_fd() const override { return mad_fd_; }
    int event_fd() const override;
    int send_mad(const MadAddr &addr, const uint8_t *mad,
                 size_t len) override;
    int recv_mad(ReceivedMad *out) override;
    bool gid_table(std::vector<HostGid> *out) override;
    bool gid_at(uint32_t index, Gid *out) override;
    uint32_t pkey_table_len() const override { return pkey_tbl_len_; }
    bool drain_events() override;

private:
    UmadPort(std::string device, uint32_t port) :
        device_(std::move(device)), port_(port) {}

    std::string device_;
    uint32_t port_;
    ibv_context *ctx_ = nullptr;
    int portid_ = -1;
    int agent_ = -1;
    int mad_fd_ = -1;
    uint32_t pkey_tbl_len_ = 0;
    size_t gid_entries_ = 0; /* room for every port's GIDs */
    std::vector<uint8_t> buf_; /* ib_user_mad + MAD, for both directions */
};

} // namespace rdmacm_mux

#endif /* RDMACM_MUX_UMAD_PORT_H */

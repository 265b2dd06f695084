/*
 * virtio-rdma ibverbs backend: the host RDMA device and port a device in
 * backend=ibverbs mode stands on (libibverbs).
 *
 * Opened by name (ibv_get_device_list), it answers what realize must know
 * before the guest sees anything: that the port exists and is Ethernet
 * (RoCE), and the host's limits, which bound the device's (a guest may
 * never be promised more objects, SGEs or bytes than the host will give).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_VIRTIO_CORE_IB_HOST_DEVICE_H
#define HW_RDMA_VIRTIO_CORE_IB_HOST_DEVICE_H

#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>
#include <string>

#include "host_verbs.h"
#include "hw/rdma/virtio-rdma-ibverbs.h"

namespace vrdma::ib {

class HostDevice {
public:
    /*
     * Opens @name on @verbs (which must outlive the device; every later
     * host call goes through it) and queries port @port.  @returns the
     * device, or nullptr
     * with a message for the user in @err (which devices the host has,
     * which ports the device has, why the port is unusable).
     */
    static std::unique_ptr<HostDevice> open(HostVerbs &verbs,
                                            const std::string &name,
                                            unsigned port, std::string *err);
    ~HostDevice();
    HostDevice(const HostDevice &) = delete;
    HostDevice &operator=(const HostDevice &) = delete;

    /*
     * Lowers each limit in @lim above the host device's to the host's,
     * and sets the capabilities the host has less of (RD atomics, atomics).
     */
    void clamp(VrdmaLimits &lim) const;
    /* What `info rdma` / query-virtio-rdma show of the host side. */
    void describe(VrdmaIbHostInfo &info) const;

    HostVerbs &verbs() const { return verbs_; }
    ibv_context *context() const { return ctx_; }
    unsigned port() const { return port_; }
    uint32_t max_msg_sz() const { return port_attr_.max_msg_sz; }
    size_t gid_table_len() const
    {
        return static_cast<size_t>(port_attr_.gid_tbl_len);
    }

private:
    HostDevice(HostVerbs &verbs, ibv_context *ctx, unsigned port)
        : verbs_(verbs), ctx_(ctx), port_(port)
    {
    }

    HostVerbs &verbs_;
    ibv_context *ctx_;
    unsigned port_;
    ibv_device_attr dev_{};
    ibv_port_attr port_attr_{};
};

} // namespace vrdma::ib

#endif

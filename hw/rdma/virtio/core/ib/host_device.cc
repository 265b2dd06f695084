/*
 * virtio-rdma ibverbs backend: the host RDMA device and port (host_device.h),
 * and the C entry point realize checks it with.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "host_device.h"

#include "../config.h"

#include <net/if.h>

#include <algorithm>
#include <vector>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace vrdma::ib {

namespace {

/* IBV_MTU_256 (1) .. IBV_MTU_4096 (5) in bytes; 0 for anything else. */
uint32_t mtu_bytes(ibv_mtu mtu)
{
    return mtu >= IBV_MTU_256 && mtu <= IBV_MTU_4096 ? 128u << mtu : 0;
}

/* "rxe0, mlx5_0" (or "none"): what the user could have meant. */
std::string device_names(HostVerbs &v, ibv_device **list, int n)
{
    std::string names;
    for (int i = 0; i < n; i++) {
        names += (i ? ", " : "") + std::string(v.get_device_name(list[i]));
    }
    return n ? names : "none";
}

template <typename T>
void lower(T &v, long long host)
{
    if (host >= 0 && static_cast<unsigned long long>(v) >
                         static_cast<unsigned long long>(host)) {
        v = static_cast<T>(host);
    }
}

} // namespace

std::unique_ptr<HostDevice> HostDevice::open(HostVerbs &v,
                                             const std::string &name,
                                             unsigned port, std::string *err)
{
    int n = 0;
    ibv_device **list = v.get_device_list(&n);
    if (!list) {
        *err = "cannot list the host's RDMA devices: " +
               std::string(std::strerror(errno)) +
               " (is the kernel's ib_uverbs module loaded?)";
        return nullptr;
    }
    ibv_device *dev = nullptr;
    for (int i = 0; i < n && !dev; i++) {
        if (name == v.get_device_name(list[i])) {
            dev = list[i];
        }
    }
    if (!dev) {
        *err = "no host RDMA device '" + name + "' (the host has: " +
               device_names(v, list, n) + ")";
        v.free_device_list(list);
        return nullptr;
    }
    ibv_context *ctx = v.open_device(dev);
    const int open_err = errno;
    v.free_device_list(list);
    if (!ctx) {
        *err = "cannot open host RDMA device '" + name + "': " +
               std::strerror(open_err);
        return nullptr;
    }
    std::unique_ptr<HostDevice> d(new HostDevice(v, ctx, port));
    if (v.query_device(ctx, &d->dev_)) {
        *err = "cannot query host RDMA device '" + name + "'";
        return nullptr;
    }
    if (port < 1 || port > d->dev_.phys_port_cnt) {
        *err = "host RDMA device '" + name + "' has no port " +
               std::to_string(port) + " (ports 1.." +
               std::to_string(d->dev_.phys_port_cnt) + ")";
        return nullptr;
    }
    if (v.query_port(ctx, static_cast<uint8_t>(port), &d->port_attr_)) {
        *err = "cannot query port " + std::to_string(port) +
               " of host RDMA device '" + name + "'";
        return nullptr;
    }
    /* The guest sees a RoCE device: its GIDs are IP addresses. */
    if (d->port_attr_.link_layer != IBV_LINK_LAYER_ETHERNET) {
        *err = "port " + std::to_string(port) + " of host RDMA device '" +
               name + "' is not Ethernet (RoCE); virtio-rdma is RoCE only";
        return nullptr;
    }
    return d;
}

HostDevice::~HostDevice()
{
    verbs_.close_device(ctx_);
}

void HostDevice::clamp(VrdmaLimits &lim) const
{
    lower(lim.max_qp, dev_.max_qp);
    lower(lim.max_cq, dev_.max_cq);
    lower(lim.max_mr, dev_.max_mr);
    lower(lim.max_pd, dev_.max_pd);
    lower(lim.max_ah, dev_.max_ah);
    lower(lim.max_sge, dev_.max_sge);
    lower(lim.max_mr_size, static_cast<long long>(
                               std::min<uint64_t>(dev_.max_mr_size, INT64_MAX)));
    /* What the guest is told the device does (its config space). */
    lim.max_qp_rd_atom = static_cast<uint32_t>(std::max(dev_.max_qp_rd_atom, 1));
    lim.max_qp_init_rd_atom =
        static_cast<uint32_t>(std::max(dev_.max_qp_init_rd_atom, 1));
    lim.no_atomics = dev_.atomic_cap == IBV_ATOMIC_NONE;
    /* A CQ ring stands for a host CQ of its depth. */
    lim.max_ring_cqe = max_ring_cqe(lim);
    if (dev_.max_cqe > 0) {
        lower(lim.max_ring_cqe, dev_.max_cqe);
    }
    /* A QP ring stands for a host queue of its depth. */
    lim.max_ring_qp_wr = max_ring_qp_wr(lim);
    if (dev_.max_qp_wr > 0) {
        lower(lim.max_ring_qp_wr, dev_.max_qp_wr);
    }
    /* An SRQ ring stands for a host SRQ of its depth and SGEs. */
    lower(lim.max_srq, dev_.max_srq);
    lim.max_srq_wr = max_srq_wr(lim);
    lim.max_srq_sge = max_srq_sge(lim);
    if (dev_.max_srq_wr > 0 && dev_.max_srq_sge > 0) {
        lower(lim.max_srq_wr, dev_.max_srq_wr);
        lower(lim.max_srq_sge, dev_.max_srq_sge);
    } else {
        lim.max_srq = 0; /* max_srq_wr 0 would mean the core's deepest */
    }
}

void HostDevice::describe(VrdmaIbHostInfo &info) const
{
    info = VrdmaIbHostInfo{};
    std::snprintf(info.ibdev, sizeof(info.ibdev), "%s",
                  verbs_.get_device_name(ctx_->device));
    std::snprintf(info.fw_ver, sizeof(info.fw_ver), "%s", dev_.fw_ver);
    info.port = port_;
    /* The netdev of the port's GIDs: where the guest's addresses must go. */
    std::vector<ibv_gid_entry> tab(gid_table_len() ? gid_table_len() : 1);
    const ssize_t got = verbs_.query_gid_table(ctx_, tab.data(), tab.size(),
                                               0);
    for (ssize_t i = 0; i < got; i++) {
        char name[IF_NAMESIZE];
        if (tab[i].port_num == port_ && tab[i].ndev_ifindex &&
            if_indextoname(tab[i].ndev_ifindex, name)) {
            std::snprintf(info.netdev, sizeof(info.netdev), "%s", name);
            break;
        }
    }
    info.port_state = port_attr_.state;
    info.active_mtu = mtu_bytes(port_attr_.active_mtu);
    info.max_msg_sz = port_attr_.max_msg_sz;
    info.gid_tbl_len = static_cast<uint32_t>(port_attr_.gid_tbl_len);
    info.vendor_id = dev_.vendor_id;
    info.vendor_part_id = dev_.vendor_part_id;
}

bool probe(HostVerbs &verbs, const char *ibdev, unsigned ibport,
           VrdmaLimits *lim, VrdmaIbHostInfo *info, char *err, size_t errlen)
{
    std::string why;
    auto dev = HostDevice::open(verbs, ibdev ? ibdev : "", ibport, &why);
    if (!dev) {
        std::snprintf(err, errlen, "%s", why.c_str());
        return false;
    }
    dev->clamp(*lim);
    dev->describe(*info);
    return true;
}

} // namespace vrdma::ib

extern "C" {

bool vrdma_ibverbs_built(void)
{
    return true;
}

bool vrdma_ib_probe(const char *ibdev, unsigned ibport, VrdmaLimits *lim,
                    VrdmaIbHostInfo *info, char *err, size_t errlen)
{
    return vrdma::ib::probe(vrdma::ib::system_verbs(), ibdev, ibport, lim,
                            info, err, errlen);
}

} // extern "C"

/*
 * rdmacm-mux: the real host port (umad_port.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "umad_port.h"

#include <endian.h>
#include <fcntl.h>
#include <infiniband/umad.h>
#include <infiniband/verbs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include "log.h"

namespace rdmacm_mux {

namespace {

/* Room for one MAD of any size a non-RMPP agent can get (OPA: 2048). */
constexpr size_t kRecvRoom = 2048;

/* "rxe0, mlx5_0" (or "none"): what the user could have meant. */
std::string device_names(ibv_device **list, int n)
{
    std::string names;
    for (int i = 0; i < n; i++) {
        names += (i ? ", " : "") + std::string(ibv_get_device_name(list[i]));
    }
    return n ? names : "none";
}

std::string cm_conflict(const std::string &device, uint32_t port, int err)
{
    std::string s = "cannot register the CM MAD agent (class 0x07 version 2, "
                    "method Send) on " + device + " port " +
                    std::to_string(port) + ": " + std::strerror(err) +
                    ".  One agent per port may own it (the kernel log says "
                    "\"Method 3 already in use\"): ";
    if (access("/sys/module/ib_cm", F_OK) == 0) {
        s += "the kernel's ib_cm is loaded and holds it on every port.  "
             "Unload it (modprobe -r rdma_ucm rdma_cm iw_cm ib_cm; whatever "
             "uses RDMA-CM on this host -- NVMe-oF, iSER, SRP, NFS over "
             "RDMA -- keeps it loaded), or run the mux on a host or device "
             "that does not use RDMA-CM";
    } else {
        s += "another rdmacm-mux or CM agent already runs on this port";
    }
    return s;
}

} // namespace

std::unique_ptr<UmadPort> UmadPort::open(const std::string &device,
                                         uint32_t port, std::string *err)
{
    std::unique_ptr<UmadPort> p(new UmadPort(device, port));
    int n = 0;
    ibv_device **list = ibv_get_device_list(&n);
    if (!list) {
        *err = std::string("cannot list the host's RDMA devices: ") +
               std::strerror(errno) + " (is ib_uverbs loaded?)";
        return nullptr;
    }
    ibv_device *dev = nullptr;
    for (int i = 0; i < n && !dev; i++) {
        if (device == ibv_get_device_name(list[i])) {
            dev = list[i];
        }
    }
    if (!dev) {
        *err = "no host RDMA device '" + device + "' (the host has: " +
               device_names(list, n) + ")";
        ibv_free_device_list(list);
        return nullptr;
    }
    p->ctx_ = ibv_open_device(dev);
    ibv_free_device_list(list);
    if (!p->ctx_) {
        *err = "cannot open " + device + ": " + std::strerror(errno);
        return nullptr;
    }
    ibv_device_attr da;
    ibv_port_attr pa;
    if (ibv_query_device(p->ctx_, &da)) {
        *err = "cannot query " + device;
        return nullptr;
    }
    if (port < 1 || port > da.phys_port_cnt ||
        ibv_query_port(p->ctx_, static_cast<uint8_t>(port), &pa)) {
        *err = device + " has no port " + std::to_string(port) +
               " (ports 1.." + std::to_string(da.phys_port_cnt) + ")";
        return nullptr;
    }
    p->pkey_tbl_len_ = pa.pkey_tbl_len;
    p->gid_entries_ = static_cast<size_t>(pa.gid_tbl_len) * da.phys_port_cnt;
    int fl = fcntl(p->ctx_->async_fd, F_GETFL);
    if (fl < 0 || fcntl(p->ctx_->async_fd, F_SETFL, fl | O_NONBLOCK)) {
        *err = std::string("async event fd: ") + std::strerror(errno);
        return nullptr;
    }

    if (umad_init() < 0) {
        *err = "cannot initialise libibumad";
        return nullptr;
    }
    p->portid_ = umad_open_port(device.c_str(), static_cast<int>(port));
    if (p->portid_ < 0) {
        *err = "cannot open the MAD device of " + device + " port " +
               std::to_string(port) + ": " + std::strerror(-p->portid_) +
               " (is ib_umad loaded?  /dev/infiniband/umad* are root's)";
        return nullptr;
    }
    long mask[16 / sizeof(long)] = {};
    constexpr unsigned bits = 8 * sizeof(long);
    mask[kMethodSend / bits] |= 1L << (kMethodSend % bits);
    errno = 0;
    p->agent_ = umad_register(p->portid_, kCmClass, kCmClassVersion, 0, mask);
    if (p->agent_ < 0) {
        *err = cm_conflict(device, port, errno ? errno : -p->agent_);
        return nullptr;
    }
    p->mad_fd_ = umad_get_fd(p->portid_);
    fl = fcntl(p->mad_fd_, F_GETFL);
    if (fl < 0 || fcntl(p->mad_fd_, F_SETFL, fl | O_NONBLOCK)) {
        *err = std::string("MAD fd: ") + std::strerror(errno);
        return nullptr;
    }
    p->buf_.resize(umad_size() + kRecvRoom);
    return p;
}

UmadPort::~UmadPort()
{
    if (agent_ >= 0) {
        umad_unregister(portid_, agent_);
    }
    if (portid_ >= 0) {
        umad_close_port(portid_);
    }
    if (ctx_) {
        ibv_close_device(ctx_);
    }
}

int UmadPort::event_fd() const
{
    return ctx_->async_fd;
}

int UmadPort::send_mad(const MadAddr &addr, const uint8_t *mad, size_t len)
{
    /* ib_user_mad's gid_index is 8 bits wide. */
    if (addr.gid_index > UINT8_MAX || len > kRecvRoom) {
        return -ERANGE;
    }
    std::memset(buf_.data(), 0, umad_size() + len);
    ib_mad_addr_t *a = umad_get_mad_addr(buf_.data());
    a->qpn = htobe32(kGsiQpn);
    a->qkey = htobe32(kGsiQkey);
    a->grh_present = 1;
    a->gid_index = static_cast<uint8_t>(addr.gid_index);
    a->hop_limit = addr.hop_limit;
    a->traffic_class = addr.tclass;
    std::memcpy(a->gid, addr.remote_gid.data(), sizeof(a->gid));
    a->flow_label = htobe32(addr.flow_label);
    umad_set_pkey(buf_.data(), addr.pkey_index);
    std::memcpy(umad_get_mad(buf_.data()), mad, len);
    /* No response is expected: timeout 0, and the CM retries itself. */
    int ret = umad_send(portid_, agent_, buf_.data(), static_cast<int>(len),
                        0, 0);
    return ret < 0 ? ret : 0;
}

int UmadPort::recv_mad(ReceivedMad *out)
{
    int len = static_cast<int>(buf_.size() - umad_size());
    int ret = umad_recv(portid_, buf_.data(), &len, 0);
    if (ret == -EAGAIN || ret == -EWOULDBLOCK) {
        return 0;
    }
    if (ret < 0) {
        /* -ENOSPC would leave the MAD queued for ever: never for a
         * non-RMPP agent, whose MADs fit kRecvRoom. */
        return ret;
    }
    auto *u = static_cast<ib_user_mad_t *>(static_cast<void *>(buf_.data()));
    const ib_mad_addr_t &a = u->addr;
    out->status = u->status;
    out->len = len > 0 ? static_cast<size_t>(len) : 0;
    out->addr.grh = a.grh_present;
    out->addr.gid_index = a.gid_index;
    out->addr.hop_limit = a.hop_limit;
    out->addr.tclass = a.traffic_class;
    out->addr.flow_label = be32toh(a.flow_label);
    out->addr.pkey_index = static_cast<uint16_t>(umad_get_pkey(buf_.data()));
    std::memcpy(out->addr.remote_gid.data(), a.gid, sizeof(a.gid));
    std::memcpy(out->mad.data(), umad_get_mad(buf_.data()),
                std::min(out->len, out->mad.size()));
    return 1;
}

bool UmadPort::gid_table(std::vector<HostGid> *out)
{
    std::vector<ibv_gid_entry> e(gid_entries_);
    ssize_t n = ibv_query_gid_table(ctx_, e.data(), e.size(), 0);
    if (n < 0) {
        log(Level::warning, "cannot read the GID table of " + device_ + ": " +
                                std::strerror(static_cast<int>(-n)));
        return false;
    }
    out->clear();
    for (ssize_t i = 0; i < n; i++) {
        if (e[i].port_num != port_) {
            continue;
        }
        HostGid h;
        std::memcpy(h.gid.data(), e[i].gid.raw, h.gid.size());
        h.index = e[i].gid_index;
        h.type = e[i].gid_type == IBV_GID_TYPE_ROCE_V2 ? GidType::roce_v2
                 : e[i].gid_type == IBV_GID_TYPE_ROCE_V1 ? GidType::roce_v1
                                                         : GidType::ib;
        out->push_back(h);
    }
    return true;
}

bool UmadPort::gid_at(uint32_t index, Gid *out)
{
    ibv_gid g;
    if (index > INT_MAX ||
        ibv_query_gid(ctx_, static_cast<uint8_t>(port_),
                      static_cast<int>(index), &g)) {
        return false;
    }
    std::memcpy(out->data(), g.raw, out->size());
    return std::any_of(out->begin(), out->end(),
                       [](uint8_t b) { return b != 0; });
}

bool UmadPort::drain_events()
{
    bool gids_changed = false;
    ibv_async_event ev;
    while (ibv_get_async_event(ctx_, &ev) == 0) {
        std::string where = device_ + " port " + std::to_string(port_);
        switch (ev.event_type) {
        case IBV_EVENT_GID_CHANGE:
            if (ev.element.port_num == static_cast<int>(port_)) {
                gids_changed = true;
                log(Level::debug, where + ": GID table changed");
            }
            break;
        case IBV_EVENT_PORT_ACTIVE:
            if (ev.element.port_num == static_cast<int>(port_)) {
                log(Level::info, where + " is active");
            }
            break;
        case IBV_EVENT_PORT_ERR:
            if (ev.element.port_num == static_cast<int>(port_)) {
                log(Level::warning, where + " is down");
            }
            break;
        case IBV_EVENT_DEVICE_FATAL:
            log(Level::error, device_ + ": fatal device error");
            break;
        default:
            break;
        }
        ibv_ack_async_event(&ev);
    }
    return gids_changed;
}

} // namespace rdmacm_mux

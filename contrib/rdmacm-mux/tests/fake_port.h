/*
 * rdmacm-mux tests: a fake host port -- a GID table the test edits, MADs it
 * delivers, the MADs the mux sent -- for the unit tests and the fuzz target.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef RDMACM_MUX_TESTS_FAKE_PORT_H
#define RDMACM_MUX_TESTS_FAKE_PORT_H

#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <deque>
#include <string>
#include <vector>

#include "host_port.h"

namespace rdmacm_mux::test {

/* A GID from its last bytes: ::ffff:10.0.0.<n> (an IPv4-mapped RoCE v2
 * GID), or fe80::<n> when @link_local. */
inline Gid gid_of(uint8_t n, bool link_local = false)
{
    Gid g{};
    if (link_local) {
        g[0] = 0xfe;
        g[1] = 0x80;
    } else {
        g[10] = 0xff;
        g[11] = 0xff;
        g[12] = 10;
    }
    g[15] = n;
    return g;
}

/* Its fds are eventfds, so the mux's epoll sees MADs and events come. */
class FakePort final : public HostPort {
public:
    struct Sent {
        MadAddr addr;
        std::vector<uint8_t> mad;
    };

    FakePort()
    {
        mad_efd_ = eventfd(0, EFD_NONBLOCK | EFD_SEMAPHORE | EFD_CLOEXEC);
        ev_efd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        gids = {
            {gid_of(1, true), 0, GidType::roce_v2},
            {gid_of(1), 1, GidType::roce_v2},
            {gid_of(2), 2, GidType::roce_v2},
            {gid_of(3), 3, GidType::roce_v2},
        };
    }
    ~FakePort() override
    {
        close(mad_efd_);
        close(ev_efd_);
    }

    const std::string &device() const override { return dev_; }
    uint32_t port() const override { return 1; }
    int mad_fd() const override { return mad_efd_; }
    int event_fd() const override { return ev_efd_; }
    int send_mad(const MadAddr &addr, const uint8_t *mad,
                 size_t len) override
    {
        if (send_ret) {
            return send_ret;
        }
        sent.push_back({addr, std::vector<uint8_t>(mad, mad + len)});
        return 0;
    }
    int recv_mad(ReceivedMad *out) override
    {
        if (recv_error) {
            return recv_error;
        }
        uint64_t v;
        if (inbound.empty() || read(mad_efd_, &v, sizeof(v)) != sizeof(v)) {
            return 0;
        }
        *out = inbound.front();
        inbound.pop_front();
        return 1;
    }
    bool gid_table(std::vector<HostGid> *out) override
    {
        gid_reads++;
        *out = gids;
        return true;
    }
    bool gid_at(uint32_t index, Gid *out) override
    {
        gid_queries++;
        for (const HostGid &h : gids) {
            if (h.index == index) {
                *out = h.gid;
                return true;
            }
        }
        return false;
    }
    uint32_t pkey_table_len() const override { return 1; }
    bool drain_events() override
    {
        uint64_t v;
        return read(ev_efd_, &v, sizeof(v)) == sizeof(v);
    }

    /* @m arrives from the host port. */
    void deliver(const ReceivedMad &m)
    {
        inbound.push_back(m);
        kick(mad_efd_);
    }
    /* The kernel's IBV_EVENT_GID_CHANGE. */
    void gid_event() { kick(ev_efd_); }

    std::vector<HostGid> gids;
    std::vector<Sent> sent;
    std::deque<ReceivedMad> inbound;
    int send_ret = 0;
    int recv_error = 0;
    unsigned gid_reads = 0;
    unsigned gid_queries = 0;

private:
    static void kick(int efd)
    {
        uint64_t one = 1;
        if (write(efd, &one, sizeof(one)) != sizeof(one)) {
            abort();
        }
    }

    std::string dev_ = "rxe0";
    int mad_efd_;
    int ev_efd_;
};

} // namespace rdmacm_mux::test

#endif /* RDMACM_MUX_TESTS_FAKE_PORT_H */

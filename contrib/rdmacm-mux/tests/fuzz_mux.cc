/*
 * libFuzzer target: the mux against up to four clients on socketpairs and a
 * fake host port, driven by the input as a script of steps -- a client
 * connects, writes bytes, reads, hangs up; a MAD arrives from the host; the
 * host GID table changes; time passes (timeouts, throttles).  Finds what
 * the sanitizers see in framing, claims, routing and the bounds.  Built with -Dfuzz=true
 * (scripts/fuzz.sh builds it in build/unit-san).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <endian.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

#include "fake_port.h"
#include "hw/rdma/rdmacm-mux-proto.h"
#include "log.h"
#include "mux.h"

using namespace rdmacm_mux;
using rdmacm_mux::test::FakePort;
using rdmacm_mux::test::gid_of;

namespace {

/* The input, consumed front to back; zeros once it runs out. */
struct Input {
    const uint8_t *p;
    size_t n;

    bool empty() const { return n == 0; }
    uint8_t byte()
    {
        if (!n) {
            return 0;
        }
        n--;
        return *p++;
    }
    size_t take(uint8_t *out, size_t want)
    {
        size_t k = want < n ? want : n;
        std::memcpy(out, p, k);
        p += k;
        n -= k;
        return k;
    }
};

constexpr int kClients = 4;

/* Client @fd sends message @type with @payload (@len bytes) as it is. */
void send_msg(int fd, uint16_t type, uint32_t seq, const void *payload,
              size_t len)
{
    if (fd < 0) {
        return;
    }
    rdmacm_mux_hdr h{htole32(RDMACM_MUX_MAGIC), htole16(RDMACM_MUX_VERSION),
                     htole16(type), htole32(seq),
                     htole32(static_cast<uint32_t>(len))};
    uint8_t buf[RDMACM_MUX_MAX_MSG];
    std::memcpy(buf, &h, sizeof(h));
    std::memcpy(buf + sizeof(h), payload, len);
    send(fd, buf, sizeof(h) + len, MSG_DONTWAIT | MSG_NOSIGNAL);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool quiet = [] {
        set_log_sink([](Level, std::string_view) {});
        return true;
    }();
    (void)quiet;

    uint64_t clock = 1;
    FakePort port;
    Config cfg;
    cfg.max_clients = 3;
    cfg.max_per_pid = 2; /* clients 0 and 2 are one process, 1 and 3 one */
    cfg.max_gids = 2;
    cfg.gid_burst = 4;
    cfg.queue_mads = 2;
    cfg.mad_burst = 4;
    cfg.claim_grace_ns = 1 << 24; /* a few of the clock's steps below */
    cfg.max_reservations = 2;
    cfg.now_ns = [&clock] { return clock; };
    cfg.wall_ns = [&clock] { return clock; };
    Mux mux(port, cfg);
    std::string err;
    if (!mux.init(&err)) {
        abort();
    }
    std::array<int, kClients> fds;
    fds.fill(-1);

    Input in{data, size};
    while (!in.empty()) {
        uint8_t op = in.byte();
        int k = (op >> 4) % kClients;
        switch (op & 15) {
        case 0: { /* client k connects */
            if (fds[k] >= 0) {
                break;
            }
            int sv[2];
            if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
                abort();
            }
            int small = 4096;
            setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
            fds[k] = sv[1];
            mux.add_client(sv[0], Peer{1 + (k & 1), 0, 0, {}});
            break;
        }
        case 1: { /* client k writes up to 255 bytes of the input */
            uint8_t buf[255];
            size_t len = in.take(buf, in.byte());
            if (fds[k] >= 0) {
                send(fds[k], buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);
            }
            break;
        }
        case 2: { /* client k reads what is there */
            uint8_t buf[4096];
            while (fds[k] >= 0 &&
                   recv(fds[k], buf, sizeof(buf), MSG_DONTWAIT) > 0) {
            }
            break;
        }
        case 3: /* client k hangs up */
            if (fds[k] >= 0) {
                close(fds[k]);
                fds[k] = -1;
            }
            break;
        case 4: { /* a MAD from the host */
            ReceivedMad m;
            m.addr.gid_index = in.byte() % 6;
            uint8_t flags = in.byte();
            m.status = flags & 1 ? 110 : 0;
            m.addr.grh = !(flags & 2);
            m.len = flags & 4 ? in.byte() : 256;
            m.addr.remote_gid = gid_of(in.byte());
            in.take(m.mad.data(), m.mad.size());
            port.deliver(m);
            break;
        }
        case 5: { /* the host GID table changes */
            uint8_t b = in.byte();
            if (!port.gids.empty() && (b & 1)) {
                size_t i = (b >> 1) % port.gids.size();
                port.gids.erase(port.gids.begin() + static_cast<ptrdiff_t>(i));
            } else {
                port.gids.push_back({gid_of(b >> 1), uint32_t(b % 8),
                                     b & 2 ? GidType::roce_v1
                                           : GidType::roce_v2});
            }
            if (b & 0x80) {
                port.gid_event();
            }
            break;
        }
        case 6: /* time passes */
            clock += uint64_t(in.byte()) << 20;
            break;
        case 7: /* the host refuses sends, or takes them again */
            port.send_ret = port.send_ret ? 0 : -EINVAL;
            break;
        /* Well-framed messages, so the fuzzer need not find the framing
         * before it can explore what comes after. */
        case 8: { /* client k: HELLO */
            rdmacm_mux_hello h{};
            uint8_t b = in.byte();
            std::memcpy(h.ibdev, b & 1 ? "rxe1" : "rxe0", 4);
            h.port = htole32(b & 2 ? 2 : 1);
            h.version = htole32(RDMACM_MUX_VERSION + (b & 4 ? 1 : 0));
            /* Two owners and nobody; no list, everything, 10.0.0.0/120 (the
             * fake port's table), or a prefix and its flaws from the input. */
            const char *owners[] = {"vm-a", "vm-b", "", "vm-a"};
            std::memcpy(h.owner, owners[(b >> 3) & 3],
                        std::strlen(owners[(b >> 3) & 3]));
            switch ((b >> 5) & 3) {
            case 0:
                break;
            case 1:
                h.allow_n = htole32(1);
                break;
            case 2: {
                Gid net = gid_of(0);
                h.allow_n = htole32(1);
                std::memcpy(h.allow[0].gid, net.data(), 16);
                h.allow[0].len = 120;
                break;
            }
            case 3:
                h.allow_n = htole32(in.byte() % (RDMACM_MUX_ALLOW_MAX + 2));
                in.take(reinterpret_cast<uint8_t *>(&h.allow[0]),
                        sizeof(h.allow[0]));
                break;
            }
            /* Or the header of an older version (its layout unknown). */
            if (b & 0x80 && fds[k] >= 0) {
                rdmacm_mux_hdr old{htole32(RDMACM_MUX_MAGIC), htole16(2),
                                   htole16(RDMACM_MUX_HELLO), 1, htole32(72)};
                send(fds[k], &old, sizeof(old), MSG_DONTWAIT | MSG_NOSIGNAL);
                break;
            }
            send_msg(fds[k], RDMACM_MUX_HELLO, b, &h, sizeof(h));
            break;
        }
        case 9: { /* client k: GID_ADD / GID_DEL of a GID near the table's */
            uint8_t b = in.byte();
            rdmacm_mux_gid g;
            Gid gid = gid_of(b >> 2, b & 2);
            std::memcpy(g.gid, gid.data(), sizeof(g.gid));
            send_msg(fds[k], b & 1 ? RDMACM_MUX_GID_DEL : RDMACM_MUX_GID_ADD,
                     b, &g, sizeof(g));
            break;
        }
        case 10: { /* client k: MAD_SEND, route and MAD from the input */
            rdmacm_mux_mad m{};
            uint8_t b = in.byte();
            Gid sgid = gid_of(b >> 2, b & 2);
            Gid dgid = gid_of(in.byte());
            std::memcpy(m.local_gid, sgid.data(), sizeof(m.local_gid));
            std::memcpy(m.remote_gid, dgid.data(), sizeof(m.remote_gid));
            m.flow_label = htole32(b & 1 ? 0x100000 : 0);
            m.pkey_index = htole16(in.byte() & 1);
            m.hop_limit = 64;
            m.mad_len = htole32(b & 0x80 ? in.byte() : RDMACM_MUX_MAD_LEN);
            in.take(m.mad, sizeof(m.mad));
            send_msg(fds[k], RDMACM_MUX_MAD_SEND, b, &m, sizeof(m));
            break;
        }
        default: { /* client k: a header of any type and length, no body */
            uint16_t type = in.byte();
            uint32_t len = in.byte();
            rdmacm_mux_hdr h{htole32(RDMACM_MUX_MAGIC),
                             htole16(RDMACM_MUX_VERSION), htole16(type), 0,
                             htole32(len)};
            if (fds[k] >= 0) {
                send(fds[k], &h, sizeof(h), MSG_DONTWAIT | MSG_NOSIGNAL);
            }
            break;
        }
        }
        mux.poll(0);
        port.sent.clear();
        if (mux.client_count() > cfg.max_clients) {
            abort();
        }
    }
    for (int fd : fds) {
        if (fd >= 0) {
            close(fd);
        }
    }
    return 0;
}

/*
 * rdmacm-mux unit tests: clients on socketpairs to a mux on a fake port
 * (fake_port.h), and the message builders the tests speak the protocol with.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef RDMACM_MUX_TESTS_MUX_FIXTURE_H
#define RDMACM_MUX_TESTS_MUX_FIXTURE_H

#include <endian.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fake_port.h"
#include "hw/rdma/rdmacm-mux-proto.h"
#include "mux.h"

namespace rdmacm_mux::test {

/* A CM MAD: base version 1, class 0x07 version 2, Send, attribute @attr. */
inline std::array<uint8_t, RDMACM_MUX_MAD_LEN> cm_mad(uint16_t attr = 0x0010,
                                                      uint8_t fill = 0x5a)
{
    std::array<uint8_t, RDMACM_MUX_MAD_LEN> m;
    m.fill(fill);
    m[0] = 1;
    m[1] = 0x07;
    m[2] = 2;
    m[3] = 0x03;
    m[16] = static_cast<uint8_t>(attr >> 8);
    m[17] = static_cast<uint8_t>(attr);
    return m;
}

/* A MAD from the host: CM REQ at @index from 10.0.0.99. */
inline ReceivedMad host_mad(uint32_t index, uint8_t fill = 0x5a)
{
    ReceivedMad m;
    m.addr.gid_index = index;
    m.addr.remote_gid = gid_of(99);
    m.addr.flow_label = 0x12345;
    m.addr.pkey_index = 0;
    m.addr.tclass = 0x20;
    m.addr.hop_limit = 64;
    m.addr.grh = true;
    m.len = RDMACM_MUX_MAD_LEN;
    m.mad = cm_mad(0x0010, fill);
    return m;
}

/* One message as bytes: header (@len defaults to the payload's) + payload. */
inline std::vector<uint8_t> frame(uint16_t type, uint32_t seq,
                                  const void *payload, size_t payload_len,
                                  std::optional<uint32_t> len = std::nullopt,
                                  uint32_t magic = RDMACM_MUX_MAGIC,
                                  uint16_t version = RDMACM_MUX_VERSION)
{
    rdmacm_mux_hdr h;
    h.magic = htole32(magic);
    h.version = htole16(version);
    h.type = htole16(type);
    h.seq = htole32(seq);
    h.len = htole32(len ? *len : static_cast<uint32_t>(payload_len));
    std::vector<uint8_t> v(sizeof(h) + payload_len);
    std::memcpy(v.data(), &h, sizeof(h));
    if (payload_len) {
        std::memcpy(v.data() + sizeof(h), payload, payload_len);
    }
    return v;
}

/* An allow-list entry: @gid's first @len bits. */
struct Prefix {
    Gid gid;
    uint8_t len;
};
using AllowList = std::vector<Prefix>;

/* Every GID: what the tests that are not about allow-lists send. */
inline const AllowList kAllowAll = {{Gid{}, 0}};
/* ::ffff:10.0.0.0/120, gid_of(0..255): the fake port's 10.0.0.1..3. */
inline const AllowList kTenNet = {{gid_of(0), 120}};
/* One second of the injected clocks (Config::now_ns, wall_ns). */
inline constexpr uint64_t kSec = 1000000000ull;

/* HELLO's payload: @owner and @allow as given, the rest as @ibdev etc. */
inline rdmacm_mux_hello hello_payload(const char *ibdev = "rxe0",
                                      uint32_t port = 1,
                                      uint32_t version = RDMACM_MUX_VERSION,
                                      const std::string &owner = "",
                                      const AllowList &allow = kAllowAll)
{
    rdmacm_mux_hello h{};
    std::strncpy(h.ibdev, ibdev, sizeof(h.ibdev) - 1);
    h.port = htole32(port);
    h.version = htole32(version);
    std::strncpy(h.owner, owner.c_str(), sizeof(h.owner) - 1);
    h.allow_n = htole32(static_cast<uint32_t>(allow.size()));
    for (size_t i = 0; i < allow.size() && i < RDMACM_MUX_ALLOW_MAX; i++) {
        std::memcpy(h.allow[i].gid, allow[i].gid.data(), 16);
        h.allow[i].len = allow[i].len;
    }
    return h;
}

inline std::vector<uint8_t> hello_msg(const char *ibdev = "rxe0",
                                      uint32_t port = 1,
                                      uint32_t version = RDMACM_MUX_VERSION,
                                      const std::string &owner = "",
                                      const AllowList &allow = kAllowAll)
{
    rdmacm_mux_hello h = hello_payload(ibdev, port, version, owner, allow);
    return frame(RDMACM_MUX_HELLO, 1, &h, sizeof(h));
}

inline std::vector<uint8_t> gid_msg(uint16_t type, uint32_t seq,
                                    const Gid &gid)
{
    rdmacm_mux_gid g;
    std::memcpy(g.gid, gid.data(), sizeof(g.gid));
    return frame(type, seq, &g, sizeof(g));
}

/* MAD_SEND of a CM REQ from @sgid to 10.0.0.99; @edit changes it first. */
template <typename Edit>
std::vector<uint8_t> mad_send_msg(const Gid &sgid, Edit edit)
{
    rdmacm_mux_mad m{};
    std::memcpy(m.local_gid, sgid.data(), sizeof(m.local_gid));
    Gid dgid = gid_of(99);
    std::memcpy(m.remote_gid, dgid.data(), sizeof(m.remote_gid));
    m.flow_label = htole32(0xabcde);
    m.pkey_index = htole16(0);
    m.tclass = 0x68;
    m.hop_limit = 64;
    m.mad_len = htole32(RDMACM_MUX_MAD_LEN);
    auto mad = cm_mad();
    std::memcpy(m.mad, mad.data(), mad.size());
    edit(m);
    return frame(RDMACM_MUX_MAD_SEND, 9, &m, sizeof(m));
}

inline std::vector<uint8_t> mad_send_msg(const Gid &sgid)
{
    return mad_send_msg(sgid, [](rdmacm_mux_mad &) {});
}

struct Msg {
    rdmacm_mux_hdr hdr;
    std::vector<uint8_t> payload;

    uint16_t type() const { return le16toh(hdr.type); }
    template <typename T>
    T as() const
    {
        T t{};
        EXPECT_EQ(payload.size(), sizeof(T));
        std::memcpy(&t, payload.data(), std::min(sizeof(T), payload.size()));
        return t;
    }
};

class MuxTest : public ::testing::Test {
protected:
    /* The client end of one connection to the mux. */
    struct Conn {
        int fd = -1;
        uint64_t id = 0;
        std::vector<uint8_t> in;
    };

    void SetUp() override
    {
        set_log_sink([this](Level, std::string_view s) {
            logs.emplace_back(s);
        });
        cfg.now_ns = [this] { return clock_ns; };
        cfg.wall_ns = [this] { return wall_ns; };
    }
    void TearDown() override
    {
        mux.reset();
        for (auto &c : conns) {
            if (c->fd >= 0) {
                close(c->fd);
            }
        }
        set_log_sink(nullptr);
    }

    /* Creates the mux (after the test set cfg). */
    void start()
    {
        mux = std::make_unique<Mux>(port, cfg);
        std::string err;
        ASSERT_TRUE(mux->init(&err)) << err;
    }

    Conn &connect(Peer peer = {getpid(), getuid(), getgid(), {}})
    {
        if (!mux) {
            start();
        }
        int sv[2];
        EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        conns.push_back(std::make_unique<Conn>());
        Conn &c = *conns.back();
        c.fd = sv[1];
        c.id = mux->add_client(sv[0], peer);
        return c;
    }

    /* Connects and says HELLO as @owner allowed @allow; the ack is checked
     * and consumed. */
    Conn &hello(const std::string &owner = "",
                const AllowList &allow = kAllowAll)
    {
        Conn &c = connect();
        put(c, hello_msg("rxe0", 1, RDMACM_MUX_VERSION, owner, allow));
        auto m = get(c);
        EXPECT_TRUE(m && m->type() == RDMACM_MUX_HELLO_ACK);
        if (m) {
            EXPECT_EQ(le32toh(m->as<rdmacm_mux_hello_ack>().status),
                      RDMACM_MUX_OK);
        }
        return c;
    }

    /* Claims @gid for @c: the GID_ACK's status. */
    uint32_t claim(Conn &c, const Gid &gid, uint16_t type = RDMACM_MUX_GID_ADD)
    {
        put(c, gid_msg(type, 7, gid));
        auto m = get(c);
        EXPECT_TRUE(m && m->type() == RDMACM_MUX_GID_ACK);
        return m ? le32toh(m->as<rdmacm_mux_gid_ack>().status) : 0xffffffff;
    }

    /* Lets the mux handle whatever is pending. */
    void pump()
    {
        for (int i = 0; i < 8; i++) {
            mux->poll(0);
        }
    }

    void put(Conn &c, const std::vector<uint8_t> &bytes)
    {
        ASSERT_EQ(send(c.fd, bytes.data(), bytes.size(), MSG_NOSIGNAL),
                  static_cast<ssize_t>(bytes.size()));
    }

    /* Reads what the mux has sent; false once the mux closed @c. */
    bool drain(Conn &c)
    {
        pump();
        uint8_t buf[4096];
        for (;;) {
            ssize_t n = recv(c.fd, buf, sizeof(buf), MSG_DONTWAIT);
            if (n == 0) {
                return false;
            }
            if (n < 0) {
                return true;
            }
            c.in.insert(c.in.end(), buf, buf + n);
        }
    }

    /* The next message from the mux, if one has come. */
    std::optional<Msg> get(Conn &c)
    {
        drain(c);
        if (c.in.size() < sizeof(rdmacm_mux_hdr)) {
            return std::nullopt;
        }
        Msg m;
        std::memcpy(&m.hdr, c.in.data(), sizeof(m.hdr));
        EXPECT_EQ(le32toh(m.hdr.magic), RDMACM_MUX_MAGIC);
        EXPECT_EQ(le16toh(m.hdr.version), RDMACM_MUX_VERSION);
        size_t len = le32toh(m.hdr.len);
        EXPECT_EQ(len, rdmacm_mux_payload_size(m.type()));
        if (c.in.size() < sizeof(m.hdr) + len) {
            return std::nullopt;
        }
        m.payload.assign(c.in.begin() + sizeof(m.hdr),
                         c.in.begin() + static_cast<ptrdiff_t>(
                                            sizeof(m.hdr) + len));
        c.in.erase(c.in.begin(),
                   c.in.begin() + static_cast<ptrdiff_t>(sizeof(m.hdr) + len));
        return m;
    }

    /* True when the mux has closed @c (everything it sent is read). */
    bool closed(Conn &c) { return !drain(c); }

    uint64_t tx(Drop d) const
    {
        return mux->stats().tx_drops[static_cast<size_t>(d)];
    }
    uint64_t rx(Drop d) const
    {
        return mux->stats().rx_drops[static_cast<size_t>(d)];
    }

    FakePort port;
    Config cfg;
    std::unique_ptr<Mux> mux;
    std::vector<std::unique_ptr<Conn>> conns;
    std::vector<std::string> logs;
    uint64_t clock_ns = 1000000000;
    uint64_t wall_ns = 1800000000ull * 1000000000ull; /* a day in 2027 */
};

} // namespace rdmacm_mux::test

#endif /* RDMACM_MUX_TESTS_MUX_FIXTURE_H */

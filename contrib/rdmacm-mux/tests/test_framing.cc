/*
 * rdmacm-mux: framing -- HELLO, partial reads, several messages per read,
 * and every framing violation closing that one connection only.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "mux_fixture.h"

namespace rdmacm_mux::test {
namespace {

TEST_F(MuxTest, HelloIsAnsweredWithWhoTheMuxIs)
{
    Conn &c = connect();
    ASSERT_NE(c.id, 0u);
    put(c, hello_msg());
    auto m = get(c);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->type(), RDMACM_MUX_HELLO_ACK);
    EXPECT_EQ(le32toh(m->hdr.seq), 1u); /* the mux counts its own */
    auto ack = m->as<rdmacm_mux_hello_ack>();
    EXPECT_STREQ(ack.ibdev, "rxe0");
    EXPECT_EQ(le32toh(ack.port), 1u);
    EXPECT_EQ(le32toh(ack.version), uint32_t(RDMACM_MUX_VERSION));
    EXPECT_EQ(le32toh(ack.status), RDMACM_MUX_OK);
    EXPECT_EQ(le32toh(ack.max_gids), cfg.max_gids);
}

TEST_F(MuxTest, HelloForAnyDeviceAndPortIsAccepted)
{
    Conn &c = connect();
    put(c, hello_msg("", 0));
    auto m = get(c);
    ASSERT_TRUE(m);
    EXPECT_EQ(le32toh(m->as<rdmacm_mux_hello_ack>().status), RDMACM_MUX_OK);
}

TEST_F(MuxTest, HelloForAnotherPortIsRefusedThenClosed)
{
    struct Case {
        const char *ibdev;
        uint32_t port;
        uint32_t version;
        uint32_t status;
    } cases[] = {
        {"mlx5_0", 1, RDMACM_MUX_VERSION, RDMACM_MUX_WRONG_PORT},
        {"rxe0", 2, RDMACM_MUX_VERSION, RDMACM_MUX_WRONG_PORT},
        {"rxe0", 1, RDMACM_MUX_VERSION + 1, RDMACM_MUX_BAD_VERSION},
    };
    for (const Case &k : cases) {
        SCOPED_TRACE(std::string(k.ibdev) + " " + std::to_string(k.port));
        Conn &c = connect();
        put(c, hello_msg(k.ibdev, k.port, k.version));
        auto m = get(c);
        ASSERT_TRUE(m);
        auto ack = m->as<rdmacm_mux_hello_ack>();
        EXPECT_EQ(le32toh(ack.status), k.status);
        /* It still learns which port and version the mux has. */
        EXPECT_STREQ(ack.ibdev, "rxe0");
        EXPECT_EQ(le32toh(ack.version), uint32_t(RDMACM_MUX_VERSION));
        EXPECT_TRUE(closed(c));
    }
    EXPECT_EQ(mux->client_count(), 0u);
}

TEST_F(MuxTest, NothingAfterARefusedHelloIsHandled)
{
    Conn &c = connect();
    auto bytes = hello_msg("rxe0", 9);
    auto add = gid_msg(RDMACM_MUX_GID_ADD, 2, gid_of(1));
    bytes.insert(bytes.end(), add.begin(), add.end());
    put(c, bytes);
    auto m = get(c);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->type(), RDMACM_MUX_HELLO_ACK);
    EXPECT_FALSE(get(c)); /* no GID_ACK */
    EXPECT_TRUE(closed(c));
    /* The GID is free. */
    Conn &d = hello();
    EXPECT_EQ(claim(d, gid_of(1)), RDMACM_MUX_OK);
}

TEST_F(MuxTest, MessageArrivingByteByByteIsHandledOnce)
{
    Conn &c = hello();
    auto bytes = gid_msg(RDMACM_MUX_GID_ADD, 42, gid_of(1));
    for (size_t i = 0; i + 1 < bytes.size(); i++) {
        put(c, {bytes[i]});
        pump();
        ASSERT_FALSE(get(c)) << "answered after " << i + 1 << " bytes";
    }
    put(c, {bytes.back()});
    auto m = get(c);
    ASSERT_TRUE(m);
    auto ack = m->as<rdmacm_mux_gid_ack>();
    EXPECT_EQ(le32toh(ack.req_seq), 42u);
    EXPECT_EQ(le32toh(ack.status), RDMACM_MUX_OK);
    EXPECT_FALSE(get(c));
}

TEST_F(MuxTest, MadSendSplitInsideItsPayloadIsSentOnce)
{
    Conn &c = hello();
    ASSERT_EQ(claim(c, gid_of(1)), RDMACM_MUX_OK);
    auto bytes = mad_send_msg(gid_of(1));
    put(c, std::vector<uint8_t>(bytes.begin(), bytes.begin() + 100));
    pump();
    EXPECT_TRUE(port.sent.empty());
    put(c, std::vector<uint8_t>(bytes.begin() + 100, bytes.end()));
    pump();
    EXPECT_EQ(port.sent.size(), 1u);
}

TEST_F(MuxTest, SeveralMessagesInOneReadAreAllHandledInOrder)
{
    Conn &c = connect();
    std::vector<uint8_t> bytes = hello_msg();
    for (uint32_t seq = 2; seq <= 5; seq++) {
        auto add = gid_msg(RDMACM_MUX_GID_ADD, seq, gid_of(1));
        bytes.insert(bytes.end(), add.begin(), add.end());
    }
    auto del = gid_msg(RDMACM_MUX_GID_DEL, 6, gid_of(1));
    bytes.insert(bytes.end(), del.begin(), del.end());
    put(c, bytes);
    auto m = get(c);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->type(), RDMACM_MUX_HELLO_ACK);
    for (uint32_t seq = 2; seq <= 6; seq++) {
        m = get(c);
        ASSERT_TRUE(m) << seq;
        EXPECT_EQ(m->type(), RDMACM_MUX_GID_ACK);
        EXPECT_EQ(le32toh(m->hdr.seq), seq); /* the mux's own count */
        EXPECT_EQ(le32toh(m->as<rdmacm_mux_gid_ack>().req_seq), seq);
        EXPECT_EQ(le32toh(m->as<rdmacm_mux_gid_ack>().status),
                  RDMACM_MUX_OK);
    }
    EXPECT_FALSE(get(c));
}

/* One framing violation each, sent after a valid HELLO unless it is about
 * the HELLO itself. */
struct Violation {
    const char *name;
    bool after_hello;
    std::vector<uint8_t> (*bytes)();
};

const Violation kViolations[] = {
    {"bad_magic", true,
     [] {
         rdmacm_mux_gid g{};
         return frame(RDMACM_MUX_GID_ADD, 2, &g, sizeof(g), std::nullopt,
                      0x584d4353);
     }},
    {"bad_version", true,
     [] {
         rdmacm_mux_gid g{};
         return frame(RDMACM_MUX_GID_ADD, 2, &g, sizeof(g), std::nullopt,
                      RDMACM_MUX_MAGIC, RDMACM_MUX_VERSION + 1);
     }},
    {"unknown_type", true,
     [] {
         rdmacm_mux_gid g{};
         return frame(99, 2, &g, sizeof(g));
     }},
    {"type_zero", true, [] { return frame(0, 2, nullptr, 0); }},
    {"mux_type_from_client", true,
     [] {
         rdmacm_mux_gid_ack a{};
         return frame(RDMACM_MUX_GID_ACK, 2, &a, sizeof(a));
     }},
    {"mad_recv_from_client", true,
     [] {
         rdmacm_mux_mad m{};
         return frame(RDMACM_MUX_MAD_RECV, 2, &m, sizeof(m));
     }},
    {"length_one_short", true,
     [] {
         uint8_t g[15] = {};
         return frame(RDMACM_MUX_GID_ADD, 2, g, sizeof(g));
     }},
    {"length_one_long", true,
     [] {
         uint8_t g[17] = {};
         return frame(RDMACM_MUX_GID_ADD, 2, g, sizeof(g));
     }},
    /* Closed on the header: the mux does not wait for 2 GiB. */
    {"length_huge", true,
     [] {
         return frame(RDMACM_MUX_MAD_SEND, 2, nullptr, 0, 0x80000000u);
     }},
    {"gid_add_before_hello", false,
     [] { return gid_msg(RDMACM_MUX_GID_ADD, 1, gid_of(3)); }},
    {"mad_send_before_hello", false,
     [] { return mad_send_msg(gid_of(3)); }},
    {"second_hello", true, [] { return hello_msg(); }},
    {"hello_ibdev_not_terminated", false,
     [] {
         rdmacm_mux_hello h;
         std::memset(&h, 'x', sizeof(h));
         h.port = htole32(1);
         h.version = htole32(RDMACM_MUX_VERSION);
         return frame(RDMACM_MUX_HELLO, 1, &h, sizeof(h));
     }},
    /* The owner and the allow-list (version 3) are checked as strictly. */
    {"hello_owner_not_terminated", false,
     [] {
         rdmacm_mux_hello h = hello_payload();
         std::memset(h.owner, 'x', sizeof(h.owner));
         return frame(RDMACM_MUX_HELLO, 1, &h, sizeof(h));
     }},
    {"hello_owner_with_a_space", false,
     [] { return hello_msg("rxe0", 1, RDMACM_MUX_VERSION, "vm a"); }},
    {"hello_owner_with_a_newline", false,
     [] { return hello_msg("rxe0", 1, RDMACM_MUX_VERSION, "vm-a\n"); }},
    {"hello_allow_n_too_big", false,
     [] {
         rdmacm_mux_hello h = hello_payload();
         h.allow_n = htole32(RDMACM_MUX_ALLOW_MAX + 1);
         return frame(RDMACM_MUX_HELLO, 1, &h, sizeof(h));
     }},
    {"hello_prefix_longer_than_128", false,
     [] {
         return hello_msg("rxe0", 1, RDMACM_MUX_VERSION, "vm-a",
                          {{gid_of(1), 129}});
     }},
    {"hello_prefix_bits_past_its_length", false,
     [] {
         return hello_msg("rxe0", 1, RDMACM_MUX_VERSION, "vm-a",
                          {{gid_of(1), 120}});
     }},
    {"hello_prefix_pad_not_zero", false,
     [] {
         rdmacm_mux_hello h = hello_payload();
         h.allow[0].pad[2] = 1;
         return frame(RDMACM_MUX_HELLO, 1, &h, sizeof(h));
     }},
};

void PrintTo(const Violation &v, std::ostream *os)
{
    *os << v.name;
}

class Framing : public MuxTest,
                public ::testing::WithParamInterface<Violation> {};

TEST_P(Framing, ViolationClosesThatConnectionOnly)
{
    /* A bystander with a claim, and the offender with one. */
    Conn &good = hello();
    ASSERT_EQ(claim(good, gid_of(1)), RDMACM_MUX_OK);
    Conn &bad = GetParam().after_hello ? hello() : connect();
    if (GetParam().after_hello) {
        ASSERT_EQ(claim(bad, gid_of(2)), RDMACM_MUX_OK);
    }
    put(bad, GetParam().bytes());
    EXPECT_TRUE(closed(bad));
    EXPECT_EQ(mux->stats().clients_violated, 1u);
    EXPECT_EQ(mux->client_count(), 1u);

    /* The offender's claim died with it. */
    Conn &next = hello();
    EXPECT_EQ(claim(next, gid_of(2)), RDMACM_MUX_OK);
    /* The bystander still sends and receives. */
    put(good, mad_send_msg(gid_of(1)));
    pump();
    EXPECT_EQ(port.sent.size(), 1u);
    port.deliver(host_mad(1));
    auto m = get(good);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->type(), RDMACM_MUX_MAD_RECV);
    EXPECT_FALSE(closed(good));
}

INSTANTIATE_TEST_SUITE_P(
    Mux, Framing, ::testing::ValuesIn(kViolations),
    [](const ::testing::TestParamInfo<Violation> &i) {
        return std::string(i.param.name);
    });

TEST_F(MuxTest, ClientHangingUpMidMessageIsJustClosed)
{
    Conn &c = hello();
    ASSERT_EQ(claim(c, gid_of(1)), RDMACM_MUX_OK);
    auto bytes = mad_send_msg(gid_of(1));
    put(c, std::vector<uint8_t>(bytes.begin(), bytes.begin() + 20));
    pump();
    close(c.fd);
    c.fd = -1;
    pump();
    EXPECT_EQ(mux->client_count(), 0u);
    EXPECT_EQ(mux->stats().clients_violated, 0u);
    EXPECT_TRUE(port.sent.empty());
}

} // namespace
} // namespace rdmacm_mux::test

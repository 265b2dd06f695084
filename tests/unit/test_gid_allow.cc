/*
 * The GID allow-list (property allowed-gids, issue 25 item 5): the
 * parser, the prefix match, ADD_GID's refusal of a GID outside the list,
 * and the source check a backend on a shared host device makes at every
 * use (port.h source_gid), including the MAD link's "held by another
 * device" answer (vrdma_core_gid_claim).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <arpa/inet.h>

#include <string>

#include "core.h"
#include "core_fixture.h"
#include "gid_allow.h"
#include "port.h"

namespace vrdma_test {
namespace {

std::array<uint8_t, 16> v6(const char *text)
{
    std::array<uint8_t, 16> g{};
    EXPECT_EQ(inet_pton(AF_INET6, text, g.data()), 1) << text;
    return g;
}

std::array<uint8_t, 16> v4(const char *text)
{
    std::array<uint8_t, 16> g{};
    g[10] = g[11] = 0xff;
    EXPECT_EQ(inet_pton(AF_INET, text, g.data() + 12), 1) << text;
    return g;
}

VrdmaGidAllow parse_ok(const char *text)
{
    VrdmaGidAllow a{};
    char why[160] = "";
    EXPECT_TRUE(vrdma_gid_allow_parse(text, &a, why, sizeof(why)))
        << text << ": " << why;
    return a;
}

/* Refused, with a message that contains @names. */
void parse_bad(const std::string &text, const char *names)
{
    VrdmaGidAllow a{};
    a.n = 7; /* untouched on failure */
    char why[160] = "";
    EXPECT_FALSE(vrdma_gid_allow_parse(text.c_str(), &a, why, sizeof(why)))
        << text;
    EXPECT_NE(std::string(why).find(names), std::string::npos)
        << "'" << why << "' does not name '" << names << "'";
    EXPECT_EQ(a.n, 7u);
}

bool allowed(const VrdmaGidAllow &a, const std::array<uint8_t, 16> &g)
{
    return vrdma_gid_allowed(&a, g.data());
}

TEST(GidAllowParse, AddressesAndPrefixes)
{
    const VrdmaGidAllow a =
        parse_ok("10.79.0.20; 10.80.0.0/16\tfd88::/64;;fe80::5054:ff:fe12:3456 ");
    ASSERT_EQ(a.n, 4u);
    EXPECT_EQ(a.prefix[0].len, 128);        /* one IPv4 address: 96 + 32 */
    EXPECT_EQ(std::memcmp(a.prefix[0].gid, v4("10.79.0.20").data(), 16), 0);
    EXPECT_EQ(a.prefix[1].len, 96 + 16);
    EXPECT_EQ(a.prefix[2].len, 64);
    EXPECT_EQ(a.prefix[3].len, 128);

    EXPECT_TRUE(allowed(a, v4("10.79.0.20")));
    EXPECT_FALSE(allowed(a, v4("10.79.0.21")));   /* B's address */
    EXPECT_TRUE(allowed(a, v4("10.80.255.1")));
    EXPECT_FALSE(allowed(a, v4("10.81.0.1")));
    EXPECT_TRUE(allowed(a, v6("fd88::1234")));
    EXPECT_FALSE(allowed(a, v6("fd89::1")));
    EXPECT_TRUE(allowed(a, v6("fe80::5054:ff:fe12:3456")));
    EXPECT_FALSE(allowed(a, v6("fe80::5054:ff:fe12:3457")));
    /* An IPv4 prefix is not an IPv6 one of the same bytes. */
    std::array<uint8_t, 16> raw{};
    std::memcpy(raw.data() + 12, v4("10.79.0.20").data() + 12, 4);
    EXPECT_FALSE(allowed(a, raw));
}

TEST(GidAllowParse, OddPrefixLengths)
{
    const VrdmaGidAllow a = parse_ok("10.0.0.0/9;fc00::/7;0.0.0.0/0");
    EXPECT_TRUE(allowed(a, v4("10.127.1.1")));
    EXPECT_TRUE(allowed(a, v6("fdff::1")));
    EXPECT_TRUE(allowed(a, v6("fc00::1")));
    EXPECT_FALSE(allowed(a, v6("fe00::1")));
    EXPECT_TRUE(allowed(a, v4("192.0.2.1")));     /* 0.0.0.0/0: all IPv4 */
    EXPECT_FALSE(allowed(a, v6("2001:db8::1")));
    const VrdmaGidAllow all = parse_ok("::/0");
    EXPECT_TRUE(allowed(all, v6("2001:db8::1")));
    VrdmaGidAllow none{};
    EXPECT_FALSE(allowed(none, v4("10.0.0.1")));
}

TEST(GidAllowParse, Refusals)
{
    parse_bad("", "no entry");
    parse_bad(" ; ", "no entry");
    parse_bad("10.0.0.1;bogus", "'bogus'");
    parse_bad("10.0.0.256", "'10.0.0.256'");
    parse_bad("10.0.0.1,10.0.0.2", "'10.0.0.1,10.0.0.2'");
    parse_bad("10.0.0.0/33", "prefix length 33");
    parse_bad("fd00::/129", "prefix length 129");
    parse_bad("10.0.0.0/", "not a number");
    parse_bad("10.0.0.0/x", "not a number");
    parse_bad("10.0.0.0/8/8", "not a number");
    parse_bad("10.0.0.0/-1", "not a number");
    parse_bad("10.1.2.3/16", "'10.1.2.3/16' has bits set past");
    parse_bad("fd00::1/64", "'fd00::1/64' has bits set past");
    parse_bad("fd00::/7", "'fd00::/7' has bits set past"); /* fc00::/7 */
    parse_bad(std::string(200, '1'), "too long");
    std::string many;
    for (int i = 0; i < VRDMA_GID_ALLOW_MAX + 1; i++) {
        many += "10.0." + std::to_string(i) + ".1;";
    }
    parse_bad(many, "more than 64 entries (from '10.0.64.1' on)");
    many.resize(many.rfind("10.0.64.1"));
    EXPECT_EQ(parse_ok(many.c_str()).n, uint32_t{VRDMA_GID_ALLOW_MAX});
}

TEST(GidAllowParse, CutMessage)
{
    VrdmaGidAllow a{};
    char why[8];
    EXPECT_FALSE(vrdma_gid_allow_parse("bogus", &a, why, sizeof(why)));
    EXPECT_EQ(std::strlen(why), sizeof(why) - 1);
}

/* ---- ADD_GID and source use with a list ---- */

class GidAllow : public CoreTest {
protected:
    void SetUp() override
    {
        VrdmaLimits lim = default_limits();
        lim.allow = parse_ok("10.79.0.20;fd88::/64");
        start(lim);
    }

    static virtio_rdma_cmd_add_gid add(uint16_t index,
                                       const std::array<uint8_t, 16> &g)
    {
        virtio_rdma_cmd_add_gid r{};
        std::memcpy(r.gid, g.data(), 16);
        r.gid_type = VIRTIO_RDMA_GID_TYPE_ROCE_UDP_ENCAP;
        r.index = index;
        r.port_num = 1;
        return r;
    }

    const vrdma::GidEntry *source(uint32_t index) const
    {
        return vrdma::source_gid(*core_, index);
    }
};

TEST_F(GidAllow, AddGidOutsideTheListIsRefused)
{
    /* Another tenant's address, the host's: EPERM, naming GID and property. */
    for (const auto &g : {v4("10.79.0.21"), v4("10.79.0.1"), v6("fd89::1"),
                          v6("fe80::1")}) {
        expect_refused(VIRTIO_RDMA_CMD_ADD_GID, add(0, g),
                       VRDMA_ERR_NOT_ALLOWED);
        ASSERT_FALSE(guest_.errors.empty());
        const GuestError &e = guest_.errors.back();
        EXPECT_NE(e.field.find("allowed-gids"), std::string::npos) << e.field;
        EXPECT_EQ(e.a, be64toh(*reinterpret_cast<const uint64_t *>(g.data())));
        EXPECT_EQ(e.b,
                  be64toh(*reinterpret_cast<const uint64_t *>(g.data() + 8)));
    }
    EXPECT_TRUE(guest_.gid_events.empty());
    EXPECT_EQ(ctrl(VIRTIO_RDMA_CMD_ADD_GID, add(0, v4("10.79.0.20"))),
              VIRTIO_RDMA_OK);
    EXPECT_EQ(ctrl(VIRTIO_RDMA_CMD_ADD_GID, add(1, v6("fd88::77"))),
              VIRTIO_RDMA_OK);
    EXPECT_EQ(guest_.gid_events.size(), 2u);
    /* Replacing an allowed entry by a refused one leaves it as it was. */
    expect_refused(VIRTIO_RDMA_CMD_ADD_GID, add(0, v4("10.79.0.21")),
                   VRDMA_ERR_NOT_ALLOWED);
    ASSERT_NE(source(0), nullptr);
    EXPECT_EQ(source(0)->gid, v4("10.79.0.20"));
}

TEST_F(GidAllow, SourceCheckFollowsTheMuxAnswer)
{
    ASSERT_EQ(ctrl(VIRTIO_RDMA_CMD_ADD_GID, add(0, v4("10.79.0.20"))),
              VIRTIO_RDMA_OK);
    ASSERT_NE(source(0), nullptr);
    EXPECT_EQ(source(1), nullptr); /* no entry */

    /* Another device holds it: not a source, nor a second entry of it. */
    vrdma_core_gid_claim(core_, v4("10.79.0.20").data(), false);
    EXPECT_EQ(source(0), nullptr);
    virtio_rdma_cmd_add_gid v1 = add(3, v4("10.79.0.20"));
    v1.gid_type = VIRTIO_RDMA_GID_TYPE_ROCE;
    ASSERT_EQ(ctrl(VIRTIO_RDMA_CMD_ADD_GID, v1), VIRTIO_RDMA_OK);
    EXPECT_EQ(source(3), nullptr);
    const vrdma::Status s = vrdma::source_gid_refused(*core_, 0);
    EXPECT_EQ(s.err, VRDMA_ERR_NOT_ALLOWED);
    EXPECT_NE(std::string(s.field).find("another device"), std::string::npos);
    EXPECT_EQ(s.b, 0xffff0a4f0014u);

    /* An answer about another value changes nothing. */
    vrdma_core_gid_claim(core_, v4("10.79.0.21").data(), true);
    EXPECT_EQ(source(0), nullptr);
    /* The mux grants it (the other device let go): a source again. */
    vrdma_core_gid_claim(core_, v4("10.79.0.20").data(), true);
    EXPECT_NE(source(0), nullptr);
    EXPECT_NE(source(3), nullptr);

    /* Deleting and adding again starts over. */
    vrdma_core_gid_claim(core_, v4("10.79.0.20").data(), false);
    ASSERT_EQ(ctrl(VIRTIO_RDMA_CMD_DEL_GID,
                   virtio_rdma_cmd_del_gid{.index = 0, .pad = 0, .port = 1}),
              VIRTIO_RDMA_OK);
    ASSERT_EQ(ctrl(VIRTIO_RDMA_CMD_DEL_GID,
                   virtio_rdma_cmd_del_gid{.index = 3, .pad = 0, .port = 1}),
              VIRTIO_RDMA_OK);
    ASSERT_EQ(ctrl(VIRTIO_RDMA_CMD_ADD_GID, add(0, v4("10.79.0.20"))),
              VIRTIO_RDMA_OK);
    EXPECT_NE(source(0), nullptr);
}

TEST_F(GidAllow, NoListAllowsEveryGidOnSoftRoce)
{
    start(default_limits());
    EXPECT_EQ(ctrl(VIRTIO_RDMA_CMD_ADD_GID, add(0, v4("10.79.0.21"))),
              VIRTIO_RDMA_OK);
    EXPECT_NE(source(0), nullptr);
}

TEST(GidAllowLimits, MalformedListIsRefused)
{
    FakeGuest guest;
    VrdmaLimits lim = default_limits();
    lim.allow.n = 1;
    lim.allow.prefix[0].len = 129;
    EXPECT_EQ(vrdma_core_new(&lim, &guest.ops()), nullptr);
    lim.allow.prefix[0].len = 120;
    lim.allow.prefix[0].gid[15] = 1; /* a bit past the prefix */
    EXPECT_EQ(vrdma_core_new(&lim, &guest.ops()), nullptr);
    lim.allow.n = VRDMA_GID_ALLOW_MAX + 1;
    lim.allow.prefix[0].gid[15] = 0;
    EXPECT_EQ(vrdma_core_new(&lim, &guest.ops()), nullptr);
    lim.allow.n = 1;
    VrdmaCore *c = vrdma_core_new(&lim, &guest.ops());
    EXPECT_NE(c, nullptr);
    vrdma_core_free(c);
}

} // namespace
} // namespace vrdma_test

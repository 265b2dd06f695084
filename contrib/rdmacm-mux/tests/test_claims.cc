/*
 * rdmacm-mux: GID claims -- only GIDs of the host port, one owner each,
 * bounded per client, released with the connection.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "mux_fixture.h"

namespace rdmacm_mux::test {
namespace {

TEST_F(MuxTest, GidNotInTheHostTableIsRefused)
{
    Conn &c = hello();
    EXPECT_EQ(claim(c, gid_of(77)), RDMACM_MUX_NOT_ON_HOST);
    EXPECT_EQ(claim(c, Gid{}), RDMACM_MUX_NOT_ON_HOST);
}

TEST_F(MuxTest, GidAddedToTheHostLaterCanBeClaimedThen)
{
    /* The management layer adds the address after the guest asked. */
    Conn &c = hello();
    EXPECT_EQ(claim(c, gid_of(7)), RDMACM_MUX_NOT_ON_HOST);
    port.gids.push_back({gid_of(7), 7, GidType::roce_v2});
    EXPECT_EQ(claim(c, gid_of(7)), RDMACM_MUX_OK);
}

TEST_F(MuxTest, GidHasOneOwner)
{
    Conn &a = hello();
    Conn &b = hello();
    EXPECT_EQ(claim(a, gid_of(1)), RDMACM_MUX_OK);
    EXPECT_EQ(claim(a, gid_of(1)), RDMACM_MUX_OK); /* again: no change */
    EXPECT_EQ(claim(b, gid_of(1)), RDMACM_MUX_CLAIMED);
    EXPECT_EQ(claim(b, gid_of(1), RDMACM_MUX_GID_DEL),
              RDMACM_MUX_NOT_CLAIMED);
    /* a's claim survived b's attempts. */
    port.deliver(host_mad(1));
    auto m = get(a);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->type(), RDMACM_MUX_MAD_RECV);
    EXPECT_FALSE(get(b));
}

TEST_F(MuxTest, ClaimsAreASetNotACount)
{
    Conn &a = hello();
    Conn &b = hello();
    EXPECT_EQ(claim(a, gid_of(1)), RDMACM_MUX_OK);
    EXPECT_EQ(claim(a, gid_of(1)), RDMACM_MUX_OK);
    EXPECT_EQ(claim(a, gid_of(1), RDMACM_MUX_GID_DEL), RDMACM_MUX_OK);
    EXPECT_EQ(claim(a, gid_of(1), RDMACM_MUX_GID_DEL),
              RDMACM_MUX_NOT_CLAIMED);
    EXPECT_EQ(claim(b, gid_of(1)), RDMACM_MUX_OK);
}

TEST_F(MuxTest, ClaimsAreReleasedOnDisconnect)
{
    Conn &a = hello();
    Conn &b = hello();
    EXPECT_EQ(claim(a, gid_of(1)), RDMACM_MUX_OK);
    EXPECT_EQ(claim(a, gid_of(2)), RDMACM_MUX_OK);
    close(a.fd);
    a.fd = -1;
    pump();
    EXPECT_EQ(mux->client_count(), 1u);
    EXPECT_EQ(claim(b, gid_of(1)), RDMACM_MUX_OK);
    EXPECT_EQ(claim(b, gid_of(2)), RDMACM_MUX_OK);
}

TEST_F(MuxTest, ClaimsPerClientAreBounded)
{
    cfg.max_gids = 2;
    Conn &a = hello();
    EXPECT_EQ(claim(a, gid_of(1)), RDMACM_MUX_OK);
    EXPECT_EQ(claim(a, gid_of(2)), RDMACM_MUX_OK);
    EXPECT_EQ(claim(a, gid_of(3)), RDMACM_MUX_LIMIT);
    /* Claiming one it holds is still fine; releasing makes room. */
    EXPECT_EQ(claim(a, gid_of(2)), RDMACM_MUX_OK);
    EXPECT_EQ(claim(a, gid_of(1), RDMACM_MUX_GID_DEL), RDMACM_MUX_OK);
    EXPECT_EQ(claim(a, gid_of(3)), RDMACM_MUX_OK);
}

TEST_F(MuxTest, GidAckEchoesTheRequest)
{
    Conn &a = hello();
    put(a, gid_msg(RDMACM_MUX_GID_ADD, 0xdeadbeef, gid_of(3)));
    auto m = get(a);
    ASSERT_TRUE(m);
    auto ack = m->as<rdmacm_mux_gid_ack>();
    EXPECT_EQ(le32toh(ack.req_seq), 0xdeadbeefu);
    EXPECT_EQ(le32toh(ack.status), RDMACM_MUX_OK);
    EXPECT_EQ(std::memcmp(ack.gid, gid_of(3).data(), 16), 0);
}

} // namespace
} // namespace rdmacm_mux::test

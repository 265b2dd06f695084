/*
 * rdmacm-mux: who may claim a GID -- only GIDs in the allow-list the client
 * sent with HELLO (none sent: none, unless --open-claims), and a released
 * claim stays reserved for its owner for the grace period (issue 25 item 6:
 * claim theft when the owner's claim lapses).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "mux_fixture.h"

namespace rdmacm_mux::test {
namespace {

class ClaimAuth : public MuxTest {
protected:
    void SetUp() override
    {
        MuxTest::SetUp();
        cfg.claim_grace_ns = 600 * kSec;
    }

    /* A MAD from the host on @index reaches @c. */
    bool gets_mad(Conn &c, uint32_t index)
    {
        port.deliver(host_mad(index));
        auto m = get(c);
        return m && m->type() == RDMACM_MUX_MAD_RECV;
    }

    void hang_up(Conn &c)
    {
        close(c.fd);
        c.fd = -1;
        pump();
    }
};

TEST_F(ClaimAuth, ClaimOutsideTheAllowListIsRefused)
{
    Conn &a = hello("vm-a", {{gid_of(1), 128}, {gid_of(0, true), 64}});
    EXPECT_EQ(claim(a, gid_of(1)), RDMACM_MUX_OK);
    EXPECT_EQ(claim(a, gid_of(1, true)), RDMACM_MUX_OK); /* fe80::/64 */
    EXPECT_EQ(claim(a, gid_of(2)), RDMACM_MUX_NOT_ALLOWED);
    EXPECT_EQ(claim(a, gid_of(3)), RDMACM_MUX_NOT_ALLOWED);
    /* Nothing of gid_of(2) reaches it. */
    EXPECT_FALSE(gets_mad(a, 2));
}

TEST_F(ClaimAuth, PrefixesMatchByBits)
{
    /* ::ffff:10.0.0.2/127 holds .2 and .3, not .1. */
    Conn &a = hello("vm-a", {{gid_of(2), 127}});
    EXPECT_EQ(claim(a, gid_of(1)), RDMACM_MUX_NOT_ALLOWED);
    EXPECT_EQ(claim(a, gid_of(2)), RDMACM_MUX_OK);
    EXPECT_EQ(claim(a, gid_of(3)), RDMACM_MUX_OK);
}

TEST_F(ClaimAuth, NoAllowListNoClaimUnlessTheMuxIsOpen)
{
    Conn &a = hello("vm-a", {});
    EXPECT_EQ(claim(a, gid_of(1)), RDMACM_MUX_NOT_ALLOWED);
    mux.reset();
    cfg.open_claims = true;
    Conn &b = hello("vm-b", {});
    EXPECT_EQ(claim(b, gid_of(1)), RDMACM_MUX_OK);
}

TEST_F(ClaimAuth, NotAllowedComesBeforeWhetherAnotherHoldsIt)
{
    /* A client learns nothing about GIDs outside its list. */
    Conn &a = hello("vm-a", kTenNet);
    ASSERT_EQ(claim(a, gid_of(1)), RDMACM_MUX_OK);
    Conn &b = hello("vm-b", {{gid_of(2), 128}});
    EXPECT_EQ(claim(b, gid_of(1)), RDMACM_MUX_NOT_ALLOWED);
}

/* The theft: B has A's address in its table (and, here, in its
 * allow-list too: an overlap) and re-claims every second. */
TEST_F(ClaimAuth, OwnersClaimIsReservedAfterItsConnectionEnds)
{
    Conn &a = hello("vm-a", kTenNet);
    ASSERT_EQ(claim(a, gid_of(1)), RDMACM_MUX_OK);
    Conn &b = hello("vm-b", kTenNet);
    EXPECT_EQ(claim(b, gid_of(1)), RDMACM_MUX_CLAIMED);
    hang_up(a); /* A's QEMU restarts, or its guest reboots */
    for (int i = 0; i < 5; i++) {
        clock_ns += kSec;
        EXPECT_EQ(claim(b, gid_of(1)), RDMACM_MUX_RESERVED);
    }
    /* A's CM traffic goes to nobody meanwhile, certainly not to B. */
    EXPECT_FALSE(gets_mad(b, 1));
    EXPECT_EQ(rx(Drop::recv_no_owner), 1u);
    /* A comes back and resumes; B still cannot have it. */
    Conn &a2 = hello("vm-a", kTenNet);
    EXPECT_EQ(claim(a2, gid_of(1)), RDMACM_MUX_OK);
    EXPECT_TRUE(gets_mad(a2, 1));
    EXPECT_EQ(claim(b, gid_of(1)), RDMACM_MUX_CLAIMED);
}

TEST_F(ClaimAuth, GidDelReservesTooUntilTheGraceEnds)
{
    cfg.idle_timeout_ns = 0; /* A holds nothing for the whole grace */
    Conn &a = hello("vm-a", kTenNet);
    Conn &b = hello("vm-b", kTenNet);
    ASSERT_EQ(claim(a, gid_of(2)), RDMACM_MUX_OK);
    ASSERT_EQ(claim(a, gid_of(2), RDMACM_MUX_GID_DEL), RDMACM_MUX_OK);
    clock_ns += 600 * kSec - 1;
    EXPECT_EQ(claim(b, gid_of(2)), RDMACM_MUX_RESERVED);
    clock_ns += 1;
    EXPECT_EQ(claim(b, gid_of(2)), RDMACM_MUX_OK);
    /* Now B is the owner, and A's own claim is the one refused. */
    EXPECT_EQ(claim(a, gid_of(2)), RDMACM_MUX_CLAIMED);
}

TEST_F(ClaimAuth, OwnerResumesOnANewConnectionWithinTheGrace)
{
    Conn &a = hello("vm-a", kTenNet);
    ASSERT_EQ(claim(a, gid_of(1)), RDMACM_MUX_OK);
    ASSERT_EQ(claim(a, gid_of(2)), RDMACM_MUX_OK);
    hang_up(a);
    clock_ns += 599 * kSec;
    Conn &a2 = hello("vm-a", kTenNet);
    EXPECT_EQ(claim(a2, gid_of(2)), RDMACM_MUX_OK);
    EXPECT_EQ(claim(a2, gid_of(1)), RDMACM_MUX_OK);
}

TEST_F(ClaimAuth, NobodyInParticularNeitherReservesNorTakesAReservation)
{
    /* owner "": its releases are free at once ... */
    Conn &anon = hello("", kTenNet);
    Conn &b = hello("vm-b", kTenNet);
    ASSERT_EQ(claim(anon, gid_of(1)), RDMACM_MUX_OK);
    ASSERT_EQ(claim(anon, gid_of(1), RDMACM_MUX_GID_DEL), RDMACM_MUX_OK);
    EXPECT_EQ(claim(b, gid_of(1)), RDMACM_MUX_OK);
    /* ... and it is nobody's previous owner. */
    ASSERT_EQ(claim(b, gid_of(1), RDMACM_MUX_GID_DEL), RDMACM_MUX_OK);
    EXPECT_EQ(claim(anon, gid_of(1)), RDMACM_MUX_RESERVED);
}

TEST_F(ClaimAuth, GraceZeroReservesNothing)
{
    cfg.claim_grace_ns = 0;
    Conn &a = hello("vm-a", kTenNet);
    Conn &b = hello("vm-b", kTenNet);
    ASSERT_EQ(claim(a, gid_of(1)), RDMACM_MUX_OK);
    hang_up(a);
    EXPECT_EQ(claim(b, gid_of(1)), RDMACM_MUX_OK);
}

TEST_F(ClaimAuth, ReservationsAreBounded)
{
    /* Full: the one that ends first goes, with a log line. */
    cfg.max_reservations = 2;
    Conn &a = hello("vm-a", kTenNet);
    Conn &b = hello("vm-b", kTenNet);
    for (uint8_t n = 1; n <= 3; n++) {
        ASSERT_EQ(claim(a, gid_of(n)), RDMACM_MUX_OK);
        ASSERT_EQ(claim(a, gid_of(n), RDMACM_MUX_GID_DEL), RDMACM_MUX_OK);
        clock_ns += kSec;
    }
    EXPECT_EQ(claim(b, gid_of(1)), RDMACM_MUX_OK);
    EXPECT_EQ(claim(b, gid_of(2)), RDMACM_MUX_RESERVED);
    EXPECT_EQ(claim(b, gid_of(3)), RDMACM_MUX_RESERVED);
    bool logged = false;
    for (const auto &l : logs) {
        logged = logged || l.find("--max-reservations") != std::string::npos;
    }
    EXPECT_TRUE(logged);
}

/* A client of version 2 (no owner, no allow-list) learns it is too old. */
TEST_F(ClaimAuth, OldClientIsToldItsVersionIsRefused)
{
    Conn &c = connect();
    uint8_t v2_hello[72] = {'r', 'x', 'e', '0'};
    v2_hello[64] = 1;
    v2_hello[68] = 2;
    put(c, frame(RDMACM_MUX_HELLO, 1, v2_hello, sizeof(v2_hello),
                 std::nullopt, RDMACM_MUX_MAGIC, 2));
    pump();
    uint8_t buf[256];
    ssize_t n = recv(c.fd, buf, sizeof(buf), MSG_DONTWAIT);
    ASSERT_EQ(n, ssize_t(sizeof(rdmacm_mux_hdr) + sizeof(rdmacm_mux_hello_ack)));
    rdmacm_mux_hdr h;
    std::memcpy(&h, buf, sizeof(h));
    /* In the client's framing, so that it can read it. */
    EXPECT_EQ(le16toh(h.version), 2u);
    EXPECT_EQ(le16toh(h.type), RDMACM_MUX_HELLO_ACK);
    EXPECT_EQ(le32toh(h.len), sizeof(rdmacm_mux_hello_ack));
    rdmacm_mux_hello_ack ack;
    std::memcpy(&ack, buf + sizeof(h), sizeof(ack));
    EXPECT_EQ(le32toh(ack.status), RDMACM_MUX_BAD_VERSION);
    EXPECT_EQ(le32toh(ack.version), uint32_t(RDMACM_MUX_VERSION));
    EXPECT_STREQ(ack.ibdev, "rxe0");
    EXPECT_TRUE(closed(c));
    EXPECT_EQ(mux->stats().clients_violated, 0u);
}

} // namespace
} // namespace rdmacm_mux::test

/*
 * rdmacm-mux: MADs from the host go to the owner of the GID they arrived
 * on (the index ib_umad reports), whatever they carry inside.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "mux_fixture.h"

namespace rdmacm_mux::test {
namespace {

TEST_F(MuxTest, MadGoesToTheOwnerOfItsArrivalGid)
{
    Conn &a = hello();
    Conn &b = hello();
    ASSERT_EQ(claim(a, gid_of(1)), RDMACM_MUX_OK);
    ASSERT_EQ(claim(b, gid_of(2)), RDMACM_MUX_OK);

    port.deliver(host_mad(2, 0x22));
    auto m = get(b);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->type(), RDMACM_MUX_MAD_RECV);
    auto r = m->as<rdmacm_mux_mad>();
    EXPECT_EQ(std::memcmp(r.local_gid, gid_of(2).data(), 16), 0);
    EXPECT_EQ(std::memcmp(r.remote_gid, gid_of(99).data(), 16), 0);
    EXPECT_EQ(le32toh(r.flow_label), 0x12345u);
    EXPECT_EQ(le16toh(r.pkey_index), 0);
    EXPECT_EQ(r.tclass, 0x20);
    EXPECT_EQ(r.hop_limit, 64);
    EXPECT_EQ(le32toh(r.mad_len), uint32_t(RDMACM_MUX_MAD_LEN));
    auto mad = cm_mad(0x0010, 0x22);
    EXPECT_EQ(std::memcmp(r.mad, mad.data(), mad.size()), 0);
    EXPECT_FALSE(get(a));

    port.deliver(host_mad(1, 0x11));
    m = get(a);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->as<rdmacm_mux_mad>().mad[40], 0x11);
    EXPECT_FALSE(get(b));
    EXPECT_EQ(mux->stats().mads_received, 2u);
    EXPECT_EQ(mux->stats().mads_delivered, 2u);
}

TEST_F(MuxTest, MadContentsDoNotSteerRouting)
{
    /* A REQ whose body names a's GID (as pvrdma's mux routed by) still
     * goes to b, on whose GID it arrived. */
    Conn &a = hello();
    Conn &b = hello();
    ASSERT_EQ(claim(a, gid_of(1)), RDMACM_MUX_OK);
    ASSERT_EQ(claim(b, gid_of(2)), RDMACM_MUX_OK);
    ReceivedMad m = host_mad(2);
    Gid ga = gid_of(1);
    std::memcpy(m.mad.data() + 80, ga.data(), 16); /* REQ primary DGID */
    std::memcpy(m.mad.data() + 44, ga.data(), 16);
    port.deliver(m);
    EXPECT_TRUE(get(b));
    EXPECT_FALSE(get(a));
}

TEST_F(MuxTest, HostMadsNobodyCanTakeAreDroppedAndCounted)
{
    Conn &a = hello();
    ASSERT_EQ(claim(a, gid_of(1)), RDMACM_MUX_OK);
    struct Case {
        const char *name;
        Drop drop;
        void (*edit)(ReceivedMad &);
    } cases[] = {
        {"status", Drop::recv_status,
         [](ReceivedMad &m) { m.status = 110; }},
        {"no grh", Drop::recv_no_grh,
         [](ReceivedMad &m) { m.addr.grh = false; }},
        {"short", Drop::mad_len, [](ReceivedMad &m) { m.len = 200; }},
        {"long", Drop::mad_len, [](ReceivedMad &m) { m.len = 2048; }},
        {"class", Drop::mgmt_class, [](ReceivedMad &m) { m.mad[1] = 3; }},
        {"method", Drop::method, [](ReceivedMad &m) { m.mad[3] = 0x83; }},
        {"attribute", Drop::attribute,
         [](ReceivedMad &m) { m.mad[17] = 0x02; }},
        {"index not on host", Drop::recv_unknown_gid,
         [](ReceivedMad &m) { m.addr.gid_index = 40; }},
        {"unclaimed", Drop::recv_no_owner,
         [](ReceivedMad &m) { m.addr.gid_index = 0; }},
    };
    for (const Case &k : cases) {
        SCOPED_TRACE(k.name);
        ReceivedMad m = host_mad(1);
        k.edit(m);
        uint64_t before = rx(k.drop);
        port.deliver(m);
        pump();
        EXPECT_EQ(rx(k.drop), before + 1);
        EXPECT_FALSE(get(a));
    }
    /* a still gets what is meant for it. */
    port.deliver(host_mad(1));
    EXPECT_TRUE(get(a));
}

TEST_F(MuxTest, ArrivalIndexNewToTheMuxRereadsTheTableBoundedly)
{
    Conn &a = hello();
    ASSERT_EQ(claim(a, gid_of(3)), RDMACM_MUX_OK);
    /* The host re-indexed the GID without an event reaching us yet. */
    port.gids.back().index = 30;
    port.deliver(host_mad(30));
    pump();
    EXPECT_EQ(rx(Drop::recv_unknown_gid), 1u) << "table read just now";

    /* Fabric traffic to unknown indices cannot make us reread the table
     * more than 10 times a second. */
    clock_ns += 100000000;
    unsigned reads = port.gid_reads;
    port.deliver(host_mad(30));
    port.deliver(host_mad(31));
    port.deliver(host_mad(32));
    auto m = get(a);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->type(), RDMACM_MUX_MAD_RECV);
    EXPECT_EQ(port.gid_reads, reads + 1);
    EXPECT_EQ(rx(Drop::recv_unknown_gid), 3u);
}

TEST_F(MuxTest, GidChangeEventRereadsTheTable)
{
    Conn &a = hello();
    Conn &b = hello();
    ASSERT_EQ(claim(a, gid_of(1)), RDMACM_MUX_OK);
    ASSERT_EQ(claim(b, gid_of(2)), RDMACM_MUX_OK);
    /* Index 1 now holds b's GID: without the reread a would get it. */
    port.gids[1].gid = gid_of(2);
    port.gids[2].gid = gid_of(1);
    port.gid_event();
    pump();
    port.deliver(host_mad(1));
    EXPECT_TRUE(get(b));
    EXPECT_FALSE(get(a));
}

TEST_F(MuxTest, MadOnAnIndexThatChangedHandsIsNotDeliveredToTheOldOwner)
{
    Conn &a = hello();
    Conn &b = hello();
    ASSERT_EQ(claim(a, gid_of(1)), RDMACM_MUX_OK);
    ASSERT_EQ(claim(b, gid_of(2)), RDMACM_MUX_OK);
    /* The host replaced a's address at index 1 (say with b's, re-added
     * there); the change event has not been read yet. */
    port.gids[1].gid = gid_of(5);
    port.deliver(host_mad(1, 0x11));
    pump();
    EXPECT_FALSE(get(a)) << "delivered to the index's previous owner";
    EXPECT_FALSE(get(b));
    EXPECT_EQ(rx(Drop::recv_stale_gid), 1u);
    /* The mux knows the table is stale now: the next MAD on that index
     * meets the table as it is (gid 5, nobody's). */
    port.deliver(host_mad(1, 0x12));
    pump();
    EXPECT_FALSE(get(a));
    EXPECT_EQ(rx(Drop::recv_no_owner), 1u);
    /* A MAD on an index that did not change is delivered as before. */
    port.deliver(host_mad(2));
    EXPECT_TRUE(get(b));
}

TEST_F(MuxTest, MadSendIsNotSentFromAnIndexThatChangedHands)
{
    Conn &a = hello();
    Conn &b = hello();
    ASSERT_EQ(claim(a, gid_of(3)), RDMACM_MUX_OK);
    ASSERT_EQ(claim(b, gid_of(2)), RDMACM_MUX_OK);
    /* Unseen by the mux: a's GID moved to index 7, and index 3 now holds
     * b's address.  Sending "from index 3" would send as b. */
    port.gids[3].gid = gid_of(2);
    port.gids.push_back({gid_of(3), 7, GidType::roce_v2});
    put(a, mad_send_msg(gid_of(3)));
    pump();
    for (const auto &s : port.sent) {
        EXPECT_NE(s.addr.gid_index, 3u) << "sent with b's source GID";
    }
    EXPECT_EQ(tx(Drop::sgid_stale), 1u);
    /* The CM's retransmission goes out from the GID's new index. */
    port.sent.clear();
    put(a, mad_send_msg(gid_of(3)));
    pump();
    ASSERT_EQ(port.sent.size(), 1u);
    EXPECT_EQ(port.sent[0].addr.gid_index, 7u);
}

TEST_F(MuxTest, HostPortFailureEndsTheLoop)
{
    start();
    EXPECT_TRUE(mux->poll(0));
    port.recv_error = -ENODEV;
    port.deliver(host_mad(1));
    EXPECT_FALSE(mux->poll(0));
}

} // namespace
} // namespace rdmacm_mux::test

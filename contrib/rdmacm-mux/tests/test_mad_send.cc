/*
 * rdmacm-mux: MAD_SEND -- what reaches the host port, and each refusal.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "mux_fixture.h"

namespace rdmacm_mux::test {
namespace {

TEST_F(MuxTest, MadSendReachesThePortWithTheHostGidIndex)
{
    Conn &c = hello();
    ASSERT_EQ(claim(c, gid_of(2)), RDMACM_MUX_OK);
    put(c, mad_send_msg(gid_of(2)));
    pump();
    ASSERT_EQ(port.sent.size(), 1u);
    const FakePort::Sent &s = port.sent[0];
    EXPECT_EQ(s.addr.gid_index, 2u); /* the mux's choice */
    EXPECT_EQ(s.addr.remote_gid, gid_of(99));
    EXPECT_EQ(s.addr.flow_label, 0xabcdeu);
    EXPECT_EQ(s.addr.tclass, 0x68);
    EXPECT_EQ(s.addr.hop_limit, 64);
    EXPECT_EQ(s.addr.pkey_index, 0);
    EXPECT_TRUE(s.addr.grh);
    auto mad = cm_mad();
    EXPECT_EQ(s.mad, std::vector<uint8_t>(mad.begin(), mad.end()));
    EXPECT_EQ(mux->stats().mads_sent, 1u);
}

TEST_F(MuxTest, MadSendPrefersTheRoceV2Entry)
{
    /* An HCA lists a GID twice, RoCE v1 first. */
    port.gids.push_back({gid_of(8), 8, GidType::roce_v1});
    port.gids.push_back({gid_of(8), 9, GidType::roce_v2});
    Conn &c = hello();
    ASSERT_EQ(claim(c, gid_of(8)), RDMACM_MUX_OK);
    put(c, mad_send_msg(gid_of(8)));
    pump();
    ASSERT_EQ(port.sent.size(), 1u);
    EXPECT_EQ(port.sent[0].addr.gid_index, 9u);
}

TEST_F(MuxTest, EveryCmAttributeFromReqToAprPasses)
{
    Conn &c = hello();
    ASSERT_EQ(claim(c, gid_of(1)), RDMACM_MUX_OK);
    for (uint16_t attr = 0x0010; attr <= 0x001a; attr++) {
        put(c, mad_send_msg(gid_of(1), [attr](rdmacm_mux_mad &m) {
                m.mad[16] = static_cast<uint8_t>(attr >> 8);
                m.mad[17] = static_cast<uint8_t>(attr);
            }));
    }
    pump();
    EXPECT_EQ(port.sent.size(), 11u);
}

struct Refusal {
    const char *name;
    Drop drop;
    void (*edit)(rdmacm_mux_mad &);
};

const Refusal kRefusals[] = {
    {"mad_len_short", Drop::mad_len,
     [](rdmacm_mux_mad &m) { m.mad_len = htole32(255); }},
    {"mad_len_long", Drop::mad_len,
     [](rdmacm_mux_mad &m) { m.mad_len = htole32(257); }},
    {"mad_len_zero", Drop::mad_len,
     [](rdmacm_mux_mad &m) { m.mad_len = 0; }},
    {"base_version", Drop::base_version,
     [](rdmacm_mux_mad &m) { m.mad[0] = 2; }},
    {"class_sa", Drop::mgmt_class, [](rdmacm_mux_mad &m) { m.mad[1] = 3; }},
    {"class_subnet", Drop::mgmt_class,
     [](rdmacm_mux_mad &m) { m.mad[1] = 1; }},
    {"class_version", Drop::class_version,
     [](rdmacm_mux_mad &m) { m.mad[2] = 1; }},
    {"method_get", Drop::method, [](rdmacm_mux_mad &m) { m.mad[3] = 1; }},
    {"method_response_bit", Drop::method,
     [](rdmacm_mux_mad &m) { m.mad[3] = 0x83; }},
    {"attribute_class_port_info", Drop::attribute,
     [](rdmacm_mux_mad &m) { m.mad[17] = 0x01; }},
    {"attribute_after_apr", Drop::attribute,
     [](rdmacm_mux_mad &m) { m.mad[17] = 0x1b; }},
    {"attribute_high_byte", Drop::attribute,
     [](rdmacm_mux_mad &m) { m.mad[16] = 0x01; }},
    {"flow_label", Drop::flow_label,
     [](rdmacm_mux_mad &m) { m.flow_label = htole32(0x100000); }},
    {"sgid_unclaimed", Drop::sgid_not_claimed,
     [](rdmacm_mux_mad &m) { m.local_gid[15] = 3; }},
    {"sgid_of_another_client", Drop::sgid_not_claimed,
     [](rdmacm_mux_mad &m) { m.local_gid[15] = 2; }},
    {"pkey_index", Drop::pkey_index,
     [](rdmacm_mux_mad &m) { m.pkey_index = htole16(1); }},
};

void PrintTo(const Refusal &r, std::ostream *os)
{
    *os << r.name;
}

class MadSendRefusal : public MuxTest,
                       public ::testing::WithParamInterface<Refusal> {};

TEST_P(MadSendRefusal, IsDroppedCountedAndTheClientStays)
{
    Conn &other = hello();
    ASSERT_EQ(claim(other, gid_of(2)), RDMACM_MUX_OK);
    Conn &c = hello();
    ASSERT_EQ(claim(c, gid_of(1)), RDMACM_MUX_OK);
    put(c, mad_send_msg(gid_of(1), GetParam().edit));
    pump();
    EXPECT_TRUE(port.sent.empty());
    EXPECT_EQ(tx(GetParam().drop), 1u);
    uint64_t all = 0;
    for (uint64_t n : mux->stats().tx_drops) {
        all += n;
    }
    EXPECT_EQ(all, 1u) << "counted under one reason only";
    /* A refused MAD is the guest's doing: the connection stays. */
    put(c, mad_send_msg(gid_of(1)));
    pump();
    EXPECT_EQ(port.sent.size(), 1u);
    EXPECT_FALSE(closed(c));
}

INSTANTIATE_TEST_SUITE_P(
    Mux, MadSendRefusal, ::testing::ValuesIn(kRefusals),
    [](const ::testing::TestParamInfo<Refusal> &i) {
        return std::string(i.param.name);
    });

TEST_F(MuxTest, SourceGidGoneFromTheHostIsNotSent)
{
    Conn &c = hello();
    ASSERT_EQ(claim(c, gid_of(3)), RDMACM_MUX_OK);
    port.gids.pop_back(); /* gid_of(3) */
    port.gid_event();
    pump();
    put(c, mad_send_msg(gid_of(3)));
    pump();
    EXPECT_TRUE(port.sent.empty());
    EXPECT_EQ(tx(Drop::sgid_not_on_host), 1u);
}

TEST_F(MuxTest, SourceGidMovedOnTheHostIsFollowed)
{
    Conn &c = hello();
    ASSERT_EQ(claim(c, gid_of(3)), RDMACM_MUX_OK);
    port.gids.back().index = 12;
    port.gid_event();
    pump();
    put(c, mad_send_msg(gid_of(3)));
    pump();
    ASSERT_EQ(port.sent.size(), 1u);
    EXPECT_EQ(port.sent[0].addr.gid_index, 12u);
}

TEST_F(MuxTest, PortRefusingASendIsCounted)
{
    Conn &c = hello();
    ASSERT_EQ(claim(c, gid_of(1)), RDMACM_MUX_OK);
    port.send_ret = -EINVAL;
    put(c, mad_send_msg(gid_of(1)));
    pump();
    EXPECT_EQ(tx(Drop::send_failed), 1u);
    EXPECT_EQ(mux->stats().mads_sent, 0u);
    EXPECT_FALSE(closed(c));
}

} // namespace
} // namespace rdmacm_mux::test

/*
 * The one "is this frame RoCEv2" classifier, vrdma_frame_roce_dst(): what
 * it takes (one 802.1Q tag, IPv4 that is no fragment, IPv6 whose next
 * header is UDP, port 4791) and what it leaves to the NIC, truncation at
 * every byte, and that vrdma_core_net_receive() claims exactly the frames
 * it classifies as RoCE for one of the core's GIDs.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "dp_harness.h"
#include "test_roce_util.h"

namespace vrdma_test {
namespace {

struct Classified {
    bool roce = false;
    Gid dst{};
};

Classified classify(const Bytes &f)
{
    Classified c;
    c.dst.fill(0x5A);
    const Gid untouched = c.dst;
    c.roce = vrdma_frame_roce_dst(f.data(), f.size(), c.dst.data());
    if (!c.roce) {
        EXPECT_EQ(c.dst, untouched) << "written on false";
    }
    return c;
}

class Classify : public DpTest {
protected:
    void SetUp() override
    {
        DpTest::SetUp();
        b->add_gid(1, gid_v6(2));
    }

    /* A UD SEND from a to b over IPv4 or IPv6, tagged or not. */
    Bytes frame(bool v6, bool vlan)
    {
        roce::FrameAddr fa;
        fa.dmac = b->mac;
        fa.smac = a->mac;
        fa.sgid = v6 ? gid_v6(1) : a->gid;
        fa.dgid = v6 ? gid_v6(2) : b->gid;
        fa.vlan = vlan;
        fa.vlan_tci = 0x2064; /* PCP 1, VID 100 */
        HdrValues v;
        v.pkey = 0xFFFF;
        return build(roce::kUdSendOnly, 32, fa, v);
    }

    /*
     * The core takes @f exactly if the classifier says RoCE to one of b's
     * GIDs (b has exactly those two).
     */
    void expect_core_agrees(const Bytes &f, const std::string &what)
    {
        const Classified c = classify(f);
        const bool ours = c.roce && (c.dst == b->gid || c.dst == gid_v6(2));
        EXPECT_EQ(b->receive(f), ours) << what;
    }
};

/* IPv4 flags/fragment-offset word of an untagged or tagged frame. */
void set_frag(Bytes &f, uint16_t v)
{
    const size_t ip = l3_of(f);
    f[ip + 6] = static_cast<uint8_t>(v >> 8);
    f[ip + 7] = static_cast<uint8_t>(v);
    fix_ipv4_csum(f);
}

TEST_F(Classify, VlanTaggedRoceIsRoceV4AndV6)
{
    for (bool v6 : {false, true}) {
        for (bool vlan : {false, true}) {
            const Bytes f = frame(v6, vlan);
            ASSERT_EQ(f[12] == 0x81, vlan);
            const Classified c = classify(f);
            EXPECT_TRUE(c.roce) << "v6 " << v6 << " vlan " << vlan;
            EXPECT_EQ(c.dst, v6 ? gid_v6(2) : b->gid);
            EXPECT_TRUE(b->receive(f)) << "v6 " << v6 << " vlan " << vlan;
        }
    }
    EXPECT_EQ(b->stats().rx_packets, 4u);
}

/* Two tags (QinQ) are one more than the rule allows: the NIC's. */
TEST_F(Classify, TwoVlanTagsAreNotRoce)
{
    Bytes f = frame(false, true);
    const uint8_t tag[4] = {0x81, 0x00, 0x00, 0x05};
    f.insert(f.begin() + 12, tag, tag + 4);
    EXPECT_FALSE(classify(f).roce);
    expect_core_agrees(f, "qinq");
}

/*
 * Every fragment of a datagram goes the same way, to the NIC: the first
 * one (MF, offset 0) too.  Before the one classifier, the core claimed a
 * first fragment (and dropped it) while the rest went to the NIC, and the
 * C device claimed the later ones and read their payload as a UDP header.
 */
TEST_F(Classify, Ipv4FragmentsAreNotRoceDfIs)
{
    struct Case {
        const char *name;
        uint16_t frag;
        bool roce;
    } cases[] = {
        {"df", 0x4000, true},
        {"no_flags", 0x0000, true},
        {"first_fragment", 0x2000, false},
        {"middle_fragment", 0x2000 | 185, false},
        {"last_fragment", 185, false},
        {"df_and_offset", 0x4000 | 1, false},
    };
    for (bool vlan : {false, true}) {
        for (const Case &k : cases) {
            Bytes f = frame(false, vlan);
            set_frag(f, k.frag);
            EXPECT_EQ(classify(f).roce, k.roce) << k.name << " vlan " << vlan;
            expect_core_agrees(f, k.name);
        }
    }
}

TEST_F(Classify, Ipv6ExtensionHeaderIsNotRoce)
{
    for (uint8_t nh : {0 /* hop-by-hop */, 43 /* routing */,
                       44 /* fragment */, 6 /* TCP */, 58 /* ICMPv6 */}) {
        Bytes f = frame(true, false);
        f[14 + 6] = nh;
        EXPECT_FALSE(classify(f).roce) << int{nh};
        expect_core_agrees(f, "next header " + std::to_string(nh));
    }
}

TEST_F(Classify, OtherL3L4IsNotRoce)
{
    struct Case {
        const char *name;
        std::function<void(Bytes &)> change;
    } cases[] = {
        {"arp", [](Bytes &f) { f[l3_of(f) - 2] = 0x08, f[l3_of(f) - 1] = 0x06; }},
        {"v4_type_v6_header", [](Bytes &f) { f[l3_of(f)] = 0x65; }},
        {"ihl_4", [](Bytes &f) { f[l3_of(f)] = 0x44; }},
        {"tcp", [](Bytes &f) { f[l3_of(f) + 9] = 6; }},
        {"port_4790", [](Bytes &f) { f[l4_of(f) + 3] ^= 0x03; }},
        {"port_in_source_only",
         [](Bytes &f) {
             f[l4_of(f)] = 0x12, f[l4_of(f) + 1] = 0xB7; /* 4791 */
             f[l4_of(f) + 2] = 0x12, f[l4_of(f) + 3] = 0xB8;
         }},
    };
    for (bool vlan : {false, true}) {
        for (const Case &k : cases) {
            Bytes f = frame(false, vlan);
            k.change(f);
            fix_ipv4_csum(f);
            EXPECT_FALSE(classify(f).roce) << k.name << " vlan " << vlan;
            expect_core_agrees(f, k.name);
        }
    }
}

/* RoCE to an address that is not ours: RoCE, but the NIC's frame. */
TEST_F(Classify, RoceToAnotherAddressIsRoceButNotOurs)
{
    Bytes f = frame(false, true);
    f[l3_of(f) + 19] ^= 0x40;
    fix_ipv4_csum(f);
    const Classified c = classify(f);
    EXPECT_TRUE(c.roce);
    EXPECT_NE(c.dst, b->gid);
    EXPECT_FALSE(b->receive(f));
}

/*
 * Cut at every length: RoCE from the first length that holds the UDP
 * destination port on (the core then drops what it cannot parse), not RoCE
 * below it; the core agrees at each.
 */
TEST_F(Classify, TruncatedAtEveryBoundary)
{
    for (bool v6 : {false, true}) {
        for (bool vlan : {false, true}) {
            const Bytes whole = frame(v6, vlan);
            const size_t need = l4_of(whole) + 4;
            for (size_t n = 0; n <= need + 2; n++) {
                const Bytes f(whole.begin(), whole.begin() + n);
                EXPECT_EQ(classify(f).roce, n >= need)
                    << "v6 " << v6 << " vlan " << vlan << " len " << n;
                expect_core_agrees(f, "len " + std::to_string(n));
            }
        }
    }
    EXPECT_FALSE(vrdma_frame_roce_dst(nullptr, 0, Gid{}.data()));
}

} // namespace
} // namespace vrdma_test

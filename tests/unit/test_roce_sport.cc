/*
 * rxe's UDP source-port rule: values worked out by hand from the kernel's
 * hash_32() (GOLDEN_RATIO_32) and rdma_get_udp_sport().
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "roce/udp_sport.h"
#include "test_roce_util.h"

namespace vrdma_test {
namespace {

/* The rule is constexpr: the requester can precompute it. */
static_assert(roce::udp_sport_for_qpn(0x11) == 0xDF94);

TEST(RoceSport, AtQpCreate)
{
    /* 0xC000 + ((qpn * 0x61C88647 mod 2^32) >> 18). */
    EXPECT_EQ(roce::udp_sport_for_qpn(0), 0xC000);
    EXPECT_EQ(roce::udp_sport_for_qpn(1), 0xD872);
    EXPECT_EQ(roce::udp_sport_for_qpn(2), 0xF0E4);
    EXPECT_EQ(roce::udp_sport_for_qpn(3), 0xC956);
    EXPECT_EQ(roce::udp_sport_for_qpn(0x11), 0xDF94);
    EXPECT_EQ(roce::udp_sport_for_qpn(0x123456), 0xC168);
    EXPECT_EQ(roce::udp_sport_for_qpn(0xFFFFFF), 0xF94D);
    for (uint32_t q = 0; q < 5000; q++) {
        EXPECT_GE(roce::udp_sport_for_qpn(q), 0xC000);
    }
}

TEST(RoceSport, FlowLabelFromQpns)
{
    /* v = l * r; v ^= v >> 20; v ^= v >> 40; v & 0xFFFFF. */
    EXPECT_EQ(roce::flow_label_from_qpns(0x11, 0x12), 0x132u);
    EXPECT_EQ(roce::flow_label_from_qpns(1, 1), 1u);
    EXPECT_EQ(roce::flow_label_from_qpns(0x123456, 0xABCDEF), 0xAC3E3u);
    EXPECT_EQ(roce::flow_label_from_qpns(0xFFFFFF, 0xFFFFFF), 0xFFF1Eu);
}

TEST(RoceSport, FromFlowLabel)
{
    /* Low 14 bits XOR the high 6, then | 0xC000. */
    EXPECT_EQ(roce::udp_sport_from_flow_label(1), 0xC001);
    EXPECT_EQ(roce::udp_sport_from_flow_label(0x3FFF), 0xFFFF);
    EXPECT_EQ(roce::udp_sport_from_flow_label(0x4000), 0xC001);
    EXPECT_EQ(roce::udp_sport_from_flow_label(0xFFFFF), 0xFFC0);
    EXPECT_EQ(roce::udp_sport_from_flow_label(0x12345), 0xE341);
}

TEST(RoceSport, WithGrhAddressVector)
{
    /* A flow label given wins; 0 means "derive it from the QP numbers". */
    EXPECT_EQ(roce::udp_sport_for_av(0x12345, 0x11, 0x12), 0xE341);
    EXPECT_EQ(roce::udp_sport_for_av(0, 0x11, 0x12), 0xC132);
    EXPECT_EQ(roce::udp_sport_for_av(0, 0x123456, 0xABCDEF), 0xC3C8);
    EXPECT_EQ(roce::udp_sport_for_av(0, 0xFFFFFF, 0xFFFFFF), 0xFF21);
}

} // namespace
} // namespace vrdma_test

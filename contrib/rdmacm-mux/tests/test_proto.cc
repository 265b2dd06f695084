/*
 * rdmacm-mux: the wire format seen from C and C++, and the CM MAD facts.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <endian.h>
#include <gtest/gtest.h>

#include <cstring>

#include "cm_mad.h"
#include "hw/rdma/rdmacm-mux-proto.h"
#include "proto_c_check.h"

namespace rdmacm_mux {
namespace {

TEST(MuxProto, CAndCppAgreeOnEverySize)
{
    EXPECT_EQ(proto_c_hdr_size(), 16u);
    for (uint32_t type = 0; type <= 8; type++) {
        EXPECT_EQ(proto_c_size(type), rdmacm_mux_payload_size(type)) << type;
    }
    EXPECT_EQ(rdmacm_mux_payload_size(RDMACM_MUX_HELLO), 1484u);
    EXPECT_EQ(rdmacm_mux_payload_size(RDMACM_MUX_HELLO_ACK), 80u);
    EXPECT_EQ(rdmacm_mux_payload_size(RDMACM_MUX_GID_ADD), 16u);
    EXPECT_EQ(rdmacm_mux_payload_size(RDMACM_MUX_GID_DEL), 16u);
    EXPECT_EQ(rdmacm_mux_payload_size(RDMACM_MUX_GID_ACK), 24u);
    EXPECT_EQ(rdmacm_mux_payload_size(RDMACM_MUX_MAD_SEND), 300u);
    EXPECT_EQ(rdmacm_mux_payload_size(RDMACM_MUX_MAD_RECV), 300u);
    EXPECT_EQ(rdmacm_mux_payload_size(0), 0u);
    EXPECT_EQ(rdmacm_mux_payload_size(8), 0u);
    EXPECT_EQ(RDMACM_MUX_MAX_MSG, 1500u);
    EXPECT_EQ(proto_c_max_msg(), 1500u);
    EXPECT_EQ(RDMACM_MUX_VERSION, 3);
    EXPECT_EQ(proto_c_version(), 3u);
}

TEST(MuxProto, MagicReadsRcmxOnTheWire)
{
    uint32_t magic = htole32(RDMACM_MUX_MAGIC);
    EXPECT_EQ(std::memcmp(&magic, "RCMX", 4), 0);
}

TEST(MuxProto, EveryDropHasANameAndAText)
{
    for (size_t i = 0; i < kDropCount; i++) {
        EXPECT_STRNE(drop_name(Drop(i)), "?");
        EXPECT_GT(std::strlen(drop_text(Drop(i))), 5u);
    }
    EXPECT_STREQ(drop_name(Drop::queue_full), "queue_full");
}

TEST(MuxProto, CheckCmMadTakesACmSendOnly)
{
    uint8_t mad[256] = {1, 0x07, 2, 0x03};
    mad[17] = 0x10;
    EXPECT_FALSE(check_cm_mad(mad, 256));
    EXPECT_EQ(check_cm_mad(mad, 0), Drop::mad_len);
    mad[17] = 0x1a;
    EXPECT_FALSE(check_cm_mad(mad, 256));
    mad[17] = 0x0f;
    EXPECT_EQ(check_cm_mad(mad, 256), Drop::attribute);
}

} // namespace
} // namespace rdmacm_mux

/*
 * The ICRC: the published rxe test vector byte for byte, the seed, and
 * agreement with a bitwise reference written from the definition.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <random>

#include "roce/icrc.h"
#include "test_roce_util.h"

namespace vrdma_test {
namespace {

/* IPv4 RC SEND_ONLY "hello rdma" (roce-wire-notes.md): IP header .. ICRC. */
const char kVector[] =
    "45000038000040004011b761c0a80101c0a80102"   /* IPv4 */
    "c12312b700240000"                           /* UDP, csum 0 */
    "0420ffff000000118000000168656c6c6f2072646d610000" /* BTH, data, pad */
    "e5476a48";                                  /* ICRC, LE */

TEST(RoceIcrc, SeedIsCrcOfEightFfBytes)
{
    const uint8_t ff[8] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
    EXPECT_EQ(roce::crc32_refl(0, ff), roce::kIcrcSeed);
    EXPECT_EQ(ref_crc32(0, ff, 8), roce::kIcrcSeed);
}

TEST(RoceIcrc, IsaLIsTheReflectedZlibCrc)
{
    /* "123456789" -> 0xCBF43926, the CRC-32 check value. */
    const uint8_t s[] = {'1', '2', '3', '4', '5', '6', '7', '8', '9'};
    EXPECT_EQ(roce::crc32_refl(0, s), 0xCBF43926u);
    /* Chaining continues the CRC as zlib's crc32() does. */
    EXPECT_EQ(roce::crc32_refl(roce::crc32_refl(0, std::span(s).first(4)),
                               std::span(s).subspan(4)),
              0xCBF43926u);
}

TEST(RoceIcrc, RxeTestVector)
{
    const Bytes v = from_hex(kVector);
    ASSERT_EQ(v.size(), 56u);
    const std::span<const uint8_t> covered(v.data(), v.size() - 4);
    EXPECT_EQ(roce::icrc_compute(covered, false), 0x486a47e5u);
    /* Stored little-endian: e5 47 6a 48. */
    EXPECT_EQ(v[52], 0xe5);
    EXPECT_EQ(v[53], 0x47);
    EXPECT_EQ(v[54], 0x6a);
    EXPECT_EQ(v[55], 0x48);
    /* The reference agrees (frame form: Ethernet in front). */
    Bytes f(14, 0);
    f[12] = 0x08;
    f.insert(f.end(), v.begin(), v.end());
    EXPECT_EQ(ref_icrc(f, 14, false), 0x486a47e5u);
}

TEST(RoceIcrc, MaskedFieldsDoNotChangeIt)
{
    Bytes v = from_hex(kVector);
    const std::span<const uint8_t> covered(v.data(), v.size() - 4);
    /* TOS, TTL, IP checksum, UDP checksum, BTH byte 4. */
    for (size_t off : {1, 8, 10, 11, 26, 27, 32}) {
        for (int bit = 0; bit < 8; bit++) {
            v[off] ^= 1 << bit;
            EXPECT_EQ(roce::icrc_compute(covered, false), 0x486a47e5u)
                << "byte " << off << " bit " << bit;
            v[off] ^= 1 << bit;
        }
    }
}

TEST(RoceIcrc, EveryOtherBitChangesIt)
{
    Bytes v = from_hex(kVector);
    const std::span<const uint8_t> covered(v.data(), v.size() - 4);
    for (size_t off = 0; off < covered.size(); off++) {
        if (off == 1 || off == 8 || off == 10 || off == 11 || off == 26 ||
            off == 27 || off == 32) {
            continue;
        }
        for (int bit = 0; bit < 8; bit++) {
            v[off] ^= 1 << bit;
            EXPECT_NE(roce::icrc_compute(covered, false), 0x486a47e5u)
                << "byte " << off << " bit " << bit;
            v[off] ^= 1 << bit;
        }
    }
}

TEST(RoceIcrc, Ipv6MasksTrafficClassFlowLabelHopLimit)
{
    const Bytes f = build(roce::kRcSendOnly, 9, test_addr(true));
    const size_t l3 = 14;
    Bytes m = f;
    m[l3 + 0] ^= 0x0F; /* traffic class high nibble */
    m[l3 + 1] ^= 0xFF; /* traffic class low nibble, flow label */
    m[l3 + 2] ^= 0xFF;
    m[l3 + 3] ^= 0xFF;
    m[l3 + 7] ^= 0xFF; /* hop limit */
    auto icrc = [&](const Bytes &b) {
        return roce::icrc_compute(
            std::span<const uint8_t>(b).subspan(l3, b.size() - l3 - 4), true);
    };
    EXPECT_EQ(icrc(m), icrc(f));
    m[l3 + 0] ^= 0x10; /* the version is covered */
    EXPECT_NE(icrc(m), icrc(f));
}

TEST(RoceIcrc, AgreesWithReferenceOnRandomPackets)
{
    std::mt19937 rng(4791);
    for (int n = 0; n < 200; n++) {
        const bool v6 = n & 1;
        const size_t ip = v6 ? 40 : 20;
        Bytes f(14 + ip + 8 + 12 + (rng() % 300) + 4);
        for (auto &b : f) {
            b = static_cast<uint8_t>(rng());
        }
        const uint32_t got = roce::icrc_compute(
            std::span<const uint8_t>(f).subspan(14, f.size() - 18), v6);
        EXPECT_EQ(got, ref_icrc(f, 14, v6)) << "packet " << n;
    }
}

TEST(RoceIcrc, TooShortIsZero)
{
    const Bytes v = from_hex(kVector);
    EXPECT_EQ(roce::icrc_compute(std::span(v).first(39), false), 0u);
    EXPECT_EQ(roce::icrc_compute(std::span(v).first(40), false),
              roce::icrc_compute(std::span(v).first(40), false));
    EXPECT_EQ(roce::icrc_compute(std::span(v).first(56), true), 0u);
}

} // namespace
} // namespace vrdma_test

/*
 * Header accessors: each field lands on the bytes IBA ch. 9 gives it, in
 * network order, and a setter leaves its neighbours alone.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <array>
#include <cstring>

#include "test_roce_util.h"

namespace vrdma_test {
namespace {

template <size_t N>
using Buf = std::array<uint8_t, N>;

template <typename V>
concept HasSetPsn = requires(V v) { v.set_psn(1u); };
template <typename V>
concept HasSetVa = requires(V v) { v.set_va(1u); };

TEST(RoceHeaders, BthLayout)
{
    Buf<12> b{};
    roce::MutBth w{std::span(b)};
    w.set_opcode(0x0A);
    w.set_se(true);
    w.set_mig_req(true);
    w.set_pad(3);
    w.set_tver(0);
    w.set_pkey(0xFFFF);
    w.set_fecn(true);
    w.set_becn(false);
    w.set_qpn(0x123456);
    w.set_ack_req(true);
    w.set_psn(0xABCDEF);
    EXPECT_EQ(b, (Buf<12>{0x0A, 0xF0, 0xFF, 0xFF, 0x80, 0x12, 0x34, 0x56,
                          0x80, 0xAB, 0xCD, 0xEF}));

    const roce::Bth r{std::span<const uint8_t, 12>(b)};
    EXPECT_EQ(r.opcode(), 0x0A);
    EXPECT_TRUE(r.se());
    EXPECT_TRUE(r.mig_req());
    EXPECT_EQ(r.pad(), 3);
    EXPECT_EQ(r.tver(), 0);
    EXPECT_EQ(r.pkey(), 0xFFFF);
    EXPECT_TRUE(r.fecn());
    EXPECT_FALSE(r.becn());
    EXPECT_EQ(r.qpn(), 0x123456u);
    EXPECT_TRUE(r.ack_req());
    EXPECT_EQ(r.psn(), 0xABCDEFu);

    /* Setters keep the other bits of their byte. */
    w.set_pad(1);
    EXPECT_EQ(b[1], 0xD0);
    w.set_se(false);
    EXPECT_EQ(b[1], 0x50);
    w.set_tver(0xF);
    EXPECT_EQ(b[1], 0x5F);
    EXPECT_EQ(r.pad(), 1);
    w.set_becn(true);
    EXPECT_EQ(b[4], 0xC0);
    w.set_fecn(false);
    EXPECT_EQ(b[4], 0x40);
    w.set_ack_req(false);
    EXPECT_EQ(b[8], 0x00);
    /* 24-bit fields take the low 24 bits. */
    w.set_qpn(0xFF000001);
    EXPECT_EQ(r.qpn(), 1u);
    EXPECT_EQ(b[4], 0x40);
}

TEST(RoceHeaders, RethLayout)
{
    Buf<16> b{};
    roce::MutReth w{std::span(b)};
    w.set_va(0x0102030405060708ull);
    w.set_rkey(0x11223344);
    w.set_dma_len(0x80000000);
    EXPECT_EQ(b, (Buf<16>{1, 2, 3, 4, 5, 6, 7, 8, 0x11, 0x22, 0x33, 0x44,
                          0x80, 0, 0, 0}));
    const roce::Reth r{std::span<const uint8_t, 16>(b)};
    EXPECT_EQ(r.va(), 0x0102030405060708ull);
    EXPECT_EQ(r.rkey(), 0x11223344u);
    EXPECT_EQ(r.dma_len(), 0x80000000u);
}

TEST(RoceHeaders, AtomicEthLayout)
{
    Buf<28> b{};
    roce::MutAtomicEth w{std::span(b)};
    w.set_va(0x1000);
    w.set_rkey(0xA0B0C0D0);
    w.set_swap_add(0x0102030405060708ull);
    w.set_compare(0x1112131415161718ull);
    EXPECT_EQ(b, (Buf<28>{0, 0, 0, 0, 0, 0, 0x10, 0, 0xA0, 0xB0, 0xC0, 0xD0,
                          1, 2, 3, 4, 5, 6, 7, 8,
                          0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18}));
    const roce::AtomicEth r{std::span<const uint8_t, 28>(b)};
    EXPECT_EQ(r.va(), 0x1000u);
    EXPECT_EQ(r.rkey(), 0xA0B0C0D0u);
    EXPECT_EQ(r.swap_add(), 0x0102030405060708ull);
    EXPECT_EQ(r.compare(), 0x1112131415161718ull);
}

TEST(RoceHeaders, AethLayoutAndSyndromes)
{
    Buf<4> b{};
    roce::MutAeth w{std::span(b)};
    w.set_syndrome(roce::kAethNakRemAccessErr);
    w.set_msn(0x010203);
    EXPECT_EQ(b, (Buf<4>{0x62, 1, 2, 3}));
    const roce::Aeth r{std::span<const uint8_t, 4>(b)};
    EXPECT_EQ(r.syndrome() & roce::kAethTypeMask, roce::kAethNak);
    EXPECT_EQ(r.syndrome() & roce::kAethValueMask, 2);
    EXPECT_EQ(r.msn(), 0x010203u);
    /* rxe's plain ACK carries "no credit count": 0x1F. */
    EXPECT_EQ(roce::kAethAck | roce::kAethNoCredits, 0x1F);
    EXPECT_EQ(roce::kAethRnrNak | 12, 0x2C);
}

TEST(RoceHeaders, AtomicAckEthLayout)
{
    Buf<8> b{};
    roce::MutAtomicAckEth w{std::span(b)};
    w.set_orig(0xF0E0D0C0B0A09080ull);
    EXPECT_EQ(b, (Buf<8>{0xF0, 0xE0, 0xD0, 0xC0, 0xB0, 0xA0, 0x90, 0x80}));
    EXPECT_EQ(roce::AtomicAckEth(std::span<const uint8_t, 8>(b)).orig(),
              0xF0E0D0C0B0A09080ull);
}

TEST(RoceHeaders, ImmDtRawIsWireOrder)
{
    Buf<4> b{};
    roce::MutImmDt w{std::span(b)};
    w.set_imm(0x01020304);
    EXPECT_EQ(b, (Buf<4>{1, 2, 3, 4}));
    const roce::ImmDt r{std::span<const uint8_t, 4>(b)};
    EXPECT_EQ(r.imm(), 0x01020304u);
    /* verbs imm_data (__be32) is the bytes as they are. */
    uint32_t raw;
    std::memcpy(&raw, b.data(), 4);
    EXPECT_EQ(r.imm_raw(), raw);
    w.set_imm_raw(raw);
    EXPECT_EQ(b, (Buf<4>{1, 2, 3, 4}));
}

TEST(RoceHeaders, IethDethFethLayout)
{
    Buf<4> i{};
    roce::MutIeth{std::span(i)}.set_rkey(0xCAFEBABE);
    EXPECT_EQ(i, (Buf<4>{0xCA, 0xFE, 0xBA, 0xBE}));
    EXPECT_EQ(roce::Ieth(std::span<const uint8_t, 4>(i)).rkey(), 0xCAFEBABEu);

    Buf<8> d{};
    d[4] = 0x00;
    roce::MutDeth dw{std::span(d)};
    dw.set_qkey(0x80010000);
    dw.set_sqp(0x000001);
    EXPECT_EQ(d, (Buf<8>{0x80, 0x01, 0, 0, 0, 0, 0, 1}));
    const roce::Deth dr{std::span<const uint8_t, 8>(d)};
    EXPECT_EQ(dr.qkey(), 0x80010000u);
    EXPECT_EQ(dr.sqp(), 1u);

    Buf<4> f{};
    roce::MutFeth fw{std::span(f)};
    fw.set_plt(0x2);
    fw.set_sel(0x1);
    EXPECT_EQ(f, (Buf<4>{0, 0, 0, 0x12}));
    const roce::Feth fr{std::span<const uint8_t, 4>(f)};
    EXPECT_EQ(fr.plt(), 2);
    EXPECT_EQ(fr.sel(), 1);
    fw.set_plt(0xF);
    EXPECT_EQ(fr.sel(), 1);
}

TEST(RoceHeaders, ReadOnlyViewsHaveNoSetters)
{
    static_assert(!HasSetPsn<roce::Bth>);
    static_assert(HasSetPsn<roce::MutBth>);
    static_assert(!HasSetVa<roce::Reth>);
    static_assert(HasSetVa<roce::MutReth>);
    static_assert(roce::Bth::kBytes == 12 && roce::Reth::kBytes == 16 &&
                  roce::Aeth::kBytes == 4 && roce::AtomicEth::kBytes == 28 &&
                  roce::AtomicAckEth::kBytes == 8 && roce::ImmDt::kBytes == 4 &&
                  roce::Ieth::kBytes == 4 && roce::Deth::kBytes == 8 &&
                  roce::Feth::kBytes == 4);
    SUCCEED();
}

TEST(RoceHeaders, BigEndianHelpers)
{
    uint8_t b[8] = {};
    roce::store_be64(b, 0x0807060504030201ull);
    EXPECT_EQ(b[0], 8);
    EXPECT_EQ(b[7], 1);
    EXPECT_EQ(roce::load_be64(b), 0x0807060504030201ull);
    EXPECT_EQ(roce::load_be32(b + 1), 0x07060504u);
    EXPECT_EQ(roce::load_be24(b + 5), 0x030201u);
    EXPECT_EQ(roce::load_be16(b + 6), 0x0201u);
}

} // namespace
} // namespace vrdma_test

/*
 * What the core's libFuzzer targets share: reading an input, and whether
 * a harness check (GoogleTest's EXPECT_*) failed.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef TESTS_FUZZ_FUZZ_INPUT_H
#define TESTS_FUZZ_FUZZ_INPUT_H

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include <gtest/gtest.h>

#include "dp_harness.h"

namespace vrdma_fuzz {

using vrdma_test::Bytes;

/* Reads the input front to back; past the end everything is 0. */
struct Input {
    const uint8_t *p;
    size_t n;

    uint8_t u8()
    {
        if (!n) {
            return 0;
        }
        n--;
        return *p++;
    }
    uint16_t u16() { return static_cast<uint16_t>(u8() | u8() << 8); }
    uint64_t u64()
    {
        uint64_t v = 0;
        for (int i = 0; i < 8; i++) {
            v |= uint64_t{u8()} << (8 * i);
        }
        return v;
    }
    Bytes bytes(size_t len)
    {
        len = std::min(len, n);
        Bytes b(p, p + len);
        p += len;
        n -= len;
        return b;
    }
};

inline int harness_failures()
{
    return ::testing::UnitTest::GetInstance()
        ->ad_hoc_test_result()
        .total_part_count();
}

} // namespace vrdma_fuzz

#endif

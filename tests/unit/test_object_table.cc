/*
 * The handle table: lowest-free allocation, generations, stale handles.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <gtest/gtest.h>

#include <memory>

#include "object_table.h"

namespace {

using vrdma::ObjectTable;

struct Obj {
    int v = 0;
};

TEST(ObjectTable, LowestFreeAndHandles)
{
    ObjectTable<Obj> t(3);
    EXPECT_EQ(t.lowest_free(), 0u);
    t.insert(0, std::make_unique<Obj>());
    t.insert(1, std::make_unique<Obj>());
    EXPECT_EQ(t.lowest_free(), 2u);
    EXPECT_EQ(t.lowest_free(1, 2), std::nullopt);
    EXPECT_EQ(t.handle_of(1), 0x10001u);
    EXPECT_NE(t.find(0x10001), nullptr);
    EXPECT_EQ(t.find(0x00001), nullptr); /* generation 0 never exists */
    EXPECT_EQ(t.find(0x20001), nullptr);
    EXPECT_EQ(t.find(0x10002), nullptr); /* free slot */
    EXPECT_EQ(t.find(0x10003), nullptr); /* out of range */
    EXPECT_EQ(t.at(3), nullptr);
    EXPECT_EQ(t.at(UINT32_MAX), nullptr);
    EXPECT_EQ(t.live(), 2u);
    t.erase(0);
    EXPECT_EQ(t.lowest_free(), 0u);
    EXPECT_EQ(t.find(0x10000), nullptr); /* stale */
    EXPECT_EQ(t.handle_of(0), 0x20000u);
    EXPECT_EQ(t.live(), 1u);
}

TEST(ObjectTable, GenerationWrapsToOneNeverZero)
{
    ObjectTable<Obj> t(1);
    for (uint32_t gen = 1; gen <= 0xffff; gen++) {
        ASSERT_EQ(t.handle_of(0) >> 16, gen);
        t.insert(0, std::make_unique<Obj>());
        t.erase(0);
    }
    EXPECT_EQ(t.handle_of(0) >> 16, 1u);
}

TEST(ObjectTable, ClearRestartsGenerations)
{
    ObjectTable<Obj> t(2);
    t.insert(1, std::make_unique<Obj>());
    t.erase(1);
    t.insert(1, std::make_unique<Obj>());
    EXPECT_EQ(t.handle_of(1), 0x20001u);
    t.clear();
    EXPECT_EQ(t.live(), 0u);
    EXPECT_EQ(t.at(1), nullptr);
    EXPECT_EQ(t.handle_of(1), 0x10001u);
}

} // namespace

/*
 * GET_DMA_MR / CREATE_MR / MAP_MR_SG / REG_USER_MR / DEREG_MR, keys, and
 * the two- and three-level page-table walks against the fake guest's
 * sparse RAM.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core.h"
#include "core_fixture.h"

namespace vrdma_test {
namespace {

constexpr uint64_t kPage = VIRTIO_RDMA_PAGE_SIZE;
constexpr uint32_t kLocalWrite = VIRTIO_RDMA_ACCESS_LOCAL_WRITE;
constexpr uint32_t kRemoteRead = VIRTIO_RDMA_ACCESS_REMOTE_READ;
/* Page tables live in RAM0 from 1 MiB on; data pages in RAM1. */
constexpr uint64_t kTable = FakeGuest::kRam0.base + (1u << 20);
constexpr uint64_t kData = FakeGuest::kRam1.base;

class Mr : public CoreTest {
protected:
    void SetUp() override
    {
        CoreTest::SetUp();
        pdn_ = create_pd();
    }

    virtio_rdma_cmd_reg_user_mr user_req(uint32_t npages, uint64_t virt,
                                         uint64_t length,
                                         uint32_t access = kLocalWrite)
    {
        virtio_rdma_cmd_reg_user_mr r{};
        r.pdn = pdn_;
        r.access_flags = access;
        r.start = virt;
        r.length = length;
        r.virt_addr = virt;
        r.pages = kTable;
        r.npages = npages;
        return r;
    }

    /* Registers @npages consecutive data pages from kData. */
    virtio_rdma_rsp_mr reg_user(uint32_t npages, uint32_t access = kLocalWrite)
    {
        write_page_table(kTable, pages_from(kData, npages));
        virtio_rdma_rsp_mr rsp{};
        EXPECT_EQ(ctrl(VIRTIO_RDMA_CMD_REG_USER_MR,
                       user_req(npages, 0x10000000, npages * kPage, access),
                       &rsp),
                  VIRTIO_RDMA_OK);
        return rsp;
    }

    virtio_rdma_rsp_mr create_mr(uint32_t max_num_sg,
                                 uint32_t access = kLocalWrite)
    {
        virtio_rdma_rsp_mr rsp{};
        EXPECT_EQ(ctrl(VIRTIO_RDMA_CMD_CREATE_MR,
                       virtio_rdma_cmd_create_mr{.pdn = pdn_,
                                                 .access_flags = access,
                                                 .max_num_sg = max_num_sg},
                       &rsp),
                  VIRTIO_RDMA_OK);
        return rsp;
    }

    static virtio_rdma_cmd_map_mr_sg map_req(uint32_t mrn, uint32_t npages,
                                             uint64_t start, uint64_t length)
    {
        return virtio_rdma_cmd_map_mr_sg{.mrn = mrn, .npages = npages,
                                         .start = start, .length = length,
                                         .pages = kTable};
    }

    const vrdma::Mr *mr_of(uint32_t mrn) const
    {
        return core_->mrs.objects().find(mrn);
    }

    /* The MR's pre-translated pages are exactly the guest's @gpas. */
    void expect_pages(uint32_t mrn, const std::vector<uint64_t> &gpas)
    {
        const vrdma::Mr *mr = mr_of(mrn);
        ASSERT_NE(mr, nullptr);
        ASSERT_EQ(mr->pages.count(), gpas.size());
        for (size_t i = 0; i < gpas.size(); i++) {
            ASSERT_EQ(mr->pages.page(i), guest_.host(gpas[i])) << i;
        }
    }

    uint64_t mapped_pages() const
    {
        VrdmaStats st;
        vrdma_core_get_stats(core_, &st);
        return st.mapped_pages;
    }

    uint32_t pdn_ = 0;
};

/* ---- GET_DMA_MR and keys ---- */

TEST_F(Mr, DmaMrKeys)
{
    const virtio_rdma_rsp_mr a = get_dma_mr(pdn_, kLocalWrite);
    EXPECT_EQ(a.mrn, 0x10000u);
    EXPECT_EQ(a.lkey, 0x001u); /* index 0, key byte 1 */
    EXPECT_EQ(a.rkey, 0u);     /* no remote access */

    const virtio_rdma_rsp_mr b = get_dma_mr(
        pdn_, kLocalWrite | VIRTIO_RDMA_ACCESS_REMOTE_WRITE |
                  VIRTIO_RDMA_ACCESS_REMOTE_ATOMIC | kRemoteRead);
    EXPECT_EQ(b.mrn, 0x10001u);
    EXPECT_EQ(b.lkey >> 8, 1u);
    EXPECT_EQ(b.rkey, b.lkey);

    const virtio_rdma_rsp_mr c = get_dma_mr(pdn_, kRemoteRead);
    EXPECT_EQ(c.rkey, c.lkey);
    const virtio_rdma_rsp_mr d =
        get_dma_mr(pdn_, VIRTIO_RDMA_ACCESS_RELAXED_ORDERING);
    EXPECT_EQ(d.rkey, 0u);
    EXPECT_EQ(guest_.maps, 0u) << "a DMA MR maps nothing";
    EXPECT_TRUE(guest_.errors.empty());
}

TEST_F(Mr, KeyByteChangesOnEveryRegistrationAndLkeyIsNeverZero)
{
    /* Slot 0: 1..255, then 1 again (0 would make lkey 0). */
    for (uint32_t i = 1; i <= 256; i++) {
        const virtio_rdma_rsp_mr mr = get_dma_mr(pdn_, 0);
        ASSERT_EQ(mr.mrn & 0xffff, 0u);
        ASSERT_EQ(mr.lkey, i == 256 ? 1u : i);
        ASSERT_EQ(dereg_mr(mr.mrn), VIRTIO_RDMA_OK);
    }
    /* Slot 1 has its own counter; key byte 0 is fine there. */
    const virtio_rdma_rsp_mr hold = get_dma_mr(pdn_, 0);
    for (uint32_t i = 1; i <= 256; i++) {
        const virtio_rdma_rsp_mr mr = get_dma_mr(pdn_, 0);
        ASSERT_EQ(mr.mrn & 0xffff, 1u);
        ASSERT_EQ(mr.lkey, 0x100u | (i & 0xff));
        ASSERT_EQ(dereg_mr(mr.mrn), VIRTIO_RDMA_OK);
    }
    EXPECT_EQ(dereg_mr(hold.mrn), VIRTIO_RDMA_OK);
}

/*
 * REG_MR key bytes (MrTable::key_taken): the slot's counter continues past
 * the byte a consumer set, so the next MR in the slot does not get a key a
 * peer may still hold.  Each case notes what the counter did before it
 * learnt REG_MR's byte.
 */
TEST(MrKeys, NextKeyContinuesPastTheBytesRegMrSet)
{
    vrdma::MrTable t(4);
    ASSERT_EQ(t.next_key(1), 0x101u); /* CREATE_MR */
    t.key_taken(0x102);               /* REG_MR, ib_inc_rkey() */
    t.key_taken(0x103);               /* again, after LOCAL_INV */
    /* DEREG_MR, then a new MR in slot 1 (before: 0x102, a key just used). */
    EXPECT_EQ(t.next_key(1), 0x104u);
    /* The other slots are untouched. */
    EXPECT_EQ(t.next_key(2), 0x201u);
}

TEST(MrKeys, StepsThroughTheWrapAsForward)
{
    vrdma::MrTable t(4);
    ASSERT_EQ(t.next_key(1), 0x101u);
    /* ib_inc_rkey() from 0x02 round to 0x03: 0xff -> 0x00 is one step. */
    for (uint32_t k = 2; k <= 0x103; k++) {
        t.key_taken(0x100 | (k & 0xff));
    }
    /* Before: 0x102; a "highest byte wins" rule: 0x100.  Both just used. */
    EXPECT_EQ(t.next_key(1), 0x104u);
}

TEST(MrKeys, AnOlderByteDoesNotRewindTheCounter)
{
    vrdma::MrTable t(4);
    ASSERT_EQ(t.next_key(1), 0x101u);
    t.key_taken(0x102);
    t.key_taken(0x103);
    t.key_taken(0x101); /* the consumer reuses an older key */
    /* Following the last byte would hand out 0x102 again. */
    EXPECT_EQ(t.next_key(1), 0x104u);
    /* Half the byte space or more ahead reads as behind: not followed. */
    t.key_taken(0x184);
    EXPECT_EQ(t.next_key(1), 0x105u);
    /* 127 ahead is forward. */
    t.key_taken(0x184);
    EXPECT_EQ(t.next_key(1), 0x185u);
}

TEST(MrKeys, SlotZeroStillNeverHandsOutLkeyZero)
{
    vrdma::MrTable t(2);
    ASSERT_EQ(t.next_key(0), 0x001u);
    for (uint32_t k = 2; k <= 0xff; k++) {
        t.key_taken(k);
    }
    EXPECT_EQ(t.next_key(0), 0x001u); /* 0x000 skipped */
}

TEST(MrKeys, KeyOfNoSlotIsIgnoredAndClearRestarts)
{
    vrdma::MrTable t(2);
    ASSERT_EQ(t.next_key(1), 0x101u);
    t.key_taken(0x205);      /* index 2: outside the table */
    t.key_taken(0xffffffff);
    t.key_taken(0x105);
    t.clear();
    EXPECT_EQ(t.next_key(1), 0x101u);
}

/*
 * With a seed, a slot's first key byte is random (the index part stays the
 * slot), later registrations in the slot still step it by one, and a reset
 * draws new bytes: a stale key after dereg or reset is refused.
 */
TEST_F(Mr, SeededFirstKeyIsRandomAndStillSteps)
{
    auto first_keys = [&](uint64_t seed) {
        VrdmaLimits lim = default_limits();
        lim.rng_seed = seed;
        start(lim);
        pdn_ = create_pd();
        std::vector<uint32_t> keys;
        for (uint32_t i = 0; i < lim_.max_mr; i++) {
            const virtio_rdma_rsp_mr m = get_dma_mr(pdn_, kRemoteRead);
            EXPECT_EQ(m.lkey >> 8, i);
            EXPECT_EQ(m.rkey, m.lkey);
            EXPECT_NE(m.lkey, 0u);
            keys.push_back(m.lkey);
        }
        return keys;
    };
    const std::vector<uint32_t> k1 = first_keys(1), k2 = first_keys(2);
    std::vector<uint32_t> deterministic;
    for (uint32_t i = 0; i < lim_.max_mr; i++) {
        deterministic.push_back(i << 8 | 1);
    }
    EXPECT_NE(k1, deterministic);
    EXPECT_NE(k1, k2);
    EXPECT_EQ(first_keys(0), deterministic) << "seed 0: as before";

    /* The key rule: the next registration in slot 3 is one byte on. */
    const std::vector<uint32_t> k = first_keys(7);
    ASSERT_EQ(ctrl(VIRTIO_RDMA_CMD_DEREG_MR,
                   virtio_rdma_cmd_dereg_mr{.mrn = 1u << 16 | 3}),
              VIRTIO_RDMA_OK);
    const virtio_rdma_rsp_mr again = get_dma_mr(pdn_, kRemoteRead);
    EXPECT_EQ(again.lkey, 3u << 8 | ((k[3] + 1) & 0xFF));
    EXPECT_EQ(core_->mrs.lookup_rkey(k[3]), nullptr) << "stale key refused";

    /* A reset draws new bytes from the stream. */
    vrdma_core_reset(core_);
    pdn_ = create_pd();
    const virtio_rdma_rsp_mr after = get_dma_mr(pdn_, kRemoteRead);
    EXPECT_EQ(after.lkey >> 8, 0u);
    EXPECT_NE(after.lkey, k[0]);
}

TEST_F(Mr, InternalLookupChecksTheWholeKey)
{
    const virtio_rdma_rsp_mr local = get_dma_mr(pdn_, kLocalWrite);
    const virtio_rdma_rsp_mr remote = get_dma_mr(pdn_, kRemoteRead);
    const vrdma::MrTable &t = core_->mrs;

    EXPECT_EQ(t.lookup_lkey(local.lkey), mr_of(local.mrn));
    EXPECT_EQ(t.lookup_lkey(local.lkey ^ 0x80), nullptr); /* key byte */
    EXPECT_EQ(t.lookup_lkey(0), nullptr);
    EXPECT_EQ(t.lookup_lkey(0xffffffff), nullptr);
    EXPECT_EQ(t.lookup_rkey(local.lkey), nullptr); /* no remote access */
    EXPECT_EQ(t.lookup_rkey(0), nullptr);
    EXPECT_EQ(t.lookup_rkey(remote.rkey), mr_of(remote.mrn));
    EXPECT_EQ(t.lookup_lkey(remote.lkey), mr_of(remote.mrn));
    ASSERT_EQ(dereg_mr(remote.mrn), VIRTIO_RDMA_OK);
    EXPECT_EQ(t.lookup_rkey(remote.rkey), nullptr);
    /* Re-registered in the same slot: the old key no longer works. */
    const virtio_rdma_rsp_mr again = get_dma_mr(pdn_, kRemoteRead);
    EXPECT_EQ(again.mrn & 0xffff, remote.mrn & 0xffff);
    EXPECT_NE(again.rkey, remote.rkey);
    EXPECT_EQ(t.lookup_rkey(remote.rkey), nullptr);
}

/* Access rules shared by GET_DMA_MR, CREATE_MR and REG_USER_MR. */
const uint32_t kBadAccess[] = {
    VIRTIO_RDMA_ACCESS_MW_BIND,
    VIRTIO_RDMA_ACCESS_ZERO_BASED,
    VIRTIO_RDMA_ACCESS_ON_DEMAND,
    VIRTIO_RDMA_ACCESS_HUGETLB,
    1u << 8,
    1u << 31,
    VIRTIO_RDMA_ACCESS_REMOTE_WRITE,  /* needs LOCAL_WRITE */
    VIRTIO_RDMA_ACCESS_REMOTE_ATOMIC, /* needs LOCAL_WRITE */
    VIRTIO_RDMA_ACCESS_REMOTE_WRITE | kRemoteRead,
};

TEST_F(Mr, DmaMrErrors)
{
    for (uint32_t access : kBadAccess) {
        expect_refused(VIRTIO_RDMA_CMD_GET_DMA_MR,
                       virtio_rdma_cmd_get_dma_mr{.pdn = pdn_,
                                                  .access_flags = access},
                       VRDMA_ERR_BAD_ARG);
    }
    expect_refused(VIRTIO_RDMA_CMD_GET_DMA_MR,
                   virtio_rdma_cmd_get_dma_mr{.pdn = pdn_ + 1,
                                              .access_flags = 0},
                   VRDMA_ERR_BAD_HANDLE);
    expect_refused(VIRTIO_RDMA_CMD_GET_DMA_MR,
                   virtio_rdma_cmd_get_dma_mr{.pdn = pdn_ + 0x10000,
                                              .access_flags = 0},
                   VRDMA_ERR_BAD_HANDLE);
    for (uint32_t i = 0; i < lim_.max_mr; i++) {
        get_dma_mr(pdn_, 0);
    }
    expect_refused(VIRTIO_RDMA_CMD_GET_DMA_MR,
                   virtio_rdma_cmd_get_dma_mr{.pdn = pdn_, .access_flags = 0},
                   VRDMA_ERR_TABLE_FULL);
    EXPECT_EQ(dereg_mr(0x10003), VIRTIO_RDMA_OK);
    EXPECT_EQ(get_dma_mr(pdn_, 0).mrn, 0x20003u);
}

/* ---- DEREG_MR ---- */

TEST_F(Mr, DeregErrorsAndStaleHandles)
{
    const virtio_rdma_rsp_mr mr = get_dma_mr(pdn_, 0);
    for (uint32_t bad : {0u, 0x10001u, 0x20000u, 0x10000u | 8u, 0xffffffffu}) {
        expect_refused(VIRTIO_RDMA_CMD_DEREG_MR,
                       virtio_rdma_cmd_dereg_mr{.mrn = bad},
                       VRDMA_ERR_BAD_HANDLE);
    }
    EXPECT_EQ(dereg_mr(mr.mrn), VIRTIO_RDMA_OK);
    expect_refused(VIRTIO_RDMA_CMD_DEREG_MR,
                   virtio_rdma_cmd_dereg_mr{.mrn = mr.mrn},
                   VRDMA_ERR_BAD_HANDLE);
    EXPECT_EQ(destroy_pd(pdn_), VIRTIO_RDMA_OK) << "reference dropped";
}

/* ---- REG_USER_MR and the page-table walk ---- */

TEST_F(Mr, RegUserOnePage)
{
    guest_.reads = 0;
    const virtio_rdma_rsp_mr rsp = reg_user(1);
    EXPECT_EQ(rsp.mrn, 0x10000u);
    EXPECT_EQ(rsp.lkey, 1u);
    EXPECT_EQ(rsp.rkey, 0u);
    expect_pages(rsp.mrn, {kData});
    EXPECT_EQ(guest_.reads, 2u) << "L1 and L2 read once each";
    EXPECT_EQ(guest_.live_maps(), 1u);
    EXPECT_EQ(guest_.write_maps, 1u);
    EXPECT_EQ(mapped_pages(), 1u);
    const vrdma::Mr *mr = mr_of(rsp.mrn);
    EXPECT_EQ(mr->iova, 0x10000000u);
    EXPECT_EQ(mr->length, kPage);

    EXPECT_EQ(dereg_mr(rsp.mrn), VIRTIO_RDMA_OK);
    EXPECT_EQ(guest_.live_maps(), 0u);
    EXPECT_EQ(mapped_pages(), 0u);
}

TEST_F(Mr, RegUser512PagesOneLevel2Page)
{
    guest_.reads = 0;
    const virtio_rdma_rsp_mr rsp = reg_user(512);
    expect_pages(rsp.mrn, pages_from(kData, 512));
    EXPECT_EQ(guest_.reads, 2u);
    EXPECT_EQ(mapped_pages(), 512u);
}

TEST_F(Mr, RegUser513PagesTwoLevel2Pages)
{
    guest_.reads = 0;
    const virtio_rdma_rsp_mr rsp = reg_user(513);
    expect_pages(rsp.mrn, pages_from(kData, 513));
    EXPECT_EQ(guest_.reads, 3u);
    EXPECT_EQ(mapped_pages(), 513u);
}

TEST_F(Mr, RegUserReadOnlyMapsForReading)
{
    reg_user(2, kRemoteRead);
    EXPECT_EQ(guest_.maps, 2u);
    EXPECT_EQ(guest_.write_maps, 0u);
    reg_user(1, VIRTIO_RDMA_ACCESS_REMOTE_ATOMIC | kLocalWrite);
    EXPECT_EQ(guest_.write_maps, 1u);
}

TEST_F(Mr, RegUserUnalignedStartAndLength)
{
    /* [0x...0ff0, +0x20) crosses one page boundary: 2 pages. */
    write_page_table(kTable, pages_from(kData, 3));
    expect_refused(VIRTIO_RDMA_CMD_REG_USER_MR,
                   user_req(1, 0x10000ff0, 0x20), VRDMA_ERR_BAD_ARG);
    expect_refused(VIRTIO_RDMA_CMD_REG_USER_MR,
                   user_req(3, 0x10000ff0, 0x20), VRDMA_ERR_BAD_ARG);
    virtio_rdma_rsp_mr rsp{};
    ASSERT_EQ(ctrl(VIRTIO_RDMA_CMD_REG_USER_MR, user_req(2, 0x10000ff0, 0x20),
                   &rsp),
              VIRTIO_RDMA_OK);
    expect_pages(rsp.mrn, pages_from(kData, 2));
    /* One byte at the end of a page. */
    ASSERT_EQ(ctrl(VIRTIO_RDMA_CMD_REG_USER_MR, user_req(1, 0x10000fff, 1),
                   &rsp),
              VIRTIO_RDMA_OK);
    /* 4097 bytes from a page boundary: 2 pages. */
    ASSERT_EQ(ctrl(VIRTIO_RDMA_CMD_REG_USER_MR,
                   user_req(2, 0x10000000, kPage + 1), &rsp),
              VIRTIO_RDMA_OK);
    EXPECT_EQ(mapped_pages(), 5u);
}

TEST_F(Mr, RegUserMaxSizeAndTotalBoundedOnlyPerMr)
{
    /* max_mr_size = 2048 pages; data pages may repeat. */
    std::vector<uint64_t> data(2048);
    for (size_t i = 0; i < data.size(); i++) {
        data[i] = kData + (i % 1024) * kPage;
    }
    write_page_table(kTable, data);
    for (int i = 0; i < 3; i++) { /* 6144 pages in all > max_mr_size */
        virtio_rdma_rsp_mr rsp{};
        ASSERT_EQ(ctrl(VIRTIO_RDMA_CMD_REG_USER_MR,
                       user_req(2048, 0, lim_.max_mr_size), &rsp),
                  VIRTIO_RDMA_OK);
    }
    EXPECT_EQ(mapped_pages(), 3u * 2048);
}

TEST_F(Mr, RegUserFieldErrors)
{
    write_page_table(kTable, pages_from(kData, 4));
    auto req = user_req(1, 0x1000, kPage);

    req.pdn = pdn_ + 0x10000;
    expect_refused(VIRTIO_RDMA_CMD_REG_USER_MR, req, VRDMA_ERR_BAD_HANDLE);
    req = user_req(1, 0x1000, 0);
    expect_refused(VIRTIO_RDMA_CMD_REG_USER_MR, req, VRDMA_ERR_LIMIT);
    req = user_req(2049, 0, lim_.max_mr_size + 1);
    expect_refused(VIRTIO_RDMA_CMD_REG_USER_MR, req, VRDMA_ERR_LIMIT);
    /* virt_addr + length wraps. */
    req = user_req(1, UINT64_MAX - 10, 100);
    expect_refused(VIRTIO_RDMA_CMD_REG_USER_MR, req, VRDMA_ERR_OVERFLOW);
    req = user_req(1, UINT64_MAX - 4095, 4096); /* ends exactly at 2^64 */
    expect_refused(VIRTIO_RDMA_CMD_REG_USER_MR, req, VRDMA_ERR_OVERFLOW);
    /* npages: 0, huge, inconsistent. */
    req = user_req(0, 0x1000, kPage);
    expect_refused(VIRTIO_RDMA_CMD_REG_USER_MR, req, VRDMA_ERR_LIMIT);
    req = user_req(VIRTIO_RDMA_MAX_MR_PAGES + 1, 0x1000, kPage);
    expect_refused(VIRTIO_RDMA_CMD_REG_USER_MR, req, VRDMA_ERR_LIMIT);
    req = user_req(0xffffffff, 0x1000, kPage);
    expect_refused(VIRTIO_RDMA_CMD_REG_USER_MR, req, VRDMA_ERR_LIMIT);
    req = user_req(2, 0x1000, kPage);
    expect_refused(VIRTIO_RDMA_CMD_REG_USER_MR, req, VRDMA_ERR_BAD_ARG);
    req = user_req(VIRTIO_RDMA_MAX_MR_PAGES, 0x1000, kPage);
    expect_refused(VIRTIO_RDMA_CMD_REG_USER_MR, req, VRDMA_ERR_BAD_ARG);
    for (uint32_t access : kBadAccess) {
        req = user_req(1, 0x1000, kPage, access);
        expect_refused(VIRTIO_RDMA_CMD_REG_USER_MR, req, VRDMA_ERR_BAD_ARG);
    }
    EXPECT_EQ(guest_.maps, 0u);
    EXPECT_EQ(guest_.reads, 0u) << "no guest access before fields pass";

    virtio_rdma_rsp_mr rsp{};
    EXPECT_EQ(ctrl(VIRTIO_RDMA_CMD_REG_USER_MR, user_req(1, 0x1000, kPage),
                   &rsp),
              VIRTIO_RDMA_OK);
}

TEST_F(Mr, RegUserTableFullTouchesNoGuestMemory)
{
    for (uint32_t i = 0; i < lim_.max_mr; i++) {
        get_dma_mr(pdn_, 0);
    }
    write_page_table(kTable, pages_from(kData, 1));
    guest_.reads = 0;
    expect_refused(VIRTIO_RDMA_CMD_REG_USER_MR, user_req(1, 0, kPage),
                   VRDMA_ERR_TABLE_FULL);
    EXPECT_EQ(guest_.reads, 0u);
    EXPECT_EQ(guest_.maps, 0u);
}

/* ---- the device-wide cap on mapped pages (max_mapped_pages) ---- */

class MrPageCap : public Mr {
protected:
    void SetUp() override
    {
        VrdmaLimits lim = default_limits();
        lim.max_mapped_pages = 10;
        start(lim);
        pdn_ = create_pd();
    }
};

/*
 * Up to the cap exactly; one page more is ENOMEM before the table is read
 * or a page mapped; freeing pages (dereg, a smaller MAP_MR_SG) makes room.
 */
TEST_F(MrPageCap, RegUserAboveTheCapIsRefusedBeforeAnyMapping)
{
    const virtio_rdma_rsp_mr six = reg_user(6);
    EXPECT_EQ(vrdma_core_mapped_pages(core_), 6u);
    write_page_table(kTable, pages_from(kData, 5));
    guest_.reads = 0;
    const uint64_t maps = guest_.maps;
    expect_refused(VIRTIO_RDMA_CMD_REG_USER_MR, user_req(5, 0, 5 * kPage),
                   VRDMA_ERR_TABLE_FULL);
    EXPECT_EQ(guest_.reads, 0u);
    EXPECT_EQ(guest_.maps, maps);
    EXPECT_EQ(guest_.errors.back().a, 11u) << "pages it would take";
    EXPECT_EQ(guest_.errors.back().b, 10u) << "the cap";
    EXPECT_EQ(guest_.errors.back().field, "npages");

    reg_user(4);
    EXPECT_EQ(vrdma_core_mapped_pages(core_), 10u);
    EXPECT_EQ(mapped_pages(), 10u);
    expect_refused(VIRTIO_RDMA_CMD_REG_USER_MR, user_req(1, 0, kPage),
                   VRDMA_ERR_TABLE_FULL);

    ASSERT_EQ(ctrl(VIRTIO_RDMA_CMD_DEREG_MR,
                   virtio_rdma_cmd_dereg_mr{.mrn = six.mrn}),
              VIRTIO_RDMA_OK);
    EXPECT_EQ(vrdma_core_mapped_pages(core_), 4u);
    reg_user(6);
    EXPECT_EQ(vrdma_core_mapped_pages(core_), 10u);
}

/* MAP_MR_SG's new pages count on top of the MR's old ones. */
TEST_F(MrPageCap, MapMrSgCountsNewPagesOnTopOfTheOld)
{
    const virtio_rdma_rsp_mr mr = create_mr(16);
    write_page_table(kTable, pages_from(kData, 6));
    ASSERT_EQ(ctrl(VIRTIO_RDMA_CMD_MAP_MR_SG, map_req(mr.mrn, 6, 0, 6 * kPage)),
              VIRTIO_RDMA_OK);
    EXPECT_EQ(vrdma_core_mapped_pages(core_), 6u);
    guest_.reads = 0;
    expect_refused(VIRTIO_RDMA_CMD_MAP_MR_SG, map_req(mr.mrn, 5, 0, 5 * kPage),
                   VRDMA_ERR_TABLE_FULL);
    EXPECT_EQ(guest_.reads, 0u);
    expect_pages(mr.mrn, pages_from(kData, 6));
    ASSERT_EQ(ctrl(VIRTIO_RDMA_CMD_MAP_MR_SG, map_req(mr.mrn, 4, 0, 4 * kPage)),
              VIRTIO_RDMA_OK);
    EXPECT_EQ(vrdma_core_mapped_pages(core_), 4u);
    EXPECT_EQ(guest_.live_maps(), 4u);
}

/* The running count follows every way pages go: failure, reset. */
TEST_F(Mr, MappedPagesCountFollowsEveryUnmap)
{
    reg_user(3);
    auto bad = pages_from(kData, 4);
    bad[3] = FakeGuest::kHole;
    write_page_table(kTable, bad);
    expect_refused(VIRTIO_RDMA_CMD_REG_USER_MR, user_req(4, 0, 4 * kPage),
                   VRDMA_ERR_BAD_ADDR);
    EXPECT_EQ(vrdma_core_mapped_pages(core_), 3u);
    EXPECT_EQ(guest_.live_maps(), 3u);
    vrdma_core_reset(core_);
    EXPECT_EQ(vrdma_core_mapped_pages(core_), 0u);
    EXPECT_EQ(guest_.live_maps(), 0u);
}

/* ---- walk errors (shared by REG_USER_MR and MAP_MR_SG) ---- */

TEST_F(Mr, WalkTableNotAligned)
{
    write_page_table(kTable, pages_from(kData, 1));
    auto req = user_req(1, 0, kPage);
    for (uint64_t off : {1u, 8u, 0x800u, 0xfffu}) {
        req.pages = kTable + off;
        expect_refused(VIRTIO_RDMA_CMD_REG_USER_MR, req, VRDMA_ERR_BAD_ARG);
    }
}

TEST_F(Mr, WalkTableOutsideRam)
{
    auto req = user_req(1, 0, kPage);
    for (uint64_t gpa : std::initializer_list<uint64_t>{FakeGuest::kHole, FakeGuest::kRam0.size,
                         FakeGuest::kRam1.base + FakeGuest::kRam1.size,
                         uint64_t{0xfffffffffffff000}}) {
        req.pages = gpa;
        expect_refused(VIRTIO_RDMA_CMD_REG_USER_MR, req, VRDMA_ERR_BAD_ADDR);
    }
    EXPECT_EQ(guest_.maps, 0u);
}

TEST_F(Mr, WalkLevel2Bad)
{
    write_page_table(kTable, pages_from(kData, 600));
    /* Second L2 entry unaligned. */
    guest_.poke64(kTable + 8, kTable + 2 * kPage + 16);
    expect_refused(VIRTIO_RDMA_CMD_REG_USER_MR, user_req(600, 0, 600 * kPage),
                   VRDMA_ERR_BAD_ARG);
    /* Second L2 page in the hole. */
    guest_.poke64(kTable + 8, FakeGuest::kHole);
    expect_refused(VIRTIO_RDMA_CMD_REG_USER_MR, user_req(600, 0, 600 * kPage),
                   VRDMA_ERR_BAD_ADDR);
    EXPECT_EQ(guest_.maps, 0u) << "tables are checked before any map";
}

TEST_F(Mr, WalkDataPageUnaligned)
{
    auto data = pages_from(kData, 10);
    data[9] += 0x200;
    write_page_table(kTable, data);
    expect_refused(VIRTIO_RDMA_CMD_REG_USER_MR, user_req(10, 0, 10 * kPage),
                   VRDMA_ERR_BAD_ARG);
    EXPECT_EQ(guest_.maps, 0u);
}

TEST_F(Mr, WalkDataPagesInHoleLeakNothing)
{
    /* The last of 513 pages is in the hole: 512 were mapped, then undone. */
    auto data = pages_from(kData, 513);
    data[512] = FakeGuest::kHole;
    write_page_table(kTable, data);
    expect_refused(VIRTIO_RDMA_CMD_REG_USER_MR, user_req(513, 0, 513 * kPage),
                   VRDMA_ERR_BAD_ADDR);
    EXPECT_EQ(guest_.maps, 512u);
    EXPECT_EQ(guest_.unmaps, 512u);
    EXPECT_EQ(guest_.errors.back().a, FakeGuest::kHole);
    EXPECT_EQ(guest_.errors.back().field, "pages") << "a page it lists";

    /* A page straddling the end of RAM1, and one past the end of RAM0. */
    data[512] = FakeGuest::kRam1.base + FakeGuest::kRam1.size;
    write_page_table(kTable, data);
    expect_refused(VIRTIO_RDMA_CMD_REG_USER_MR, user_req(513, 0, 513 * kPage),
                   VRDMA_ERR_BAD_ADDR);
    data[0] = FakeGuest::kRam0.size;
    write_page_table(kTable, data);
    expect_refused(VIRTIO_RDMA_CMD_REG_USER_MR, user_req(513, 0, 513 * kPage),
                   VRDMA_ERR_BAD_ADDR);
    EXPECT_EQ(guest_.live_maps(), 0u);
}

/*
 * MRs above 1 GiB: a three-level table (a level-0 page of level-1 pages).
 * The table below is sparse: every level-1 entry names the same level-2
 * page and every level-2 entry the same data page, so 262145 pages (1 GiB
 * and 4 KiB) cost five table pages of the fake guest's RAM.
 */
class MrThreeLevel : public Mr {
protected:
    static constexpr uint32_t kPt2 = VIRTIO_RDMA_PT2_PAGES;
    static constexpr uint64_t kL0 = kTable;
    static constexpr uint64_t kL1a = kTable + kPage;
    static constexpr uint64_t kL1b = kTable + 2 * kPage;
    static constexpr uint64_t kL2 = kTable + 3 * kPage;

    void SetUp() override
    {
        VrdmaLimits lim = default_limits();
        lim.max_mr_size = 2ull << 30;
        start(lim);
        pdn_ = create_pd();
        for (uint32_t i = 0; i < 512; i++) {
            guest_.poke64(kL2 + i * 8, kData);
            guest_.poke64(kL1a + i * 8, kL2);
        }
        guest_.poke64(kL1b, kL2);
        guest_.poke64(kL0, kL1a);
        guest_.poke64(kL0 + 8, kL1b);
    }

    virtio_rdma_cmd_reg_user_mr big_req(uint32_t npages, uint64_t table)
    {
        auto r = user_req(npages, 0x40000000, uint64_t{npages} * kPage);
        r.pages = table;
        return r;
    }
};

TEST_F(MrThreeLevel, AboveOneGibTheTableHasThreeLevels)
{
    guest_.reads = 0;
    virtio_rdma_rsp_mr rsp{};
    ASSERT_EQ(ctrl(VIRTIO_RDMA_CMD_REG_USER_MR, big_req(kPt2 + 1, kL0), &rsp),
              VIRTIO_RDMA_OK);
    /* The level-0 page, two level-1 pages, 513 level-2 pages. */
    EXPECT_EQ(guest_.reads, 1u + 2u + 513u);
    const vrdma::Mr *mr = mr_of(rsp.mrn);
    ASSERT_NE(mr, nullptr);
    ASSERT_EQ(mr->pages.count(), kPt2 + 1);
    EXPECT_EQ(mr->pages.page(kPt2), guest_.host(kData));
    EXPECT_EQ(mapped_pages(), kPt2 + 1u);
}

TEST_F(MrThreeLevel, UpToOneGibTheTableStaysTwoLevel)
{
    /* 512 * 512 pages: kL1a is the level-1 page itself. */
    guest_.reads = 0;
    virtio_rdma_rsp_mr rsp{};
    ASSERT_EQ(ctrl(VIRTIO_RDMA_CMD_REG_USER_MR, big_req(kPt2, kL1a), &rsp),
              VIRTIO_RDMA_OK);
    EXPECT_EQ(guest_.reads, 1u + 512u);
    EXPECT_EQ(mr_of(rsp.mrn)->pages.count(), kPt2);
}

TEST_F(MrThreeLevel, BadLevel0EntriesMapNothing)
{
    guest_.poke64(kL0 + 8, kL1b + 8); /* unaligned */
    expect_refused(VIRTIO_RDMA_CMD_REG_USER_MR, big_req(kPt2 + 1, kL0),
                   VRDMA_ERR_BAD_ARG);
    guest_.poke64(kL0 + 8, FakeGuest::kHole); /* not RAM */
    expect_refused(VIRTIO_RDMA_CMD_REG_USER_MR, big_req(kPt2 + 1, kL0),
                   VRDMA_ERR_BAD_ADDR);
    guest_.poke64(kL0 + 8, kL1b);
    guest_.poke64(kL1b, kL2 + 0x40); /* a level-1 entry unaligned */
    expect_refused(VIRTIO_RDMA_CMD_REG_USER_MR, big_req(kPt2 + 1, kL0),
                   VRDMA_ERR_BAD_ARG);
    EXPECT_EQ(guest_.maps, 0u) << "every table is checked before any map";
}

TEST_F(MrThreeLevel, LengthAboveMaxMrSizeIsRefusedFirst)
{
    const uint32_t n = static_cast<uint32_t>((2ull << 30) / kPage) + 1;
    guest_.reads = 0;
    expect_refused(VIRTIO_RDMA_CMD_REG_USER_MR, big_req(n, kL0),
                   VRDMA_ERR_LIMIT);
    EXPECT_EQ(guest_.reads, 0u);
}

/* ---- CREATE_MR + MAP_MR_SG ---- */

TEST_F(Mr, CreateMrThenMap)
{
    const virtio_rdma_rsp_mr mr = create_mr(16);
    EXPECT_EQ(mr.mrn, 0x10000u);
    EXPECT_EQ(mr.lkey, 1u);
    EXPECT_EQ(guest_.maps, 0u) << "no pages yet";

    write_page_table(kTable, pages_from(kData, 3));
    guest_.reads = 0;
    virtio_rdma_rsp_map_mr_sg rsp{};
    ASSERT_EQ(ctrl(VIRTIO_RDMA_CMD_MAP_MR_SG,
                   map_req(mr.mrn, 3, 0x20000100, 3 * kPage - 0x200), &rsp),
              VIRTIO_RDMA_OK);
    EXPECT_EQ(rsp.npages, 3u);
    EXPECT_EQ(guest_.reads, 2u);
    expect_pages(mr.mrn, pages_from(kData, 3));
    EXPECT_EQ(mr_of(mr.mrn)->iova, 0x20000100u);
    EXPECT_EQ(mr_of(mr.mrn)->length, 3 * kPage - 0x200);
    EXPECT_EQ(guest_.write_maps, 3u);

    /* Re-mapping replaces the pages: old ones are unmapped. */
    write_page_table(kTable, pages_from(kData + 100 * kPage, 2));
    ASSERT_EQ(ctrl(VIRTIO_RDMA_CMD_MAP_MR_SG,
                   map_req(mr.mrn, 2, 0, 2 * kPage), &rsp),
              VIRTIO_RDMA_OK);
    EXPECT_EQ(rsp.npages, 2u);
    expect_pages(mr.mrn, pages_from(kData + 100 * kPage, 2));
    EXPECT_EQ(guest_.live_maps(), 2u);
    EXPECT_EQ(mapped_pages(), 2u);
}

/*
 * ib_alloc_mr() asks for no access rights, and kernel ULPs take the next
 * REG_MR key from ib_mr.rkey.  Before the fix the rkey was 0, so that key
 * named slot 0 and REG_MR failed (nvme-rdma's Connect command timed out).
 */
TEST_F(Mr, CreateMrHasAnRkeyWhateverItsAccess)
{
    for (uint32_t access : {0u, kLocalWrite}) {
        const virtio_rdma_rsp_mr mr = create_mr(16, access);
        EXPECT_EQ(mr.rkey, mr.lkey) << "access " << access;
        EXPECT_NE(mr.rkey, 0u);
    }
}

TEST_F(Mr, MapFailureKeepsPreviousMapping)
{
    const virtio_rdma_rsp_mr mr = create_mr(16);
    write_page_table(kTable, pages_from(kData, 4));
    ASSERT_EQ(ctrl(VIRTIO_RDMA_CMD_MAP_MR_SG, map_req(mr.mrn, 4, 0, 4 * kPage)),
              VIRTIO_RDMA_OK);

    auto bad = pages_from(kData + 50 * kPage, 4);
    bad[3] = FakeGuest::kHole;
    write_page_table(kTable, bad);
    expect_refused(VIRTIO_RDMA_CMD_MAP_MR_SG, map_req(mr.mrn, 4, 0, 4 * kPage),
                   VRDMA_ERR_BAD_ADDR);
    expect_pages(mr.mrn, pages_from(kData, 4));
    EXPECT_EQ(guest_.live_maps(), 4u);
}

TEST_F(Mr, CreateMrErrors)
{
    const uint32_t max = 2048; /* max_fast_reg_page_list_len */
    for (uint32_t n : {0u, max + 1, 0xffffffffu}) {
        expect_refused(VIRTIO_RDMA_CMD_CREATE_MR,
                       virtio_rdma_cmd_create_mr{.pdn = pdn_,
                                                 .access_flags = 0,
                                                 .max_num_sg = n},
                       VRDMA_ERR_LIMIT);
    }
    for (uint32_t access : kBadAccess) {
        expect_refused(VIRTIO_RDMA_CMD_CREATE_MR,
                       virtio_rdma_cmd_create_mr{.pdn = pdn_,
                                                 .access_flags = access,
                                                 .max_num_sg = 1},
                       VRDMA_ERR_BAD_ARG);
    }
    expect_refused(VIRTIO_RDMA_CMD_CREATE_MR,
                   virtio_rdma_cmd_create_mr{.pdn = 7, .access_flags = 0,
                                             .max_num_sg = 1},
                   VRDMA_ERR_BAD_HANDLE);
    create_mr(max);
    create_mr(1);
    for (uint32_t i = 2; i < lim_.max_mr; i++) {
        create_mr(1);
    }
    expect_refused(VIRTIO_RDMA_CMD_CREATE_MR,
                   virtio_rdma_cmd_create_mr{.pdn = pdn_, .access_flags = 0,
                                             .max_num_sg = 1},
                   VRDMA_ERR_TABLE_FULL);
}

TEST_F(Mr, MapErrors)
{
    const virtio_rdma_rsp_mr mr = create_mr(4);
    const virtio_rdma_rsp_mr dma = get_dma_mr(pdn_, 0);
    const virtio_rdma_rsp_mr user = reg_user(1);
    write_page_table(kTable, pages_from(kData, 5));
    const uint64_t reads = guest_.reads;

    /* Handle: dead, then the wrong kind of MR. */
    expect_refused(VIRTIO_RDMA_CMD_MAP_MR_SG, map_req(0x10007, 1, 0, kPage),
                   VRDMA_ERR_BAD_HANDLE);
    expect_refused(VIRTIO_RDMA_CMD_MAP_MR_SG,
                   map_req(mr.mrn + 0x10000, 1, 0, kPage),
                   VRDMA_ERR_BAD_HANDLE);
    expect_refused(VIRTIO_RDMA_CMD_MAP_MR_SG, map_req(dma.mrn, 1, 0, kPage),
                   VRDMA_ERR_BAD_ARG);
    expect_refused(VIRTIO_RDMA_CMD_MAP_MR_SG, map_req(user.mrn, 1, 0, kPage),
                   VRDMA_ERR_BAD_ARG);
    /* npages within 1..max_num_sg. */
    expect_refused(VIRTIO_RDMA_CMD_MAP_MR_SG, map_req(mr.mrn, 0, 0, kPage),
                   VRDMA_ERR_LIMIT);
    expect_refused(VIRTIO_RDMA_CMD_MAP_MR_SG,
                   map_req(mr.mrn, 5, 0, 5 * kPage), VRDMA_ERR_LIMIT);
    expect_refused(VIRTIO_RDMA_CMD_MAP_MR_SG,
                   map_req(mr.mrn, 0xffffffff, 0, kPage), VRDMA_ERR_LIMIT);
    /* length 0, start + length overflow, npages inconsistent. */
    expect_refused(VIRTIO_RDMA_CMD_MAP_MR_SG, map_req(mr.mrn, 1, 0, 0),
                   VRDMA_ERR_BAD_ARG);
    expect_refused(VIRTIO_RDMA_CMD_MAP_MR_SG,
                   map_req(mr.mrn, 1, UINT64_MAX - 10, 100),
                   VRDMA_ERR_OVERFLOW);
    expect_refused(VIRTIO_RDMA_CMD_MAP_MR_SG,
                   map_req(mr.mrn, 1, 0, UINT64_MAX), VRDMA_ERR_BAD_ARG);
    expect_refused(VIRTIO_RDMA_CMD_MAP_MR_SG,
                   map_req(mr.mrn, 2, 0, kPage), VRDMA_ERR_BAD_ARG);
    expect_refused(VIRTIO_RDMA_CMD_MAP_MR_SG,
                   map_req(mr.mrn, 1, 0xff0, 0x20), VRDMA_ERR_BAD_ARG);
    EXPECT_EQ(guest_.reads, reads) << "no guest access before fields pass";
    /* Walk: unaligned table, table outside RAM. */
    auto req = map_req(mr.mrn, 1, 0, kPage);
    req.pages = kTable + 8;
    expect_refused(VIRTIO_RDMA_CMD_MAP_MR_SG, req, VRDMA_ERR_BAD_ARG);
    req.pages = FakeGuest::kHole;
    expect_refused(VIRTIO_RDMA_CMD_MAP_MR_SG, req, VRDMA_ERR_BAD_ADDR);

    EXPECT_EQ(ctrl(VIRTIO_RDMA_CMD_MAP_MR_SG, map_req(mr.mrn, 4, 0, 4 * kPage)),
              VIRTIO_RDMA_OK);
}

TEST_F(Mr, DeregUnmapsFastRegPages)
{
    const virtio_rdma_rsp_mr mr = create_mr(8);
    write_page_table(kTable, pages_from(kData, 8));
    ASSERT_EQ(ctrl(VIRTIO_RDMA_CMD_MAP_MR_SG, map_req(mr.mrn, 8, 0, 8 * kPage)),
              VIRTIO_RDMA_OK);
    EXPECT_EQ(guest_.live_maps(), 8u);
    EXPECT_EQ(dereg_mr(mr.mrn), VIRTIO_RDMA_OK);
    EXPECT_EQ(guest_.live_maps(), 0u);
    expect_refused(VIRTIO_RDMA_CMD_MAP_MR_SG, map_req(mr.mrn, 1, 0, kPage),
                   VRDMA_ERR_BAD_HANDLE);
}

} // namespace
} // namespace vrdma_test

/*
 * virtio-rdma core: memory regions (see mr.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "mr.h"

#include <algorithm>
#include <memory>

#include "config.h"
#include "core.h"

namespace vrdma {

void MrTable::seed_keys(Rng &rng)
{
    if (!rng.on()) {
        return;
    }
    for (uint8_t &k : key_byte_) {
        k = static_cast<uint8_t>(rng.next());
    }
}

uint32_t MrTable::next_key(uint32_t index)
{
    uint8_t k = static_cast<uint8_t>(key_byte_[index] + 1);
    if (index == 0 && k == 0) {
        k = 1; /* lkey 0 is never handed out */
    }
    key_byte_[index] = k;
    return index << 8 | k;
}

void MrTable::key_taken(uint32_t key)
{
    const uint32_t index = key >> 8;
    if (index >= key_byte_.size()) {
        return;
    }
    /*
     * Only forward moves (1..127 ahead, RFC 1982 style) are followed: a
     * byte behind the counter (an older key used again) must not pull it
     * back onto keys the slot carried since, and 0xff -> 0x00 is one step.
     */
    const uint8_t k = static_cast<uint8_t>(key);
    const uint8_t ahead = static_cast<uint8_t>(k - key_byte_[index]);
    if (ahead != 0 && ahead < 0x80) {
        key_byte_[index] = k;
    }
}

Mr *MrTable::lookup_lkey(uint32_t key) const
{
    Mr *mr = objects_.at(key >> 8);
    return mr && mr->lkey == key ? mr : nullptr;
}

Mr *MrTable::lookup_rkey(uint32_t key) const
{
    Mr *mr = objects_.at(key >> 8);
    if (!mr || mr->rkey != key) {
        return nullptr;
    }
    /*
     * rkey 0 is what an MR without remote access reports; it names no MR,
     * except where REG_MR set key 0 itself (slot 0, key byte wrapped).
     */
    return key != 0 || mr->kind == MrKind::kFastReg ? mr : nullptr;
}

void MrTable::clear()
{
    objects_.clear();
    std::fill(key_byte_.begin(), key_byte_.end(), 0);
}

uint32_t MrTable::revoke_host_range(uintptr_t host, uint64_t len)
{
    if (len == 0) {
        return 0;
    }
    /* Inclusive last byte, so a range that ends at the top cannot wrap. */
    const uintptr_t last =
        len - 1 > UINTPTR_MAX - host ? UINTPTR_MAX
                                     : host + static_cast<uintptr_t>(len - 1);
    uint32_t revoked = 0;
    for (uint32_t i = 0; i < objects_.capacity(); i++) {
        Mr *mr = objects_.at(i);
        if (!mr) {
            continue;
        }
        for (size_t k = 0; k < mr->pages.count(); k++) {
            const auto p = reinterpret_cast<uintptr_t>(mr->pages.page(k));
            if (p <= last && host <= p + (kPageSize - 1)) {
                mr->pages.release();
                mr->revoked = true;
                revoked++;
                break;
            }
        }
    }
    return revoked;
}

namespace {

constexpr uint32_t kWriteAccess = VIRTIO_RDMA_ACCESS_LOCAL_WRITE |
                                  VIRTIO_RDMA_ACCESS_REMOTE_WRITE |
                                  VIRTIO_RDMA_ACCESS_REMOTE_ATOMIC;

/* IBA 10.6.3.1 / 11.2.8.1: remote write and atomic need local write. */
Status check_access(uint32_t access)
{
    if (access & ~VIRTIO_RDMA_ACCESS_SUPPORTED) {
        return fail(VRDMA_ERR_BAD_ARG, access, VIRTIO_RDMA_ACCESS_SUPPORTED);
    }
    if ((access & (VIRTIO_RDMA_ACCESS_REMOTE_WRITE |
                   VIRTIO_RDMA_ACCESS_REMOTE_ATOMIC)) &&
        !(access & VIRTIO_RDMA_ACCESS_LOCAL_WRITE)) {
        return fail(VRDMA_ERR_BAD_ARG, access, VIRTIO_RDMA_ACCESS_LOCAL_WRITE);
    }
    return kOk;
}

/* 4 KiB pages spanned by [addr, addr + len); len >= 1, no overflow. */
uint64_t pages_spanned(uint64_t addr, uint64_t len)
{
    const uint64_t last = addr + len - 1;
    return (last >> VIRTIO_RDMA_PAGE_SHIFT) - (addr >> VIRTIO_RDMA_PAGE_SHIFT) +
           1;
}

/* [addr, addr + len) must not wrap around the 64-bit address space. */
Status check_no_overflow(uint64_t addr, uint64_t len)
{
    uint64_t end;
    if (__builtin_add_overflow(addr, len, &end)) {
        return fail(VRDMA_ERR_OVERFLOW, addr, len);
    }
    return kOk;
}

/* @npages must be exactly the pages spanned by [addr, addr + len). */
Status check_npages_match(uint64_t addr, uint64_t len, uint32_t npages)
{
    const uint64_t want = pages_spanned(addr, len);
    if (npages != want) {
        return fail(VRDMA_ERR_BAD_ARG, npages, want);
    }
    return kOk;
}

/*
 * Mapping @npages more data pages must keep the core's total within
 * VrdmaLimits.max_mapped_pages (0: no cap).  MAP_MR_SG counts its new
 * pages on top of the MR's current ones: both are mapped while it runs.
 */
Status check_page_cap(VrdmaCore &c, uint64_t npages)
{
    const uint64_t cap = c.lim.max_mapped_pages;
    const uint64_t want = c.mrs.mapped_pages() + npages;
    if (cap && want > cap) {
        return fail(VRDMA_ERR_TABLE_FULL, want, cap);
    }
    return kOk;
}

/* Takes a key for slot @index and puts @mr there, referencing its PD. */
void commit(VrdmaCore &c, uint32_t index, uint32_t pdn, Pd &pd,
            std::unique_ptr<Mr> mr, virtio_rdma_rsp_mr &rsp)
{
    mr->pd_index = pdn & kHandleIndexMask;
    mr->lkey = c.mrs.next_key(index);
    /*
     * A fast-registration MR always gets an rkey, as rxe_mr_init_fast() does:
     * ib_alloc_mr() asks for no rights, yet kernel ULPs build the REG_MR key
     * from ib_mr.rkey (nvme-rdma: ib_inc_rkey(mr->rkey)).  It opens nothing
     * before a REG_MR validates the MR with the rights that WQE grants.
     */
    mr->rkey = (mr->access & VIRTIO_RDMA_ACCESS_REMOTE) ||
                       mr->kind == MrKind::kFastReg
                   ? mr->lkey
                   : 0;
    pd.refs++;
    rsp.lkey = mr->lkey;
    rsp.rkey = mr->rkey;
    c.mrs.objects().insert(index, std::move(mr));
    rsp.mrn = c.mrs.objects().handle_of(index);
}

} // namespace

Status cmd_get_dma_mr(VrdmaCore &c, const virtio_rdma_cmd_get_dma_mr &req,
                      virtio_rdma_rsp_mr &rsp)
{
    Pd *pd = c.pds.find(req.pdn);
    if (!pd) {
        return fail(VRDMA_ERR_BAD_HANDLE, req.pdn);
    }
    if (Status s = check_access(req.access_flags); !s.ok()) {
        return s;
    }
    const auto index = c.mrs.objects().lowest_free();
    if (!index) {
        return fail(VRDMA_ERR_TABLE_FULL, c.mrs.objects().capacity());
    }
    auto mr = std::make_unique<Mr>();
    mr->kind = MrKind::kDma;
    mr->access = req.access_flags;
    mr->length = UINT64_MAX;
    commit(c, *index, req.pdn, *pd, std::move(mr), rsp);
    return kOk;
}

Status cmd_create_mr(VrdmaCore &c, const virtio_rdma_cmd_create_mr &req,
                     virtio_rdma_rsp_mr &rsp)
{
    Pd *pd = c.pds.find(req.pdn);
    if (!pd) {
        return fail(VRDMA_ERR_BAD_HANDLE, req.pdn);
    }
    if (Status s = check_access(req.access_flags); !s.ok()) {
        return s;
    }
    if (req.max_num_sg < 1 ||
        req.max_num_sg > c.caps.max_fast_reg_page_list_len) {
        return fail(VRDMA_ERR_LIMIT, req.max_num_sg,
                    c.caps.max_fast_reg_page_list_len);
    }
    const auto index = c.mrs.objects().lowest_free();
    if (!index) {
        return fail(VRDMA_ERR_TABLE_FULL, c.mrs.objects().capacity());
    }
    auto mr = std::make_unique<Mr>();
    mr->kind = MrKind::kFastReg;
    mr->access = req.access_flags;
    mr->max_num_sg = req.max_num_sg;
    mr->valid = false; /* until a REG_MR work request registers it */
    commit(c, *index, req.pdn, *pd, std::move(mr), rsp);
    return kOk;
}

Status cmd_map_mr_sg(VrdmaCore &c, const virtio_rdma_cmd_map_mr_sg &req,
                     virtio_rdma_rsp_map_mr_sg &rsp)
{
    Mr *mr = c.mrs.objects().find(req.mrn);
    if (!mr) {
        return fail(VRDMA_ERR_BAD_HANDLE, req.mrn);
    }
    if (mr->kind != MrKind::kFastReg) {
        return fail(VRDMA_ERR_BAD_ARG, req.mrn, static_cast<uint64_t>(mr->kind));
    }
    if (req.npages < 1 || req.npages > mr->max_num_sg) {
        return fail(VRDMA_ERR_LIMIT, req.npages, mr->max_num_sg);
    }
    if (req.length < 1) {
        return fail(VRDMA_ERR_BAD_ARG, req.start, req.length);
    }
    if (Status s = check_no_overflow(req.start, req.length); !s.ok()) {
        return s;
    }
    if (Status s = check_npages_match(req.start, req.length, req.npages);
        !s.ok()) {
        return s;
    }
    /*
     * Mapped for writing whatever CREATE_MR said: the access rights that
     * count are the ones the REG_MR work request sets later (ib_alloc_mr()
     * takes none).
     */
    if (Status s = check_page_cap(c, req.npages); !s.ok()) {
        return s;
    }
    GuestPages pages;
    if (Status s = map_page_table(c.ops, req.pages, req.npages, true,
                                  c.mrs.mapped_counter(), pages);
        !s.ok()) {
        return s;
    }
    /* The new mapping is complete: only now does the old one go. */
    mr->pages = std::move(pages);
    mr->revoked = false; /* all of it is guest RAM now */
    mr->iova = req.start;
    mr->length = req.length;
    rsp.npages = req.npages;
    return kOk;
}

Status cmd_reg_user_mr(VrdmaCore &c, const virtio_rdma_cmd_reg_user_mr &req,
                       virtio_rdma_rsp_mr &rsp)
{
    Pd *pd = c.pds.find(req.pdn);
    if (!pd) {
        return fail(VRDMA_ERR_BAD_HANDLE, req.pdn);
    }
    if (req.length < 1 || req.length > c.lim.max_mr_size) {
        return fail(VRDMA_ERR_LIMIT, req.length, c.lim.max_mr_size);
    }
    if (Status s = check_no_overflow(req.virt_addr, req.length); !s.ok()) {
        return s;
    }
    if (req.npages < 1 || req.npages > VIRTIO_RDMA_MAX_MR_PAGES) {
        return fail(VRDMA_ERR_LIMIT, req.npages, VIRTIO_RDMA_MAX_MR_PAGES);
    }
    if (Status s = check_npages_match(req.virt_addr, req.length, req.npages);
        !s.ok()) {
        return s;
    }
    if (Status s = check_access(req.access_flags); !s.ok()) {
        return s;
    }
    const auto index = c.mrs.objects().lowest_free();
    if (!index) {
        return fail(VRDMA_ERR_TABLE_FULL, c.mrs.objects().capacity());
    }
    if (Status s = check_page_cap(c, req.npages); !s.ok()) {
        return s;
    }
    auto mr = std::make_unique<Mr>();
    if (Status s = map_page_table(c.ops, req.pages, req.npages,
                                  req.access_flags & kWriteAccess,
                                  c.mrs.mapped_counter(), mr->pages);
        !s.ok()) {
        return s;
    }
    mr->kind = MrKind::kUser;
    mr->access = req.access_flags;
    mr->iova = req.virt_addr;
    mr->length = req.length;
    commit(c, *index, req.pdn, *pd, std::move(mr), rsp);
    return kOk;
}

extern "C" void vrdma_core_invalidate_host_range(VrdmaCore *core,
                                                 const void *host,
                                                 uint64_t len)
{
    core->mrs.revoke_host_range(reinterpret_cast<uintptr_t>(host), len);
}

Status cmd_dereg_mr(VrdmaCore &c, const virtio_rdma_cmd_dereg_mr &req,
                    NoPayload &)
{
    const Mr *mr = c.mrs.objects().find(req.mrn);
    if (!mr) {
        return fail(VRDMA_ERR_BAD_HANDLE, req.mrn);
    }
    c.pds.at(mr->pd_index)->refs--;
    c.mrs.objects().erase(req.mrn & kHandleIndexMask); /* unmaps its pages */
    return kOk;
}

} // namespace vrdma

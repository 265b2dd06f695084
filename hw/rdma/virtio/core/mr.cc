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

bool MrTable::maps_host_range(const Mr &mr, uintptr_t host, uint64_t len)
{
    if (len == 0) {
        return false;
    }
    /* Inclusive last byte, so a range that ends at the top cannot wrap. */
    const uintptr_t last =
        len - 1 > UINTPTR_MAX - host ? UINTPTR_MAX
                                     : host + static_cast<uintptr_t>(len - 1);
    for (size_t k = 0; k < mr.pages.count(); k++) {
        const auto p = reinterpret_cast<uintptr_t>(mr.pages.page(k));
        if (p <= last && host <= p + (kPageSize - 1)) {
            return true;
        }
    }
    for (const auto &[start, n] : mr.held) {
        if (n && start <= last && host <= start + (n - 1)) {
            return true;
        }
    }
    return false;
}

bool MrTable::fast_register(uint32_t mrn, uint32_t pd, uint32_t key,
                            uint32_t access)
{
    constexpr uint32_t kNeedLocalWrite = VIRTIO_RDMA_ACCESS_REMOTE_WRITE |
                                         VIRTIO_RDMA_ACCESS_REMOTE_ATOMIC;
    Mr *mr = objects_.find(mrn);
    if (!mr || mr->kind != MrKind::kFastReg || mr->valid || mr->revoked ||
        mr->pd_index != pd || (key >> 8) != (mr->lkey >> 8) ||
        (access & ~VIRTIO_RDMA_ACCESS_SUPPORTED) ||
        ((access & kNeedLocalWrite) &&
         !(access & VIRTIO_RDMA_ACCESS_LOCAL_WRITE))) {
        return false;
    }
    mr->access = access;
    mr->lkey = key;
    mr->rkey = key;
    mr->valid = true;
    key_taken(key); /* the slot's next MR must not get it */
    return true;
}

bool MrTable::invalidate_local(uint32_t key, uint32_t pd)
{
    /* Only fast-registration MRs can be invalidated (rxe_invalidate_mr()). */
    Mr *mr = objects_.at(key >> 8);
    if (!mr || (mr->rkey ? key != mr->rkey : key != mr->lkey) ||
        mr->kind != MrKind::kFastReg || mr->pd_index != pd) {
        return false;
    }
    mr->valid = false;
    return true;
}

bool MrTable::invalidate_remote(uint32_t rkey, uint32_t pd)
{
    Mr *mr = lookup_rkey(rkey);
    if (!mr || mr->kind != MrKind::kFastReg || !mr->valid ||
        mr->pd_index != pd) {
        return false;
    }
    mr->valid = false;
    return true;
}

namespace {

constexpr uint32_t kWriteAccess = VIRTIO_RDMA_ACCESS_LOCAL_WRITE |
                                  VIRTIO_RDMA_ACCESS_REMOTE_WRITE |
                                  VIRTIO_RDMA_ACCESS_REMOTE_ATOMIC;

/* IBA 10.6.3.1 / 11.2.8.1: remote write and atomic need local write. */
Status check_access(uint32_t access)
{
    if (access & ~VIRTIO_RDMA_ACCESS_SUPPORTED) {
        return fail(VRDMA_ERR_BAD_ARG, "access_flags", access,
                    VIRTIO_RDMA_ACCESS_SUPPORTED);
    }
    if ((access & (VIRTIO_RDMA_ACCESS_REMOTE_WRITE |
                   VIRTIO_RDMA_ACCESS_REMOTE_ATOMIC)) &&
        !(access & VIRTIO_RDMA_ACCESS_LOCAL_WRITE)) {
        return fail(VRDMA_ERR_BAD_ARG, "access_flags", access,
                    VIRTIO_RDMA_ACCESS_LOCAL_WRITE);
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
        return fail(VRDMA_ERR_OVERFLOW, "length", addr, len);
    }
    return kOk;
}

/* @npages must be exactly the pages spanned by [addr, addr + len). */
Status check_npages_match(uint64_t addr, uint64_t len, uint32_t npages)
{
    const uint64_t want = pages_spanned(addr, len);
    if (npages != want) {
        return fail(VRDMA_ERR_BAD_ARG, "npages", npages, want);
    }
    return kOk;
}

/* A refusal of map_page_table(): the table (or a page it lists) is "pages". */
Status in_pages(Status s)
{
    s.field = "pages";
    return s;
}

/*
 * The backend gives @mr its keys; then it goes in slot @index, referencing
 * its PD.  A refusal frees it (unmapping its pages).
 */
Status commit(VrdmaCore &c, uint32_t index, uint32_t pdn, Pd &pd,
              std::unique_ptr<Mr> mr, virtio_rdma_rsp_mr &rsp)
{
    mr->pd_index = pdn & kHandleIndexMask;
    if (Status s = backend::mr_registered(c, index, *mr); s.deferred) {
        /*
         * The host registers guest RAM on a worker thread (a DMA MR on
         * backend=ibverbs): the MR waits, its slot kept -- no other
         * command runs meanwhile -- until dma_mr_resume().
         */
        c.pending = VrdmaCore::Pending{};
        c.pending.active = true;
        c.pending.cmd = VIRTIO_RDMA_CMD_GET_DMA_MR;
        c.pending.seq = c.pending_seq;
        c.pending.mr_index = index;
        c.pending.pdn = pdn;
        c.pending.mr = std::move(mr);
        return s;
    } else if (!s.ok()) {
        return s;
    }
    pd.refs++;
    rsp.lkey = mr->lkey;
    rsp.rkey = mr->rkey;
    c.mrs.objects().insert(index, std::move(mr));
    rsp.mrn = c.mrs.objects().handle_of(index);
    return kOk;
}

} // namespace

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
        return fail(VRDMA_ERR_TABLE_FULL, "npages", want, cap);
    }
    return kOk;
}

Status cmd_get_dma_mr(VrdmaCore &c, const virtio_rdma_cmd_get_dma_mr &req,
                      virtio_rdma_rsp_mr &rsp)
{
    Pd *pd = c.pds.find(req.pdn);
    if (!pd) {
        return fail(VRDMA_ERR_BAD_HANDLE, "pdn", req.pdn);
    }
    if (Status s = check_access(req.access_flags); !s.ok()) {
        return s;
    }
    const auto index = c.mrs.objects().lowest_free();
    if (!index) {
        return fail(VRDMA_ERR_TABLE_FULL, "mrn", c.mrs.objects().capacity());
    }
    auto mr = std::make_unique<Mr>();
    mr->kind = MrKind::kDma;
    mr->access = req.access_flags;
    mr->length = UINT64_MAX;
    return commit(c, *index, req.pdn, *pd, std::move(mr), rsp);
}

Status dma_mr_resume(VrdmaCore &c, uint32_t index, uint32_t pdn,
                     std::unique_ptr<Mr> mr, virtio_rdma_rsp_mr &rsp)
{
    Pd *pd = c.pds.find(pdn);
    if (!pd || c.mrs.objects().at(index)) {
        /* Nothing else ran meanwhile: only a broken backend gets here. */
        return fail(VRDMA_ERR_HOST, "pdn", pdn, index);
    }
    const Status s = commit(c, index, pdn, *pd, std::move(mr), rsp);
    if (s.deferred) {
        return fail(VRDMA_ERR_HOST, "pdn", pdn, index); /* never twice */
    }
    return s;
}

Status cmd_create_mr(VrdmaCore &c, const virtio_rdma_cmd_create_mr &req,
                     virtio_rdma_rsp_mr &rsp)
{
    Pd *pd = c.pds.find(req.pdn);
    if (!pd) {
        return fail(VRDMA_ERR_BAD_HANDLE, "pdn", req.pdn);
    }
    if (Status s = check_access(req.access_flags); !s.ok()) {
        return s;
    }
    if (req.max_num_sg < 1 ||
        req.max_num_sg > c.caps.max_fast_reg_page_list_len) {
        return fail(VRDMA_ERR_LIMIT, "max_num_sg", req.max_num_sg,
                    c.caps.max_fast_reg_page_list_len);
    }
    const auto index = c.mrs.objects().lowest_free();
    if (!index) {
        return fail(VRDMA_ERR_TABLE_FULL, "mrn", c.mrs.objects().capacity());
    }
    auto mr = std::make_unique<Mr>();
    mr->kind = MrKind::kFastReg;
    mr->access = req.access_flags;
    mr->max_num_sg = req.max_num_sg;
    mr->valid = false; /* until a REG_MR work request registers it */
    return commit(c, *index, req.pdn, *pd, std::move(mr), rsp);
}

Status cmd_map_mr_sg(VrdmaCore &c, const virtio_rdma_cmd_map_mr_sg &req,
                     virtio_rdma_rsp_map_mr_sg &rsp)
{
    Mr *mr = c.mrs.objects().find(req.mrn);
    if (!mr) {
        return fail(VRDMA_ERR_BAD_HANDLE, "mrn", req.mrn);
    }
    if (mr->kind != MrKind::kFastReg) {
        return fail(VRDMA_ERR_BAD_ARG, "mrn", req.mrn,
                    static_cast<uint64_t>(mr->kind)); /* not fast-reg */
    }
    if (req.npages < 1 || req.npages > mr->max_num_sg) {
        return fail(VRDMA_ERR_LIMIT, "npages", req.npages, mr->max_num_sg);
    }
    if (req.length < 1) {
        return fail(VRDMA_ERR_BAD_ARG, "length", req.start, req.length);
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
    if (Status s = map_page_table(c.host, req.pages, req.npages, true,
                                  c.mrs.mapped_counter(), pages);
        !s.ok()) {
        return in_pages(s);
    }
    /* The new mapping is complete: only now does the old one go. */
    mr->pages = std::move(pages);
    mr->revoked = false; /* all of it is guest RAM now */
    mr->iova = req.start;
    mr->length = req.length;
    backend::mr_mapped(c, *mr);
    rsp.npages = req.npages;
    return kOk;
}

Status cmd_reg_user_mr(VrdmaCore &c, const virtio_rdma_cmd_reg_user_mr &req,
                       virtio_rdma_rsp_mr &rsp)
{
    Pd *pd = c.pds.find(req.pdn);
    if (!pd) {
        return fail(VRDMA_ERR_BAD_HANDLE, "pdn", req.pdn);
    }
    if (req.length < 1 || req.length > c.lim.max_mr_size) {
        return fail(VRDMA_ERR_LIMIT, "length", req.length, c.lim.max_mr_size);
    }
    if (Status s = check_no_overflow(req.virt_addr, req.length); !s.ok()) {
        return s;
    }
    if (req.npages < 1 || req.npages > VIRTIO_RDMA_MAX_MR_PAGES) {
        return fail(VRDMA_ERR_LIMIT, "npages", req.npages,
                    VIRTIO_RDMA_MAX_MR_PAGES);
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
        return fail(VRDMA_ERR_TABLE_FULL, "mrn", c.mrs.objects().capacity());
    }
    if (Status s = check_page_cap(c, req.npages); !s.ok()) {
        return s;
    }
    auto mr = std::make_unique<Mr>();
    if (Status s = map_page_table(c.host, req.pages, req.npages,
                                  req.access_flags & kWriteAccess,
                                  c.mrs.mapped_counter(), mr->pages);
        !s.ok()) {
        return in_pages(s);
    }
    mr->kind = MrKind::kUser;
    mr->access = req.access_flags;
    mr->iova = req.virt_addr;
    mr->length = req.length;
    return commit(c, *index, req.pdn, *pd, std::move(mr), rsp);
}

extern "C" void vrdma_core_invalidate_host_range(VrdmaCore *core,
                                                 const void *host,
                                                 uint64_t len)
{
    core->mrs.revoke_host_range(reinterpret_cast<uintptr_t>(host), len,
                                [core](Mr &mr) {
                                    backend::mr_revoked(*core, mr);
                                });
    rings_revoke_host_range(*core, reinterpret_cast<uintptr_t>(host), len);
}

Status cmd_dereg_mr(VrdmaCore &c, const virtio_rdma_cmd_dereg_mr &req,
                    NoPayload &)
{
    Mr *mr = c.mrs.objects().find(req.mrn);
    if (!mr) {
        return fail(VRDMA_ERR_BAD_HANDLE, "mrn", req.mrn);
    }
    if (Status s = backend::mr_deregistered(c, *mr); !s.ok()) {
        return s; /* the host keeps it registered: so does the device */
    }
    c.pds.at(mr->pd_index)->refs--;
    c.mrs.objects().erase(req.mrn & kHandleIndexMask); /* unmaps its pages */
    return kOk;
}

} // namespace vrdma

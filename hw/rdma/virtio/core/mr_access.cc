/*
 * virtio-rdma core: guest memory as a data path sees it, through MRs (both
 * backends: the soft engine for everything, the ibverbs backend for what
 * the device itself reads and writes -- the GSI QP's MADs).
 *
 * Local access goes through an SGE's lkey, remote access through an rkey;
 * both name an MR by key >> 8 and must match the whole key.  Checks, each
 * with 64-bit overflow-safe arithmetic:
 *   the key names a live MR (fast-registration MRs: registered and not
 *   invalidated; none whose guest memory went away: Mr::revoked), the MR
 *   is in the QP's PD, it grants the access (local
 *   write for a buffer the device writes; remote read/write/atomic for a
 *   peer), and [addr, addr + len) lies inside it.
 * A local failure is LOC_PROT_ERR (rxe's copy_data: -EFAULT), a message
 * longer than the SGEs LOC_LEN_ERR.
 *
 * User and fast-registration MRs hold pre-translated host pointers of 4 KiB
 * guest pages; DMA MRs name guest-physical addresses and go through the
 * host's read/write ops.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <algorithm>
#include <cstring>

#include "config.h"
#include "core.h"
#include "guest_abi.h"
#include "mr_access.h"

namespace vrdma {

namespace {

bool usable(const Mr &mr)
{
    return !mr.revoked && (mr.kind != MrKind::kFastReg || mr.valid);
}

/* [va, va + len) inside @mr, without wrapping. */
bool in_bounds(const Mr &mr, uint64_t va, uint64_t len)
{
    uint64_t end;
    if (__builtin_add_overflow(va, len, &end)) {
        return false;
    }
    if (mr.kind == MrKind::kDma) {
        return true;
    }
    if (va < mr.iova) {
        return false;
    }
    const uint64_t off = va - mr.iova;
    return off <= mr.length && len <= mr.length - off;
}

/*
 * The MR an SGE names, if it may be used as the QP's local buffer (written
 * by the device if @write); nullptr otherwise.
 */
const Mr *sge_mr(VrdmaCore &c, uint32_t pd, const Sge &s, bool write)
{
    const Mr *mr = c.mrs.lookup_lkey(s.lkey);
    if (!mr || !usable(*mr) || mr->pd_index != pd) {
        return nullptr;
    }
    if (write && (!(mr->access & VIRTIO_RDMA_ACCESS_LOCAL_WRITE) ||
                  (mr->kind == MrKind::kDma && !c.host.can_write_gpa()))) {
        return nullptr;
    }
    if (!in_bounds(*mr, s.addr, s.length)) {
        return nullptr;
    }
    return mr;
}

/* Copies between @buf and [va, va + len) of @mr (checked by the caller). */
bool mr_copy(VrdmaCore &c, const Mr &mr, uint64_t va, uint8_t *buf,
             uint32_t len, bool to_mr)
{
    if (len == 0) {
        return true;
    }
    if (mr.kind == MrKind::kDma) {
        if (to_mr) {
            return c.host.write(va, buf, len);
        }
        return c.host.read(va, buf, len);
    }
    uint64_t off = va - (mr.iova & ~kPageMask);
    while (len) {
        const uint64_t page = off >> VIRTIO_RDMA_PAGE_SHIFT;
        const uint32_t in = static_cast<uint32_t>(off & kPageMask);
        const uint32_t n = std::min<uint32_t>(len, kPageSize - in);
        if (page >= mr.pages.count() || (to_mr && !mr.pages.is_write())) {
            return false;
        }
        uint8_t *host = mr.pages.page(page) + in;
        /*
         * memmove, not memcpy: knowing n <= 4096, GCC 12 inlines memcpy as
         * "rep movsq", about twice as slow per byte as the library's copy
         * (10 -- 15 % of an RC WRITE in core-bench).
         */
        if (to_mr) {
            std::memmove(host, buf, n);
        } else {
            std::memmove(buf, host, n);
        }
        buf += n;
        off += n;
        len -= n;
    }
    return true;
}

} // namespace

uint8_t sgl_check(VrdmaCore &c, uint32_t pd, const Sge *sge, uint32_t n,
                  bool write)
{
    for (uint32_t i = 0; i < n; i++) {
        if (sge[i].length && !sge_mr(c, pd, sge[i], write)) {
            return VIRTIO_RDMA_WC_LOC_PROT_ERR;
        }
    }
    return VIRTIO_RDMA_WC_SUCCESS;
}

uint8_t sgl_copy(VrdmaCore &c, uint32_t pd, const Sge *sge, uint32_t n,
                 uint64_t offset, uint8_t *buf, uint32_t len, bool to_sgl)
{
    for (uint32_t i = 0; i < n && len; i++) {
        const Sge &s = sge[i];
        if (offset >= s.length) {
            offset -= s.length;
            continue;
        }
        const Mr *mr = sge_mr(c, pd, s, to_sgl);
        if (!mr) {
            return VIRTIO_RDMA_WC_LOC_PROT_ERR;
        }
        const uint32_t chunk =
            static_cast<uint32_t>(std::min<uint64_t>(len, s.length - offset));
        if (!mr_copy(c, *mr, s.addr + offset, buf, chunk, to_sgl)) {
            return VIRTIO_RDMA_WC_LOC_PROT_ERR;
        }
        buf += chunk;
        len -= chunk;
        offset = 0;
    }
    return len ? VIRTIO_RDMA_WC_LOC_LEN_ERR : VIRTIO_RDMA_WC_SUCCESS;
}

Mr *rkey_check(VrdmaCore &c, const Qp &qp, uint32_t rkey, uint64_t va,
               uint64_t len, uint32_t access, RkeyErr *err)
{
    Mr *mr = c.mrs.lookup_rkey(rkey);
    if (!mr || !usable(*mr)) {
        *err = RkeyErr::kKey;
        return nullptr;
    }
    if (mr->pd_index != qp.pd_index) {
        *err = RkeyErr::kPd;
        return nullptr;
    }
    if (!(mr->access & access) ||
        (mr->kind == MrKind::kDma && !c.host.can_write_gpa() &&
         (access & (VIRTIO_RDMA_ACCESS_REMOTE_WRITE |
                    VIRTIO_RDMA_ACCESS_REMOTE_ATOMIC)))) {
        *err = RkeyErr::kAccess;
        return nullptr;
    }
    if (!in_bounds(*mr, va, len)) {
        *err = RkeyErr::kBounds;
        return nullptr;
    }
    *err = RkeyErr::kOk;
    return mr;
}

bool mr_read(VrdmaCore &c, const Mr &mr, uint64_t va, uint8_t *buf,
             uint32_t len)
{
    return mr_copy(c, mr, va, buf, len, false);
}

bool mr_write(VrdmaCore &c, const Mr &mr, uint64_t va, const uint8_t *buf,
              uint32_t len)
{
    return mr_copy(c, mr, va, const_cast<uint8_t *>(buf), len, true);
}

bool mr_atomic(VrdmaCore &c, const Mr &mr, uint64_t va, bool cmp_swap,
               uint64_t compare, uint64_t swap_add, uint64_t *orig)
{
    /* Guest memory is little-endian; an aligned word is in one page. */
    if (mr.kind == MrKind::kDma) {
        uint64_t raw;
        if (!c.host.read(va, &raw, sizeof(raw))) {
            return false;
        }
        const uint64_t old = le(raw);
        const uint64_t next = cmp_swap ? (old == compare ? swap_add : old)
                                       : old + swap_add;
        raw = le(next);
        if (!c.host.write(va, &raw, sizeof(raw))) {
            return false;
        }
        *orig = old;
        return true;
    }
    const uint64_t off = va - (mr.iova & ~kPageMask);
    const uint64_t page = off >> VIRTIO_RDMA_PAGE_SHIFT;
    if (page >= mr.pages.count() || !mr.pages.is_write() || (va & 7)) {
        return false;
    }
    uint8_t *host = mr.pages.page(page) + (off & kPageMask);
    if (reinterpret_cast<uintptr_t>(host) & 7) {
        /* A host that maps guest pages unaligned: not atomic, but right. */
        uint64_t raw;
        std::memcpy(&raw, host, sizeof(raw));
        const uint64_t old = le(raw);
        raw = le(cmp_swap ? (old == compare ? swap_add : old)
                          : old + swap_add);
        std::memcpy(host, &raw, sizeof(raw));
        *orig = old;
        return true;
    }
    /* Atomic against the guest's CPUs too (IB_ATOMIC_HCA is the promise). */
    auto *word = reinterpret_cast<uint64_t *>(host);
    uint64_t raw = __atomic_load_n(word, __ATOMIC_SEQ_CST);
    for (;;) {
        const uint64_t old = le(raw);
        const uint64_t next = cmp_swap ? (old == compare ? swap_add : old)
                                       : old + swap_add;
        if (__atomic_compare_exchange_n(word, &raw, le(next), false,
                                        __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
            *orig = old;
            return true;
        }
    }
}

} // namespace vrdma

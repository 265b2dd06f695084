/*
 * virtio-rdma core: memory regions.
 *
 * Keys: lkey = MR index << 8 | key byte, where the key byte comes from a
 * per-slot counter that changes on every registration in that slot (and
 * never makes a key 0); rkey = lkey if remote access was requested, else 0.
 * Each slot's counter starts at a random byte (rng.h; at seed 0 it starts
 * at 0), drawn again at reset: a slot's first key cannot be guessed from
 * its index, and the keys a slot carried before a reset do not come back
 * in the same order after it.
 * The data path finds an MR by key >> 8 and then checks the whole key.
 *
 * A REG_MR work request may give a fast-registration MR a key byte of the
 * guest's choosing (the consumer-owned "key" part; Linux ULPs step it
 * with ib_inc_rkey(), wrapping 0xff -> 0x00).  The slot's counter
 * follows such a byte when it is ahead of it in 8-bit serial order, so the
 * next MR in the slot continues after the keys the consumer stepped
 * through, and a peer's stale rkey does not match it (until the 8 bits
 * wrap round).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_VIRTIO_CORE_MR_H
#define HW_RDMA_VIRTIO_CORE_MR_H

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "errors.h"
#include "guest_abi.h"
#include "object_table.h"
#include "page_table.h"
#include "rng.h"

namespace vrdma {

enum class MrKind : uint8_t {
    kDma,     /* GET_DMA_MR: addresses are guest-physical, no pages */
    kFastReg, /* CREATE_MR: pages come from MAP_MR_SG */
    kUser,    /* REG_USER_MR */
};

struct Mr {
    MrKind kind = MrKind::kDma;
    uint32_t pd_index = 0;
    uint32_t access = 0;     /* VIRTIO_RDMA_ACCESS_* */
    uint32_t lkey = 0;
    uint32_t rkey = 0;       /* 0: no remote access */
    uint32_t max_num_sg = 0; /* kFastReg: capacity of the page list */
    /*
     * kFastReg: registered by a REG_MR work request and not invalidated
     * since (IBA 10.6.1: "valid" vs "free").  Always true for the others.
     */
    bool valid = true;
    /*
     * Guest memory under one of its pages went away
     * (vrdma_core_invalidate_host_range()): its pages are unmapped and
     * every use fails until DEREG_MR (or, fast-registration MRs, a new
     * MAP_MR_SG, which maps a complete new set of pages).
     */
    bool revoked = false;
    uint64_t iova = 0;       /* address of the first byte, as the guest names it */
    uint64_t length = 0;
    GuestPages pages;        /* data pages, pre-translated */
    /*
     * Guest memory a backend holds mapped for the MR besides its pages,
     * as host ranges (a DMA MR's RAM on a host device): the MR is revoked
     * when one goes away, as for a page, and the backend unmaps them.
     */
    std::vector<std::pair<uintptr_t, uint64_t>> held;
};

class MrTable {
public:
    explicit MrTable(uint32_t capacity)
        : objects_(capacity), key_byte_(capacity, 0)
    {
    }

    ObjectTable<Mr> &objects() { return objects_; }
    const ObjectTable<Mr> &objects() const { return objects_; }

    /* Data pages all MRs hold mapped now (a running count). */
    uint64_t mapped_pages() const { return mapped_pages_; }
    /* The count an MR's GuestPages keep up to date. */
    uint64_t *mapped_counter() { return &mapped_pages_; }

    /* Every slot's key counter to a random byte (no-op at seed 0). */
    void seed_keys(Rng &rng);
    /* A fresh lkey for a registration in slot @index. */
    uint32_t next_key(uint32_t index);
    /* REG_MR gave the MR in slot key >> 8 @key: later keys continue past it. */
    void key_taken(uint32_t key);
    /* The MR whose lkey (rkey) is exactly @key, or nullptr. */
    Mr *lookup_lkey(uint32_t key) const;
    Mr *lookup_rkey(uint32_t key) const;
    /* Frees every MR (unmapping its pages); keys restart. */
    void clear();
    /*
     * Revokes every MR with a mapped page that overlaps [host, host + len),
     * unmapping all its pages now, and calls @on_revoke(Mr &) for each.
     * @returns how many MRs it revoked.
     */
    template <typename F>
    uint32_t revoke_host_range(uintptr_t host, uint64_t len, F &&on_revoke)
    {
        uint32_t n = 0;
        for (uint32_t i = 0; i < objects_.capacity(); i++) {
            Mr *mr = objects_.at(i);
            if (mr && maps_host_range(*mr, host, len)) {
                mr->pages.release();
                mr->revoked = true;
                on_revoke(*mr);
                n++;
            }
        }
        return n;
    }

    /*
     * The state changes of a fast-registration MR (IBA 10.6.1: "free" <->
     * "valid"), which work requests and packets make.  Each @returns
     * false, changing nothing, if the rules refuse it.
     * REG_MR (IBA 10.6.3.4): the free MR of handle @mrn in PD @pd becomes
     * valid with @key (lkey = rkey; same index, a new key byte) and
     * @access (rxe_reg_fast_mr()'s rules).
     */
    bool fast_register(uint32_t mrn, uint32_t pd, uint32_t key,
                       uint32_t access);
    /* LOCAL_INV (IBA 10.6.6.1): the fast-registration MR @key names, of PD @pd, to free. */
    bool invalidate_local(uint32_t key, uint32_t pd);
    /* SEND with Invalidate (IBA 10.6.6.2): the valid one @rkey names, of PD @pd. */
    bool invalidate_remote(uint32_t rkey, uint32_t pd);

private:
    static bool maps_host_range(const Mr &mr, uintptr_t host, uint64_t len);

    uint64_t mapped_pages_ = 0; /* first: outlives the MRs that count in it */
    ObjectTable<Mr> objects_;
    std::vector<uint8_t> key_byte_;
};

Status cmd_get_dma_mr(VrdmaCore &c, const virtio_rdma_cmd_get_dma_mr &req,
                      virtio_rdma_rsp_mr &rsp);
/*
 * Mapping @npages more guest pages keeps the core within
 * VrdmaLimits.max_mapped_pages (0: no cap): else TABLE_FULL on "npages".
 */
Status check_page_cap(VrdmaCore &c, uint64_t npages);

/*
 * GET_DMA_MR's end once the backend's deferred host work is done
 * (VrdmaCore::resume_pending): the MR into slot @index of PD @pdn.
 */
Status dma_mr_resume(VrdmaCore &c, uint32_t index, uint32_t pdn,
                     std::unique_ptr<Mr> mr, virtio_rdma_rsp_mr &rsp);
Status cmd_create_mr(VrdmaCore &c, const virtio_rdma_cmd_create_mr &req,
                     virtio_rdma_rsp_mr &rsp);
Status cmd_map_mr_sg(VrdmaCore &c, const virtio_rdma_cmd_map_mr_sg &req,
                     virtio_rdma_rsp_map_mr_sg &rsp);
Status cmd_reg_user_mr(VrdmaCore &c, const virtio_rdma_cmd_reg_user_mr &req,
                       virtio_rdma_rsp_mr &rsp);
Status cmd_dereg_mr(VrdmaCore &c, const virtio_rdma_cmd_dereg_mr &req,
                    NoPayload &rsp);

} // namespace vrdma

#endif

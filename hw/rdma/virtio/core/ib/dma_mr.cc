/*
 * virtio-rdma ibverbs backend: DMA MRs (GET_DMA_MR), whose addresses are
 * guest-physical -- what a guest kernel's local DMA lkey names.
 *
 * A host device knows host virtual addresses only, so each range of guest
 * RAM (the host's mem.ram_ranges) becomes one host MR registered over the
 * RAM's own mapping with IOVA = its GPA: an SGE's guest-physical address
 * then passes to the host unchanged, with the lkey of the range it lies in.
 * Registering pins all of the guest's RAM (once per DMA MR: host MRs
 * belong to one host PD); the RAM stays mapped through the host's map op,
 * so a range that leaves the address space revokes the MR (mr.h: held).
 *
 * Local access only: a DMA MR with remote access would open all of the
 * guest's RAM to every peer (Linux asks for it only with
 * IB_PD_UNSAFE_GLOBAL_RKEY), and one rkey cannot name several host MRs.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <cerrno>

#include "../core.h"
#include "state.h"

namespace vrdma::ib {

Status Backend::dma_mr_registered(VrdmaCore &c, uint32_t index, Mr &mr)
{
    if (mr.access & ~IBV_ACCESS_LOCAL_WRITE) {
        return fail(VRDMA_ERR_UNSUPPORTED, "access_flags", mr.access,
                    IBV_ACCESS_LOCAL_WRITE);
    }
    std::array<VrdmaRamRange, kMaxDmaRanges> ranges;
    const size_t n = c.host.ram_ranges(ranges.data(), ranges.size());
    if (n == 0 || n > ranges.size()) {
        /* No listing (a host without it), or RAM in too many pieces. */
        return fail(VRDMA_ERR_UNSUPPORTED, "ram ranges", n, ranges.size());
    }
    const bool write = mr.access & IBV_ACCESS_LOCAL_WRITE;
    HostMr &m = mrs_[index];
    for (size_t i = 0; i < n; i++) {
        const VrdmaRamRange &r = ranges[i];
        void *host = c.host.map(r.gpa, r.len, write);
        if (!host) {
            release_mr(c, index);
            return fail(VRDMA_ERR_BAD_ADDR, "ram range", r.gpa, r.len);
        }
        ibv_mr *h = ibv_reg_mr_iova2(pds_[mr.pd_index], host, r.len, r.gpa,
                                     mr.access);
        if (!h) {
            const int e = errno;
            c.host.unmap(host, r.len, write);
            release_mr(c, index);
            return host_refused(e, "ram range", r.len);
        }
        m.dma.push_back(DmaRange{r.gpa, r.len, host, write, h});
        mr.held.emplace_back(reinterpret_cast<uintptr_t>(host), r.len);
    }
    mr.lkey = c.mrs.next_key(index);
    mr.rkey = 0;
    return kOk;
}

void Backend::dma_mr_release(VrdmaCore &c, HostMr &m)
{
    for (const DmaRange &r : m.dma) {
        ibv_dereg_mr(r.mr); /* the host device lets go of the pages first */
        c.host.unmap(r.host, r.len, r.write);
    }
    m.dma.clear();
}

bool Backend::dma_lkey(const HostMr &m, uint64_t addr, uint32_t len,
                       uint32_t *out)
{
    /* A handful of ranges, in GPA order: a linear search is the cheapest. */
    for (const DmaRange &r : m.dma) {
        if (addr >= r.gpa && addr - r.gpa <= r.len &&
            len <= r.len - (addr - r.gpa)) {
            *out = r.mr->lkey;
            return true;
        }
    }
    return false; /* not RAM, or across two ranges */
}

} // namespace vrdma::ib

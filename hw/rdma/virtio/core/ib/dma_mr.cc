/*
 * virtio-rdma ibverbs backend: DMA MRs (GET_DMA_MR), whose addresses are
 * guest-physical -- what a guest kernel's local DMA lkey names.
 *
 * A host device knows host virtual addresses only, so each range of guest
 * RAM (the host's mem.ram_ranges) becomes one host MR registered over the
 * RAM's own mapping with IOVA = its GPA: an SGE's guest-physical address
 * then passes to the host unchanged, with the lkey of the range it lies in.
 *
 * Registering pins all of the guest's RAM, which costs the host about a
 * second per few GiB and kernel memory per page.  So it is done once per
 * host PD (host MRs belong to one) and shared by every DMA MR of the PD
 * (DmaReg, refcounted); its pages count against max-mapped-pages like any
 * MR's; and it runs on the host's worker thread (DmaJob), the command
 * deferred, so that the main loop never waits for it.  The RAM stays
 * mapped through the host's map op, so a range that leaves the address
 * space revokes the MRs (mr.h: held).
 *
 * Local access only: a DMA MR with remote access would open all of the
 * guest's RAM to every peer (Linux asks for it only with
 * IB_PD_UNSAFE_GLOBAL_RKEY), and one rkey cannot name several host MRs.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <algorithm>
#include <cerrno>

#include "../core.h"
#include "state.h"

namespace vrdma::ib {

namespace {

/* The MR holds the RAM of @reg (its ranges are revoked with it). */
void hold(Mr &mr, const DmaReg &reg)
{
    mr.held.clear();
    for (const DmaRange &r : reg.ranges) {
        mr.held.emplace_back(reinterpret_cast<uintptr_t>(r.host), r.len);
    }
}

/* The RAM ranges of @reg are still guest RAM's, as they were listed. */
bool still_ram(VrdmaCore &c, const DmaReg &reg)
{
    std::array<VrdmaRamRange, kMaxDmaRanges> now;
    const size_t n = c.host.ram_ranges(now.data(), now.size());
    if (n != reg.ranges.size()) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (now[i].gpa != reg.ranges[i].gpa || now[i].len != reg.ranges[i].len) {
            return false;
        }
    }
    return true;
}

} // namespace

Status Backend::dma_mr_registered(VrdmaCore &c, uint32_t index, Mr &mr)
{
    /*
     * What Linux's ib_alloc_pd() asks for: the PD's one registration is
     * for writing, so an MR without the right could not be told apart.
     */
    if (mr.access != IBV_ACCESS_LOCAL_WRITE) {
        return fail(VRDMA_ERR_UNSUPPORTED, "access_flags", mr.access,
                    IBV_ACCESS_LOCAL_WRITE);
    }
    DmaReg &reg = dma_[mr.pd_index];
    if (reg.refs) {
        /* The PD's RAM is registered already: share it. */
        reg.refs++;
        mrs_[index].dma = true;
        mrs_[index].dma_pd = mr.pd_index;
        hold(mr, reg);
        mr.lkey = c.mrs.next_key(index);
        mr.rkey = 0;
        return kOk;
    }
    std::array<VrdmaRamRange, kMaxDmaRanges> ranges;
    const size_t n = c.host.ram_ranges(ranges.data(), ranges.size());
    if (n == 0 || n > ranges.size()) {
        /* No listing (a host without it), or RAM in too many pieces. */
        return fail(VRDMA_ERR_UNSUPPORTED, "ram ranges", n, ranges.size());
    }
    uint64_t pages = 0;
    for (size_t i = 0; i < n; i++) {
        pages += ranges[i].len / VIRTIO_RDMA_PAGE_SIZE;
    }
    /* The host pins every page, as for an MR of all of guest RAM. */
    if (Status s = check_page_cap(c, pages); !s.ok()) {
        return s;
    }
    if (!c.host.can_defer()) {
        return fail(VRDMA_ERR_UNSUPPORTED, "mr kind", /* never blocks here */
                    static_cast<uint64_t>(mr.kind));
    }
    auto *job = new DmaJob{&c, pds_[mr.pd_index], mr.pd_index,
                           c.begin_deferral(), {}, false};
    for (size_t i = 0; i < n; i++) {
        const VrdmaRamRange &r = ranges[i];
        void *host = c.host.map(r.gpa, r.len, true);
        if (!host) {
            dma_reg_release(c, job->reg);
            delete job;
            return fail(VRDMA_ERR_BAD_ADDR, "ram range", r.gpa, r.len);
        }
        job->reg.ranges.push_back(DmaRange{r.gpa, r.len, host, nullptr});
    }
    job->reg.pages = pages;
    *c.mrs.mapped_counter() += pages;
    dma_jobs_.push_back(job);
    start_cmd_job(c, QueuedJob{DmaJob::work, DmaJob::done, job,
                               [](VrdmaCore &core, void *ctx) {
        std::unique_ptr<DmaJob> j(static_cast<DmaJob *>(ctx));
        Backend &b = std::get<Backend>(core.backend);
        std::erase(b.dma_jobs_, j.get());
        b.dma_reg_release(core, j->reg); /* unmapped, uncharged */
    }});
    return kDeferred;
}

int DmaJob::work(void *ctx)
{
    auto *j = static_cast<DmaJob *>(ctx);
    for (DmaRange &r : j->reg.ranges) {
        r.mr = std::get<Backend>(j->core->backend).verbs().reg_mr_iova2(
            j->pd, r.host, r.len, r.gpa, IBV_ACCESS_LOCAL_WRITE);
        if (!r.mr) {
            return errno ? errno : EIO;
        }
    }
    return 0;
}

void DmaJob::done(void *ctx, int ret)
{
    std::unique_ptr<DmaJob> j(static_cast<DmaJob *>(ctx));
    std::get<Backend>(j->core->backend).dma_done(*j->core, *j, ret);
}

void Backend::dma_done(VrdmaCore &c, DmaJob &j, int ret)
{
    std::erase(dma_jobs_, &j);
    cmd_job_ended(c); /* a queued one may start: it is another PD's or device's */
    if (j.orphaned) {
        /* A reset came meanwhile: its pages were uncharged then. */
        j.reg.pages = 0;
        dma_reg_release(c, j.reg);
        bury(c);
        return;
    }
    Status s = kOk;
    if (ret) {
        s = host_refused(ret, "ram range", j.reg.pages);
    } else if (!still_ram(c, j.reg)) {
        /* Guest RAM changed while the host pinned it (memory hot-unplug). */
        s = fail(VRDMA_ERR_BAD_ADDR, "ram ranges", j.reg.ranges.size());
    }
    if (!s.ok()) {
        dma_reg_release(c, j.reg);
        c.resume_pending(j.seq, s);
        return;
    }
    DmaReg &reg = dma_[j.pd_index];
    reg = std::move(j.reg);
    /* Held across the resume, whose commit takes the MR's own reference. */
    reg.refs = 1;
    c.resume_pending(j.seq, kOk);
    dma_unref(c, j.pd_index);
}

void Backend::dma_unref(VrdmaCore &c, uint32_t pd_index)
{
    DmaReg &reg = dma_[pd_index];
    if (reg.refs && --reg.refs == 0) {
        dma_reg_release(c, reg);
    }
}

void Backend::dma_reg_release(VrdmaCore &c, DmaReg &reg)
{
    for (const DmaRange &r : reg.ranges) {
        if (r.mr) {
            /* The host device lets go of the pages first. */
            end_host_mr(c, TombMr{r.mr, r.host, r.len, true, 0});
        } else if (!c.ended) {
            c.host.unmap(r.host, r.len, true);
        }
    }
    *c.mrs.mapped_counter() -= std::min(reg.pages, c.mrs.mapped_pages());
    reg = DmaReg{};
}

bool Backend::dma_lkey(uint32_t pd_index, uint64_t addr, uint32_t len,
                       uint32_t *out) const
{
    /* A handful of ranges, in GPA order: a linear search is the cheapest. */
    for (const DmaRange &r : dma_[pd_index].ranges) {
        if (addr >= r.gpa && addr - r.gpa <= r.len &&
            len <= r.len - (addr - r.gpa)) {
            *out = r.mr->lkey;
            return true;
        }
    }
    return false; /* not RAM, or across two ranges */
}

} // namespace vrdma::ib

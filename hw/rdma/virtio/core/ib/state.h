/*
 * virtio-rdma ibverbs backend: its state, and its side of the backend seam
 * (../backend.h).  Each guest PD, CQ, QP, SRQ and MR is one host object on
 * the host RDMA device (host_device.h); the core keeps the guest-visible
 * object and checks every command first, as for the soft engine.
 *
 * Where the work is:
 *   host_verbs.h    the seam: every libibverbs call, through verbs()
 *                   (system_verbs(); the unit tests' fake device)
 *   objects.cc      PDs, CQs, QPs (attributes to the host's), MRs
 *   window.cc       an MR's guest pages as one host virtual range
 *   dma_mr.cc       DMA MRs: guest RAM, registered at its guest-physical
 *                   addresses
 *   post.cc         work requests the core admitted (../admit.h), to the
 *                   host's WRs
 *   srq.cc          SRQs: a host SRQ each, entries posted as announced
 *   completions.cc  the completion channel: host CQEs to the guest's CQs
 *   gsi.cc          the GSI QP: MADs through the host's MAD link (rdmacm-mux)
 *   events.cc       the host's asynchronous events: QP and port states,
 *                   SRQ events
 *
 * Host objects are owned here (RAII), so whatever ends a guest object --
 * its command, a reset, the core's end -- ends the host's too, QPs first
 * (then SRQs, CQs, PDs).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_VIRTIO_CORE_IB_STATE_H
#define HW_RDMA_VIRTIO_CORE_IB_STATE_H

#include <infiniband/verbs.h>

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "../admit.h"
#include "../errors.h"
#include "../guest_abi.h"
#include "../wqe.h"
#include "host_device.h"

struct VrdmaCore;

namespace vrdma {
struct Qp;
struct Mr;
struct Cq;
struct Srq;
struct GidEntry;
} // namespace vrdma

namespace vrdma::ib {

/* For static_asserts that an ABI value is the verbs' (enums of two kinds). */
template <typename A, typename B>
constexpr bool same_value(A a, B b)
{
    return static_cast<long long>(a) == static_cast<long long>(b);
}

/* Destroys a host QP (the host flushes nothing to us after this). */
struct HostQpDeleter {
    HostVerbs *verbs;
    void operator()(ibv_qp *qp) const { verbs->destroy_qp(qp); }
};

/* A receive posted to the GSI QP, waiting for a MAD from the mux (gsi.cc). */
struct GsiRecv {
    uint64_t wr_id = 0;
    uint32_t num_sge = 0;
    std::array<Sge, VRDMA_MAX_SGE> sge{};
};

/*
 * A UD send held until its destination's address handle exists (post.cc):
 * the host WR, its address vector, and the status the device gave it.
 */
struct HeldSend {
    ibv_send_wr wr;               /* sg_list set when it is posted */
    std::array<ibv_sge, VRDMA_MAX_SGE> sge;
    WrAv av;
    uint32_t wc_opcode;
    uint8_t status;               /* not SUCCESS: completes with it */
};

/*
 * A QP's host QP; none for the GSI QP, whose MADs go through the MAD link
 * (rdmacm-mux) and whose receives wait here, at most max_recv_wr.  A UD
 * QP's sends wait in @held, in order, while the first one's address
 * handle is made on a worker thread (at most max_send_wr).
 */
struct QpState {
    /* Shared with a modify job in flight (DeferredModify), which may outlive it. */
    std::shared_ptr<ibv_qp> qp;
    bool gsi = false;
    std::deque<GsiRecv> gsi_rq;
    std::deque<HeldSend> held;
};

/*
 * An address handle made on the host's worker thread (post.cc), for the
 * first send held by QP @qpn (instance @epoch).  If the PD is destroyed
 * meanwhile, the last job on it frees the host PD.
 */
struct DeferredAh {
    VrdmaCore *core;
    ibv_pd *pd;
    uint32_t pd_index;
    std::array<uint8_t, 16> sgid; /* the cache key: the guest's source GID, */
    ibv_ah_attr key;              /* and the rest (sgid_index 0) */
    ibv_ah_attr attr;             /* what the host is asked for */
    uint32_t qpn;
    uint16_t epoch;
    bool pd_gone = false;         /* a reset or DESTROY_PD: nothing to resume */
    ibv_ah *ah = nullptr;

    static int work(void *ctx);                 /* worker thread */
    static void done(void *ctx, int ret);       /* core's context */
};

/*
 * A host modify_qp run on the host's worker thread (objects.cc): no other
 * command runs until it is answered; a reset does not wait for it -- the
 * job keeps the host QP alive until it is done (the QP's CQs and PD wait
 * in the graveyard), and answers nothing then (its seq is stale).
 */
struct DeferredModify {
    VrdmaCore *core;
    std::shared_ptr<ibv_qp> qp;
    ibv_qp_attr attr;
    int host_mask;
    uint32_t mask;            /* the guest's, for the refusal */
    uint64_t seq;             /* VrdmaCore::pending's */

    static int work(void *ctx);                 /* worker thread */
    static void done(void *ctx, int ret);       /* core's context */
};

/* One range of guest RAM registered for DMA MRs (dma_mr.cc). */
struct DmaRange {
    uint64_t gpa;
    uint64_t len;
    void *host;                   /* mapped through the host's map op */
    ibv_mr *mr;                   /* IOVA = gpa */
};

/*
 * Guest RAM registered with host PD of guest PD @pd_index, for writing,
 * once, shared by every DMA MR of that PD (dma_mr.cc); its pages count
 * in the core's mapped pages (max-mapped-pages) while it lasts.
 */
struct DmaReg {
    std::vector<DmaRange> ranges;
    uint64_t pages = 0;
    uint32_t refs = 0;            /* DMA MRs on it */
};

/*
 * The registration of guest RAM with the host, on the host's worker
 * thread: it pins every page, which takes about a second per few GiB.
 * Started by a PD's first GET_DMA_MR, which waits for it (deferred); a
 * reset does not: the job is orphaned, and undoes its work when done.
 */
struct DmaJob {
    VrdmaCore *core;
    ibv_pd *pd;
    uint32_t pd_index;
    uint64_t seq;                 /* VrdmaCore::pending's */
    DmaReg reg;                   /* mapped; registered by work() */
    bool orphaned = false;        /* the device was reset meanwhile */

    static int work(void *ctx);                 /* worker thread */
    static void done(void *ctx, int ret);       /* core's context */
};

/* The guest RAM ranges a DMA MR may span (a PC has two or three). */
constexpr size_t kMaxDmaRanges = 32;

/*
 * An MR's host MR over its window (window.h): registered together; or, a
 * DMA MR, a reference on its PD's registration of guest RAM.
 */
struct HostMr {
    ibv_mr *mr = nullptr;
    void *window = nullptr;
    size_t window_len = 0;
    uint32_t runs = 0;            /* mappings (VMAs) of the window */
    bool dma = false;             /* holds a ref on dma_[dma_pd] */
    uint32_t dma_pd = 0;
};

/* A host MR a reset or revocation could not deregister yet (Backend::bury). */
struct TombMr {
    ibv_mr *mr;
    void *window;             /* unmapped once the host let go */
    size_t len;
    bool ram;                 /* @window is guest RAM's (host.unmap) */
    uint32_t runs;            /* else a window of that many VMAs */
};

/* A host call failed with @err (errno): the guest's status for it (objects.cc). */
Status host_refused(int err, const char *field, uint64_t b = 0);

/*
 * The host GID table index of guest GID @index (objects.cc): the host
 * entry of the same GID and type on the backend's port.  @returns false if
 * the host has none (yet), or if the guest may not send from that entry
 * (source_gid(), port.h: allowed-gids, another device's claim).
 */
bool host_gid_index(const VrdmaCore &c, const HostDevice &dev,
                    uint32_t index, uint8_t *out);

class Backend {
public:
    Backend(std::unique_ptr<HostDevice> dev, const VrdmaLimits &lim);
    ~Backend();
    Backend(const Backend &) = delete;
    Backend &operator=(const Backend &) = delete;

    /*
     * Whether the completion channel could be made and both it and the
     * async-event fd read without blocking (else: unusable).
     */
    bool usable() const { return channel_ != nullptr && async_ok_; }

    VrdmaDpStats stats{};
    /*
     * Window mappings (VMAs) of this device's live MRs; those of every
     * ibverbs device of the process count against one cap (objects.cc:
     * half of vm.max_map_count, so that QEMU's own mappings never run out).
     */
    uint64_t map_runs = 0;
    uint64_t max_map_runs = 0;

    /* The backend seam's hooks (../backend.h): objects.cc, post.cc. */
    Status pd_created(VrdmaCore &c, uint32_t index);
    void pd_destroyed(VrdmaCore &c, uint32_t index);
    Status cq_created(VrdmaCore &c, uint32_t index, Cq &cq);
    void cq_destroyed(VrdmaCore &c, uint32_t index);
    Status qp_created(VrdmaCore &c, Qp &qp);
    Status qp_modifying(VrdmaCore &c, Qp &qp, uint32_t mask,
                        const virtio_rdma_qp_attr &attrs);
    void qp_modified(VrdmaCore &c, Qp &qp, uint32_t old_state, uint32_t mask);
    void qp_destroyed(VrdmaCore &c, Qp &qp);
    void qp_error_flush(VrdmaCore &c, Qp &qp);
    /*
     * Without allowed-gids: a GID the host's table holds already is the
     * host's own or another tenant's (objects.cc).
     */
    Status gid_adding(VrdmaCore &c, uint32_t index, const GidEntry &gid);
    Status mr_registered(VrdmaCore &c, uint32_t index, Mr &mr);
    void mr_mapped(VrdmaCore &, Mr &) {} /* no fast-reg MR is made */
    void mr_revoked(VrdmaCore &c, Mr &mr);
    Status mr_deregistered(VrdmaCore &c, Mr &mr);
    void post_send(VrdmaCore &c, Qp &qp, const SendReq &r);
    void post_recv(VrdmaCore &c, Qp &qp, const RecvReq &r);
    /*
     * A ring QP's queue is the host QP's, of its depth: everything rung is
     * taken (more than max_*_wr outstanding fails as the host refuses it).
     */
    uint32_t wq_room(const Qp &, bool) const { return UINT32_MAX; }
    /*
     * A host SRQ per guest SRQ, of its depth (srq.cc): the ring turn posts
     * every announced entry to it (more than max_wr outstanding breaks the
     * SRQ as the host refuses it), and the host gives them to its QPs.
     */
    Status srq_created(VrdmaCore &c, Srq &srq);
    void srq_destroyed(VrdmaCore &c, Srq &srq);
    Status srq_limit_set(VrdmaCore &c, Srq &srq, uint32_t limit);
    uint32_t srq_room(const Srq &srq) const;
    void post_srq_recv(VrdmaCore &c, Srq &srq, const RecvReq &r);
    /* A MAD from the MAD link into the GSI QP's next receive (gsi.cc). */
    bool mad_receive(VrdmaCore &c, const VrdmaMad &m);
    /* Frames are the host device's business: none come through the core. */
    bool frame_receive(VrdmaCore &, std::span<const uint8_t>) { return false; }
    /* CQs whose completions did not fit one turn's budget. */
    bool run(VrdmaCore &c);
    void timer(VrdmaCore &) {}
    void reset(VrdmaCore &c);
    /* The host watches the completion channel from attach to detach. */
    void attach(VrdmaCore &c);
    void detach(VrdmaCore &c);

    /*
     * The completion channel is readable (completions.cc): host CQEs to
     * the guest's CQs, a bounded number per call.  @returns true if there
     * may be more (the host calls again).
     */
    bool completions(VrdmaCore &c);
    /* The host device's asynchronous events (events.cc), a turn's worth. */
    void async_events(VrdmaCore &c);
    uint64_t async_count = 0;     /* events seen, for QMP */
    /* The MAD link: MADs sent, delivered, and lost (link full/down, no receive). */
    uint64_t mads_sent = 0, mads_received = 0, mads_dropped = 0;
    uint64_t purged_cqes = 0;     /* of destroyed QPs (purge_qp_cqes) */
    uint32_t modify_jobs = 0;     /* DeferredModify in flight */
    /*
     * A command's host job (a modify with an address, a registration of
     * RAM) starts only when no other is running: one a reset orphaned may
     * still be (it ends on its own), and then the new one waits here.  So
     * a guest that resets in a loop keeps at most one such host call in
     * flight; address-handle jobs count against max-ah, orphans included.
     */
    struct QueuedJob {
        int (*work)(void *);
        void (*done)(void *, int);
        void *ctx;
        void (*cancel)(VrdmaCore &, void *); /* a reset before it started */
    };
    void start_cmd_job(VrdmaCore &c, const QueuedJob &j);
    void cmd_job_ended(VrdmaCore &c);
    uint32_t cmd_jobs = 0;        /* command jobs in flight, orphans included */
    std::optional<QueuedJob> queued_;

    const HostDevice &device() const { return *dev_; }
    /*
     * Every host call goes through this (host_verbs.h); fixed at
     * construction, so the worker thread's jobs reach it too.
     */
    HostVerbs &verbs() const { return dev_->verbs(); }
    void host_stats(const VrdmaCore &c, VrdmaIbStats &st) const;

private:
    friend struct BackendAccess;
    friend struct DeferredAh; /* its done is ah_done */
    friend struct DeferredModify; /* its done buries what it held */
    friend struct DmaJob;     /* its done is dma_done */

    /* The host CQ of guest CQ @cqn, or nullptr. */
    ibv_cq *cq(uint32_t cqn) const
    {
        return cqn < cqs_.size() ? cqs_[cqn] : nullptr;
    }
    /* The host SRQ of guest SRQ @srqn, or nullptr. */
    ibv_srq *host_srq(uint32_t srqn) const
    {
        return srqn < srqs_.size() ? srqs_[srqn] : nullptr;
    }
    /*
     * The host lkey for a guest SGE: false if its lkey names no usable MR
     * of guest PD @pd (or, a DMA MR, its range is not one RAM range).
     */
    bool host_lkey(VrdmaCore &c, uint32_t pd, const Sge &s,
                   uint32_t *out) const;
    /*
     * A request's @n SGEs (admitted: their sum is checked) to the host's,
     * with the MRs of guest PD @pd (the QP's, or an SRQ's): SUCCESS or
     * LOC_PROT_ERR (an lkey of no MR of the PD, in *bad_lkey if given).
     */
    uint8_t host_sges(VrdmaCore &c, uint32_t pd, const Sge *s, uint32_t n,
                      ibv_sge *out, uint32_t *bad_lkey = nullptr) const;
    /*
     * The address handle of a UD send's address vector (post.cc): kReady
     * (in *out), kPending (being made: the send waits), or a status.
     */
    static constexpr uint8_t kAhReady = VIRTIO_RDMA_WC_SUCCESS;
    static constexpr uint8_t kAhPending = 0xFF;
    uint8_t ud_ah(VrdmaCore &c, Qp &qp, const WrAv &av, ibv_ah **out);
    /* A UD send to the host with @ah, or completed with @status (post.cc). */
    void ud_post(VrdmaCore &c, Qp &qp, QpState &s, HeldSend &u,
                 uint8_t status, ibv_ah *ah);
    /* The held sends whose address handles exist now, in order. */
    void release_held(VrdmaCore &c, Qp &qp, QpState &s);
    void ah_done(VrdmaCore &c, DeferredAh &job, int ret);
    void dma_done(VrdmaCore &c, DmaJob &job, int ret);
    /*
     * Host objects a reset could not destroy yet, because a job in flight
     * still uses them or an object under them (a modify job's QP holds its
     * CQs, SRQ and PD): destroyed by bury(), after each job, SRQs and CQs
     * first.
     */
    void entomb(ibv_srq *srq);
    void entomb(ibv_cq *cq);
    void entomb(ibv_pd *pd);
    void bury(VrdmaCore &c);
    /* A job in flight uses host PD @pd (an address handle, a DMA registration). */
    bool pd_in_use(const ibv_pd *pd) const;
    /* The GSI QP's work requests (gsi.cc): MADs through the MAD link. */
    void gsi_send(VrdmaCore &c, Qp &qp, const SendReq &r);
    void gsi_recv(VrdmaCore &c, Qp &qp, const RecvReq &r);
    /* Flushes (ERR) or drops (destroy, reset) the receives gsi_recv kept. */
    void gsi_flush(VrdmaCore &c, Qp &qp, QpState &s, bool complete);
    void release_ahs(uint32_t pd);
    /* DMA MRs (dma_mr.cc): all of guest RAM, local access only. */
    Status dma_mr_registered(VrdmaCore &c, uint32_t index, Mr &mr);
    void dma_unref(VrdmaCore &c, uint32_t pd_index);
    void dma_reg_release(VrdmaCore &c, DmaReg &reg);
    /* The host lkey of the range [addr, addr + len) lies in; false if none. */
    bool dma_lkey(uint32_t pd_index, uint64_t addr, uint32_t len,
                  uint32_t *out) const;
    /*
     * Ends slot @index's host MR (or its share of a DMA registration).
     * @returns false, with nothing changed, if the host refused to
     * deregister it and @may_refuse; else a refused host MR waits in the
     * graveyard, its window still mapped.
     */
    bool release_mr(VrdmaCore &c, uint32_t index, bool may_refuse = false);
    /* Deregisters @mr, then unmaps what it covered; later if the host refuses. */
    void end_host_mr(VrdmaCore &c, const TombMr &m);
    void release_all(VrdmaCore &c);
    /* Polls the CQs marked in pending_, at most @budget CQEs in all. */
    bool poll_pending(VrdmaCore &c, unsigned budget);
    /* One host CQE to guest CQ @cqn. */
    void deliver(VrdmaCore &c, uint32_t cqn, const ibv_wc &wc);
    /*
     * Host CQ of guest CQ @cqn: the CQEs of (destroyed) QP @wire_qpn are
     * dropped, the others delivered; at most the CQ's depth.
     */
    void purge_qp_cqes(VrdmaCore &c, uint32_t cqn, uint32_t wire_qpn);
    void qp_failed(VrdmaCore &c, uint32_t wire_qpn);
    /* Host QP @wire_qpn failed (IBV_EVENT_QP_FATAL, ...): events.cc. */
    void host_qp_fatal(VrdmaCore &c, uint32_t wire_qpn);
    /* The host CQ @h overran (IBV_EVENT_CQ_ERR): events.cc. */
    void host_cq_overrun(VrdmaCore &c, ibv_cq *h);
    /* Host SRQ @h's limit was reached, or it failed (srq.cc). */
    void host_srq_event(VrdmaCore &c, ibv_srq *h, ibv_event_type type);
    /* Ends every host SRQ (reset): after the QPs on them. */
    void release_srqs();
    bool async_nonblocking();

    std::unique_ptr<HostDevice> dev_;
    ibv_comp_channel *channel_ = nullptr;
    bool async_ok_ = false;
    bool attached_ = false;       /* its fds watched (attach to detach) */
    std::vector<ibv_pd *> pds_;   /* by guest PD index */
    std::vector<ibv_cq *> cqs_;   /* by guest CQN */
    std::vector<ibv_srq *> srqs_; /* by guest SRQN (slot 0 unused) */
    std::vector<HostMr> mrs_;     /* by guest MR index */
    std::vector<bool> pending_;   /* by guest CQN: an event came, not drained */
    struct Ah {
        uint32_t pd;              /* guest PD index */
        std::array<uint8_t, 16> sgid; /* the guest's source GID */
        ibv_ah_attr attr;         /* the rest of the key (sgid_index 0) */
        ibv_ah *ah;
    };
    std::vector<Ah> ahs_;         /* UD destinations, at most max_ah */
    std::vector<DeferredAh *> ah_jobs_; /* in flight on the worker thread */
    std::vector<DmaReg> dma_;     /* by guest PD index: DMA MRs' RAM */
    std::vector<DmaJob *> dma_jobs_; /* in flight (one, or orphans too) */
    std::vector<TombMr> tomb_mrs_;
    std::vector<ibv_srq *> tomb_srqs_;
    std::vector<ibv_cq *> tomb_cqs_;
    std::vector<ibv_pd *> tomb_pds_;
    /*
     * Destinations whose address handle the host failed to make lately
     * (post.cc): a send to one fails at once for kAhFailTtlNs, not after
     * another second's resolution.  At most kAhFailMax, oldest replaced.
     */
    struct AhFail {
        uint32_t pd;
        std::array<uint8_t, 16> sgid;
        ibv_ah_attr attr;
        uint64_t until_ns;
    };
    static constexpr size_t kAhFailMax = 64;
    static constexpr uint64_t kAhFailTtlNs = 3'000'000'000;
    std::vector<AhFail> ah_fails_;
    bool ah_failed(const VrdmaCore &c, uint32_t pd,
                   const std::array<uint8_t, 16> &sgid,
                   const ibv_ah_attr &attr) const;
};

} // namespace vrdma::ib

#endif

/*
 * virtio-rdma core: the device state behind the opaque VrdmaCore handle.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_VIRTIO_CORE_CORE_H
#define HW_RDMA_VIRTIO_CORE_CORE_H

#include <array>
#include <memory>
#include <utility>
#include <variant>
#include <cstdint>
#include <vector>

#include "backend.h"
#include "config.h"
#include "context.h"
#include "cq.h"
#include "host.h"
#include "hw/rdma/virtio-rdma-core.h"
#include "mr.h"
#include "object_table.h"
#include "pd.h"
#include "port.h"
#include "qp.h"
#include "rng.h"
#include "srq.h"
#include "wire_qpn.h"

struct VrdmaCore {
    /* A core on the soft-RoCE backend. */
    VrdmaCore(const VrdmaLimits &lim_, const VrdmaHostOps &ops_);
    /* A core on backend @B, made from @args. */
    template <typename B, typename... Args>
    VrdmaCore(const VrdmaLimits &lim_, const VrdmaHostOps &ops_,
              std::in_place_type_t<B>, Args &&...args)
        : lim(lim_), host(ops_), caps(vrdma::device_caps(lim_)),
          rng(lim_.rng_seed), pds(lim_.max_pd), cqs(lim_.max_cq),
          mrs(lim_.max_mr), qps(lim_.max_qp), wires(lim_.max_qp),
          qp_epoch(lim_.max_qp, 1), contexts(lim_.max_ctx),
          ring_sched(lim_.max_qp),
          srqs(vrdma::srq_slots(lim_)), srq_sched(vrdma::srq_slots(lim_)),
          port(lim_.phys_mtu),
          backend(std::in_place_type<B>, std::forward<Args>(args)...)
    {
        mrs.seed_keys(rng);
    }
    ~VrdmaCore();
    VrdmaCore(const VrdmaCore &) = delete;
    VrdmaCore &operator=(const VrdmaCore &) = delete;

    /*
     * Frees every object and GID (reporting each GID deleted): the device is
     * as new, but for the command counters.
     */
    void reset();

    /* The QP instance in slot @qpn has ended: its token goes stale. */
    void qp_instance_ended(uint32_t qpn)
    {
        uint16_t &e = qp_epoch[qpn];
        e = e == UINT16_MAX ? 1 : static_cast<uint16_t>(e + 1);
    }

    bool has_feature(unsigned bit) const { return (features >> bit) & 1; }

    /* The live QP that peers address as @wire (BTH destination QP). */
    vrdma::Qp *qp_by_wire(uint32_t wire)
    {
        const auto qpn = wires.find(wire);
        return qpn ? qps.at(*qpn) : nullptr;
    }

    void gid_changed(uint32_t index, const vrdma::GidEntry &e, bool added) const
    {
        host.gid_changed(vrdma::kPortNum, index, e.gid.data(), e.type, added);
    }

    const VrdmaLimits lim;
    const vrdma::Host host; /* MRs keep a pointer to it: never moves */
    const vrdma::DeviceCaps caps;
    vrdma::Rng rng; /* seeded from lim.rng_seed; see rng.h */

    vrdma::ObjectTable<vrdma::Pd> pds;
    vrdma::ObjectTable<vrdma::Cq> cqs;
    vrdma::MrTable mrs;
    vrdma::ObjectTable<vrdma::Qp> qps;
    /* Wire QPN -> queue index of every live QP (wire_qpn.h). */
    vrdma::WireQpnTable wires;
    /*
     * Device feature bits the driver negotiated (VIRTIO_RDMA_F_*, by bit
     * number); 0 after reset.
     */
    uint64_t features = 0;
    /*
     * Per QP slot, the instance now in it: bumped whenever a QP instance
     * ends (destroy, MODIFY_QP to RESET, device reset), never restarted,
     * so a host job tagged with an ended instance's epoch never acts on a
     * later one (until 65535 more instances in that one slot).  1..0xffff.
     */
    std::vector<uint16_t> qp_epoch;
    /* Contexts, and the QPs whose rings have work. */
    vrdma::ContextTable contexts;
    vrdma::RingSched ring_sched;
    /* Shared receive queues, and those whose backend takes entries eagerly. */
    vrdma::ObjectTable<vrdma::Srq> srqs;
    vrdma::RingSched srq_sched;
    vrdma::Port port;
    /* The backend that moves the data (backend.h), for the core's life. */
    vrdma::Backend backend;

    /*
     * The one command a backend deferred -- MODIFY_QP whose host modify may
     * block, GET_DMA_MR whose host registration of guest RAM takes its
     * time: the host holds its buffer and sends no other command until
     * resume_pending() answers it (vrdma_core_ctrl, VRDMA_CTRL_PENDING).
     * @seq names the deferral: host work that ends after a reset ended its
     * command answers nothing (the host does not wait for it).
     */
    struct Pending {
        bool active = false;
        uint8_t cmd = 0;
        uint64_t seq = 0;
        uint32_t qpn = 0;                 /* MODIFY_QP */
        uint32_t mask = 0;
        virtio_rdma_qp_attr attrs{};
        uint32_t mr_index = 0;            /* GET_DMA_MR: the slot kept, */
        uint32_t pdn = 0;                 /* its PD's handle, */
        std::unique_ptr<vrdma::Mr> mr;    /* the MR, without keys yet */
    } pending;
    /*
     * A backend is about to defer the command being run: @returns the seq
     * its host work reports back with (resume_pending()).
     */
    uint64_t begin_deferral() { return ++pending_seq; }
    uint64_t pending_seq = 0;
    /*
     * Deferral @seq's host work is done with @s: finish the command and
     * answer it; nothing if the command ended meanwhile (reset).
     */
    void resume_pending(uint64_t seq, vrdma::Status s);

    /*
     * vrdma_core_end(): the host is gone; only deferred work's dones still
     * run, and they call no host-op.
     */
    bool ended = false;

    uint64_t cmds = 0;
    uint64_t cmd_errors = 0;
    std::array<uint64_t, VRDMA_ERR__COUNT> err_count{};
};

#endif

/*
 * virtio-rdma core: the C interface (include/hw/rdma/virtio-rdma-core.h)
 * and control command dispatch.
 *
 * Every command goes through the same gate, in this order: the command is
 * known (UNKNOWN_CMD), the request is exactly its struct's size (REQ_SIZE),
 * the response fits (RSP_SIZE); then the command's handler checks every
 * field before it changes anything.  A refusal is reported exactly once
 * through guest_error() and leaves the device unchanged.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <new>
#include <type_traits>

#include "errors.h"
#include "guest_abi.h"

using vrdma::NoPayload;
using vrdma::Status;

VrdmaCore::VrdmaCore(const VrdmaLimits &lim_, const VrdmaHostOps &ops_)
    : VrdmaCore(lim_, ops_, std::in_place_type<vrdma::soft_roce::Engine>,
                lim_)
{
}

VrdmaCore::~VrdmaCore()
{
    if (!ended) {
        vrdma::backend::detach(*this);
        reset();
    }
}

void VrdmaCore::reset()
{
    /* Deferred host work still running answers nothing (its seq is stale). */
    pending = Pending{};
    /* QPs first: they hold references on CQs and PDs, MRs on PDs. */
    qps.for_each([this](uint32_t qpn, const vrdma::Qp &) {
        qp_instance_ended(qpn);
    });
    qps.clear();
    wires.clear();
    ring_sched.clear();
    srq_sched.clear();
    features = 0; /* the driver negotiates again */
    vrdma::backend::reset(*this); /* outstanding work goes with its QP */
    srqs.clear(); /* after the QPs that receive from them */
    mrs.clear();
    mrs.seed_keys(rng); /* the stream goes on: new keys, not the old ones */
    cqs.clear();
    contexts.clear();
    pds.clear();
    for (uint32_t i = 0; i < port.gids.size(); i++) {
        if (const vrdma::GidEntry *e = port.gid(i)) {
            const vrdma::GidEntry old = *e;
            port.gids[i] = vrdma::GidEntry{};
            gid_changed(i, old, false);
        }
    }
    /* cmds / cmd_errors / err_count are monitoring counters: they stay. */
}

namespace {

template <typename T>
constexpr size_t wire_size()
{
    if constexpr (std::is_same_v<T, NoPayload>) {
        return 0;
    } else {
        return sizeof(T);
    }
}

/* @rsp_len: how many bytes of the response the guest gets. */
using Runner = Status (*)(VrdmaCore &, const void *req, void *rsp,
                          size_t rsp_len);

struct Command {
    size_t req_size = 0;
    size_t rsp_size = 0;
    Runner run = nullptr;
};

/*
 * Copies the request once into its struct, converts it to host order,
 * runs @F, and on success writes the response back in guest order.
 */
template <typename Req, typename Rsp,
          Status (*F)(VrdmaCore &, const Req &, Rsp &)>
Status run(VrdmaCore &c, const void *req_bytes, void *rsp_bytes,
           size_t rsp_len)
{
    Req req{};
    Rsp rsp{};

    if constexpr (wire_size<Req>() != 0) {
        std::memcpy(&req, req_bytes, sizeof(req));
    }
    vrdma::le_fields(req);
    const Status s = F(c, req, rsp);
    if (s.ok() && wire_size<Rsp>() != 0) {
        vrdma::le_fields(rsp);
        std::memcpy(rsp_bytes, &rsp, std::min(rsp_len, wire_size<Rsp>()));
    }
    return s;
}

template <typename Req, typename Rsp,
          Status (*F)(VrdmaCore &, const Req &, Rsp &)>
constexpr Command command()
{
    return Command{wire_size<Req>(), wire_size<Rsp>(), &run<Req, Rsp, F>};
}

/* Indexed by command number; a null run marks an unknown command. */
constexpr auto kCommands = [] {
    using namespace vrdma;
    std::array<Command, VIRTIO_RDMA_CMD_MAX + 1> t{};
    t[VIRTIO_RDMA_CMD_QUERY_PORT] =
        command<virtio_rdma_cmd_query_port, virtio_rdma_port_attr,
                cmd_query_port>();
    t[VIRTIO_RDMA_CMD_DESTROY_CQ] =
        command<virtio_rdma_cmd_destroy_cq, NoPayload, cmd_destroy_cq>();
    t[VIRTIO_RDMA_CMD_CREATE_PD] =
        command<NoPayload, virtio_rdma_rsp_create_pd, cmd_create_pd>();
    t[VIRTIO_RDMA_CMD_DESTROY_PD] =
        command<virtio_rdma_cmd_destroy_pd, NoPayload, cmd_destroy_pd>();
    t[VIRTIO_RDMA_CMD_GET_DMA_MR] =
        command<virtio_rdma_cmd_get_dma_mr, virtio_rdma_rsp_mr,
                cmd_get_dma_mr>();
    t[VIRTIO_RDMA_CMD_CREATE_MR] =
        command<virtio_rdma_cmd_create_mr, virtio_rdma_rsp_mr,
                cmd_create_mr>();
    t[VIRTIO_RDMA_CMD_MAP_MR_SG] =
        command<virtio_rdma_cmd_map_mr_sg, virtio_rdma_rsp_map_mr_sg,
                cmd_map_mr_sg>();
    t[VIRTIO_RDMA_CMD_REG_USER_MR] =
        command<virtio_rdma_cmd_reg_user_mr, virtio_rdma_rsp_mr,
                cmd_reg_user_mr>();
    t[VIRTIO_RDMA_CMD_DEREG_MR] =
        command<virtio_rdma_cmd_dereg_mr, NoPayload, cmd_dereg_mr>();
    t[VIRTIO_RDMA_CMD_MODIFY_QP] =
        command<virtio_rdma_cmd_modify_qp, NoPayload, cmd_modify_qp>();
    t[VIRTIO_RDMA_CMD_QUERY_QP] =
        command<virtio_rdma_cmd_query_qp, virtio_rdma_qp_attr,
                cmd_query_qp>();
    t[VIRTIO_RDMA_CMD_DESTROY_QP] =
        command<virtio_rdma_cmd_destroy_qp, NoPayload, cmd_destroy_qp>();
    t[VIRTIO_RDMA_CMD_QUERY_PKEY] =
        command<virtio_rdma_cmd_query_pkey, virtio_rdma_rsp_query_pkey,
                cmd_query_pkey>();
    t[VIRTIO_RDMA_CMD_ADD_GID] =
        command<virtio_rdma_cmd_add_gid, NoPayload, cmd_add_gid>();
    t[VIRTIO_RDMA_CMD_DEL_GID] =
        command<virtio_rdma_cmd_del_gid, NoPayload, cmd_del_gid>();
    t[VIRTIO_RDMA_CMD_ALLOC_CONTEXT] =
        command<NoPayload, virtio_rdma_rsp_alloc_context, cmd_alloc_context>();
    t[VIRTIO_RDMA_CMD_FREE_CONTEXT] =
        command<virtio_rdma_cmd_free_context, NoPayload, cmd_free_context>();
    t[VIRTIO_RDMA_CMD_CREATE_CQ_RING] =
        command<virtio_rdma_cmd_create_cq_ring, virtio_rdma_rsp_create_cq,
                cmd_create_cq_ring>();
    t[VIRTIO_RDMA_CMD_CREATE_QP_RING] =
        command<virtio_rdma_cmd_create_qp_ring, virtio_rdma_rsp_create_qp_wire,
                cmd_create_qp_ring>();
    t[VIRTIO_RDMA_CMD_CREATE_SRQ_RING] =
        command<virtio_rdma_cmd_create_srq_ring, virtio_rdma_rsp_create_srq,
                cmd_create_srq_ring>();
    t[VIRTIO_RDMA_CMD_MODIFY_SRQ] =
        command<virtio_rdma_cmd_modify_srq, NoPayload, cmd_modify_srq>();
    t[VIRTIO_RDMA_CMD_QUERY_SRQ] =
        command<virtio_rdma_cmd_query_srq, virtio_rdma_rsp_query_srq,
                cmd_query_srq>();
    t[VIRTIO_RDMA_CMD_DESTROY_SRQ] =
        command<virtio_rdma_cmd_destroy_srq, NoPayload, cmd_destroy_srq>();
    return t;
}();

/*
 * Refused with EOPNOTSUPP: version 1's virtqueue data path (CREATE_CQ,
 * CREATE_QP, REQ_NOTIFY_CQ), and the queue commands before the driver
 * negotiated the rings.
 */
bool unsupported(const VrdmaCore &c, uint8_t cmd)
{
    const bool rings = c.has_feature(VIRTIO_RDMA_F_RINGS);
    switch (cmd) {
    case VIRTIO_RDMA_CMD_CREATE_CQ:
    case VIRTIO_RDMA_CMD_CREATE_QP:
    case VIRTIO_RDMA_CMD_REQ_NOTIFY_CQ:
        return true;
    case VIRTIO_RDMA_CMD_ALLOC_CONTEXT:
    case VIRTIO_RDMA_CMD_FREE_CONTEXT:
    case VIRTIO_RDMA_CMD_CREATE_CQ_RING:
    case VIRTIO_RDMA_CMD_CREATE_QP_RING:
    case VIRTIO_RDMA_CMD_CREATE_SRQ_RING:
    case VIRTIO_RDMA_CMD_MODIFY_SRQ:
    case VIRTIO_RDMA_CMD_QUERY_SRQ:
    case VIRTIO_RDMA_CMD_DESTROY_SRQ:
        return !rings;
    default:
        return false;
    }
}

const Command *find_command(uint8_t cmd)
{
    if (cmd >= kCommands.size() || !kCommands[cmd].run) {
        return nullptr;
    }
    return &kCommands[cmd];
}

Status dispatch(VrdmaCore &c, uint8_t cmd, const void *req, size_t req_len,
                void *rsp, size_t rsp_cap, size_t &rsp_len)
{
    if (unsupported(c, cmd)) {
        return vrdma::fail(VRDMA_ERR_UNSUPPORTED, "cmd", cmd, c.features);
    }
    const Command *command = find_command(cmd);
    if (!command) {
        return vrdma::fail(VRDMA_ERR_UNKNOWN_CMD, "cmd", cmd,
                           VIRTIO_RDMA_CMD_MAX);
    }
    if (req_len != command->req_size) {
        return vrdma::fail(VRDMA_ERR_REQ_SIZE, "request", req_len,
                           command->req_size);
    }
    const size_t rsp_size = command->rsp_size;
    if (rsp_cap < rsp_size) {
        return vrdma::fail(VRDMA_ERR_RSP_SIZE, "response", rsp_cap, rsp_size);
    }
    const Status s = command->run(c, req, rsp, rsp_size);
    if (s.ok()) {
        rsp_len = rsp_size;
    }
    return s;
}

} // namespace

static_assert(sizeof(virtio_rdma_cmd_modify_qp) <= VRDMA_CTRL_REQ_MAX);
static_assert(sizeof(virtio_rdma_port_attr) <= VRDMA_CTRL_RSP_MAX);
static_assert(sizeof(virtio_rdma_qp_attr) <= VRDMA_CTRL_RSP_MAX);

extern "C" {

VrdmaCore *vrdma_core_new(const VrdmaLimits *lim, const VrdmaHostOps *ops)
{
    if (!lim || !ops || !ops->mem.map || !ops->mem.unmap || !ops->mem.read ||
        !vrdma::limits_valid(*lim)) {
        return nullptr;
    }
    return new (std::nothrow) VrdmaCore(*lim, *ops);
}

void vrdma_core_free(VrdmaCore *core)
{
    delete core;
}

void vrdma_core_end(VrdmaCore *core)
{
    vrdma::backend::detach(*core);
    core->reset();
    core->ended = true;
}

void vrdma_core_reset(VrdmaCore *core)
{
    core->reset();
}

void vrdma_core_get_config(const VrdmaCore *core, struct virtio_rdma_config *cfg)
{
    vrdma::fill_config(core->lim, *cfg);
}

uint8_t vrdma_core_ctrl(VrdmaCore *core, uint8_t cmd, const void *req,
                        size_t req_len, void *rsp, size_t rsp_cap,
                        size_t *rsp_len)
{
    *rsp_len = 0;
    core->cmds++;
    const Status s = dispatch(*core, cmd, req, req_len, rsp, rsp_cap, *rsp_len);
    if (s.deferred) {
        return VRDMA_CTRL_PENDING;
    }
    if (!s.ok()) {
        core->cmd_errors++;
        core->err_count[s.err]++;
        core->host.guest_error(cmd, s.err, s.field ? s.field : "?", s.a,
                               s.b);
    }
    return vrdma::status_of(s.err);
}

void VrdmaCore::resume_pending(uint64_t seq, vrdma::Status s)
{
    if (!pending.active || pending.seq != seq) {
        return; /* a reset ended the command: nothing to answer */
    }
    Pending p = std::move(pending);
    pending = Pending{};
    virtio_rdma_rsp_mr mr_rsp{};
    size_t rsp_len = 0;
    if (s.ok() && p.cmd == VIRTIO_RDMA_CMD_MODIFY_QP) {
        vrdma::modify_apply(*this, p.qpn, p.mask, p.attrs);
    } else if (s.ok() && p.cmd == VIRTIO_RDMA_CMD_GET_DMA_MR) {
        s = vrdma::dma_mr_resume(*this, p.mr_index, p.pdn, std::move(p.mr),
                                 mr_rsp);
        vrdma::le_fields(mr_rsp);
        rsp_len = s.ok() ? sizeof(mr_rsp) : 0;
    }
    if (!s.ok()) {
        cmd_errors++;
        err_count[s.err]++;
        host.guest_error(p.cmd, s.err, s.field ? s.field : "?", s.a, s.b);
    }
    host.ctrl_done(vrdma::status_of(s.err), &mr_rsp, rsp_len);
}

void vrdma_core_get_stats(const VrdmaCore *core, VrdmaStats *stats)
{
    std::memset(stats, 0, sizeof(*stats));
    stats->pds = core->pds.live();
    stats->cqs = core->cqs.live();
    stats->qps = core->qps.live();
    stats->mrs = core->mrs.objects().live();
    stats->ahs = 0; /* no AH objects: UD sends carry their address vector */
    stats->gids = core->port.gid_count();
    stats->mapped_pages = core->mrs.mapped_pages();
    stats->cmds = core->cmds;
    stats->cmd_errors = core->cmd_errors;
    for (size_t i = 0; i < core->err_count.size(); i++) {
        stats->err_count[i] = core->err_count[i];
    }
}

uint64_t vrdma_core_mapped_pages(const VrdmaCore *core)
{
    return core->mrs.mapped_pages();
}

void vrdma_core_set_features(VrdmaCore *core, uint64_t features)
{
    core->features = features;
}

uint32_t vrdma_core_cq_armed(const VrdmaCore *core, uint32_t cqn)
{
    const vrdma::Cq *cq = core->cqs.at(cqn);
    return cq ? cq->armed : 0;
}

} // extern "C"

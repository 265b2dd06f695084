/*
 * virtio-rdma management: QMP query-virtio-rdma and HMP "info rdma".
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/lockable.h"
#include "qapi/qapi-commands-rdma-virtio.h"
#include "qapi/qapi-types-rdma-virtio.h"
#include "monitor/hmp.h"
#include "monitor/monitor.h"
#include "hw/qdev-core.h"
#include "virtio-rdma.h"

/* backend=ibverbs: the host device and its objects; NULL otherwise. */
static VirtioRdmaIbverbs *virtio_rdma_ib_info(VirtIORdma *r)
{
    VirtioRdmaIbverbs *ib;
    VrdmaIbStats st;
    bool on_ib;

    WITH_QEMU_LOCK_GUARD(&r->core_lock) {
        on_ib = vrdma_core_ib_stats(r->core, &st);
    }
    if (!on_ib) {
        return NULL;
    }
    ib = g_new0(VirtioRdmaIbverbs, 1);
    ib->ibdev = g_strdup(r->ib.ibdev);
    ib->port = r->ib.port;
    ib->pds = st.pds;
    ib->cqs = st.cqs;
    ib->qps = st.qps;
    ib->mrs = st.mrs;
    ib->ahs = st.ahs;
    ib->map_runs = st.map_runs;
    ib->max_map_runs = st.max_map_runs;
    ib->async_events = st.async_events;
    ib->mads_sent = st.mads_sent;
    ib->mads_received = st.mads_received;
    ib->mads_dropped = st.mads_dropped;
    ib->dma_pages = st.dma_pages;
    ib->host_jobs = st.host_jobs;
    ib->graveyard = st.graveyard;
    ib->purged_cqes = st.purged_cqes;
    ib->mad_link = virtio_rdma_mad_info(r);
    return ib;
}

static VirtioRdmaDataPath *virtio_rdma_dp_info(VirtIORdma *r)
{
    VirtioRdmaDataPath *dp = g_new0(VirtioRdmaDataPath, 1);
    VirtioRdmaDropList **tail = &dp->drop_reasons;
    VrdmaDpStats st;
    unsigned i;

    WITH_QEMU_LOCK_GUARD(&r->core_lock) {
        vrdma_core_get_dp_stats(r->core, &st);
    }
    dp->tx_packets = st.tx_packets;
    dp->tx_bytes = st.tx_bytes;
    dp->rx_packets = st.rx_packets;
    dp->rx_bytes = st.rx_bytes;
    dp->loopback_packets = st.loopback_packets;
    dp->retransmits = st.retransmits;
    dp->retry_timeouts = st.retry_timeouts;
    dp->naks_sent = st.naks_sent;
    dp->naks_received = st.naks_received;
    dp->rnr_naks_sent = st.rnr_naks_sent;
    dp->rnr_naks_received = st.rnr_naks_received;
    dp->duplicates = st.duplicates;
    dp->completions = st.completions;
    dp->error_completions = st.error_completions;
    dp->cq_overruns = st.cq_overruns;
    dp->drops = st.drops;
    for (i = 0; i < VRDMA_DROP__COUNT; i++) {
        if (st.drop[i]) {
            VirtioRdmaDrop *d = g_new0(VirtioRdmaDrop, 1);

            d->reason = g_strdup(vrdma_drop_name(i));
            d->count = st.drop[i];
            QAPI_LIST_APPEND(tail, d);
        }
    }
    return dp;
}

static VirtioRdmaBounds *virtio_rdma_bounds(VirtIORdma *r)
{
    VirtioRdmaBounds *b = g_new0(VirtioRdmaBounds, 1);
    VirtIORdmaStageStats st;

    virtio_rdma_engine_stats(r, &st);
    b->max_mapped_pages = r->conf.max_mapped_pages;
    b->kick_pages = r->kick_pages_max;
    b->cq_events = st.cq_events;
    b->staged_frames = st.staged_frames;
    b->max_staged_frames = st.max_staged_frames;
    b->frames_dropped_full = st.rx_full + st.tx_full;
    b->gid_changes = st.gid_changes;
    b->gid_events = st.gid_events;
    return b;
}

static int virtio_rdma_collect(Object *obj, void *opaque)
{
    VirtioRdmaInfoList ***tail = opaque;
    VirtIORdma *r = (VirtIORdma *)object_dynamic_cast(obj, TYPE_VIRTIO_RDMA);
    VirtioRdmaInfo *info;
    VrdmaStats st;
    uint8_t guid[8];
    struct virtio_rdma_config cfg;

    /* Not yet paired (hot-plugged before its function 0): nothing to show. */
    if (!r || !DEVICE(r)->realized || !r->core) {
        return 0;
    }
    WITH_QEMU_LOCK_GUARD(&r->core_lock) {
        vrdma_core_get_stats(r->core, &st);
        vrdma_core_get_config(r->core, &cfg);
    }
    memcpy(guid, &cfg.sys_image_guid, sizeof(guid));

    info = g_new0(VirtioRdmaInfo, 1);
    info->path = object_get_canonical_path(obj);
    info->backend = r->backend;
    info->ibverbs = virtio_rdma_ib_info(r);
    info->nic = g_strdup(r->nic_path);
    info->netdev = g_strdup(r->netdev_name);
    info->node_guid = g_strdup_printf("%02x%02x%02x%02x%02x%02x%02x%02x",
                                      guid[0], guid[1], guid[2], guid[3],
                                      guid[4], guid[5], guid[6], guid[7]);
    info->max_qp = r->conf.max_qp;
    info->max_cq = r->conf.max_cq;
    info->max_mr = r->conf.max_mr;
    info->max_pd = r->conf.max_pd;
    info->max_srq = r->conf.max_srq;
    info->pds = st.pds;
    info->cqs = st.cqs;
    info->qps = st.qps;
    info->mrs = st.mrs;
    info->gids = st.gids;
    info->mapped_pages = st.mapped_pages;
    info->commands = st.cmds;
    info->command_errors = st.cmd_errors;
    info->data_path = virtio_rdma_dp_info(r);
    info->bounds = virtio_rdma_bounds(r);
    if (r->conf.iothread) {
        info->iothread = iothread_get_id(r->conf.iothread);
    }
    QAPI_LIST_APPEND(*tail, info);
    return 0;
}

VirtioRdmaInfoList *qmp_query_virtio_rdma(Error **errp)
{
    VirtioRdmaInfoList *list = NULL, **tail = &list;

    object_child_foreach_recursive(object_get_root(), virtio_rdma_collect,
                                   &tail);
    return list;
}

void hmp_info_rdma(Monitor *mon, const QDict *qdict)
{
    g_autoptr(VirtioRdmaInfoList) list = qmp_query_virtio_rdma(NULL);
    VirtioRdmaInfoList *l;

    if (!list) {
        monitor_printf(mon, "No virtio-rdma devices\n");
        return;
    }
    for (l = list; l; l = l->next) {
        VirtioRdmaInfo *i = l->value;

        monitor_printf(mon, "%s:\n", i->path);
        monitor_printf(mon, "  nic %s netdev '%s' node-guid %s\n",
                       i->nic, i->netdev, i->node_guid);
        monitor_printf(mon, "  backend: %s\n",
                       VirtioRdmaBackend_str(i->backend));
        if (i->ibverbs) {
            monitor_printf(mon, "  host: %s port %u: pd %u cq %u qp %u mr %u "
                           "ah %u (window mappings %" PRIu64 " of %" PRIu64
                           ")\n", i->ibverbs->ibdev, i->ibverbs->port,
                           i->ibverbs->pds, i->ibverbs->cqs, i->ibverbs->qps,
                           i->ibverbs->mrs, i->ibverbs->ahs,
                           i->ibverbs->map_runs, i->ibverbs->max_map_runs);
            monitor_printf(mon, "  mads: sent %" PRIu64 " received %" PRIu64
                           " dropped %" PRIu64 "\n", i->ibverbs->mads_sent,
                           i->ibverbs->mads_received, i->ibverbs->mads_dropped);
            monitor_printf(mon, "  dma pages %" PRIu64 ", host jobs %u, "
                           "graveyard %u, purged cqes %" PRIu64 "\n",
                           i->ibverbs->dma_pages, i->ibverbs->host_jobs,
                           i->ibverbs->graveyard, i->ibverbs->purged_cqes);
        }
        if (i->ibverbs && i->ibverbs->mad_link) {
            VirtioRdmaMadLink *ml = i->ibverbs->mad_link;

            monitor_printf(mon, "  rdmacm-mux: %s, GIDs claimed %u refused %u,"
                           " queued %u, connects %" PRIu64 "\n",
                           ml->connected ? "connected" : "not connected",
                           ml->gids_claimed, ml->gids_refused, ml->queued,
                           ml->connects);
        }
        monitor_printf(mon, "  engine: %s%s\n",
                       i->iothread ? "iothread " : "main loop (BQL)",
                       i->iothread ? i->iothread : "");
        monitor_printf(mon, "  limits: qp %u cq %u mr %u pd %u srq %u\n",
                       i->max_qp, i->max_cq, i->max_mr, i->max_pd,
                       i->max_srq);
        monitor_printf(mon, "  objects: pd %u cq %u qp %u mr %u gid %u "
                       "(mapped pages %" PRIu64 ")\n", i->pds, i->cqs,
                       i->qps, i->mrs, i->gids, i->mapped_pages);
        VirtioRdmaDataPath *dp = i->data_path;
        VirtioRdmaDropList *d;

        monitor_printf(mon, "  commands %" PRIu64 " errors %" PRIu64 "\n",
                       i->commands, i->command_errors);
        monitor_printf(mon, "  tx %" PRIu64 " packets %" PRIu64 " bytes, "
                       "rx %" PRIu64 " packets %" PRIu64 " bytes, "
                       "loopback %" PRIu64 "\n", dp->tx_packets, dp->tx_bytes,
                       dp->rx_packets, dp->rx_bytes, dp->loopback_packets);
        monitor_printf(mon, "  retransmits %" PRIu64 " (timeouts %" PRIu64
                       "), naks sent %" PRIu64 " received %" PRIu64
                       ", rnr naks sent %" PRIu64 " received %" PRIu64
                       ", duplicates %" PRIu64 "\n", dp->retransmits,
                       dp->retry_timeouts, dp->naks_sent, dp->naks_received,
                       dp->rnr_naks_sent, dp->rnr_naks_received,
                       dp->duplicates);
        monitor_printf(mon, "  completions %" PRIu64 " (errors %" PRIu64
                       ", cq overruns %" PRIu64 "), drops %" PRIu64 "\n",
                       dp->completions, dp->error_completions,
                       dp->cq_overruns, dp->drops);
        for (d = dp->drop_reasons; d; d = d->next) {
            monitor_printf(mon, "    dropped %s: %" PRIu64 "\n",
                           d->value->reason, d->value->count);
        }
        VirtioRdmaBounds *b = i->bounds;

        monitor_printf(mon, "  bounds: mapped pages %" PRIu64 "/%" PRIu64
                       " (%" PRIu64 " per turn), cq events %" PRIu64
                       ", staged frames %" PRIu64 "/%" PRIu64 " each way "
                       "(dropped %" PRIu64 "), gid changes %" PRIu64
                       " events %" PRIu64 "\n", i->mapped_pages,
                       b->max_mapped_pages, b->kick_pages, b->cq_events,
                       b->staged_frames, b->max_staged_frames,
                       b->frames_dropped_full, b->gid_changes, b->gid_events);
    }
}

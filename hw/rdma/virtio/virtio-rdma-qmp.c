/*
 * virtio-rdma management: QMP query-virtio-rdma and HMP "info rdma".
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/qapi-commands-rdma-virtio.h"
#include "qapi/qapi-types-rdma-virtio.h"
#include "monitor/hmp.h"
#include "monitor/monitor.h"
#include "hw/qdev-core.h"
#include "hw/virtio/virtio-rdma.h"

static int virtio_rdma_collect(Object *obj, void *opaque)
{
    VirtioRdmaInfoList ***tail = opaque;
    VirtIORdma *r = (VirtIORdma *)object_dynamic_cast(obj, TYPE_VIRTIO_RDMA);
    VirtioRdmaInfo *info;
    VrdmaStats st;
    uint8_t guid[8];
    struct virtio_rdma_config cfg;

    if (!r || !DEVICE(r)->realized) {
        return 0;
    }
    vrdma_core_get_stats(r->core, &st);
    vrdma_core_get_config(r->core, &cfg);
    memcpy(guid, &cfg.sys_image_guid, sizeof(guid));

    info = g_new0(VirtioRdmaInfo, 1);
    info->path = object_get_canonical_path(obj);
    info->nic = object_get_canonical_path(OBJECT(r->nic));
    info->netdev = g_strdup(r->netdev_name);
    info->node_guid = g_strdup_printf("%02x%02x%02x%02x%02x%02x%02x%02x",
                                      guid[0], guid[1], guid[2], guid[3],
                                      guid[4], guid[5], guid[6], guid[7]);
    info->max_qp = r->conf.max_qp;
    info->max_cq = r->conf.max_cq;
    info->max_mr = r->conf.max_mr;
    info->max_pd = r->conf.max_pd;
    info->queue_size = r->conf.queue_size;
    info->pds = st.pds;
    info->cqs = st.cqs;
    info->qps = st.qps;
    info->mrs = st.mrs;
    info->gids = st.gids;
    info->mapped_pages = st.mapped_pages;
    info->commands = st.cmds;
    info->command_errors = st.cmd_errors;
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
        monitor_printf(mon, "  limits: qp %u cq %u mr %u pd %u queue-size %u\n",
                       i->max_qp, i->max_cq, i->max_mr, i->max_pd,
                       i->queue_size);
        monitor_printf(mon, "  objects: pd %u cq %u qp %u mr %u gid %u "
                       "(mapped pages %" PRIu64 ")\n", i->pds, i->cqs,
                       i->qps, i->mrs, i->gids, i->mapped_pages);
        monitor_printf(mon, "  commands %" PRIu64 " errors %" PRIu64 "\n",
                       i->commands, i->command_errors);
    }
}

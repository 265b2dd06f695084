/*
 * Management commands for targets built without virtio-rdma.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/qapi-commands-rdma-virtio.h"
#include "monitor/hmp.h"
#include "monitor/monitor.h"

VirtioRdmaInfoList *qmp_query_virtio_rdma(Error **errp)
{
    return NULL;
}

void hmp_info_rdma(Monitor *mon, const QDict *qdict)
{
    monitor_printf(mon, "virtio-rdma is not built into this QEMU\n");
}

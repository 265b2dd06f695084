/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel API differences between the two targets, Debian bookworm's
 * 6.1 and bookworm-backports' 6.12, and nothing else:
 *
 *  - virtio_find_vqs() takes struct virtqueue_info[] from 6.11 on
 *    (6.1: parallel callbacks[] and names[] arrays);
 *  - ib_device_ops.create_cq takes a struct uverbs_attr_bundle * from 6.11
 *    on (6.1: struct ib_udata *); we need only the udata
 *    (VRDMA_CREATE_CQ_UDATA);
 *  - enum ib_wc_opcode renumbered IB_WC_REG_MR in 6.2 (the driver only uses
 *    the names, so no switch is needed for it);
 *  - the umem block iterator moved to <rdma/iter.h> (a 2026 series that
 *    Debian's stable updates carry into both 6.1.19x and 6.12.9x): tested
 *    by the header's presence, not by version.
 */
#ifndef VRDMA_COMPAT_H
#define VRDMA_COMPAT_H

#include <linux/version.h>
#include <linux/virtio_config.h>
#if __has_include(<rdma/iter.h>)
#include <rdma/iter.h>
#endif

/* create_cq's driver data; a kernel CQ (ib_alloc_cq()) has none (NULL). */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 11, 0)
#define VRDMA_CREATE_CQ_LAST_ARG struct uverbs_attr_bundle *attrs
#define VRDMA_CREATE_CQ_UDATA (attrs ? &attrs->driver_udata : NULL)
#else
#define VRDMA_CREATE_CQ_LAST_ARG struct ib_udata *udata
#define VRDMA_CREATE_CQ_UDATA udata
#endif

/* Find nvqs virtqueues given a callback and a name for each. */
static inline int vrdma_find_vqs(struct virtio_device *vdev, unsigned int nvqs,
				 struct virtqueue *vqs[],
				 vq_callback_t *callbacks[],
				 const char *names[])
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 11, 0)
	struct virtqueue_info *info;
	unsigned int i;
	int err;

	info = kcalloc(nvqs, sizeof(*info), GFP_KERNEL);
	if (!info)
		return -ENOMEM;
	for (i = 0; i < nvqs; i++) {
		info[i].name = names[i];
		info[i].callback = callbacks[i];
	}
	err = virtio_find_vqs(vdev, nvqs, vqs, info, NULL);
	kfree(info);
	return err;
#else
	return virtio_find_vqs(vdev, nvqs, vqs, callbacks, names, NULL);
#endif
}

#endif /* VRDMA_COMPAT_H */

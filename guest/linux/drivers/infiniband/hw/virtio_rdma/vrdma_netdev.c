// SPDX-License-Identifier: GPL-2.0
/*
 * Pairing with the virtio-net at function 0 of our PCI slot.
 *
 * The NIC is recognised through the virtio layer -- a net_device whose
 * parent is a virtio device (on our own bus type) of type VIRTIO_ID_NET,
 * whose parent is PCI function 0 of our slot -- never through PCI IDs (a
 * modern-only virtio-net has subsystem ID 0x1100) or virtio-net's private
 * structures.  A netdevice notifier replays NETDEV_REGISTER for the NICs
 * that exist, so one path covers a NIC probed before or after us; the IB
 * device is registered (from a work item: the notifier runs under RTNL)
 * once the NIC is found, with ib_device_set_netdev() first, so the RDMA
 * core derives the RoCEv2 GIDs from its addresses and tells us through
 * add_gid/del_gid.
 */
#include <linux/if_vlan.h>
#include <linux/virtio_ids.h>
#include <rdma/ib_addr.h>

#include "vrdma.h"

static bool vrdma_is_pair(struct vrdma_dev *dev, struct net_device *ndev)
{
	struct device *vd = ndev->dev.parent, *pd;
	struct pci_dev *nic;

	if (!vd || vd->bus != dev->vdev->dev.bus)
		return false;
	if (dev_to_virtio(vd)->id.device != VIRTIO_ID_NET)
		return false;
	pd = vd->parent;
	if (!pd || !dev_is_pci(pd))
		return false;
	nic = to_pci_dev(pd);
	return nic->bus == dev->pdev->bus &&
	       PCI_SLOT(nic->devfn) == PCI_SLOT(dev->pdev->devfn) &&
	       PCI_FUNC(nic->devfn) == 0;
}

bool vrdma_port_up(struct vrdma_dev *dev)
{
	struct net_device *ndev = READ_ONCE(dev->ndev);

	return ndev && netif_running(ndev) && netif_carrier_ok(ndev);
}

int vrdma_netdev_mtu(struct vrdma_dev *dev)
{
	struct net_device *ndev = READ_ONCE(dev->ndev);

	return ndev ? READ_ONCE(ndev->mtu) : 0;
}

static void vrdma_register_work(struct work_struct *w)
{
	struct vrdma_dev *dev = container_of(w, struct vrdma_dev, register_work);
	struct net_device *ndev;
	int err;

	mutex_lock(&dev->reg_mutex);
	if (dev->registered || dev->removing)
		goto out;
	rtnl_lock();
	ndev = dev->ndev;
	if (ndev)
		dev_hold(ndev);
	rtnl_unlock();
	if (!ndev)
		goto out;
	err = ib_device_set_netdev(&dev->ib, ndev, VRDMA_PORT);
	if (!err)
		err = ib_register_device(&dev->ib, "vrdma%d", &dev->pdev->dev);
	if (err) {
		dev_err(&dev->vdev->dev, "registering the RDMA device failed: %d\n", err);
	} else {
		rtnl_lock();
		dev->registered = true;
		rtnl_unlock();
	}
	dev_put(ndev);
out:
	mutex_unlock(&dev->reg_mutex);
}

static void vrdma_port_event(struct vrdma_dev *dev, enum ib_event_type type)
{
	struct ib_event ev = {
		.device = &dev->ib,
		.element.port_num = VRDMA_PORT,
		.event = type,
	};

	if (dev->registered)
		ib_dispatch_event(&ev);
}

static int vrdma_netdev_event(struct notifier_block *nb, unsigned long event,
			      void *ptr)
{
	struct vrdma_dev *dev = container_of(nb, struct vrdma_dev, nb);
	struct net_device *ndev = netdev_notifier_info_to_dev(ptr);

	if (event == NETDEV_REGISTER) {
		if (dev->ndev || !vrdma_is_pair(dev, ndev))
			return NOTIFY_DONE;
		dev_hold(ndev);
		WRITE_ONCE(dev->ndev, ndev);
		dev_info(&dev->vdev->dev, "paired with %s\n", ndev->name);
		if (dev->registered)
			ib_device_set_netdev(&dev->ib, ndev, VRDMA_PORT);
		else
			schedule_work(&dev->register_work);
		return NOTIFY_OK;
	}
	if (ndev != dev->ndev)
		return NOTIFY_DONE;
	switch (event) {
	case NETDEV_UNREGISTER:
		/* device.c: set_netdev(NULL) or unregister on UNREGISTER. */
		if (dev->registered)
			ib_device_set_netdev(&dev->ib, NULL, VRDMA_PORT);
		vrdma_port_event(dev, IB_EVENT_PORT_ERR);
		WRITE_ONCE(dev->ndev, NULL);
		dev_put(ndev);
		break;
	case NETDEV_UP:
	case NETDEV_DOWN:
	case NETDEV_CHANGE:
		vrdma_port_event(dev, vrdma_port_up(dev) ? IB_EVENT_PORT_ACTIVE :
							   IB_EVENT_PORT_ERR);
		break;
	default:
		break;
	}
	return NOTIFY_OK;
}

int vrdma_netdev_init(struct vrdma_dev *dev)
{
	mutex_init(&dev->reg_mutex);
	INIT_WORK(&dev->register_work, vrdma_register_work);
	dev->nb.notifier_call = vrdma_netdev_event;
	return register_netdevice_notifier(&dev->nb);
}

void vrdma_netdev_fini(struct vrdma_dev *dev)
{
	bool registered;

	mutex_lock(&dev->reg_mutex);
	dev->removing = true;
	mutex_unlock(&dev->reg_mutex);
	cancel_work_sync(&dev->register_work);
	rtnl_lock();
	registered = dev->registered;
	dev->registered = false;	/* no more port events */
	rtnl_unlock();
	if (registered)
		ib_unregister_device(&dev->ib);
	/* Replays NETDEV_UNREGISTER to us: drops the NIC reference. */
	unregister_netdevice_notifier(&dev->nb);
	rtnl_lock();
	if (dev->ndev) {
		dev_put(dev->ndev);
		dev->ndev = NULL;
	}
	rtnl_unlock();
}

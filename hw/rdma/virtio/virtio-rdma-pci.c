/*
 * virtio-rdma-pci: the PCI proxy.  It must sit at function 1 of a slot whose
 * function 0 is virtio-net-pci: the guest driver takes that NIC as its
 * netdev, and GIDs / the soft-RoCE wire follow it.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/module.h"
#include "hw/pci/pci.h"
#include "hw/qdev-properties.h"
#include "hw/virtio/virtio-net.h"
#include "hw/virtio/virtio-pci.h"
#include "hw/virtio/virtio-rdma.h"

typedef struct VirtIORdmaPCI VirtIORdmaPCI;

#define TYPE_VIRTIO_RDMA_PCI "virtio-rdma-pci"
DECLARE_INSTANCE_CHECKER(VirtIORdmaPCI, VIRTIO_RDMA_PCI, TYPE_VIRTIO_RDMA_PCI)

struct VirtIORdmaPCI {
    VirtIOPCIProxy parent_obj;
    VirtIORdma vdev;
};

/*
 * ioeventfd, on by default as for virtio-net and virtio-blk: a kick is then
 * an eventfd, not a heavyweight exit.  The device does a kick's work in a
 * guarded bottom half either way (virtio-rdma.c).
 */
static const Property virtio_rdma_pci_properties[] = {
    DEFINE_PROP_BIT("ioeventfd", VirtIOPCIProxy, flags,
                    VIRTIO_PCI_FLAG_USE_IOEVENTFD_BIT, true),
    DEFINE_PROP_UINT32("vectors", VirtIOPCIProxy, nvectors,
                       DEV_NVECTORS_UNSPECIFIED),
};

/* The virtio-net device at function 0 of our slot, or NULL. */
static VirtIONet *virtio_rdma_pci_find_nic(PCIDevice *pci)
{
    PCIDevice *f0 = pci_find_device(pci_get_bus(pci), pci_dev_bus_num(pci),
                                    PCI_DEVFN(PCI_SLOT(pci->devfn), 0));
    VirtIODevice *vdev;

    if (!f0 || !object_dynamic_cast(OBJECT(f0), TYPE_VIRTIO_PCI)) {
        return NULL;
    }
    vdev = virtio_bus_get_device(&VIRTIO_PCI(f0)->bus);
    if (!vdev || !object_dynamic_cast(OBJECT(vdev), TYPE_VIRTIO_NET)) {
        return NULL;
    }
    return VIRTIO_NET(vdev);
}

static void virtio_rdma_pci_realize(VirtIOPCIProxy *vpci_dev, Error **errp)
{
    VirtIORdmaPCI *dev = VIRTIO_RDMA_PCI(vpci_dev);
    PCIDevice *pci = &vpci_dev->pci_dev;
    int slot = PCI_SLOT(pci->devfn);
    VirtIONet *nic;

    if (PCI_FUNC(pci->devfn) != 1) {
        error_setg(errp, "virtio-rdma-pci must be function 1 of its slot "
                   "(it is at %02x.%x)", slot, PCI_FUNC(pci->devfn));
        error_append_hint(errp, "Use -device virtio-net-pci,addr=%02x.0,"
                          "multifunction=on,... -device virtio-rdma-pci,"
                          "addr=%02x.1\n", slot, slot);
        return;
    }
    nic = virtio_rdma_pci_find_nic(pci);
    if (!nic) {
        error_setg(errp, "virtio-rdma-pci at %02x.1 needs virtio-net-pci at "
                   "function 0 of the same slot (%02x.0)", slot, slot);
        error_append_hint(errp, "Put -device virtio-net-pci,addr=%02x.0,"
                          "multifunction=on before it on the command line\n",
                          slot);
        return;
    }
    virtio_rdma_set_nic(&dev->vdev, nic);

    /*
     * One vector for config, one per CQ, one for the control queue, one for
     * the event queue.
     */
    if (vpci_dev->nvectors == DEV_NVECTORS_UNSPECIFIED) {
        vpci_dev->nvectors = dev->vdev.conf.max_cq + 3;
    }
    virtio_pci_force_virtio_1(vpci_dev);
    qdev_realize(DEVICE(&dev->vdev), BUS(&vpci_dev->bus), errp);
}

static void virtio_rdma_pci_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    VirtioPCIClass *k = VIRTIO_PCI_CLASS(klass);
    PCIDeviceClass *pcidev_k = PCI_DEVICE_CLASS(klass);

    k->realize = virtio_rdma_pci_realize;
    set_bit(DEVICE_CATEGORY_NETWORK, dc->categories);
    pcidev_k->vendor_id = PCI_VENDOR_ID_REDHAT_QUMRANET;
    pcidev_k->device_id = VIRTIO_RDMA_PCI_DEVICE_ID;
    pcidev_k->revision = VIRTIO_PCI_ABI_VERSION;
    pcidev_k->class_id = PCI_CLASS_NETWORK_OTHER;
    device_class_set_props(dc, virtio_rdma_pci_properties);
}

static void virtio_rdma_pci_instance_init(Object *obj)
{
    VirtIORdmaPCI *dev = VIRTIO_RDMA_PCI(obj);

    virtio_instance_init_common(obj, &dev->vdev, sizeof(dev->vdev),
                                TYPE_VIRTIO_RDMA);
}

static const VirtioPCIDeviceTypeInfo virtio_rdma_pci_info = {
    .generic_name = TYPE_VIRTIO_RDMA_PCI,
    .instance_size = sizeof(VirtIORdmaPCI),
    .instance_init = virtio_rdma_pci_instance_init,
    .class_init = virtio_rdma_pci_class_init,
};

static void virtio_rdma_pci_register(void)
{
    virtio_pci_types_register(&virtio_rdma_pci_info);
}

type_init(virtio_rdma_pci_register)

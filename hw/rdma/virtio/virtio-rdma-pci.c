/*
 * virtio-rdma-pci: the PCI proxy.  It must sit at function 1 of a slot whose
 * function 0 is virtio-net-pci: the guest driver takes that NIC as its
 * netdev, and GIDs / the soft-RoCE wire follow it.
 *
 * Pairing does not depend on the order devices are created in: QEMU creates
 * classic "-device a=b" options before JSON ones (libvirt's), and PCI
 * hot-plug wants function 0 plugged last.  When function 0 is not there at
 * our realize, a device listener pairs us as soon as it is realized (before
 * the guest can see the slot), and a machine-done notifier refuses to start
 * a machine whose function 0 never came.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/error-report.h"
#include "qemu/module.h"
#include "system/system.h"
#include "hw/pci/pci.h"
#include "hw/qdev-properties.h"
#include "hw/virtio/virtio-net.h"
#include "hw/virtio/virtio-pci.h"
#include "virtio-rdma.h"

typedef struct VirtIORdmaPCI VirtIORdmaPCI;

#define TYPE_VIRTIO_RDMA_PCI "virtio-rdma-pci"
DECLARE_INSTANCE_CHECKER(VirtIORdmaPCI, VIRTIO_RDMA_PCI, TYPE_VIRTIO_RDMA_PCI)

struct VirtIORdmaPCI {
    VirtIOPCIProxy parent_obj;
    VirtIORdma vdev;
    /* Realized before function 0: waiting for it (the two below). */
    bool waiting;
    bool listening;         /* f0_listener registered, until exit */
    DeviceListener f0_listener;
    Notifier machine_done;
};

static void (*virtio_rdma_pci_parent_exit)(PCIDevice *pci);

/*
 * The doorbell region (virtio shared memory region
 * VIRTIO_RDMA_SHM_DOORBELLS) is BAR 2, 32-bit memory, not prefetchable (a
 * write rings a doorbell).  virtio-pci uses BAR 1 (MSI-X) and 4+5 (the
 * modern registers), BAR 0 only for legacy I/O (never: virtio 1 only) and
 * BAR 2 only for modern-pio-notify, which the device therefore refuses.
 */
#define VIRTIO_RDMA_PCI_DB_BAR 2

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

/* The virtio-net device behind @f0, or NULL. */
static VirtIONet *virtio_rdma_pci_nic(PCIDevice *f0)
{
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

/* "pci.1:05.1 'rdma0'": where we are, for errors nobody's -device frames. */
static char *virtio_rdma_pci_where(PCIDevice *pci)
{
    const char *id = DEVICE(pci)->id;

    return g_strdup_printf("%s:%02x.%x%s%s%s", BUS(pci_get_bus(pci))->name,
                           PCI_SLOT(pci->devfn), PCI_FUNC(pci->devfn),
                           id ? " '" : "", id ? id : "", id ? "'" : "");
}

static void virtio_rdma_pci_no_nic(PCIDevice *pci, Error **errp)
{
    g_autofree char *where = virtio_rdma_pci_where(pci);
    int slot = PCI_SLOT(pci->devfn);
    PCIDevice *f0 = pci_get_function_0(pci);

    error_setg(errp, "virtio-rdma-pci at %s needs virtio-net-pci at function "
               "0 of the same slot (%02x.0%s%s)", where, slot,
               f0 ? " is " : " is empty",
               f0 ? object_get_typename(OBJECT(f0)) : "");
    error_append_hint(errp, "Use -device virtio-net-pci,addr=%02x.0,"
                      "multifunction=on,... on the same bus\n", slot);
}

/* Unrealize: neither the listener nor the notifier may outlive us. */
static void virtio_rdma_pci_stop_waiting(VirtIORdmaPCI *dev)
{
    dev->waiting = false;
    if (dev->listening) {
        dev->listening = false;
        device_listener_unregister(&dev->f0_listener);
    }
    if (dev->machine_done.notify) {
        qemu_remove_machine_init_done_notifier(&dev->machine_done);
        dev->machine_done.notify = NULL;
    }
}

/*
 * A device was realized: if it is our function 0, pair with it.  The
 * listener stays registered until unrealize (unregistering from inside the
 * listener walk would cut it short); @waiting makes the rest no-ops.
 */
static void virtio_rdma_pci_f0_realized(DeviceListener *listener,
                                        DeviceState *other)
{
    VirtIORdmaPCI *dev = container_of(listener, VirtIORdmaPCI, f0_listener);
    PCIDevice *pci = &dev->parent_obj.pci_dev;
    PCIDevice *f0 = (PCIDevice *)object_dynamic_cast(OBJECT(other),
                                                     TYPE_PCI_DEVICE);
    VirtIONet *nic;
    Error *err = NULL;

    if (!dev->waiting || !f0 || pci_get_function_0(pci) != f0) {
        return;
    }
    dev->waiting = false;
    nic = virtio_rdma_pci_nic(f0);
    if (nic) {
        virtio_rdma_pair(&dev->vdev, nic, &err);
    } else {
        virtio_rdma_pci_no_nic(pci, &err);
    }
    if (!err) {
        return;
    }
    if (!phase_check(PHASE_MACHINE_READY)) {
        /* The command line: as if our own -device had failed. */
        error_report_err(err);
        exit(1);
    }
    /* Hot-plug: function 0 stays; we stay unpaired, and say so on use. */
    error_report_err(err);
}

/* Cold plug: a machine whose function 0 never came does not start. */
static void virtio_rdma_pci_machine_done(Notifier *notifier, void *data)
{
    VirtIORdmaPCI *dev = container_of(notifier, VirtIORdmaPCI, machine_done);
    Error *err = NULL;

    if (dev->waiting) {
        virtio_rdma_pci_no_nic(&dev->parent_obj.pci_dev, &err);
        error_report_err(err);
        exit(1);
    }
}

/* Before realize: the doorbell BAR is one virtio-pci leaves free. */
static bool virtio_rdma_pci_db_bar_free(VirtIOPCIProxy *vpci_dev, Error **errp)
{
    const unsigned bar = VIRTIO_RDMA_PCI_DB_BAR;

    /* Fixed by virtio-pci; not properties. */
    assert(vpci_dev->msix_bar_idx != bar &&
           vpci_dev->modern_mem_bar_idx != bar &&
           vpci_dev->modern_mem_bar_idx + 1 != bar);
    if ((vpci_dev->flags & VIRTIO_PCI_FLAG_MODERN_PIO_NOTIFY) &&
        vpci_dev->modern_io_bar_idx == bar) {
        error_setg(errp, "virtio-rdma-pci: modern-pio-notify=on takes BAR %u, "
                   "where the device puts its doorbell region", bar);
        error_append_hint(errp, "Set modern-pio-notify=off\n");
        return false;
    }
    return true;
}

static void virtio_rdma_pci_realize(VirtIOPCIProxy *vpci_dev, Error **errp)
{
    VirtIORdmaPCI *dev = VIRTIO_RDMA_PCI(vpci_dev);
    PCIDevice *pci = &vpci_dev->pci_dev;
    int slot = PCI_SLOT(pci->devfn);
    PCIDevice *f0 = pci_get_function_0(pci);
    MemoryRegion *db;

    if (PCI_FUNC(pci->devfn) != 1) {
        error_setg(errp, "virtio-rdma-pci must be function 1 of its slot "
                   "(it is at %02x.%x)", slot, PCI_FUNC(pci->devfn));
        error_append_hint(errp, "Use -device virtio-net-pci,addr=%02x.0,"
                          "multifunction=on,... -device virtio-rdma-pci,"
                          "addr=%02x.1\n", slot, slot);
        return;
    }
    if (f0 && !virtio_rdma_pci_nic(f0)) {
        virtio_rdma_pci_no_nic(pci, errp);
        return;
    }
    if (f0) {
        virtio_rdma_set_nic(&dev->vdev, virtio_rdma_pci_nic(f0));
    } else {
        virtio_rdma_defer_pairing(&dev->vdev);
    }

    /* Vectors for config, the control queue and the event queue. */
    if (vpci_dev->nvectors == DEV_NVECTORS_UNSPECIFIED) {
        vpci_dev->nvectors = 1 + VIRTIO_RDMA_NUM_VQS;
    }
    virtio_pci_force_virtio_1(vpci_dev);
    if (!virtio_rdma_pci_db_bar_free(vpci_dev, errp)) {
        return;
    }
    if (!qdev_realize(DEVICE(&dev->vdev), BUS(&vpci_dev->bus), errp)) {
        return;
    }
    db = virtio_rdma_doorbells(&dev->vdev);
    pci_register_bar(pci, VIRTIO_RDMA_PCI_DB_BAR,
                     PCI_BASE_ADDRESS_SPACE_MEMORY, db);
    virtio_pci_add_shm_cap(vpci_dev, VIRTIO_RDMA_PCI_DB_BAR, 0,
                           memory_region_size(db), VIRTIO_RDMA_SHM_DOORBELLS);
    if (f0) {
        return;
    }
    dev->waiting = true;
    dev->f0_listener = (DeviceListener) {
        .realize = virtio_rdma_pci_f0_realized,
    };
    device_listener_register(&dev->f0_listener);
    dev->listening = true;
    if (!phase_check(PHASE_MACHINE_READY)) {
        dev->machine_done.notify = virtio_rdma_pci_machine_done;
        qemu_add_machine_init_done_notifier(&dev->machine_done);
    }
}

/* Also when our realize failed after registering (pci_qdev_realize's undo). */
static void virtio_rdma_pci_exit(PCIDevice *pci)
{
    virtio_rdma_pci_stop_waiting(VIRTIO_RDMA_PCI(pci));
    virtio_rdma_pci_parent_exit(pci);
}

static void virtio_rdma_pci_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    VirtioPCIClass *k = VIRTIO_PCI_CLASS(klass);
    PCIDeviceClass *pcidev_k = PCI_DEVICE_CLASS(klass);

    k->realize = virtio_rdma_pci_realize;
    virtio_rdma_pci_parent_exit = pcidev_k->exit;
    pcidev_k->exit = virtio_rdma_pci_exit;
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

# Lean x86_64 device set for virtio-rdma (configure --without-default-devices
# --with-devices-x86_64=virtio-rdma): both PC machines, virtio-net, virtio-9p
# for the lab tier, a serial console, ivshmem-plain (a RAM BAR for
# virtio-rdma-mem-test), pcie-root-port (where libvirt puts a q35 domain's
# devices, and the pairing qtest) and the device itself.
CONFIG_I440FX=y
CONFIG_Q35=y
CONFIG_SERIAL_ISA=y
CONFIG_VIRTIO_PCI=y
CONFIG_VIRTIO_NET=y
CONFIG_VIRTIO_9P=y
CONFIG_VIRTIO_RDMA=y
CONFIG_IVSHMEM_DEVICE=y
CONFIG_PCIE_PORT=y

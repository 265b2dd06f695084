#!/usr/bin/env python3
"""Starting inputs for QEMU's generic-fuzz target on the virtio-rdma pairs
that scripts/fuzz.sh sets up, written to the directory given.

Random bytes take hours to find the few register writes that bring a virtio
device up (status, features, a queue's rings, queue_enable, a notify), and
until then no kick reaches the device, so no engine or staging code runs.
These inputs do that much, as a driver would: each control command once;
a PD, CQs, a DMA MR, a GID and a UD QP taken to RTS (QEMU's generic-fuzz
crosses inputs by concatenation, so these prefix the others); then a CQ
buffer and a SEND on every QP's send queue (completions staged for the
guarded bottom half; a CQ overrun); every queue kicked; a RoCEv2-looking
frame out of each NIC.  The rest is the fuzzer's.  Checked with
-trace 'virtio_rdma_*' (ctrl_cmd status 0, cq_overrun).  They are generated,
not committed: tests/fuzz/corpus holds only inputs that found a bug.

The layout is generic_fuzz.c's: commands separated by "FUZZ", the first byte
an opcode; MMIO addresses are [region index, offset], the index counting the
matched MMIO regions in address order.  With QEMU_FUZZ_OBJECTS="virtio-rdma*
virtio-net*" the PCI devices are enumerated (and their BARs mapped) in that
order: for each virtio-rdma-pci seven MMIO regions, MSI-X table, PBA, the
doorbell region (BAR 2, with rings=on, the default), then the modern BAR's
common, ISR, device and notify windows; for each virtio-net-pci six, the
same without doorbells.  So regions 0-6 and 7-13 are the two
virtio-rdma-pci, 14-19 and 20-25 the two virtio-net-pci (region()).
"""
import os
import struct
import sys

SEP = b"FUZZ"
OP_WRITE, OP_ADD_DMA_PATTERN, OP_CLEAR_DMA_PATTERNS, OP_CLOCK_STEP = 3, 7, 8, 9
BYTE, WORD, LONG, QUAD = 0, 1, 2, 3
DOORBELLS, COMMON, NOTIFY = 2, 3, 6  # region index within an RDMA device's
RDMA_REGIONS, NIC_REGIONS = 7, 6     # (a NIC has no doorbells: one less)


def region(dev, which):
    """The generic-fuzz index of region @which of device @dev: 0 and 1 are
    the virtio-rdma-pci, 2 and 3 the virtio-net-pci."""
    if dev < 2:
        return dev * RDMA_REGIONS + which
    return 2 * RDMA_REGIONS + (dev - 2) * NIC_REGIONS + which - (which > DOORBELLS)

# virtio_pci_common_cfg offsets
DRV_FEAT_SEL, DRV_FEAT, STATUS = 0x08, 0x0C, 0x14
Q_SELECT, Q_SIZE, Q_ENABLE, Q_DESC, Q_AVAIL, Q_USED = 0x16, 0x18, 0x1C, 0x20, 0x28, 0x30
ACK, DRIVER, FEATURES_OK, DRIVER_OK = 1, 2, 8, 4
QSIZE = 64


def write(region, off, size, value):
    return bytes([OP_WRITE]) + struct.pack("<BBxxIQ", size, region, off, value)


def pattern(data, index=0, stride=0):
    return bytes([OP_ADD_DMA_PATTERN, index, stride]) + data


def desc(addr, length, flags, nxt):
    return struct.pack("<QIHH", addr, length, flags, nxt)


def bring_up(dev, queues, ring_base, dev_features=0):
    """Reset, negotiate VERSION_1 (and dev_features, bits 0..31), give each
    queue rings at ring_base, DRIVER_OK."""
    c = region(dev, COMMON)
    ops = [write(c, STATUS, BYTE, 0), write(c, STATUS, BYTE, ACK | DRIVER),
           write(c, DRV_FEAT_SEL, LONG, 1), write(c, DRV_FEAT, LONG, 1)]
    if dev_features:
        ops += [write(c, DRV_FEAT_SEL, LONG, 0),
                write(c, DRV_FEAT, LONG, dev_features)]
    ops.append(write(c, STATUS, BYTE, ACK | DRIVER | FEATURES_OK))
    for i, q in enumerate(queues):
        base = ring_base + i * 0x3000
        ops += [write(c, Q_SELECT, WORD, q), write(c, Q_SIZE, WORD, QSIZE),
                write(c, Q_DESC, QUAD, base), write(c, Q_AVAIL, QUAD, base + 0x1000),
                write(c, Q_USED, QUAD, base + 0x2000), write(c, Q_ENABLE, WORD, 1)]
    ops.append(write(c, STATUS, BYTE, ACK | DRIVER | FEATURES_OK | DRIVER_OK))
    return ops


def kick(dev, q):
    # QEMU's notify_off_multiplier is 4 and queue n's notify_off is n.
    return write(region(dev, NOTIFY), q * 4, WORD, q)


# Request sizes the device accepts, by command (virtio-rdma-abi.h); 0 (no
# request) is sent as 4 bytes, which the device refuses with EINVAL.
REQ_SIZE = {1: 4, 2: 4, 3: 4, 4: 4, 5: 4, 6: 8, 7: 12, 8: 32, 9: 48, 10: 4,
            11: 36, 12: 168, 13: 8, 14: 4, 15: 8, 16: 28, 17: 8, 18: 8,
            19: 4, 20: 4, 21: 24, 22: 80}


def chain_patterns(cmd):
    """DMA patterns for one control request [cmd byte][request][status],
    descriptors 1 -> 2 -> 3.  generic-fuzz fills each read of guest RAM with
    the next pattern, round robin; virtqueue_pop reads avail idx, the head,
    then each descriptor and maps its buffer.  With five patterns those
    reads get, in turn: idx/request (P0), head/status descriptor (P1), cmd
    descriptor/status buffer (P2), the command byte (P3), the request
    descriptor (P4).  Every pattern but P3 starts with u16 1, which read as
    idx or head is what the chain needs.  A start: the fuzzer mutates it."""
    return [pattern(struct.pack("<H", 1) + bytes(REQ_SIZE[cmd] - 2)),  # idx 1; request
            pattern(desc(0x420001, 512, 2, 0)),                        # head 1; desc 3 status, WRITE
            pattern(desc(0x410001, 1, 1, 2)),                          # desc 1: cmd, NEXT 2
            pattern(bytes([cmd, 0])),                                  # the command byte
            pattern(desc(0x400001, REQ_SIZE[cmd], 1, 3))]              # desc 2: request, NEXT 3


def command(dev, k, cmd, req):
    """The k-th (1-based) control request of an input, exact: one pattern per
    read, in virtqueue_pop's order (avail idx, head, then each descriptor
    and its buffer), so the read of avail idx that follows the chain wraps
    round to the first pattern again and finds the queue empty; the read
    after that (once virtio_notify has read avail flags) gets the third,
    whose first u16 is k too (the command byte's address).
    Descriptors 3(k-1).. carry [cmd byte][request][status + response]."""
    d = 3 * ((k - 1) % (QSIZE // 3))
    ops = [bytes([OP_CLEAR_DMA_PATTERNS]),
           pattern(struct.pack("<H", k)),                              # avail idx
           pattern(struct.pack("<H", d)),                              # head
           pattern(desc(0x410000 + k, 1, 1, d + 1)),                   # cmd, NEXT
           pattern(bytes([cmd]))]
    if req:
        ops += [pattern(desc(0x400000 + k * 0x1000, len(req), 1, d + 2)),
                pattern(req)]
    ops += [pattern(desc(0x420000 + k * 0x1000, 512, 2, 0)),          # status, WRITE
            pattern(bytes(1))]
    return ops + [kick(dev, 0)]


PD = 1 << 16
QP_STATE, QP_PKEY_INDEX, QP_PORT, QP_QKEY, QP_SQ_PSN = 1, 1 << 4, 1 << 5, 1 << 6, 1 << 16


def setup(dev, queues=(0,)):
    """A driver's first steps on one device, each its own kick: a PD, two
    CQs, a DMA MR, a GID (IPv4-mapped 10.0.2.15), a UD and an RC QP, the
    UD QP to RTS.  The
    handles are the device's first after a reset (PD generation 1 << 16 |
    index 0; CQs 0 and 1); the fuzzer takes it from there."""
    gid = bytes(10) + b"\xff\xff" + bytes([10, 0, 2, 15 + dev])
    cmds = [(4, b""),                                                  # CREATE_PD
            (2, struct.pack("<I", 16)),                                # CREATE_CQ
            (2, struct.pack("<I", 16)),
            (6, struct.pack("<II", PD, 0xf)),                           # GET_DMA_MR
            (16, gid + struct.pack("<IHHI", 1, 0, 0, 1)),              # ADD_GID
            (11, struct.pack("<IBBxxIIIIIII", PD, 4, 0, 16, 1, 0, 16, 1, 1, 0)),  # UD QP
            (11, struct.pack("<IBBxxIIIIIII", PD, 2, 0, 16, 1, 0, 16, 1, 1, 0))]  # RC QP
    # QP numbers are drawn at random: take every possible one (2..max-qp-1)
    # through INIT (UD attributes), RTR, RTS; the UD QP gets to RTS.
    for qpn in range(2, 8):
        for state, mask in ((1, QP_STATE | QP_PKEY_INDEX | QP_PORT | QP_QKEY),
                            (2, QP_STATE), (3, QP_STATE | QP_SQ_PSN)):
            attrs = bytearray(160)
            struct.pack_into("<I", attrs, 0, state)
            struct.pack_into("<I", attrs, 16, 0x11111111)                # qkey
            attrs[45] = 1                                              # port_num
            cmds.append((12, struct.pack("<II", qpn, mask) + bytes(attrs)))
    ops = bring_up(dev, queues, 0x100000)
    for k, (cmd, req) in enumerate(cmds, 1):
        ops += command(dev, k, cmd, req)
    return ops


def post(dev, q, buf_addr, buf, writable):
    """One single-descriptor element on virtqueue q (its first): reads avail
    idx (P0), head (P1), the descriptor (P2), the buffer (P3); P0 comes round
    again for the re-read of idx, and P2 (address low u16 1) for the one
    after virtio_notify."""
    return [bytes([OP_CLEAR_DMA_PATTERNS]),
            pattern(struct.pack("<H", 1)), pattern(struct.pack("<H", 0)),
            pattern(desc(buf_addr | 1, len(buf), 2 if writable else 0, 0)),
            pattern(buf), kick(dev, q)]


def sends(dev):
    """After setup() with those queues up: a CQ buffer on each CQ, then a signaled UD SEND (no
    SGE) on the SQ of every possible QP number, to the other device's GSI
    QP at its GID: the RTS QP builds a frame (staged, sent through the hub),
    the others complete at once with an error (staged completions)."""
    ops = []
    for cq in (0, 1):
        ops += post(dev, 1 + cq, 0x600000 + cq * 0x1000, bytes(64), True)
    peer = 1 - dev
    av = struct.pack("<III", 1, PD, 0) + bytes(10) + b"\xff\xff" + \
        bytes([10, 0, 2, 15 + peer]) + bytes([0, 0, 64]) + \
        bytes.fromhex("52540012345" + "67"[peer]) + bytes(7)
    wr = struct.pack("<II", 1, 0x11111111) + av
    wqe = struct.pack("<IIIIQII", 0, 2, 2, 0, 0x1234, 0, 0) + wr + bytes(56 - len(wr))
    for qpn in range(2, 8):
        ops += post(dev, 5 + 2 * qpn, 0x700000 + qpn * 0x1000, wqe, False)
    return ops


def rings(dev):
    """VIRTIO_RDMA_F_RINGS (with WIRE_QPN and EVENT_QUEUE) negotiated, the
    control and event queues up (event queue 1 + max-cq + 2 max-qp = 21), a
    PD and a user context (1), then doorbells of every type from the
    kernel's page and the context's: what the core checks and ignores (no
    queue yet) and what the fuzzer turns into rings."""
    ops = bring_up(dev, [0, 21], 0x100000, 7)
    ops += command(dev, 1, 4, b"") + command(dev, 2, 19, b"")
    for page in (0, 1, 2):
        for t in (0, 1, 3, 9):
            ops.append(write(region(dev, DOORBELLS), page * 4096, QUAD,
                             1 << 32 | t << 24 | 2))
    return ops


def roce_frame(src_mac):
    """Broadcast IPv4/UDP to port 4791 (RoCEv2) with a UD SEND_ONLY BTH to
    QP 1: what the other pair's filter classifies (its GID table decides)."""
    bth = bytes([0x64, 0, 0xff, 0xff, 0, 0, 0, 1, 0, 0, 0, 0])
    deth = bytes([0x80, 0x01, 0, 0, 0, 0, 0, 1])
    payload = bth + deth + bytes(32) + bytes(4)                        # ICRC left 0
    udp = struct.pack(">HHHH", 0xc000, 4791, 8 + len(payload), 0) + payload
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0x4000, 64, 17, 0,
                     bytes([10, 0, 2, 15]), bytes([10, 0, 2, 16])) + udp
    return bytes.fromhex("ffffffffffff") + src_mac + b"\x08\x00" + ip


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    seeds = {}
    for dev in (0, 1):
        # Control queue (0): each command number once.
        for cmd in range(1, 23):
            seeds[f"rdma{dev}-ctrl-{cmd:02d}"] = (
                bring_up(dev, [0], 0x100000) + chain_patterns(cmd) + [kick(dev, 0)])
        # Every queue of max-cq=4, max-qp=8 (1 + 4 + 16, then the event
        # queue, 21) up and kicked, with WIRE_QPN (bit 0) and EVENT_QUEUE
        # (bit 1) negotiated.
        ops = bring_up(dev, range(22), 0x200000, 3) + chain_patterns(1)
        seeds[f"rdma{dev}-all-queues"] = ops + [kick(dev, q) for q in range(22)]
    for dev in (0, 1):
        seeds[f"rdma{dev}-rings"] = rings(dev)
        seeds[f"rdma{dev}-setup"] = setup(dev)
        # The control queue, both CQs, and the SQ and RQ of QPs 2..7.
        # Both NICs up first: frames leave only through a running NIC.
        seeds[f"rdma{dev}-send"] = (bring_up(2, [0, 1], 0x300000) + bring_up(3, [0, 1], 0x380000) +
                                    setup(dev, [0, 1, 2] + list(range(9, 21))) + sends(dev))
    # Both NICs up (rx 0, tx 1), a RoCEv2-looking frame sent from each: it
    # reaches the other pair's filter through the hub, and slirp.  Reads:
    # avail idx (P0), head (P1), the descriptor (P2), the buffer (P3).
    for nic, mac in ((2, "525400123456"), (3, "525400123457")):
        frame = bytes(12) + roce_frame(bytes.fromhex(mac))             # virtio-net header
        ops = bring_up(nic, [0, 1], 0x300000) + [
            pattern(struct.pack("<H", 1)), pattern(struct.pack("<H", 0)),
            pattern(desc(0x500000, len(frame), 0, 0)), pattern(frame)]
        seeds[f"nic{nic - 2}-tx"] = ops + [kick(nic, 1)]
    for name, ops in seeds.items():
        with open(os.path.join(out, "seed-" + name), "wb") as f:
            f.write(SEP.join(ops))


if __name__ == "__main__":
    main()

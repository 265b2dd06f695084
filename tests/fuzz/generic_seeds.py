#!/usr/bin/env python3
"""Starting inputs for QEMU's generic-fuzz target on the virtio-rdma pairs
that scripts/fuzz.sh sets up, written to the directory given.

Random bytes take hours to find the few register writes that bring a virtio
device up (status, features, a queue's rings, queue_enable, a notify), and
until then no kick reaches the device, so no engine or staging code runs.
These inputs do that much, as the guest driver does: they negotiate
VIRTIO_RDMA_F_RINGS with WIRE_QPN and EVENT_QUEUE and set up only the
control queue (0) and the event queue (EVQ); CQs, QPs and SRQs are rings in
guest memory announced by doorbells.  No seed touches a CQ or QP virtqueue.
QEMU's generic-fuzz crosses inputs by concatenation, so the set-ups prefix
the others.  The seeds, for each RDMA device d (0, 1):

rdma<d>-ctrl-NN   (NN = 01..26) command NN once, its request the right size
                  and u32 1 then zeroes: QUERY_PORT, CREATE_PD,
                  QUERY_PKEY and ALLOC_CONTEXT answer 0; CREATE_CQ, CREATE_QP
                  and REQ_NOTIFY_CQ EOPNOTSUPP (the virtqueue data path);
                  the rest refuse the zeroes (ENOENT, or EINVAL).
rdma<d>-rings-setup  CREATE_PD; CREATE_CQ_RING twice (CQ 0: 16 entries,
                  CQ 1: one entry), GET_DMA_MR, ADD_GID (10.0.2.15 + d,
                  RoCEv2), CREATE_QP_RING for a UD QP (on CQ 0) and an RC
                  QP (on CQ 1), each with 16-entry SQ and RQ rings (their
                  pages already hold work requests, see below); the UD QP
                  through INIT, RTR, RTS (MODIFY_QP).  Every command
                  answers 0 but the MODIFY_QPs of QP numbers not the UD
                  QP's (ENOENT, and EINVAL for the RC QP).
rdma<d>-rings-send   the other device up with its GID (10.0.2.15 + 1-d),
                  then rings-setup, then doorbells: CQ_ARM of CQ 0; RQ
                  doorbells (one receive each); SQ doorbells: the UD QP
                  sends a signaled SEND to the other device's GID (a frame
                  out, wire_tx; the peer's filter takes it and drops it,
                  no-qp), whose completion in CQ 0's ring fires the arm (a
                  CQ event on the event queue); the RC QP, still in RESET,
                  completes its receive and its send at once with errors
                  into CQ 1, whose one entry overflows (a CQ_ERR event);
                  SQ doorbells a ring's worth too far (QP_FATAL for both);
                  doorbells the device ignores (another context's page,
                  an unknown type, a 4-byte write).  Events: CQ 0, CQ_ERR
                  1, QP_FATAL for both QPs.
rdma<d>-rings-rc  as rings-send, but the RC QP goes to RTS (its AV the
                  other device's GID and MAC) and CQ 1 is armed: its SQ
                  holds a SEND, an RDMA WRITE and an RDMA READ (no SGE),
                  which go out as RC requests (three frames, dropped by the
                  peer: no-qp); the UD QP, left in RESET, completes its
                  work at once with errors into CQ 0; then QP_FATAL for
                  both, which flushes the RC QP's outstanding work (three
                  sends, a receive) into CQ 1: the first fires the arm (a
                  CQ event), the rest overflow it (CQ_ERR).
rdma<d>-rings-srq ALLOC_CONTEXT (user context 1) and, in it, a CQ ring, an
                  SRQ ring (CREATE_SRQ_RING, 4 entries, limit 2) and a UD
                  QP that receives from it; MODIFY_SRQ and QUERY_SRQ; then
                  doorbells on page 1: CQ_ARM, SRQ (taken by need, so
                  nothing yet), RQ (ignored: the QP has no RQ ring), SQ (the
                  QP is in RESET: an error completion, the CQ event), an
                  SRQ doorbell on the kernel's page (ignored: another
                  context's), one beyond the SRQ ring (an SRQ_ERR event);
                  then DESTROY_SRQ (EBUSY), DESTROY_QP, DESTROY_SRQ,
                  DESTROY_CQ, FREE_CONTEXT (all 0 but the first and the
                  DESTROY_QPs of free numbers).

and nic<n>-tx: NIC n up, a RoCEv2-looking frame out of it, which reaches
the other pair's filter through the hub, and slirp.

QP numbers are random (the traces show a different pair each run), so
MODIFY_QP and the QP doorbells go to each of QPNS; the ones that name no QP
are refused or ignored, which is fuzzing material too.

Checked by replaying each seed with -trace 'virtio_rdma_*' in
QEMU_FUZZ_ARGS (scripts/fuzz.sh's log gives the command line): the
virtio_rdma_ctrl_cmd lines give each command's status as said above, the
doorbells the core ignores say why (virtio_rdma_err_cmd ... doorbell.*),
virtio_rdma_wire_tx shows the frames, virtio_rdma_async_event_staged and
virtio_rdma_event_written the events (1 CQ, 2 QP_FATAL, 3 CQ_ERR,
5 SRQ_ERR), in all four device configurations of scripts/fuzz.sh.  (Not
with QTEST_LOG=1: then generic-fuzz skips a fill of memory it filled
earlier in the same operation, which the mem host-op's second fill of a
table entry is, and the patterns come out of step.)  The seeds are
generated, not committed: tests/fuzz/corpus holds only inputs that found
a bug.

How the device's reads are served.  generic-fuzz fills every read the
device makes of guest RAM through QEMU's DMA API with the next DMA pattern,
round robin: virtqueue reads (avail idx, a head, a descriptor), each
buffer a descriptor maps (readable or writable: address_space_map fills
both), and the core's reads through the device's mem host-op
(virtio-rdma-mem.c), which fills each range twice, once as it checks it is
RAM and once as it copies it, so a page-table entry takes two patterns.
Ring pages are mapped for writing, which fills nothing: a ring's contents
are what guest RAM holds.  So a command that makes a ring carries, after
its status buffer, a writable descriptor over each ring page whose
pattern is the ring's contents (zeroes for a CQ, work requests for an SQ or
RQ), filled when the chain is taken, before the command maps the page; the
device writes its answer into the status buffer only.  command() lays out
one pattern per read, in order, so that the reads after the command wrap
round to the first patterns and find the queue empty.  The event queue is
read only when an event goes out, in the data path, whatever patterns are
current then: before the doorbells one pattern (EV_PATTERN) is left that
reads as avail idx, head, descriptor and buffer at once.

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
OP_WRITE, OP_ADD_DMA_PATTERN, OP_CLEAR_DMA_PATTERNS = 3, 7, 8
BYTE, WORD, LONG, QUAD = 0, 1, 2, 3
DOORBELLS, COMMON, NOTIFY = 2, 3, 6  # region index within an RDMA device's
RDMA_REGIONS, NIC_REGIONS = 7, 6     # (a NIC has no doorbells: one less)
MAX_LEN = 16384                      # scripts/fuzz.sh's -max_len

# The event queue's virtqueue index (ABI version 2: control 0, events 1).
EVQ = 1
# QP numbers CREATE_QP_RING draws at random from 2 .. max-qp - 1
# (scripts/fuzz.sh sets max-qp=8): MODIFY_QP and doorbells try each.
QPNS = range(2, 8)

F_WIRE_QPN, F_EVENT_QUEUE, F_RINGS = 1 << 0, 1 << 1, 1 << 2
RINGS_FEATURES = F_WIRE_QPN | F_EVENT_QUEUE | F_RINGS


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
VRING_DESC_F_NEXT, VRING_DESC_F_WRITE = 1, 2


def write(region, off, size, value):
    return bytes([OP_WRITE]) + struct.pack("<BBxxIQ", size, region, off, value)


def pattern(data, index=0, stride=0):
    return bytes([OP_ADD_DMA_PATTERN, index, stride]) + data


def desc(addr, length, flags, nxt):
    return struct.pack("<QIHH", addr, length, flags, nxt)


def bring_up(dev, queues, ring_base, dev_features=0):
    """Reset, negotiate VERSION_1 (and dev_features, bits 0..31), give each
    queue rings at ring_base, DRIVER_OK.  With ioeventfd=on DRIVER_OK kicks
    every queue once (virtio-pci sets each host notifier as it starts
    them), and guest RAM holds whatever earlier inputs left there: the one
    pattern left here, u16 0, makes each avail idx read then find its queue
    empty."""
    c = region(dev, COMMON)
    ops = [bytes([OP_CLEAR_DMA_PATTERNS]), pattern(bytes(2)),
           write(c, STATUS, BYTE, 0), write(c, STATUS, BYTE, ACK | DRIVER),
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


def rdma_up(dev):
    """An RDMA device as the driver brings it up: RINGS, WIRE_QPN and
    EVENT_QUEUE; the control queue and the event queue, nothing else."""
    return bring_up(dev, [0, EVQ], 0x100000 + dev * 0x10000, RINGS_FEATURES)


def kick(dev, q):
    # QEMU's notify_off_multiplier is 4 and queue n's notify_off is n.
    return write(region(dev, NOTIFY), q * 4, WORD, q)


# Command numbers (virtio-rdma-abi.h) and the request sizes the device
# accepts; 0 means no request.
DESTROY_CQ, CREATE_PD, GET_DMA_MR, MODIFY_QP, DESTROY_QP, ADD_GID = 3, 4, 6, 12, 14, 16
ALLOC_CONTEXT, FREE_CONTEXT, CREATE_CQ_RING, CREATE_QP_RING = 19, 20, 21, 22
CREATE_SRQ_RING, MODIFY_SRQ, QUERY_SRQ, DESTROY_SRQ = 23, 24, 25, 26
REQ_SIZE = {1: 4, 2: 4, 3: 4, 4: 0, 5: 4, 6: 8, 7: 12, 8: 32, 9: 48, 10: 4,
            11: 36, 12: 168, 13: 8, 14: 4, 15: 8, 16: 28, 17: 8, 18: 8,
            19: 0, 20: 4, 21: 24, 22: 80, 23: 40, 24: 16, 25: 4, 26: 4}


def slot(k):
    """Where the k-th command of an input keeps its buffers: the command
    byte at +k (so the low u16 of its address is k, see command()), the
    request at +0x1000, status and response at +0x2000."""
    return 0x1000000 + k * 0x10000


def command(dev, k, cmd, req, fills=(), walk=()):
    """The k-th (1-based) control request of an input, exact: one pattern per
    read, in virtqueue_pop's order (avail idx, head, then each descriptor
    and the buffer it maps), then one per read the command itself makes:
    @walk, the 8-byte page-table entries it reads (each twice: the mem
    host-op fills as it checks and again as it copies).  The read of avail
    idx that follows wraps round to the first pattern (k: the queue is
    empty); the one after that, once virtio_notify has read avail flags,
    gets the third, whose first u16 is k too (the command byte's address).
    @fills: (gpa, length, contents) writable descriptors after the status
    buffer; mapping them fills guest RAM there with @contents (repeated),
    which is how ring pages get their entries.  The device writes only the
    status buffer (512 bytes: room for any response)."""
    base, d = slot(k), 8 * ((k - 1) % 8)
    chain = [(base + k, 1, 0, bytes([cmd]))]                       # the command byte
    if req:
        chain.append((base + 0x1000, len(req), 0, req))
    chain.append((base + 0x2000, 512, VRING_DESC_F_WRITE, bytes(1)))  # status, response
    chain += [(gpa, n, VRING_DESC_F_WRITE, data) for gpa, n, data in fills]
    assert len(chain) <= 8
    ops = [bytes([OP_CLEAR_DMA_PATTERNS]),
           pattern(struct.pack("<H", k)),                          # avail idx
           pattern(struct.pack("<H", d))]                          # head
    for i, (addr, n, flags, data) in enumerate(chain):
        last = i == len(chain) - 1
        ops += [pattern(desc(addr, n, flags | (0 if last else VRING_DESC_F_NEXT),
                             0 if last else d + i + 1)),
                pattern(data)]
    for entry in walk:
        ops += [pattern(struct.pack("<Q", entry))] * 2
    return ops + [kick(dev, 0)]


class Ctrl:
    """The commands of one device in one input, numbered as they go."""

    def __init__(self, dev):
        self.dev, self.k, self.ops = dev, 0, []

    def __call__(self, cmd, req=b"", fills=(), walk=()):
        assert len(req) == REQ_SIZE[cmd], (cmd, len(req))
        self.k += 1
        self.ops += command(self.dev, self.k, cmd, req, fills, walk)
        return self


# Guest memory of the rings: ring r has its level-1 table page at
# RINGS + r * 0x10000, its level-2 page 0x1000 above, its one data page 0x2000
# above (rings of this size fit in one page).
RINGS = 0x2000000
CQ0_RING, CQ1_RING, UD_SQ, UD_RQ, RC_SQ, RC_RQ, SRQ_RING, U_CQ_RING, U_SQ = range(9)


def ring(r, log_entries, log_stride):
    """virtio_rdma_ring for ring r, and the table entries reading it takes:
    level 1 (-> the level-2 page), level 2 (-> the data page)."""
    t = RINGS + r * 0x10000
    assert (1 << (log_entries + log_stride)) + 64 <= 4096
    return (struct.pack("<QIBBH", t, 1, log_entries, log_stride, 0),
            [t + 0x1000, t + 0x2000])


def ring_page(r):
    return RINGS + r * 0x10000 + 0x2000


PD = 1 << 16                # the first PD after a reset: generation 1, index 0
QPT_RC, QPT_UD = 2, 4
LOCAL_WRITE, REMOTE_WRITE, REMOTE_READ = 1, 2, 4
QP_STATE, QP_ACCESS_FLAGS, QP_PKEY_INDEX, QP_PORT, QP_QKEY, QP_AV = 1, 1 << 3, 1 << 4, 1 << 5, 1 << 6, 1 << 7
QP_PATH_MTU, QP_TIMEOUT, QP_RETRY_CNT, QP_RNR_RETRY, QP_RQ_PSN = 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12
QP_MAX_QP_RD_ATOMIC, QP_MIN_RNR_TIMER, QP_SQ_PSN, QP_MAX_DEST_RD_ATOMIC = 1 << 13, 1 << 15, 1 << 16, 1 << 17
QP_DEST_QPN = 1 << 20
QKEY = 0x11111111
DB_SQ, DB_RQ, DB_SRQ, DB_CQ_ARM = 0, 1, 2, 3
NOTIFY_SOLICITED, NOTIFY_NEXT = 1, 2
WR_RDMA_WRITE, WR_SEND, WR_RDMA_READ = 0, 2, 4
SEND_SIGNALED = 2
# The paired NICs' MACs by RDMA device index.  Device 0 (regions 0-6) is
# slot 5's pair, device 1 slot 4's: that is the order generic-fuzz finds
# them in (ADD_GID on device 0 traces virtio_rdma_gid_changed netdev n5).
MACS = (bytes.fromhex("525400123457"), bytes.fromhex("525400123456"))


def gid(dev):
    """Device dev's GID: IPv4-mapped 10.0.2.15 + dev."""
    return bytes(10) + b"\xff\xff" + bytes([10, 0, 2, 15 + dev])


def add_gid(dev):
    return struct.pack("<16sIHHI", gid(dev), 2, 0, 0, 1)      # RoCEv2, index 0, port 1


def qp_req(qp_type, cqn, max_recv_wr=16, max_recv_sge=1):
    """virtio_rdma_cmd_create_qp: 16 sends of at most one SGE, signaled
    only if asked, both queues on CQ @cqn."""
    return struct.pack("<IBBxxIIIIIII", PD, qp_type, 1, 16, 1, cqn,
                       max_recv_wr, max_recv_sge, cqn, 0)


def sq_req(opcode, wr_id, wr=b""):
    """virtio_rdma_sq_req (88 bytes), no SGE, signaled."""
    return struct.pack("<IIIIQII", 0, SEND_SIGNALED, opcode, 0, wr_id, 0, 0) + \
        wr + bytes(56 - len(wr))


def ud_send(dev):
    """A UD SEND to the other device's GID and MAC, its wire QPN a guess
    (it is random), in a 128-byte SQ slot."""
    peer = 1 - dev
    av = struct.pack("<III16sBBB6s6sx", 1, PD, 0, gid(peer), 0, 0, 64,
                     MACS[peer], bytes(6))
    e = sq_req(WR_SEND, 0x5d00 + dev, struct.pack("<II", 0x123456, QKEY) + av)
    return e + bytes(128 - len(e))


def rc_requests():
    """Three RC requests without SGEs in 128-byte slots: SEND, RDMA WRITE
    and RDMA READ of 0 bytes (which need no rkey)."""
    rdma = struct.pack("<QI", 0x4000000, 0)
    out = b""
    for i, (op, wr) in enumerate(((WR_SEND, b""), (WR_RDMA_WRITE, rdma),
                                  (WR_RDMA_READ, rdma))):
        e = sq_req(op, 0xc00 + i, wr)
        out += e + bytes(128 - len(e))
    return out


def recv_entry(wr_id):
    """virtio_rdma_rq_req without SGEs, in a 64-byte slot."""
    return struct.pack("<IIQ", 0, 0, wr_id) + bytes(48)


def cq_ring_cmd(ctrl, r, log_entries, ctx=0):
    desc_, walk = ring(r, log_entries, 6)
    return ctrl(CREATE_CQ_RING, struct.pack("<II", ctx, 1 << log_entries) + desc_,
                fills=[(ring_page(r), 4096, b"\0")], walk=walk)


def qp_ring_cmd(ctrl, qp, sq, rq, sq_entries, ctx=0, srqn=0):
    """CREATE_QP_RING of @qp (virtio_rdma_cmd_create_qp) with a 16-entry SQ
    ring @sq of 128-byte slots holding @sq_entries (repeated over the page)
    and, unless @rq is None, a 16-entry RQ ring of 64-byte receives."""
    sq_desc, sq_walk = ring(sq, 4, 7)
    fills = [(ring_page(sq), 4096, sq_entries)]
    walk = sq_walk
    if rq is None:
        rq_desc = bytes(16)
    else:
        rq_desc, rq_walk = ring(rq, 4, 6)
        fills.append((ring_page(rq), 4096, recv_entry(0x7e00 + rq)))
        walk = walk + rq_walk
    return ctrl(CREATE_QP_RING, qp + struct.pack("<I", ctx) + sq_desc + rq_desc +
                struct.pack("<II", srqn, 0), fills=fills, walk=walk)


def modify(qpn, state, mask, fill):
    attrs = bytearray(160)
    struct.pack_into("<I", attrs, 0, state)
    fill(attrs)
    return struct.pack("<II", qpn, mask) + bytes(attrs)


def ud_to_rts(ctrl, dev):
    """The UD QP through INIT (P_Key index, port, Q_Key), RTR, RTS (SQ PSN):
    its number is one of QPNS, so every one is tried."""
    def ud(a):
        struct.pack_into("<I", a, 16, QKEY)
        a[45] = 1                                                  # port_num
    for state, mask in ((1, QP_STATE | QP_PKEY_INDEX | QP_PORT | QP_QKEY),
                        (2, QP_STATE), (3, QP_STATE | QP_SQ_PSN)):
        for qpn in QPNS:
            ctrl(MODIFY_QP, modify(qpn, state, mask, ud))


def rc_to_rts(ctrl, dev):
    """The RC QP through INIT, RTR (its AV: the other device's GID and MAC,
    path MTU 1024) and RTS, with each transition's required attributes;
    every QP number is tried."""
    peer = 1 - dev

    def rc(a):
        struct.pack_into("<I", a, 8, 3)                            # path_mtu 1024
        struct.pack_into("<I", a, 28, 0x123456)                    # dest_qp_num
        struct.pack_into("<I", a, 32, LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ)
        a[42:49] = bytes([1, 1, 12, 1, 14, 7, 7])  # rd_atomic, dest_rd_atomic, rnr timer, port, timeout, retries
        a[80:96] = gid(peer)                                       # ah_attr.grh.dgid
        a[101] = 64                                                # hop_limit
        a[106], a[107] = 1, 1                                      # port_num, ah_flags GRH
        a[108:114] = MACS[peer]
    for state, mask in ((1, QP_STATE | QP_PKEY_INDEX | QP_PORT | QP_ACCESS_FLAGS),
                        (2, QP_STATE | QP_AV | QP_PATH_MTU | QP_DEST_QPN | QP_RQ_PSN |
                         QP_MAX_DEST_RD_ATOMIC | QP_MIN_RNR_TIMER),
                        (3, QP_STATE | QP_TIMEOUT | QP_RETRY_CNT | QP_RNR_RETRY |
                         QP_SQ_PSN | QP_MAX_QP_RD_ATOMIC)):
        for qpn in QPNS:
            ctrl(MODIFY_QP, modify(qpn, state, mask, rc))


def setup(dev, rts=ud_to_rts):
    """A driver's first steps on one device, each its own kick: a PD, two CQ
    rings (0: 16 entries, 1: one), a DMA MR, a GID, a UD QP on CQ 0 and an
    RC QP on CQ 1 with SQ and RQ rings, then @rts.  The handles are the
    device's first after a reset (PD generation 1 << 16 | index 0; CQs 0
    and 1); QP numbers are random, which @rts takes care of."""
    ctrl = Ctrl(dev)
    ctrl(CREATE_PD)
    cq_ring_cmd(ctrl, CQ0_RING, 4)
    cq_ring_cmd(ctrl, CQ1_RING, 0)
    ctrl(GET_DMA_MR, struct.pack("<II", PD, LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ))
    ctrl(ADD_GID, add_gid(dev))
    qp_ring_cmd(ctrl, qp_req(QPT_UD, 0), UD_SQ, UD_RQ, ud_send(dev))
    qp_ring_cmd(ctrl, qp_req(QPT_RC, 1), RC_SQ, RC_RQ, rc_requests())
    rts(ctrl, dev)
    return ctrl.ops


# What the event queue reads when an event goes out, all from one pattern:
# avail idx EV_HEAD (so EV_HEAD buffers are there), head EV_HEAD,
# descriptor EV_HEAD = this (EV_BUF, 16 bytes, device-writable), the
# buffer.  EV_BUF's low u16 is EV_HEAD; every event reuses the buffer.
EV_HEAD = 0x30
EV_BUF = 0x3000000 + EV_HEAD
EV_PATTERN = desc(EV_BUF, 16, VRING_DESC_F_WRITE, 0)


def doorbell(dev, page, kind, qn, value):
    return write(region(dev, DOORBELLS), page * 4096, QUAD,
                 value << 32 | kind << 24 | qn)


def event_buffers():
    return [bytes([OP_CLEAR_DMA_PATTERNS]), pattern(EV_PATTERN)]


def peer_up(dev):
    """The other device up with its GID, so that its filter takes frames to
    it (and drops them: no QP has the wire QPN)."""
    peer = 1 - dev
    return rdma_up(peer) + Ctrl(peer)(ADD_GID, add_gid(peer)).ops


def overrun(dev, taken, page=0):
    """SQ doorbells more than a ring (16) ahead of the @taken entries the
    device took (QP_FATAL), and doorbells it ignores."""
    ops = [doorbell(dev, page, DB_SQ, qpn, taken + 17) for qpn in QPNS]
    ops += [doorbell(dev, page + 1, DB_SQ, QPNS[0], 1),           # another context's page
            doorbell(dev, page, 9, QPNS[0], 1),                   # no such type
            write(region(dev, DOORBELLS), page * 4096, LONG, 1)]  # not 8 bytes
    return ops


def send(dev):
    ops = peer_up(dev) + rdma_up(dev) + setup(dev) + event_buffers()
    ops.append(doorbell(dev, 0, DB_CQ_ARM, 0, NOTIFY_NEXT))
    ops += [doorbell(dev, 0, DB_RQ, qpn, 1) for qpn in QPNS]
    ops += [doorbell(dev, 0, DB_SQ, qpn, 1) for qpn in QPNS]
    return ops + overrun(dev, 1)


def rc(dev):
    ops = peer_up(dev) + rdma_up(dev) + setup(dev, rc_to_rts) + event_buffers()
    ops.append(doorbell(dev, 0, DB_CQ_ARM, 1, NOTIFY_SOLICITED | NOTIFY_NEXT))
    ops += [doorbell(dev, 0, DB_RQ, qpn, 1) for qpn in QPNS]
    ops += [doorbell(dev, 0, DB_SQ, qpn, 3) for qpn in QPNS]
    return ops + overrun(dev, 3)


def srq(dev):
    """A user context's CQ, SRQ and SRQ-attached UD QP, rung from its page;
    then torn down."""
    ctrl = Ctrl(dev)
    ctrl(ALLOC_CONTEXT)                                            # context 1
    ctrl(CREATE_PD)
    cq_ring_cmd(ctrl, U_CQ_RING, 4, ctx=1)
    srq_desc, walk = ring(SRQ_RING, 2, 6)
    ctrl(CREATE_SRQ_RING, struct.pack("<IIIIII", 1, PD, 4, 1, 2, 0) + srq_desc,
         fills=[(ring_page(SRQ_RING), 4096, recv_entry(0x5e0))], walk=walk)
    qp_ring_cmd(ctrl, qp_req(QPT_UD, 0, 0, 0), U_SQ, None, ud_send(dev),
                ctx=1, srqn=1)
    ctrl(MODIFY_SRQ, struct.pack("<IIII", 1, 2, 0, 1))            # LIMIT 1
    ctrl(QUERY_SRQ, struct.pack("<I", 1))
    ops = rdma_up(dev) + ctrl.ops + event_buffers()
    ops += [doorbell(dev, 1, DB_CQ_ARM, 0, NOTIFY_NEXT),
            doorbell(dev, 1, DB_SRQ, 1, 2),
            doorbell(dev, 0, DB_SRQ, 1, 3)]                       # the kernel's page
    ops += [doorbell(dev, 1, DB_RQ, qpn, 1) for qpn in QPNS]
    ops += [doorbell(dev, 1, DB_SQ, qpn, 1) for qpn in QPNS]
    ops.append(doorbell(dev, 1, DB_SRQ, 1, 100))                  # beyond: SRQ_ERR
    ctrl.ops = []
    ctrl(DESTROY_SRQ, struct.pack("<I", 1))                       # EBUSY: the QP's
    for qpn in QPNS:
        ctrl(DESTROY_QP, struct.pack("<I", qpn))
    ctrl(DESTROY_SRQ, struct.pack("<I", 1))
    ctrl(DESTROY_CQ, struct.pack("<I", 0))
    ctrl(FREE_CONTEXT, struct.pack("<I", 1))
    return ops + ctrl.ops


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
        # Control queue: each command number once.
        for cmd in range(1, 27):
            req = struct.pack("<I", 1) + bytes(REQ_SIZE[cmd] - 4) if REQ_SIZE[cmd] else b""
            seeds[f"rdma{dev}-ctrl-{cmd:02d}"] = rdma_up(dev) + Ctrl(dev)(cmd, req).ops
    for dev in (0, 1):
        seeds[f"rdma{dev}-rings-setup"] = rdma_up(dev) + setup(dev)
        seeds[f"rdma{dev}-rings-send"] = send(dev)
        seeds[f"rdma{dev}-rings-rc"] = rc(dev)
        seeds[f"rdma{dev}-rings-srq"] = srq(dev)
    # A NIC up (rx 0, tx 1), a RoCEv2-looking frame sent from it: it
    # reaches the other pair's filter through the hub (not its GID: the
    # filter passes it on, virtio_rdma_nic_absent_drop), and slirp.  The
    # NIC's reads, one pattern each, round robin: used flags (P0: tx
    # notifications off), avail idx (P1), head (P2), the descriptor (P3),
    # the frame (P4); avail flags (P0) for the notification; avail idx (P1:
    # empty); used flags (P2: notifications on); avail idx (P3, whose first
    # u16 is the frame's address's: 1, empty).
    for nic, mac in ((2, "525400123456"), (3, "525400123457")):
        frame = bytes(12) + roce_frame(bytes.fromhex(mac))             # virtio-net header
        ops = bring_up(nic, [0, 1], 0x300000) + [
            bytes([OP_CLEAR_DMA_PATTERNS]), pattern(struct.pack("<H", 1)),
            pattern(struct.pack("<H", 1)), pattern(struct.pack("<H", 0)),
            pattern(desc(0x500001, len(frame), 0, 0)), pattern(frame)]
        seeds[f"nic{nic - 2}-tx"] = ops + [kick(nic, 1)]
    for name, ops in seeds.items():
        data = SEP.join(ops)
        # A separator inside an operation would split it; libFuzzer cuts
        # inputs longer than -max_len.
        assert all(SEP not in op for op in ops), name
        assert len(data) <= MAX_LEN, (name, len(data))
        with open(os.path.join(out, "seed-" + name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()

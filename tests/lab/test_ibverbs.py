"""ibverbs: our QEMU's device with backend=ibverbs on a lab guest's kernel
rxe (the host here has no RDMA stack; a lab guest does), nested.

Device: one guest, rxe0 on eth0, runs our qemu-system-x86_64 nested, under
-accel qtest (no guest CPU to emulate), through ibverbs/guest.sh: what
realize finds on a real host RDMA device (the device and its port, the
refusals that name what the host has); the data-path qtests
(virtio-rdma-dp-test, libqos) on that device: two QPs of one device through
rxe0, byte-exact, also with the engine in an iothread; host verbs that
block (an unresolved address) off QEMU's main loop; a 1 GiB MR's
registration time; the GSI QP of two devices through contrib/rdmacm-mux,
restarted midway; the host port's events.  Each case is the guest's line
of the same name.

Io: the RDMA tools (ibv_*_pingpong, perftest, rping) in guest B on its
rxe0 against our device in guest A, backend=ibverbs on A's rxe0, driven by
virtio-rdma-lab-peer (nested, under -accel qtest; ibverbs/peer-cases.sh);
A and B joined by -netdev dgram, the tools' TCP exchanges on the same link.
Every tool with our device as server (gcli: the tool is the client) and as
client (gsrv), over the IPv4 GID, and RC SEND and WRITE over the IPv6 one;
rping's CM MADs go through our device's GSI QP and the rdmacm-mux A runs.
A case passes when both sides exit 0; its note is the figures of the side
that measured.

TenantWire (tenant-wire/...): tenant isolation seen on the wire.  Guest A
runs the data-path tests ibverbs/tenant-wire/* (ibverbs/tenant-wire.sh):
devices A and B on its rxe0, each allowed its own address of eth0, the
rdmacm-mux, and a capture of eth0 that tshark dissects on the host; guest
B, plain rxe, is the peer on the wire and sends RDMA-CM connects to B's
address when a test asks.  src-address: A's ADD_GID of B's address is
refused and A's frames carry A's source, none B's; qp1: A's UD sends to
QPN 1 complete in error and no frame goes to QP 1 but the mux's CM MAD
from A's GSI QP; cm-after-reboot: B's QEMU gone, its address reserved for
it at the mux, A (allowed B's address by mistake) is refused it, the
peer's CM MADs to it are on the wire and reach nobody, and B back as the
same VM gets its claim and the MADs.  Each note: the test's figures, the
frames tshark counted, the violations among them (0), the controls.
"""
import os
import re
import subprocess
import time
import unittest
from typing import NamedTuple, Optional

from vrdma_lab import net, paths, protocol, tools
from vrdma_lab.case import LabTest, add_case
from vrdma_lab.env import LabSetupError
from vrdma_lab.guest import Guest

DPTEST = paths.BUILD / 'qemu' / 'tests' / 'qtest' / 'virtio-rdma-dp-test'
RINGTEST = paths.BUILD / 'qemu' / 'tests' / 'qtest' / 'virtio-rdma-ring-test'
BOOT = 120  # a guest's limit beyond its cases' (boot, power-off)


def mux_snapshot(env):
    """contrib/rdmacm-mux (the mux part's build) where the guests see it:
    a snapshot, or nothing when it is not built (the guest's case says so)."""
    if os.access(paths.RDMACM_MUX, os.X_OK):
        return env.snapshot(paths.RDMACM_MUX)
    missing = env.dir / 'bin' / paths.RDMACM_MUX.name
    missing.unlink(missing_ok=True)
    return missing


# The device's data-path qtests on rxe0 (dp/PATH: the qtest
# /x86_64/virtio-rdma-dp/PATH), those that do not look at the soft
# engine's own wire (the "wire" ones run two devices on the one rxe0;
# frames are rxe's business).  They run on queues in guest memory, as the
# guest driver's.  Left out, each for a reason of its own:
#   wire/connect, wire/not-ours-first   the soft engine's wire and filter;
#   cq-arm/solicited                    ibv_wc has no solicited bit: every
#                                       receive may wake a SOLICITED arm.
# The list takes about 8 minutes in the guest's 2 TCG vCPUs.  Quick: one
# case of each kind (QUICK_DP).
RC = ('rc-send', 'rc-write', 'rc-write-imm', 'rc-read', 'rc-cas', 'rc-faa', 'rc-pipeline')
DP = ([f'loopback/{t}' for t in RC + (
          'rc-unsignaled', 'rc-psn-wrap', 'rc-rem-access-err', 'rc-rem-bounds-err',
          'rc-loc-prot-err', 'rc-recv-too-small', 'rc-rnr')]
      + ['cq-arm/next']
      + [f'event-queue/{t}' for t in ('cq-event', 'no-buffer', 'destroyed-cq', 'short-buffer')]
      + [f'wire/{t}' for t in RC + ('ud-send-ipv4', 'ud-send-ipv6', 'ud-qp1-refused',
                                     'peer-gone')]
      + [f'dma-sge/loopback/{t}' for t in ('rc-send', 'rc-write-imm', 'rc-read', 'rc-cas',
                                           'rc-faa')]
      + [f'dma-sge/wire/{t}' for t in ('rc-send', 'rc-read')])
QUICK_DP = ('loopback/rc-send', 'cq-arm/next', 'wire/rc-read',
            'wire/rc-cas', 'wire/ud-send-ipv4', 'wire/ud-send-ipv6', 'wire/ud-qp1-refused',
            'dma-sge/wire/rc-send')
# The rings data path's qtests on rxe0 (ring/PATH: the qtest
# /x86_64/virtio-rdma-ring/PATH): queues in guest memory in front of the
# host's QPs and CQs.  All quick.  Left out: cq-arm/doorbell, for the
# reason of dp's cq-arm/solicited (a SOLICITED arm wakes on any receive).
RING = ('create/cq-ring', 'create/qp-ring', 'create/limits',
        'loopback/send-write-wrap', 'boundary/sq-beyond-ring',
        'boundary/other-context', 'boundary/dead-queues', 'boundary/cq-full',
        'boundary/cq-broken', 'srq/loopback', 'srq/limit-and-break')

# The guest's cases in the order it runs them, and whether they are quick
# (all but the slow data-path tests and the registration-time measurement).
DEVICE_CASES = (
    # realize on rxe0: the device, its netdev (the NIC's netdev id, never
    # the host's eth0 by default; netdev=eth0 only with allowed-gids) and
    # RoCE port; nothing lowered; refusals that name what the host has.
    [(n, True) for n in ('probe', 'netdev', 'netdev-needs-allow', 'netdev-allowed',
                         'probe-port', 'no-clamp', 'no-device', 'no-port', 'private-ram')]
    + [(f'dp/{p}', p in QUICK_DP) for p in DP]
    # virtio-rdma-dp-test exited 0 (an assertion ends it: the case after
    # the last reported one failed).
    + [('dp/exit', True)]
    + [(f'ring/{p}', True) for p in RING] + [('ring/exit', True)]
    # The engine in an iothread: the host's completion channel watched in
    # its AioContext.
    + [(f'dp-iothread/wire/{t}', True) for t in ('rc-send', 'rc-read', 'ud-send-ipv4')]
    # Host verbs that block (modify_qp to RTR, a UD send's address handle,
    # towards an address nobody answers) run off QEMU's main loop.
    + [(n, True) for n in ('rtr-unresolved', 'ud-unresolved', 'ud-unresolved-iothread')]
    # Issue 25: a full queue of UD sends held behind an unresolvable
    # address, then system_reset (QMP within 2 s); 64 GET_DMA_MRs in one
    # kick (one registration of guest RAM, off the main loop, charged); a
    # reset while RAM is being pinned (not waited for; undone on its own);
    # an unplug while both kinds of host call run (not waited for either).
    + [(n, True) for n in ('held-reset', 'unplug-jobs', 'unplug-jobs-iothread',
                          'dma-mr-kick', 'dma-mr-reset')]
    # A 1 GiB MR's registration time, guest RAM untouched and preallocated.
    + [('reg-time-1g', False), ('reg-time-1g-prealloc', False)]
    # Two tenants, each allowed its own address of eth0: neither may add
    # the other's; without allowed-gids, no address the host has.
    + [(n, True) for n in ('tenants', 'gsi-mux', 'port-events')])


class Device(LabTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cases = [c for c in cls.chosen_cases() if c != 'no-other-lines']
        cls.results = protocol.Results(cls.part_dir / 'device' / 'results')
        if not cases:
            return
        for t in (DPTEST, RINGTEST):
            if not os.access(t, os.X_OK):
                raise LabSetupError(f'{t} missing (bash scripts/build.sh)')
        g = Guest(cls.env, cls.part_dir / 'device',
                  'lab.ip=10.79.0.11/24 lab.ip6=fd79::11/64 lab.run=/lab/ibverbs/guest.sh',
                  net.dgram(net.free_port('udp'), net.free_port('udp')), '52:54:00:79:00:11',
                  # 2 GiB: a 1 GiB MR is registered (pinned) in the nested
                  # QEMU.  Two vCPUs: the guest runs alone, and the test and
                  # its two QEMUs then run side by side.
                  mem=2048, smp=2)
        (g.out / 'env').write_text(f'QEMU={cls.env.qemu}\nDPTEST={cls.env.snapshot(DPTEST)}\n'
                                   f'RINGTEST={cls.env.snapshot(RINGTEST)}\n'
                                   f'MUX={mux_snapshot(cls.env)}\nCASES="{" ".join(cases)}"\n')
        cls.addClassCleanup(g.kill)
        g.start(limit=1500)
        g.wait()
        cls.results = g.results()

    def check_exit(self):
        """dp/exit, ring/exit: skipped when no test of the binary ran."""
        prefix = self.case.split('/')[0] + '/'
        if not any(c.startswith(prefix) and not c.endswith('/exit')
                   for c in self.chosen_cases()):
            self.skipTest('no test of it chosen')
        self.assertGuestPass()


for _name, _quick in DEVICE_CASES:
    add_case(Device, _name, Device.check_exit if _name.endswith('/exit')
             else LabTest.assertGuestPass, quick=_quick)
# Every line the guest wrote is a case here.
add_case(Device, 'no-other-lines', LabTest.assertNoOtherGuestLines, quick=True)


# The interop half's cases: v{4,6}-TOOL-g{srv,cli} (IPv6: RC SEND and
# WRITE), then rping (our device the CM's active side, gsrv, and its
# passive side, gcli).  Each on a TCP port of its own: a side that gave up
# early then cannot meet the other side's previous case on the next one.
IO = [(f'v{fam}-{tool}-{gr}', fam, tool, gr)
      for fam in (4, 6) for tool in tools.TOOL_CASES
      if fam == 4 or tool in ('rc_pingpong', 'write_bw')
      for gr in ('gsrv', 'gcli')] + [(f'v4-rping-{gr}', 4, 'rping', gr) for gr in ('gsrv', 'gcli')]
# Quick: RC SEND both ways, rping with our device the passive side.
QUICK_IO = re.compile(r'^v4-rc_pingpong-g(srv|cli)$|^v4-rping-gcli$')
PORT = 18601
A_IP, B_IP, A_MAC, B_MAC = '10.79.1.11', '10.79.1.12', '52:54:00:79:01:11', '52:54:00:79:01:12'
PEER_LIMIT = 170  # the device's side of a case; the tool's: 20 s less
IO_LIMIT = 1500   # each guest's, at most


class Io(LabTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        chosen = set(cls.chosen_cases())
        cls.cases = [c for c in IO if f'io-{c[0]}' in chosen]
        cls.device = protocol.ToolCases(cls.part_dir / 'io' / 'A')
        cls.tool = protocol.ToolCases(cls.part_dir / 'io' / 'B')
        cls.guests = []
        if not cls.cases:
            return
        built = subprocess.run(['bash', paths.LAB_SRC / 'build-peer.sh'], text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if built.returncode:
            raise LabSetupError(f'build-peer.sh failed: {built.stderr.strip()[-300:]} '
                                f'(see {paths.BUILD}/lab/build-peer.log)')
        peer = cls.env.snapshot(built.stdout.strip())
        for name, fam, tool, gr in cls.cases:
            port = PORT + [c[0] for c in IO].index(name)
            pargs = (f'--tool {tool} --lport 1 --rport 2 --mac 52:54:00:79:01:02 '
                     f'--peer-mac {B_MAC} --ip4 {A_IP} --ip6 fd79:1::11 --gid {fam} '
                     f'--port {port}')
            rping = tool == 'rping'
            if rping:
                pargs += ' --iters 50 --size 4096'
            args = tools.args(tool, 'srv' if gr == 'gsrv' else 'cli')
            args = args.replace('@G@', f'@G{fam}@').replace('@P@', str(port))
            if gr == 'gsrv':
                # rping's server binds its address.
                cls.tool.add('srv', name, PEER_LIMIT - 20, args + (f' {B_IP}' if rping else ''))
                cls.device.add('cli', name, PEER_LIMIT,
                               f'{peer} --role client {pargs} --tcp {B_IP}')
            else:
                # Our device's CM has no TCP exchange.
                cls.tool.add('cli', name, PEER_LIMIT - 20, f'{args} {A_IP}')
                cls.device.add('srv', name, PEER_LIMIT, f'{peer} --role server {pargs}'
                               + ('' if rping else f' --tcp {B_IP}'))
        limit = min(IO_LIMIT, BOOT + PEER_LIMIT * len(cls.cases))
        link_a, link_b = net.dgram_pair()
        cls.device.write()
        (cls.device.out / 'env').write_text(f'QEMU={cls.env.qemu}\nMUX={mux_snapshot(cls.env)}\n')
        cls.tool.write()
        for side, ip, mac, link, job, mem in (
                (cls.device, A_IP, A_MAC, link_a, 'ibverbs/peer-cases.sh', 1024),
                (cls.tool, B_IP, B_MAC, link_b, 'guest-cases.sh', 512)):
            g = Guest(cls.env, side.out, f'lab.ip={ip}/24 lab.ip6=fd79:1::{ip.split(".")[-1]}/64 '
                      f'lab.run=/lab/{job}', link, mac, mem=mem)
            cls.addClassCleanup(g.kill)
            cls.guests.append(g.start(limit=limit))
        # Our device serves the gcli cases: a client of a server that
        # failed stops retrying.
        served = [c[0] for c in cls.cases if c[3] == 'gcli']
        while any([g.running() for g in cls.guests]):
            protocol.abort_orphans(cls.device, cls.tool, served)
            time.sleep(0.5)

    def check(self):
        """Both sides of this case exited 0; notes the figures of the side
        that measured (the device's under gsrv, the tool's under gcli;
        rping: the pings the device verified or served)."""
        name = self.case.removeprefix('io-')
        dev, tool = self.device.run(name), self.tool.run(name)
        if 'rping' in name:
            m = re.search(r'rping: [0-9]* pings (verified|served)', dev.out)
            said = m.group(0) if m else ''
        else:
            said = tools.figures(dev.out if name.endswith('-gsrv') else tool.out)
        why = []
        if tool.rc != 0:
            why.append(f'tools-rc={tool.rc}')
        if dev.rc != 0:
            why.append(f'device-rc={dev.rc}')
        failed = [l for l in dev.out.splitlines() if 'PEER: FAIL' in l]
        if failed:
            why.append(re.sub(r'.*PEER: ', '', failed[0]))
        said += f' | {" ".join(why)}' if why else ''
        if tool.rc != 0 or dev.rc != 0:
            self.fail(f'{said} ({"; ".join(g.status() for g in self.guests)})')
        self.note(said)


for _name, *_ in IO:
    add_case(Io, f'io-{_name}', Io.check, quick=bool(QUICK_IO.search(_name)),
             timeout=PEER_LIMIT)


# Tenants on the wire (issue 25): the devices' guest captures its eth0
# (rxe0's netdev) while the data-path tests ibverbs/tenant-wire/CASE
# (tests/qtest/virtio-rdma-dp-test.c) run its devices A (allowed its own
# address, TW_DEV_IP) and B (TW_B_IP, a second address of that eth0); the
# peer guest, plain rxe, is on the wire and sends RDMA-CM connects to B's
# address when the test asks (stages peer-cm-*).  Each case: the test's
# verdict (what the devices and the mux said) and tshark's count of the
# frames of its phases, the violations among them (0) and the controls.
TW_DEV_IP, TW_B_IP, TW_PEER_IP = '10.79.3.11', '10.79.3.21', '10.79.3.12'
TW_UUID_A, TW_UUID_B = ('0a79e5e1-25aa-4b1e-9d6c-6c1a8e0a7a0a',
                        '0a79e5e1-25aa-4b1e-9d6c-6c1a8e0a7b0b')
TW_QPN = 0xd1ce      # the UD QPN A and B send to at the peer (nobody's: rxe drops)
TW_CASE_LIMIT = 200  # one data-path test in the guest, at most
TW_FIELDS = ('frame.time_epoch', 'ip.src', 'ip.dst', 'infiniband.bth.destqp',
             'infiniband.deth.srcqp', 'infiniband.mad.mgmtclass')


class Frame(NamedTuple):
    time: float
    src: str
    dst: str
    dqp: int            # BTH destination QP
    sqp: Optional[int]  # DETH source QP (UD), None otherwise
    mgmt: Optional[int]  # MAD management class (QP1), None otherwise


def roce_frames(capture):
    """tshark's RoCEv2 frames (UDP port 4791) of CAPTURE."""
    r = subprocess.run(['tshark', '-r', str(capture), '-Y', 'udp.dstport == 4791',
                        '-T', 'fields', *[a for f in TW_FIELDS for a in ('-e', f)]],
                       capture_output=True, text=True, errors='replace', timeout=120)
    if r.returncode:
        raise AssertionError(f'tshark -r {capture}: {r.stderr.strip()[-300:]}')
    num = lambda v: int(v.split(',')[0], 0) if v else None  # noqa: E731
    return [Frame(float(t), src, dst, num(dqp), num(sqp), num(mgmt))
            for t, src, dst, dqp, sqp, mgmt in
            (line.split('\t') for line in r.stdout.splitlines())]


def mux_gid(ip):
    """IPv4 address IP as the mux logs a GID (sysfs' form)."""
    a, b, c, d = (int(x) for x in ip.split('.'))
    return f'0000:0000:0000:0000:0000:ffff:{a:02x}{b:02x}:{c:02x}{d:02x}'


def mux_stats(log, label):
    """The counters the mux logged after the hook's marker LABEL (SIGUSR1):
    MADs delivered and received MADs dropped for having no owner."""
    m = re.search(rf'^TW-MUX-STATS {label}\n(?:.*\n)*?(.*GIDs claimed:.*)$', log, re.M)
    if not m:
        return None
    line = m.group(1)
    got = re.search(r'([0-9]+) delivered', line)
    none = re.search(r'receive dropped recv_no_owner: ([0-9]+)', line)
    return int(got.group(1)) if got else 0, int(none.group(1)) if none else 0


class TenantWire(LabTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cases = cls.chosen_cases()
        top = cls.part_dir / 'tenant-wire'
        cls.results = protocol.Results(top / 'dev' / 'results')
        cls.frames = None
        if not cases:
            return
        if not os.access(DPTEST, os.X_OK):
            raise LabSetupError(f'{DPTEST} missing (bash scripts/build.sh)')
        link_dev, link_peer = net.dgram_pair()
        limit = BOOT + TW_CASE_LIMIT * len(cases)
        dev = Guest(cls.env, top / 'dev', f'lab.ip={TW_DEV_IP}/24 '
                    'lab.run=/lab/ibverbs/tenant-wire.sh', link_dev, '52:54:00:79:03:11',
                    mem=1024, smp=2)
        (dev.out / 'env').write_text(
            f'ROLE=dev\nQEMU={cls.env.qemu}\nDPTEST={cls.env.snapshot(DPTEST)}\n'
            f'MUX={mux_snapshot(cls.env)}\nIP={TW_DEV_IP}\nB_IP={TW_B_IP}\n'
            f'PEER_IP={TW_PEER_IP}\nCASES="{" ".join(cases)}"\n')
        peer = Guest(cls.env, top / 'peer', f'lab.ip={TW_PEER_IP}/24 '
                     'lab.run=/lab/ibverbs/tenant-wire.sh', link_peer, '52:54:00:79:03:12')
        (peer.out / 'env').write_text(f'ROLE=peer\nLIMIT={limit}\n')
        for g in (dev, peer):
            cls.addClassCleanup(g.kill)
            g.start(limit=limit)

        def peer_cm(name):
            # The peer's connects to B's address; the stage's answer waits
            # for their end (the guest's stage waits 60 s).
            (peer.out / f'go.{name}').write_text(f'{TW_B_IP}\n')
            end = time.monotonic() + 45
            while (not (peer.out / f'done.{name}').exists() and peer.running()
                   and time.monotonic() < end):
                time.sleep(0.2)
        stages = protocol.Stages(dev.out, {n: lambda _, n=n: peer_cm(n)
                                           for n in ('peer-cm-a', 'peer-cm-b')})
        protocol.serve_all([stages], dev.running)
        (peer.out / 'stop').touch()
        peer.wait()
        cls.dev, cls.peer = dev, peer
        cls.results = dev.results()
        capture = dev.out / 'tenant-wire.pcapng'
        if capture.is_file():
            cls.frames = roce_frames(capture)

    def tw_output(self):
        """This case's test output: its phases {PHASE: (T0, T1)} and
        figures {KEY: [VALUE...]} (the TW lines)."""
        test = self.case.removeprefix('tenant-wire/')
        phases, figures = {}, {}
        try:
            tap = (self.dev.out / f'{test}.tap').read_text(errors='replace')
        except FileNotFoundError:
            tap = ''
        for line in tap.splitlines():
            f = line.split()
            if len(f) == 5 and f[0] == 'TW-PHASE' and f[1] == test:
                phases[f[2]] = (float(f[3]), float(f[4]))
            elif len(f) > 2 and f[0] == 'TW' and f[1] == test:
                for k, v in zip(f[2::2], f[3::2]):
                    figures.setdefault(k, []).append(v)
        return phases, figures

    def judge(self, said, problems):
        """Fails with the test's verdict and PROBLEMS (what the capture or the
        mux showed against the case), else notes the test's line and SAID."""
        lines = self.results.cases.get(self.case) or [('FAIL', f'no line in {self.results.path} '
                                                       f'({self.results.origin})')]
        failed = [d for v, d in lines if v != 'PASS']
        if failed or problems:
            self.fail('; '.join(failed + problems) + f' | {said}')
        self.note(lines[0][1])
        self.note(said)

    def frames_in(self, phases, name):
        if self.frames is None:
            self.fail(f'no capture ({self.dev.status()})')
        if name not in phases:
            self.fail(f'the test printed no phase {name} ({self.dev.out})')
        t0, t1 = phases[name]
        return [f for f in self.frames if t0 <= f.time <= t1]

    def check_src_address(self):
        """A's frames carry A's source address; none of the phase in which
        A sends carries B's, nor does any frame of A's UD QP anywhere.
        Control: B's own sends with B's address are seen as such."""
        phases, fig = self.tw_output()
        if 'a-ud' not in fig:
            self.judge('', ['the test printed no QPNs'])
        a_ud, b_ud = int(fig['a-ud'][0]), int(fig['b-ud'][0])
        sent = [f for f in self.frames_in(phases, 'a-sends') if f.sqp == a_ud]
        own = [f for f in sent if f.src == TW_DEV_IP]
        window = self.frames_in(phases, 'a-sends')
        bad = [f for f in self.frames if (f in window and f.src == TW_B_IP)
               or (f.sqp == a_ud and f.src != TW_DEV_IP)]
        control = [f for f in self.frames_in(phases, 'b-own')
                   if f.sqp == b_ud and f.src == TW_B_IP]
        said = (f'tshark: {len(sent)} frames from A\'s UD QP {a_ud} ({fig["a-sent"][0]} sent), '
                f'{len(own)} with A\'s source {TW_DEV_IP}; frames with B\'s source {TW_B_IP} '
                f'from A (violations): {len(bad)}; control: B\'s {len(control)} with its own '
                f'({fig["b-sent"][0]} sent)')
        problems = ([f'{len(bad)} frames with B\'s source from A'] if bad else []) \
            + ([] if own else ['none of A\'s frames with its own source']) \
            + ([] if control else ['no frame with B\'s source from B (the control)'])
        self.judge(said, problems)

    def check_qp1(self):
        """No frame to QP 1 while A's UD QPs send to it (their sends to
        another QPN are there); the mux's CM MAD from A's GSI QP is."""
        phases, fig = self.tw_output()
        if 'ud' not in fig:
            self.judge('', ['the test printed no QPNs'])
        uds = {int(q) for q in fig['ud']}
        phase = self.frames_in(phases, 'ud-to-qp1')
        to_qp1 = [f for f in self.frames
                  if f.dqp == 1 and (f in phase or f.sqp in uds)]
        control = [f for f in phase if f.sqp in uds and f.dqp == TW_QPN]
        gsi = [f for f in self.frames_in(phases, 'gsi')
               if f.dqp == 1 and f.src == TW_DEV_IP and f.dst == TW_PEER_IP]
        said = (f'tshark: phase ud-to-qp1 {len(phase)} frames, {len(control)} from A\'s UD QPs '
                f'{sorted(uds)} to QPN {TW_QPN:#x}; to QP 1 (violations): {len(to_qp1)}; '
                f'phase gsi: {len(gsi)} from A to the peer\'s QP 1 (MAD class '
                f'{",".join(sorted({str(f.mgmt) for f in gsi}))}, the mux\'s)')
        problems = ([f'{len(to_qp1)} frames to QP 1 from A\'s UD QPs'] if to_qp1 else []) \
            + ([] if control else ['no frame of the UD QPs\' other sends (the control)']) \
            + ([] if gsi else ['no CM MAD from A\'s GSI QP on the wire (the control)'])
        self.judge(said, problems)

    def check_cm_after_reboot(self):
        """While B is away the peer's CM MADs to B's address are on the wire
        and the mux drops them (no owner), refusing A's claim (RESERVED);
        A receives none and sends nothing from B's address.  Once B is back
        as the same owner its claim is granted and the MADs reach it."""
        phases, fig = self.tw_output()
        mux = (self.dev.out / 'mux.log').read_text(errors='replace') \
            if (self.dev.out / 'mux.log').is_file() else ''
        bgid = mux_gid(TW_B_IP)
        clients = lambda uuid: set(re.findall(  # noqa: E731
            rf'(client [0-9]+) \([^)]*\): hello from owner {uuid}/', mux))
        a_client, b_client = clients(TW_UUID_A), clients(TW_UUID_B)
        reserved = [c for c in a_client
                    if re.search(rf'{c} \([^)]*\): GID_ADD {bgid} refused \(status 8\)', mux)]
        resumed = [c for c in b_client if re.search(rf'{c} \([^)]*\): resumed {bgid}', mux)]
        stolen = [c for c in a_client if re.search(rf'{c} \([^)]*\): claimed {bgid}', mux)]
        cm = {p: [f for f in self.frames_in(phases, p)
                  if f.dqp == 1 and f.src == TW_PEER_IP and f.dst == TW_B_IP]
              for p in ('peer-cm-a', 'peer-cm-b')}
        spoofed = [f for p in ('a-src-b', 'peer-cm-a') for f in self.frames_in(phases, p)
                   if f.src == TW_B_IP]
        stats = {k: mux_stats(mux, k) for k in ('before-a', 'after-a', 'before-b', 'after-b')}
        if None in stats.values() or 'a-mads-received' not in fig:
            self.judge('', [f'no figures from the test, or no mux counters {stats}'])
        no_owner = stats['after-a'][1] - stats['before-a'][1]
        got_a = stats['after-a'][0] - stats['before-a'][0]
        got_b = stats['after-b'][0] - stats['before-b'][0]
        a_mads = int(fig['a-mads-received'][0])
        said = (f'tshark: B away: {len(cm["peer-cm-a"])} CM MADs from the peer to B\'s '
                f'{TW_B_IP} QP 1; mux: A\'s claim RESERVED {"yes" if reserved else "no"}, '
                f'no-owner drops {no_owner}, delivered {got_a}; A\'s GSI QP received {a_mads} '
                f'and frames with B\'s source {len(spoofed)} (violations: '
                f'{a_mads + len(spoofed)}); B back: claim resumed '
                f'{"yes" if resumed else "no"}, {len(cm["peer-cm-b"])} CM MADs on the wire, '
                f'delivered {got_b}, B\'s GSI QP received {fig["b-mads-received"][0]}')
        problems = []
        if not cm['peer-cm-a']:
            problems.append('no CM MAD to B\'s address on the wire while B was away')
        if not reserved or stolen:
            problems.append('the mux gave A B\'s address' if stolen
                            else 'no RESERVED answer to A in the mux\'s log')
        if no_owner < 1 or got_a:
            problems.append(f'the mux dropped {no_owner} MADs for no owner, delivered {got_a}')
        if a_mads != 0:
            problems.append(f'A\'s GSI QP received {a_mads} MADs')
        if spoofed:
            problems.append(f'{len(spoofed)} frames with B\'s source while B was away')
        if not resumed or not cm['peer-cm-b'] or got_b < 1:
            problems.append('B back: its claim or the MADs to it missing (the control)')
        self.judge(said, problems)


# Quick: the class boots its two guests and runs the three tests in about
# 70 s here.
for _name, _check in (('src-address', TenantWire.check_src_address),
                      ('qp1', TenantWire.check_qp1),
                      ('cm-after-reboot', TenantWire.check_cm_after_reboot)):
    add_case(TenantWire, f'tenant-wire/{_name}', _check, quick=True)


if __name__ == '__main__':
    unittest.main()

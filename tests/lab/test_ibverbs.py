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
"""
import os
import re
import subprocess
import time
import unittest

from vrdma_lab import net, paths, protocol, tools
from vrdma_lab.case import LabTest, add_case
from vrdma_lab.env import LabSetupError
from vrdma_lab.guest import Guest

DPTEST = paths.BUILD / 'qemu' / 'tests' / 'qtest' / 'virtio-rdma-dp-test'
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
# frames are rxe's business).  Left out, each for a reason of its own:
#   wire/connect, wire/not-ours-first   the soft engine's wire and filter;
#   cq-arm/solicited                    ibv_wc has no solicited bit: every
#                                       receive may wake a SOLICITED arm;
#   cq-arm/answered-after-earlier-cqes  the host flushes a QP in ERR on its
#                                       own time: the flushed CQE may come
#                                       after the arm's answer (it then
#                                       signals the arm: nothing is missed);
#   qp/destroy-discards-pending         the device's virtqueues, the same
#                                       code for both (and its hand-made
#                                       CREATE_QP has no wire QPN room).
# The list takes about 8 minutes in the guest's 2 TCG vCPUs.  Quick: one
# case of each kind (QUICK_DP).
RC = ('rc-send', 'rc-write', 'rc-write-imm', 'rc-read', 'rc-cas', 'rc-faa', 'rc-pipeline')
DP = ([f'loopback/{t}' for t in RC + (
          'rc-unsignaled', 'rc-psn-wrap', 'rc-rem-access-err', 'rc-rem-bounds-err',
          'rc-loc-prot-err', 'rc-recv-too-small', 'rc-rnr', 'wqe-malformed',
          'wqe-device-writable')]
      + [f'wire-qpn/loopback/{t}' for t in ('rc-send', 'rc-read', 'rc-rem-access-err', 'rc-rnr')]
      + ['cq-arm/next']
      + [f'event-queue/{t}' for t in ('cq-event', 'no-buffer', 'destroyed-cq', 'short-buffer')]
      + [f'wire/{t}' for t in RC + ('ud-send-ipv4', 'ud-send-ipv6', 'ud-qp1-refused',
                                     'peer-gone')]
      + [f'wire-qpn/wire/{t}' for t in ('rc-write-imm', 'ud-send-ipv4', 'ud-send-ipv6')]
      + [f'dma-sge/loopback/{t}' for t in ('rc-send', 'rc-write-imm', 'rc-read', 'rc-cas',
                                           'rc-faa')]
      + [f'dma-sge/wire/{t}' for t in ('rc-send', 'rc-read')])
QUICK_DP = ('loopback/rc-send', 'cq-arm/next', 'wire/rc-read', 'wire/rc-cas',
            'wire/ud-send-ipv6', 'wire/ud-qp1-refused', 'wire-qpn/wire/ud-send-ipv4',
            'dma-sge/wire/rc-send')

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
        if not os.access(DPTEST, os.X_OK):
            raise LabSetupError(f'{DPTEST} missing (bash scripts/build.sh)')
        g = Guest(cls.env, cls.part_dir / 'device',
                  'lab.ip=10.79.0.11/24 lab.ip6=fd79::11/64 lab.run=/lab/ibverbs/guest.sh',
                  net.dgram(net.free_port('udp'), net.free_port('udp')), '52:54:00:79:00:11',
                  # 2 GiB: a 1 GiB MR is registered (pinned) in the nested
                  # QEMU.  Two vCPUs: the guest runs alone, and the test and
                  # its two QEMUs then run side by side.
                  mem=2048, smp=2)
        (g.out / 'env').write_text(f'QEMU={cls.env.qemu}\nDPTEST={cls.env.snapshot(DPTEST)}\n'
                                   f'MUX={mux_snapshot(cls.env)}\nCASES="{" ".join(cases)}"\n')
        cls.addClassCleanup(g.kill)
        g.start(limit=1500)
        g.wait()
        cls.results = g.results()

    def check_dp_exit(self):
        if not any(c.startswith('dp/') and c != 'dp/exit' for c in self.chosen_cases()):
            self.skipTest('no data-path test chosen')
        self.assertGuestPass()


for _name, _quick in DEVICE_CASES:
    add_case(Device, _name, Device.check_dp_exit if _name == 'dp/exit'
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


if __name__ == '__main__':
    unittest.main()

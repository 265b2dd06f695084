"""interop: one guest on Debian's kernel rxe against our virtio-rdma device.

The device runs in a QEMU driven by virtio-rdma-lab-peer (qtest + libqos,
tests/qtest/virtio-rdma-lab-peer.c, built by build-peer.sh), its paired NIC
joined to the guest's eth0 by -netdev dgram over 127.0.0.1; the tools' TCP
exchanges go over the guest's second NIC (QEMU's user network: the guest
reaches the peer at 10.0.2.2, the peer reaches the guest's servers through
a hostfwd on 127.0.0.1).  Our device answers no ARP/ND: the guest has
permanent neighbour entries for it, and its eth0 sends RoCEv2 only.

Every tool of vrdma_lab.tools.TOOL_CASES runs with the guest as server
(gsrv) and as client (gcli), over IPv4-mapped (v4) and IPv6 (v6) GIDs: the
guest runs its side through guest-cases.sh (protocol.py: tool cases), the
host runs the peer for the same case meanwhile, one case after the other,
in step with the guest.  The v4 cases run our engine in QEMU's main loop,
the v6 ones in an iothread (off the big lock).  A case passes when both
sides exit 0 and the guest's rxe counted no sequence error -- on a clean
wire: when the host dropped datagrams of the dgram link during the case (a
full socket receive buffer), sequence errors are rxe's correct recovery
and are noted, not failed.  Its note: the client's figures (the peer's for
gsrv) and the rxe counters that changed.

v6-send_bw-gsrv-stall stops the guest's QEMU (SIGSTOP) for STALL_S seconds
in the middle of our transfer to it: our requester must get through on its
retransmit timer, as it must when a host deschedules a real peer.  It moves
STALL_ITERS messages (about 2.5 s at TCG speed) so that the stall, which
starts a moment after the QPs connect, lands inside the transfer even on a
loaded machine: at 200 (0.5 s) a CI run once stopped the guest only after
the last ACK.  It passes only when the stall hit the transfer (the peer
counted retry timeouts).

Then no-icrc-errors (rxe reports a bad ICRC only in the kernel log) and
capture-CASE for the cases CAPTURED: the guest's dumpcap of eth0 during the
case, each RoCEv2 frame dissected by tshark without a malformed mark.
"""
import os
import re
import signal
import subprocess
import threading
import time
import unittest
from collections import Counter

from vrdma_lab import net, paths, protocol, tools
from vrdma_lab.case import LabTest, add_case
from vrdma_lab.env import LabSetupError
from vrdma_lab.guest import Guest

GUEST_MAC = '52:54:00:77:00:21'
DEV_MAC = '52:54:00:77:00:02'
GUEST_PORT = 18515    # the guest's servers (the hostfwd's target)
CASE_LIMIT = 150      # each case's side in the guest, its client's retries included
PEER_LIMIT = 170      # the peer's (it waits for the guest's side)
GUEST_LIMIT = 1200    # the guest's life, every case included
FAMILIES = (4, 6)
ROLES = ('gsrv', 'gcli')
# The device's trace points for frames it drops or passes on, in the peer's
# log: a failed case then says where its frames went (QTEST_TRACE, libqtest's
# own variable, replaces them).
TRACE = 'virtio_rdma_wire_drop -trace virtio_rdma_engine_r* -trace virtio_rdma_nic_*'
STALL = 'v6-send_bw-gsrv-stall'
STALL_S = 1.5
STALL_ITERS = 1000
CAPTURED = ('v4-write_bw-gcli', 'v6-rc_pingpong-gcli')
TSHARK_LIMIT = 120    # each tshark pass over a capture


# NAME -> (family, tool, the guest's role) of every tool case, in the
# guest's order.
TABLE = {f'v{fam}-{tool}-{role}': (fam, tool, role)
         for fam in FAMILIES for tool in tools.TOOL_CASES for role in ROLES}
TABLE[STALL] = (6, 'send_bw', 'gsrv')


def is_quick(name):
    """The CI's: every tool both ways over IPv4 (engine in the main loop),
    RC SEND and WRITE both ways over IPv6 (in an iothread), and the stall."""
    return bool(re.search(r'^v4-|^v6-(rc_pingpong|write_bw)-g(srv|cli)$|-stall$', name))


def build_peer():
    """The peer's binary (build-peer.sh builds it when it is out of date)."""
    log = paths.BUILD / 'lab' / 'build-peer.log'
    r = subprocess.run(['bash', str(paths.LAB_SRC / 'build-peer.sh')], capture_output=True,
                       text=True, timeout=3900)
    if r.returncode != 0 or not r.stdout.strip():
        raise LabSetupError(f'build-peer.sh failed: {r.stderr.strip()[-300:]} (see {log})')
    return r.stdout.strip().splitlines()[-1]


class PeerRun:
    """The host's side of one case: the peer's exit status and log, the
    stall's account, the host's UDP receive-buffer drops during the case."""

    def __init__(self, out):
        self.out = out
        self.rc = None
        self.stall = None
        self.drops = 0

    @property
    def log(self):
        try:
            return (self.out / 'peer.log').read_text(errors='replace')
        except FileNotFoundError:
            return ''


class Interop(LabTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        chosen = set(cls.chosen_cases())
        # A capture needs its case run.
        wanted = chosen | {c for c in CAPTURED if f'capture-{c}' in chosen}
        cls.ran = [n for n in TABLE if n in wanted]
        cls.peers = {}
        cls.tc = protocol.ToolCases(cls.part_dir / 'G')
        cls.guest = None
        if not cls.ran:
            return
        peer = build_peer()
        srv_fwd, peer_port = net.free_port('tcp'), net.free_port('tcp')
        guest_udp, peer_udp = net.free_port('udp'), net.free_port('udp')
        for name in cls.ran:
            fam, tool, role = TABLE[name]
            args = tools.args(tool).replace('@G@', f'@G{fam}@')
            if name == STALL:
                args = args.replace('-n 200', f'-n {STALL_ITERS}')
            if role == 'gsrv':
                cmd = args.replace('@P@', str(GUEST_PORT))
            else:
                cmd = args.replace('@P@', str(peer_port)) + ' 10.0.2.2'
            if name in CAPTURED:
                cmd = (f'dumpcap -q -i eth0 -w /out/{name}.pcapng & cp=$!; sleep 3; {cmd}; '
                       'rc=$?; sleep 2; kill $cp; wait $cp; exit $rc')
            cls.tc.add(role[1:], name, CASE_LIMIT, cmd)
        cls.tc.write()
        neigh = f'10.77.0.2@{DEV_MAC},fd77::2@{DEV_MAC}'
        g = Guest(cls.env, cls.tc.out,
                  'lab.ip=10.77.0.21/24 lab.ip6=fd77::21/64 lab.user=1 lab.egress=roce '
                  f'lab.neigh={neigh} lab.run=/lab/guest-cases.sh',
                  net.dgram(guest_udp, peer_udp), GUEST_MAC,
                  netdev1=('user,net=10.0.2.0/24,host=10.0.2.2,'
                           f'hostfwd=tcp:127.0.0.1:{srv_fwd}-:{GUEST_PORT}'))
        cls.addClassCleanup(g.kill)
        cls.guest = g.start(limit=GUEST_LIMIT)
        for name in cls.ran:
            fam, tool, role = TABLE[name]
            run = cls.peers[name] = PeerRun(cls.part_dir / name)
            run.out.mkdir(parents=True, exist_ok=True)
            u0 = net.udp_rcvbuf_errors()
            port = srv_fwd if role == 'gsrv' else peer_port
            command = [peer, '--tool', tool, '--role', 'client' if role == 'gsrv' else 'server',
                       '--port', str(port), '--lport', str(peer_udp), '--rport', str(guest_udp),
                       '--mac', DEV_MAC, '--peer-mac', GUEST_MAC, '--ip4', '10.77.0.2',
                       '--ip6', 'fd77::2', '--gid', str(fam)]
            if name == STALL:
                command += ['--iters', str(STALL_ITERS)]
            cls.run_peer(run, command, fam, stall=name == STALL)
            if run.rc != 0 and role == 'gcli':
                cls.tc.abort(name)  # its server failed: nothing will listen
            # Stay in step with the guest: its side of this case must be over.
            cls.tc.wait(name, g.running, PEER_LIMIT)
            run.drops = net.udp_rcvbuf_errors() - u0
        g.wait()

    @classmethod
    def run_peer(cls, run, command, fam, stall):
        """Runs the peer to its end or its limit; with STALL, stops the
        guest once the peer has the guest's QP (the transfer starts next)."""
        env = dict(os.environ, QVRDMA_IOTHREAD='1' if fam == 6 else '0',
                   QTEST_TRACE=os.environ.get('QTEST_TRACE', TRACE),
                   QTEST_QEMU_BINARY=str(cls.env.qemu))
        staller = None
        with open(run.out / 'peer.log', 'w') as log:
            p = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, env=env, text=True,
                                 errors='replace', start_new_session=True)
            # The peer and the QEMU it runs: TERM at the limit, KILL 5 s later.
            limit = threading.Timer(PEER_LIMIT, cls.end_group, (p,))
            limit.start()
            try:
                for line in p.stdout:
                    log.write(line)
                    log.flush()
                    if stall and staller is None and 'guest: qpn' in line:
                        staller = threading.Thread(target=cls.stall_guest, args=(run,))
                        staller.start()
                run.rc = p.wait()
            finally:
                limit.cancel()
                cls.end_group(p, grace=0)
        if staller:
            staller.join()
        elif stall:
            run.stall = 'no transfer to stall'

    @staticmethod
    def end_group(p, grace=5):
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(p.pid, sig)
            except ProcessLookupError:
                return
            if grace:
                time.sleep(grace)

    @classmethod
    def stall_guest(cls, run):
        time.sleep(0.2)
        if not cls.guest.running():
            run.stall = 'no guest QEMU running'
            return
        pid = cls.guest.proc.pid
        os.kill(pid, signal.SIGSTOP)
        run.stall = f"stopped the guest's QEMU (pid {pid}) for {STALL_S} s"
        try:
            time.sleep(STALL_S)
        finally:
            os.kill(pid, signal.SIGCONT)

    def assertInterop(self):
        name = self.case
        g, p = self.tc.run(name), self.peers[name]
        why = []
        if g.rc != 0:
            why.append(f'guest-rc={"none" if g.rc is None else g.rc}')
        if p.rc != 0:
            why.append(f'peer-rc={"none" if p.rc is None else p.rc}')
        seq = ' '.join(f'{k}+{v}' for k, v in g.counters.items()
                       if k in ('rcvd_seq_err', 'out_of_seq_request') and v)
        lossy = False
        if seq and p.drops > 0:
            lossy = True
            why.append(f'lossy wire (host dropped {p.drops} datagrams): seq-errors:{seq} '
                       'recovered')
        elif seq:
            why.append(f'seq-errors on a clean wire:{seq}')
        log = p.log
        failed = re.search(r'PEER: FAIL.*', log)
        if failed:
            why.append(failed.group(0).removeprefix('PEER: '))
        stall_missed = False
        if name == STALL:
            # The stall must have hit the transfer: our retransmit timer fired.
            tmo = re.findall(r'timeouts ([0-9]+)', log)
            why.append(f'{p.stall or "no stall"}; retry timeouts {tmo[-1] if tmo else "none"}')
            stall_missed = not ((p.stall or '').startswith('stopped') and tmo and int(tmo[-1]) > 0)
            if stall_missed:
                why.append('(the stall missed the transfer)')
        fig = tools.figures(log if TABLE[name][2] == 'gsrv' else g.out)
        said = f'{fig} rxe[{g.counters_text()}]' + (' | ' + ' '.join(why) if why else '')
        if g.rc != 0 or p.rc != 0 or (seq and not lossy) or stall_missed:
            self.fail(f'{said} ({self.guest.status()}; peer log {p.out / "peer.log"})')
        self.note(said)

    def assertNoIcrcErrors(self):
        """rxe reports a bad ICRC only in the kernel log."""
        if not self.ran:
            self.skipTest('no tool case ran')
        dmesg = self.tc.out / 'dmesg.txt'
        if not dmesg.is_file():
            self.fail(f'no guest kernel log {dmesg} ({self.guest.status()})')
        n = sum(1 for line in dmesg.read_text(errors='replace').splitlines()
                if 'icrc' in line.lower())
        self.assertEqual(n, 0, f'{n} ICRC lines in {dmesg}')
        self.note('guest kernel log: no ICRC complaint')

    def assertCapture(self, case):
        """Every RoCEv2 frame of CASE's capture dissects without a malformed
        mark.  The expert errors are noted beside (IPv6: UDP checksum 0,
        which rxe sends too), with how many come from our device (its
        source MAC) and from rxe."""
        if case not in self.ran:
            self.skipTest(f'{case} did not run')
        f = self.tc.out / f'{case}.pcapng'
        if not f.is_file() or f.stat().st_size == 0:
            self.fail(f'no capture {f}')
        total = len(tshark(f))
        bad = len(tshark(f, '&& _ws.malformed'))
        ops = Counter(int(o) for o in tshark(f, '-T', 'fields', '-e', 'infiniband.bth.opcode')
                      if o.strip().isdigit())
        ops = ','.join(f'op{o}:{n}' for o, n in sorted(ops.items()))
        expert = Counter()
        for line in tshark(f, '&& _ws.expert.severity >= 6291456', '-T', 'fields',
                           '-e', 'eth.src', '-e', '_ws.expert.message'):
            src, _, msg = line.partition('\t')
            expert[f'{"device" if src == DEV_MAC else "rxe"}: {msg}'] += 1
        expert = '; '.join(f'{k} x{n}' for k, n in sorted(expert.items()))
        dissect = f.with_name(f'{case}.dissect.txt')
        with open(dissect, 'w') as out:
            subprocess.run(['tshark', '-r', str(f), '-Y', 'udp.dstport == 4791', '-V'],
                           stdout=out, stderr=subprocess.STDOUT, timeout=TSHARK_LIMIT)
        said = f'{total} RoCEv2 frames, %s malformed [{ops}]' + \
            (f' expert: {expert}' if expert else '')
        if total == 0 or bad:
            self.fail(f'{said % bad} ({dissect})')
        self.note(said % 'none')


def tshark(capture, *args):
    """tshark's lines over the RoCEv2 frames of CAPTURE, with a filter
    narrowed by ARGS' first ('&& ...') and the rest as its options."""
    extra, opts = (args[0], args[1:]) if args and args[0].startswith('&&') else ('', args)
    r = subprocess.run(['tshark', '-r', str(capture), '-Y', f'udp.dstport == 4791 {extra}',
                        *opts], capture_output=True, text=True, errors='replace',
                       timeout=TSHARK_LIMIT)
    return r.stdout.splitlines()


for _name in TABLE:
    add_case(Interop, _name, Interop.assertInterop, quick=is_quick(_name),
             timeout=CASE_LIMIT)
add_case(Interop, 'no-icrc-errors', Interop.assertNoIcrcErrors, quick=True)
for _name in CAPTURED:
    # tshark's passes over the capture, each bounded.
    add_case(Interop, f'capture-{_name}', lambda self, c=_name: self.assertCapture(c),
             quick=is_quick(_name), timeout=5 * TSHARK_LIMIT)


if __name__ == '__main__':
    unittest.main()

"""nvme: NVMe over RDMA between two guests, each on our device (v: the
virtio-rdma-pci through our driver, build/guest/KVER/virtio_rdma.ko, and
provider, build/guest/rdma-core) or on Debian's kernel rxe (r).

Guest A runs an nvmet-rdma target (nvme/target.sh), guest B an nvme-rdma
host (nvme/host.sh: nvme-cli and fio), in three pairings, one class each:
host and target on virtio-rdma (hv-tv), the host on virtio-rdma with the
target on rxe (hv-tr), the reverse (hr-tv).  The host writes random data,
drops its caches and reads it back byte-exact, runs fio with crc32c
verification (libaio and polled I/O; the controller has a read, a write and
a poll queue), disconnects and reconnects (the data is still there): each
step is a results line of B's job and the case PAIR/STEP.  In hv-tv the
target's QEMU is then killed twice under writes, at B's stages: once a new
target comes up at the same address and the host must reconnect with no
I/O error (kill-recover), once for good and the I/O must fail after the
controller-loss timeout (kill-giveup).  PAIR/no-hang: B's job ran to its
end inside the pair's limit.  On virtio-rdma guests the device's object
counts (QMP, at B's stages) after the host's disconnect, and after the
controller given up on, are back where they were before its connect, and
QEMU reports no error (PAIR/B-device, B-device-giveup, A-device);
PAIR/B-kernel, A-kernel: no oops, BUG or WARNING in a guest's kernel log.

Kernels (scripts/test.sh's matrix): 6.1 runs every pairing; 6.12 only
hv-tv (against rxe the wire is the device's, the same on
both kernels).  Quick, one pairing a kernel: hr-tv on 6.1, hv-tv on 6.12
(QUICK_ON).
"""
import os
import re
import shutil
import sys
import time
import unittest
from pathlib import Path

from vrdma_lab import env as lab_env
from vrdma_lab import net, paths, protocol, qmp
from vrdma_lab.case import LabTest, add_case
from vrdma_lab.env import LabSetupError
from vrdma_lab.guest import Guest

ADDR_A, MAC_A = '10.77.0.31', '52:54:00:77:00:31'  # the target
ADDR_B, MAC_B = '10.77.0.32', '52:54:00:77:00:32'  # the host
LIMIT = 600  # each guest of a pair (a hung guest fails the pair by it)
STEPS = ('discover', 'connect', 'write-read', 'fio-verify', 'disconnect', 'reconnect')
KILL_STEPS = ('kill-recover', 'kill-recover-data', 'kill-giveup')


def objects_of(g, point):
    """Our device's object counts in guest G at POINT ("pd=N cq=N ..."),
    its "info rdma" in G.out/info-POINT.{txt,json}; None when QMP did not
    answer (why in info-POINT.err)."""
    prefix = g.out / f'info-{point}'
    try:
        qmp.query(g.qmp_path, prefix)
        return qmp.objects(qmp.first_device(f'{prefix}.json'))
    except (OSError, RuntimeError, ValueError, LookupError) as e:
        Path(f'{prefix}.err').write_text(f'{e}\n')
        return None


def copy_res(g, name):
    """The target's latest res.txt (its resource tracker's counts, every
    0.5 s) as NAME, if it has written one."""
    try:
        shutil.copyfile(g.out / 'res.txt', g.out / name)
    except FileNotFoundError:
        pass


def tracker(res):
    """What the kernel's resource tracker counted ("rdma resource show" in
    RES), from "pd" on; '' when RES is missing."""
    try:
        m = re.search(r'pd.*', Path(res).read_text())
    except FileNotFoundError:
        return ''
    return m.group(0) if m else ''


def compare(before, after, res):
    """None when the device's object counts AFTER the host's last
    disconnect equal those BEFORE its first connect, but for CQs: nvme-rdma
    and nvmet-rdma take theirs from the RDMA core's CQ pool
    (ib_cq_pool_get), which keeps them until the device goes.  So the CQs
    after must be as many as the kernel's resource tracker counts (RES:
    "rdma resource show" then), no more.  A CQ's ring is mapped pages:
    more pages after only with more CQs.  Otherwise what differs."""
    def count(o, what):
        return int(re.search(rf'{what}=([0-9]+)', o).group(1))

    def but_cqs(o):
        o = re.sub(r' cq=[0-9]+', '', o or '')
        return re.sub(r' pages=[0-9]+', '', o)
    if not before or not after or but_cqs(before) != but_cqs(after):
        return f'objects before [{before or ""}] after [{after or ""}]'
    more_cqs = count(after, 'cq') - count(before, 'cq')
    more_pages = count(after, 'pages') - count(before, 'pages')
    if more_pages < 0 or (more_pages > 0) != (more_cqs > 0):
        return f'objects before [{before}] after [{after}]: pages without CQs'
    cq = re.search(r'cq=([0-9]+)', after).group(1)
    try:
        kcq = re.findall(r' cq ([0-9]+) ', Path(res).read_text())
    except FileNotFoundError:
        kcq = []
    if not kcq or kcq[-1] != cq:
        return f"device cq={cq}, kernel's resource tracker: {kcq[-1] if kcq else 'no answer'}"
    return None


def qps(objects):
    return int(re.search(r'qp=([0-9]+)', objects).group(1))


class Pair:
    """One pairing (a class below): its two guests boot together in
    setUpClass, B's stages are served while it runs, its cases judge what
    they left."""
    PAIR = TARGET = HOST = None
    KILL = False     # the two kill steps (a target QEMU killed)
    QUICK_ON = ()    # the kernels whose quick set (the CI's) is this pairing

    def is_quick(self):
        return (self.env or lab_env.current()).kernel in self.QUICK_ON

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        kver = cls.env.kver
        # LAB_DRV_KO, LAB_DRV_PROV: another build of the driver and provider
        # (as the driver part).
        cls.ko = os.environ.get('LAB_DRV_KO') or str(paths.BUILD / 'guest' / kver / 'virtio_rdma.ko')
        cls.prov = os.environ.get('LAB_DRV_PROV') or str(paths.BUILD / 'guest' / 'rdma-core')
        if not os.path.isfile(cls.ko):
            raise LabSetupError(f'no {cls.ko} (scripts/build-guest.sh)')
        cls.dir = cls.part_dir / cls.PAIR
        cls.seen = {}    # 'a0', 'b0', 'bc', 'b1', 'bf', 'a1': object counts
        cls.kills = 0
        t0 = time.monotonic()
        u0 = net.udp_rcvbuf_errors()
        cls.link_a, cls.link_b = net.dgram_pair()
        cls.a = cls.target = cls.boot('A', cls.TARGET, ADDR_A, MAC_A, cls.link_a, 'target.sh',
                                      f'NV_ADDR={ADDR_A}\n')
        cls.b = cls.boot('B', cls.HOST, ADDR_B, MAC_B, cls.link_b, 'host.sh',
                         f'NV_ADDR={ADDR_A}\nNV_KILL={int(cls.KILL)}\n')
        protocol.Stages(cls.b.out, {
            'before': cls.at_before,
            'connected': lambda text: cls.read_host('bc', 'connected'),
            'after': cls.at_after,
            'final': lambda text: cls.read_host('bf', 'final'),
            'kill-recover': cls.at_kill_recover, 'kill-giveup': cls.at_kill_giveup,
        }).serve(cls.b.running)
        (cls.target.out / 'stop').touch()
        cls.target.wait()
        cls.drops = net.udp_rcvbuf_errors() - u0
        cls.results = cls.b.results()
        print(f'lab: nvme/{cls.PAIR} took {time.monotonic() - t0:.0f} s', file=sys.stderr)

    @classmethod
    def boot(cls, name, kind, ip, mac, link, job, job_env):
        g = Guest(cls.env, cls.dir / name,
                  f'lab.ip={ip}/24 lab.rdma={kind} lab.ko={cls.ko} lab.prov={cls.prov} '
                  f'lab.run=/lab/nvme/{job}', link, mac, vrdma=kind == 'vrdma')
        (g.out / 'job.env').write_text(job_env)
        cls.addClassCleanup(g.kill)
        return g.start(limit=LIMIT)

    # B's stages (the text: B's uptime).
    @classmethod
    def read_host(cls, key, point):
        if cls.HOST == 'vrdma':
            cls.seen[key] = objects_of(cls.b, point)

    @classmethod
    def at_before(cls, text):
        cls.read_host('b0', 'before')
        if cls.TARGET == 'vrdma':
            cls.seen['a0'] = objects_of(cls.a, 'before')
            if cls.seen['a0']:
                copy_res(cls.a, 'res-before.txt')

    @classmethod
    def at_after(cls, text):
        cls.read_host('b1', 'after')
        if cls.TARGET == 'vrdma':
            # The target frees a queue's objects after the host has gone.
            for _ in range(20):
                copy_res(cls.a, 'res-after.txt')
                cls.seen['a1'] = objects_of(cls.a, 'after')
                if compare(cls.seen.get('a0'), cls.seen['a1'],
                           cls.a.out / 'res-after.txt') is None:
                    break
                time.sleep(0.5)

    @classmethod
    def kill_target(cls, text):
        """Kills the target's QEMU at once (SIGKILL: no goodbye on the wire,
        nothing in its qemu.log)."""
        cls.target.proc.kill()
        cls.target.kill()
        cls.kills += 1
        print(f"lab: nvme/{cls.PAIR}: killed target QEMU {cls.target.out.name} at B's {text} s",
              file=sys.stderr)

    @classmethod
    def at_kill_recover(cls, text):
        cls.kill_target(text)
        # A new target at the same address, on the same link.
        cls.target = cls.boot(f'A{cls.kills + 1}', cls.TARGET, ADDR_A, MAC_A, cls.link_a,
                              'target.sh', f'NV_ADDR={ADDR_A}\n')

    @classmethod
    def at_kill_giveup(cls, text):
        cls.kill_target(text)

    # The checks of the cases.
    def check_target(self):
        ready, failed = self.a.out / 'target.ready', self.a.out / 'target.failed'
        if not ready.exists():
            why = failed.read_text().strip() if failed.exists() else 'no target.ready'
            self.fail(f'{why} (see {self.a.out}/job.log)')
        self.note(f'nvmet-rdma on {ready.read_text().strip()} at {ADDR_A}:4420')

    def check_step(self, step):
        if step not in self.results.cases:
            lines = self.results.path.read_text().splitlines() if self.results.path.exists() else []
            self.fail(f'not reached ({self.b.status()}; {lines[-1] if lines else "no results"})')
        self.assertGuestPass(step)

    def check_no_hang(self):
        # B's job ran to its end, inside the pair's time limit.
        if self.b.timed_out:
            self.fail(f'host guest timed out after {LIMIT} s ({self.b.status()})')
        if self.b.proc.returncode != 0 or 'finished' not in self.results.cases:
            self.fail(f'host guest: job did not finish ({self.b.status()})')
        self.note(f'host guest powered off after its last step ({self.kills} target QEMU(s) '
                  f'killed; the host dropped {self.drops} datagrams of full receive buffers '
                  'in the pair)')

    def check_device(self, g, before, connected, after):
        """The objects back where they were (compare), a connected host
        holds more QPs (admin + I/O queues), traffic moved, QEMU said
        nothing.  (Error completions are noted, not judged: a disconnect
        flushes the receives each queue had posted.)"""
        if not before or not after:
            errs = ''.join(p.read_text() for p in sorted(g.out.glob('info-*.err')))
            self.fail(f'no info rdma before [{before or ""}] / after [{after or ""}] ({errs[:200]})')
        dev = qmp.first_device(g.out / 'info-after.json')
        why = []
        differs = compare(before, after, g.out / 'res-after.txt')
        if differs:
            why.append(differs)
        if connected and not qps(connected) > qps(before):
            why.append(f'connected [{connected}] holds no more QPs than before')
        if not (dev['data-path']['tx-packets'] and dev['data-path']['rx-packets']):
            why.append('no traffic')
        log = g.out / 'qemu.log'
        if log.exists() and log.stat().st_size:
            why.append(f'QEMU: {log.read_text(errors="replace").splitlines()[0]}')
        said = (f'before [{before}]' + (f' connected [{connected}]' if connected else '')
                + f' after [{after}] (kernel: {tracker(g.out / "res-after.txt")}) {qmp.traffic(dev)}')
        if why:
            self.fail(f'{said} | {"; ".join(why)}')
        self.note(said)

    def check_b_device(self):
        s = self.seen
        self.check_device(self.b, s.get('b0'), s.get('bc'), s.get('b1'))

    def check_a_device(self):
        s = self.seen
        self.check_device(self.a, s.get('a0'), None, s.get('a1'))

    def check_b_device_giveup(self):
        # After the controller the host gave up on: everything freed as well.
        bf, res = self.seen.get('bf'), self.b.out / 'res-final.txt'
        differs = compare(self.seen.get('b0'), bf, res)
        if differs:
            self.fail(f'{bf or "no info rdma"}: {differs}')
        self.note(f'after the deleted controller [{bf}] (kernel: {tracker(res)})')


class HvTv(Pair, LabTest):
    PAIR, TARGET, HOST, KILL = 'hv-tv', 'vrdma', 'vrdma', True
    QUICK_ON = ('6.12',)


class HvTr(Pair, LabTest):
    PAIR, TARGET, HOST = 'hv-tr', 'rxe', 'vrdma'
    kernels = ('6.1',)


class HrTv(Pair, LabTest):
    PAIR, TARGET, HOST = 'hr-tv', 'vrdma', 'rxe'
    kernels = ('6.1',)
    QUICK_ON = ('6.1',)


def add_cases(cls):
    """A pairing's cases, in the bash part's order and names."""
    def add(name, check):
        add_case(cls, f'{cls.PAIR}/{name}', check)
    add('target', Pair.check_target)
    for step in STEPS + (KILL_STEPS if cls.KILL else ()):
        add(step, lambda self, step=step: self.check_step(step))
    add('no-hang', Pair.check_no_hang)
    if cls.HOST == 'vrdma':
        add('B-device', Pair.check_b_device)
        if cls.KILL:
            add('B-device-giveup', Pair.check_b_device_giveup)
    if cls.TARGET == 'vrdma':
        add('A-device', Pair.check_a_device)
    add('B-kernel', lambda self: self.assertKernelClean(self.b))
    if not cls.KILL:
        # (Killed, the first target left no kernel log.)
        add('A-kernel', lambda self: self.assertKernelClean(self.a))


for _cls in (HvTv, HvTr, HrTv):
    add_cases(_cls)
del _cls


if __name__ == '__main__':
    unittest.main()

"""rxe-mw: what a lab guest's kernel rxe does with memory windows -- the
host objects fast registration (REG_MR, LOCAL_INV, remote invalidation)
would need on backend=ibverbs, and the reason the device refuses it there
(docs/system/devices/virtio-rdma.rst).

On demand, not one of the CI's parts: it tests the guest kernel, not our
code; run it when that kernel changes (lab.py rxe-mw, and --kernel 6.12).
PASS means rxe still behaves as the docs say; a FAIL of double-* means the
kernel no longer oopses, and fast registration may be worth building.

The probe (rxe-mw/probe.c, built here against the host's libibverbs: the
guests' userland is the host's) runs in three guests, one vCPU each, side
by side (rxe-mw/guest.sh, the mode in /out/mode): "facts" writes one
results line a finding (the cases below up to no-other-lines, each its
line of the same name); double-local and double-remote invalidate a window
twice, locally and remotely: the second oopses the guest's kernel, so each
runs alone, and the host judges the probe's steps and the console.
The part's name is no module name: the file is test_rxe_mw.py, its classes
set lab_part.
"""
import re
import subprocess
import unittest

from vrdma_lab import net, paths
from vrdma_lab.case import LabTest
from vrdma_lab.env import LabSetupError
from vrdma_lab.guest import Guest

PART = 'rxe-mw'
LIMIT = 300  # each guest's life
DOUBLES = ('double-local', 'double-remote')


def probe(env, log):
    """Builds the probe into the kernel's bin/ (the guests see it over 9p)."""
    binary = env.dir / 'bin' / 'rxe-mw-probe'
    binary.parent.mkdir(parents=True, exist_ok=True)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, 'w') as out:
        r = subprocess.run(['gcc', '-O2', '-Wall', '-Wextra', '-Werror', '-o', str(binary),
                            str(paths.LAB_SRC / 'rxe-mw' / 'probe.c'),
                            '-libverbs'], stdout=out, stderr=subprocess.STDOUT, timeout=120)
    if r.returncode != 0:
        raise LabSetupError(f'the probe does not build: see {log} (needs libibverbs-dev)')
    return binary


class RxeMw(LabTest):
    lab_part = PART

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        chosen = cls.chosen_cases()
        modes = [m for m in DOUBLES if m in chosen]
        if set(chosen) - set(DOUBLES):
            modes.insert(0, 'facts')
        cls.guests = {}
        if not modes:
            return
        binary = probe(cls.env, cls.part_dir / 'build.log')
        for ip, mode in enumerate(modes, start=11):
            g = Guest(cls.env, cls.part_dir / mode,
                      f'lab.ip=10.79.3.{ip}/24 lab.run=/lab/rxe-mw/guest.sh',
                      net.dgram(net.free_port('udp'), net.free_port('udp')),
                      f'52:54:00:79:03:{ip}')
            (g.out / 'env').write_text(f'PROBE={binary}\n')
            (g.out / 'mode').write_text(f'{mode}\n')
            cls.addClassCleanup(g.kill)
            cls.guests[mode] = g.start(limit=LIMIT)
        for g in cls.guests.values():
            g.wait()
        if 'facts' in cls.guests:
            cls.results = cls.guests['facts'].results()

    # facts: the bind, keys and completions.
    def test_bind_guest_key(self):
        self.assertGuestPass()

    def test_window_mr_closed(self):
        self.assertGuestPass()

    def test_bound_range(self):
        self.assertGuestPass()

    def test_dereg_while_bound(self):
        self.assertGuestPass()

    def test_local_inv_any_qp(self):
        self.assertGuestPass()

    def test_invalidated(self):
        self.assertGuestPass()

    def test_dereg_after_inv(self):
        self.assertGuestPass()

    def test_provider_rkey(self):
        self.assertGuestPass()

    def test_recv_inv_flag(self):
        self.assertGuestPass()

    def test_remote_invalidated(self):
        self.assertGuestPass()

    def test_dealloc_unbinds(self):
        self.assertGuestPass()

    # Every line the probe wrote is a case here (a "setup" FAIL among them).
    def test_no_other_lines(self):
        self.assertNoOtherGuestLines()

    def assertOops(self):
        """The second invalidation oopsed the guest's kernel in
        rxe_invalidate_mw, the first one having worked."""
        g = self.guests[self.case]
        try:
            steps = (g.out / 'probe.log').read_text(errors='replace').splitlines()
        except FileNotFoundError:
            steps = []
        console = g.console.read_text(errors='replace') if g.console.exists() else ''
        said = ' '.join(steps)[:200]
        if any(s.startswith('survived') for s in steps):
            self.fail(f'no oops: {said}')
        first = next((s for s in steps if s.startswith('invalidation 1: ')), None)
        oops = re.search(r'^.*BUG: kernel NULL pointer dereference.*$', console, re.M)
        second = [s for s in steps if s.startswith('invalidation 2 of')]
        if not (first == 'invalidation 1: status 0 (success)' and oops
                and 'rxe_invalidate_mw' in console and steps and [steps[-1]] == second):
            self.fail(f'unexpected: {said} ({g.status()})')
        rip = re.search(r'RIP: [^ \r\n]* [^ \r\n]*', console)
        self.note(f'first: success; second: {oops.group(0).split("] ", 1)[-1].strip()} '
                  f'in rxe_invalidate_mw ({rip.group(0) if rip else ""})')

    def test_double_local(self):
        self.assertOops()

    def test_double_remote(self):
        self.assertOops()


if __name__ == '__main__':
    unittest.main()

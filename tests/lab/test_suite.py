"""suite: rdma-core's own test suite (tests/ of subprojects/rdma-core:
pyverbs' unittest suite, the source our provider is built from) in two
guests at the same time: one on kernel rxe (rxe0), one on virtio-rdma-pci
through our module (vrdma0).

Each guest runs the suite alone on its one device (loopback QPs, as
rdma-core's CI runs it on rxe), with the suite build's own libibverbs, rxe
and virtio_rdma providers and pyverbs (scripts/build-suite.sh:
build/guest/rdma-core-suite), through suite/job.sh and suite/runner.py (one
JSON line a test in results.jsonl).  suite/table.py puts the two side by
side (suite/table.txt, differences.txt, table.rst) and judges them against
suite/expected-vrdma.txt: each of its verdicts is the case of its name.
The whole suite (321 tests of rdma-core 56.1) takes about a minute a guest
under TCG: the CI runs all of it.

LAB_SUITE_ONLY: a regex on rdma-core's test ids (e.g. 'test_qp\\.|test_rdmacm')
runs only those tests; the differences are then judged on them alone.
"""
import importlib.util
import json
import os
import shlex
import unittest

from vrdma_lab import net, paths, protocol
from vrdma_lab.case import LabTest, quick
from vrdma_lab.env import LabSetupError
from vrdma_lab.guest import Guest

BUILD = paths.BUILD / 'guest' / 'rdma-core-suite'
SOURCE = paths.TOP / 'subprojects' / 'rdma-core'
EXPECTED = paths.LAB_SRC / 'suite' / 'expected-vrdma.txt'
LIMIT = 900      # a guest's, the whole suite in it
TEST_LIMIT = 120  # one test's (the slowest takes about 1 s): longer is a hang
SIDES = {'rxe': ('10.78.0.1', '52:54:00:78:00:01'),
         'vrdma': ('10.78.0.2', '52:54:00:78:00:02')}


def table():
    """suite/table.py, which is also a script (a table of a run's results by hand)."""
    spec = importlib.util.spec_from_file_location(
        'suite_table', paths.LAB_SRC / 'suite' / 'table.py')
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# The CI runs every case, on each kernel.
@quick
class Suite(LabTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        ko = paths.BUILD / 'guest' / cls.env.kver / 'virtio_rdma.ko'
        if not (os.access(BUILD / 'bin' / 'run_tests.py', os.X_OK)
                and list((BUILD / 'python' / 'pyverbs').glob('device.*.so'))):
            raise LabSetupError(f'no pyverbs suite build in {BUILD} (scripts/build-suite.sh)')
        if not ko.is_file():
            raise LabSetupError(f'no {ko} (scripts/build-guest.sh)')
        cls.guests = {}
        for side, (ip, mac) in SIDES.items():
            append = f'lab.ip={ip}/24 lab.rdma={side} lab.run=/lab/suite/job.sh'
            if side == 'vrdma':
                append += f' lab.ko={ko}'
            # Alone on its link: eth0 sends to a UDP port nobody reads.
            g = Guest(cls.env, cls.part_dir / side, append,
                      net.dgram(net.free_port('udp'), net.free_port('udp')), mac,
                      vrdma=side == 'vrdma')
            (g.out / 'suite.env').write_text(''.join(
                f'{k}={shlex.quote(str(v))}\n' for k, v in (
                    ('SUITE_BUILD', BUILD), ('SUITE_SRC', SOURCE),
                    ('SUITE_ONLY', os.environ.get('LAB_SUITE_ONLY', '')),
                    ('SUITE_TEST_TMO', TEST_LIMIT))))
            cls.addClassCleanup(g.kill)
            cls.guests[side] = g.start(limit=LIMIT)
        for g in cls.guests.values():
            g.wait()
        # table.py's verdicts as results lines (protocol.Results), one a
        # case of this class.
        verdicts = table().judge(*(cls.guests[s].out / 'results.jsonl' for s in SIDES),
                                 EXPECTED, cls.part_dir)
        lines = cls.part_dir / 'verdicts'
        lines.write_text(''.join(f"{'PASS' if ok else 'FAIL'} {name} {details}\n"
                                 for ok, name, details in verdicts))
        cls.results = protocol.Results(lines, origin='suite/table.py')

    def assertJobFinished(self, side):
        g = self.guests[side]
        try:
            rc = (g.out / 'job.rc').read_text().strip()
        except FileNotFoundError:
            rc = 'none'
        if rc != '0':
            self.fail(f"the suite's job did not finish (rc {rc}; {g.out / 'runner.log'}, "
                      f'{g.status()})')
        lines = (g.out / 'results.jsonl').read_text().splitlines()
        secs = sum(json.loads(line).get('secs', 0) for line in lines)
        self.note(f'{len(lines)} tests on {g.out.name}, {secs:.0f} s')

    def test_job_rxe(self):
        self.assertJobFinished('rxe')

    def test_job_vrdma(self):
        self.assertJobFinished('vrdma')

    # table.py's verdicts: the suite ran on each side, the same tests.
    def test_ran_rxe(self):
        self.assertGuestPass()

    def test_ran_vrdma(self):
        self.assertGuestPass()

    def test_same_tests(self):
        self.assertGuestPass()

    # Every test passing on rxe passes on vrdma, or is skipped there for a
    # reason expected-vrdma.txt names.
    def test_rxe_pass_is_vrdma_pass(self):
        self.assertGuestPass()

    # No test fails, hangs or crashes on vrdma.
    def test_vrdma_no_failures(self):
        self.assertGuestPass()

    # Every entry of expected-vrdma.txt still explains a difference.
    def test_expected_list_current(self):
        self.assertGuestPass()

    def test_rxe_kernel(self):
        self.assertKernelClean(self.guests['rxe'])

    def test_vrdma_kernel(self):
        self.assertKernelClean(self.guests['vrdma'])

    # Every verdict table.py gives is a case here.
    def test_no_other_lines(self):
        self.assertNoOtherGuestLines()


if __name__ == '__main__':
    unittest.main()

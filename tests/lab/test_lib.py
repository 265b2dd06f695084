"""Unit tests of the lab's library (vrdma_lab) that need no guest: KTAP,
the stage protocol (host and guest halves), results lines, case selection,
time limits, a guest's QEMU process (a script stands in), links.  Fast; run from tests/lab:

    /usr/bin/python3 -m unittest test_lib
"""
import io
import subprocess
import tempfile
import threading
import time
import types
import unittest
from pathlib import Path

from vrdma_lab import collect, ktap, net, paths, protocol
from vrdma_lab import env as lab_env
from vrdma_lab.case import CaseTimeout, LabTest, add_case, deadline, quick, timeout
from vrdma_lab.guest import Guest, kernel_trouble


def fake_part(name, *classes):
    """A module test_NAME holding CLASSES, as a part file would."""
    module = types.ModuleType(f'test_{name}')
    for cls in classes:
        cls.__module__ = module.__name__
        setattr(module, cls.__name__, cls)
    return module


def run_ktap(tests):
    out, log = io.StringIO(), io.StringIO()
    ok = ktap.run(tests, out, header=['hello'], log=log)
    return ok, out.getvalue().splitlines(), log.getvalue().splitlines()


class Ktap(unittest.TestCase):
    def test_verdicts(self):
        class Cases(LabTest):
            def test_passes(self):
                self.note('seen 42')

            def test_fails(self):
                self.fail('wanted 1, got 2')

            def test_skips(self):
                self.skipTest('no such device')

            @timeout(0.2)
            def test_overruns(self):
                time.sleep(5)

            def test_raises(self):
                raise OSError('boom')

        fake_part('k', Cases)
        ok, lines, log = run_ktap(collect.cases(Cases))
        self.assertFalse(ok)
        self.assertEqual(lines[:8], [
            'KTAP version 1', '# hello', '1..5',
            '# seen 42', 'ok 1 k/passes',
            '# wanted 1, got 2', 'not ok 2 k/fails',
            'ok 3 k/skips # SKIP no such device'])
        self.assertEqual(lines[8:10], ['# k/overruns overran its 0.2 s',
                                       'not ok 4 k/overruns # TIMEOUT 0.2 s'])
        # An error that is no assertion: its traceback, for the bug.
        self.assertEqual(lines[10], '# Traceback (most recent call last):')
        self.assertEqual(lines[-2:], ['# OSError: boom', 'not ok 5 k/raises # ERROR'])
        self.assertEqual(log, ['PASS k/passes seen 42', 'FAIL k/fails wanted 1, got 2',
                               'SKIP k/skips no such device',
                               'FAIL k/overruns TIMEOUT 0.2 s k/overruns overran its 0.2 s',
                               'FAIL k/raises ERROR OSError: boom'])

    def test_class_setup_failure_fails_each_case(self):
        class Broken(LabTest):
            @classmethod
            def setUpClass(cls):
                raise AssertionError('no kernel')

            def test_a(self):
                pass

            def test_b(self):
                pass

        class Fine(LabTest):
            @classmethod
            def setUpClass(cls):
                pass

            def test_c(self):
                pass

        fake_part('f', Broken, Fine)
        ok, lines, _ = run_ktap(collect.cases(Broken) + collect.cases(Fine))
        self.assertFalse(ok)
        self.assertEqual([line for line in lines if not line.startswith('#')], [
            'KTAP version 1', '1..3', 'not ok 1 f/a # ERROR no kernel',
            'not ok 2 f/b # ERROR no kernel', 'ok 3 f/c'])

    def test_class_skip_skips_each_case(self):
        class Skipped(LabTest):
            @classmethod
            def setUpClass(cls):
                raise unittest.SkipTest('no 6.12 kernel')

            def test_a(self):
                pass

        fake_part('s', Skipped)
        ok, lines, _ = run_ktap(collect.cases(Skipped))
        self.assertTrue(ok)
        self.assertEqual(lines[-1], 'ok 1 s/a # SKIP no 6.12 kernel')

    def test_tap13_version_line(self):
        out = io.StringIO()
        self.assertTrue(ktap.run([], out, ktap.TAP13_VERSION))
        self.assertEqual(out.getvalue(), 'TAP version 13\n1..0\n')


class Selection(unittest.TestCase):
    def setUp(self):
        @quick
        class Quick(LabTest):
            def test_zeta(self):
                pass

            def test_alpha(self):
                pass

        class Mixed(LabTest):
            @quick
            def test_one_quick(self):
                pass

            def test_slow(self):
                pass

        self.modules = [fake_part('p', Quick, Mixed)]

    def names(self, **kwargs):
        return [t.name for t in collect.select(self.modules, **kwargs)]

    def test_order_is_as_written(self):
        self.assertEqual(self.names(), ['p/zeta', 'p/alpha', 'p/one-quick', 'p/slow'])

    def test_quick(self):
        self.assertEqual(self.names(quick=True), ['p/zeta', 'p/alpha', 'p/one-quick'])

    def test_regex_over_part_and_case(self):
        self.assertEqual(self.names(pattern='^p/(a|s)'), ['p/alpha', 'p/slow'])
        self.assertEqual(self.names(pattern='quick', quick=True), ['p/one-quick'])

    def test_each_class_knows_its_chosen_cases(self):
        self.names(quick=True)
        quick_cls, mixed = collect.part_classes(self.modules[0])
        self.assertEqual(quick_cls.chosen(), ['test_zeta', 'test_alpha'])
        self.assertEqual(mixed.chosen(), ['test_one_quick'])
        self.names(pattern='slow')
        self.assertEqual(quick_cls.chosen(), [])
        # Outside lab.py (plain unittest): every case.
        mixed.lab_chosen = None
        self.assertEqual(sorted(mixed.chosen()), ['test_one_quick', 'test_slow'])


class Generated(unittest.TestCase):
    def setUp(self):
        class Table(LabTest):
            def test_first(self):
                pass

        for name in ('v4-rc_pingpong-gsrv', 'v6-write_bw-gcli'):
            add_case(Table, name, lambda self: self.note(self.case),
                     quick=name.startswith('v4'), timeout=90)
        self.cls = Table
        self.modules = [fake_part('g', Table)]

    def test_names_keep_their_underscores(self):
        tests = collect.select(self.modules)
        self.assertEqual([t.name for t in tests],
                         ['g/first', 'g/v4-rc_pingpong-gsrv', 'g/v6-write_bw-gcli'])
        self.assertEqual([t.case_timeout() for t in tests], [60, 90, 90])

    def test_quick_and_chosen_cases(self):
        tests = collect.select(self.modules, quick=True)
        self.assertEqual([t.name for t in tests], ['g/v4-rc_pingpong-gsrv'])
        self.assertEqual(self.cls.chosen_cases(), ['v4-rc_pingpong-gsrv'])

    def test_runs_its_check(self):
        t = self.cls('test_v6_write_bw_gcli')
        result = unittest.TestResult()
        t.run(result)
        self.assertTrue(result.wasSuccessful())
        self.assertEqual(t.notes, ['v6-write_bw-gcli'])

    def test_a_name_twice_is_refused(self):
        with self.assertRaises(ValueError):
            add_case(self.cls, 'v4-rc_pingpong-gsrv', lambda self: None)


class Deadline(unittest.TestCase):
    def test_expires(self):
        with self.assertRaises(CaseTimeout):
            with deadline(0.1, 'x'):
                time.sleep(2)

    def test_cancelled_when_done(self):
        with deadline(0.2, 'x'):
            pass
        time.sleep(0.3)  # no alarm left behind


class InTempDir(unittest.TestCase):
    """Each case in a fresh directory, self.tmp."""

    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.tmp = Path(tmp.name)


class Stages(InTempDir):
    def setUp(self):
        super().setUp()
        self.out = self.tmp  # the guest's /out

    def guest(self, names, answered):
        """A thread doing what guest-lib.sh's stage does, for each name."""
        def job():
            for name in names:
                tmp = self.out / f'stage.{name}.tmp'
                tmp.write_text(f'text of {name}\n')
                tmp.rename(self.out / f'stage.{name}')
                end = time.monotonic() + 5
                while not (self.out / f'stage.{name}.ok').exists() and time.monotonic() < end:
                    time.sleep(0.01)
                answered.append((self.out / f'stage.{name}.ok').exists())
        t = threading.Thread(target=job)
        t.start()
        return t

    def test_each_stage_served_in_order(self):
        seen, answered = [], []
        t = self.guest(['before', 'connected', 'after'], answered)
        stages = protocol.Stages(self.out, {'before': seen.append, 'after': seen.append})
        served = stages.serve(t.is_alive, interval=0.01)
        self.assertEqual(served, [('before', 'text of before'),
                                  ('connected', 'text of connected'),
                                  ('after', 'text of after')])
        self.assertEqual(seen, ['text of before', 'text of after'])
        self.assertEqual(answered, [True, True, True])

    def test_answered_when_the_handler_fails(self):
        answered = []
        t = self.guest(['up'], answered)

        def broken(text):
            raise RuntimeError('QMP did not answer')

        with self.assertRaises(RuntimeError):
            protocol.Stages(self.out, {'up': broken}).serve(t.is_alive, interval=0.01)
        t.join()
        self.assertEqual(answered, [True])

    def test_guest_lib_sh(self):
        """The guest's half, tests/lab/guest-lib.sh, against the host's."""
        script = ('. "$0"; result PASS a seen 1; stage up hello world; echo "rc=$?";'
                  'LAB_STAGE_WAIT=1; stage unanswered; echo "rc=$?"')
        job = subprocess.Popen(['bash', '-c', script, str(paths.LAB_SRC / 'guest-lib.sh')],
                               env={'LAB_OUT': str(self.out), 'PATH': '/usr/bin:/bin'},
                               stdout=subprocess.PIPE, text=True)
        stages = protocol.Stages(self.out)
        # Serves 'up' only: 'unanswered' waits its LAB_STAGE_WAIT, then fails.
        while job.poll() is None and not stages.served:
            stages.poll()
            time.sleep(0.01)
        out = job.communicate(timeout=10)[0]
        self.assertEqual(stages.served, [('up', 'hello world')])
        self.assertEqual(out.split(), ['rc=0', 'rc=1'])
        self.assertEqual(protocol.Results(self.out / 'results').cases, {'a': [('PASS', 'seen 1')]})


class Results(unittest.TestCase):
    def test_lines(self):
        with tempfile.NamedTemporaryFile('w') as f:
            f.write('PASS start serving rxe0\nFAIL hello wanted 2\nSKIP v6 no GID\n'
                    'PASS bare\nwhat is this\n\nPASS start again\n')
            f.flush()
            r = protocol.Results(f.name)
        self.assertEqual(r.cases, {'start': [('PASS', 'serving rxe0'), ('PASS', 'again')],
                                   'hello': [('FAIL', 'wanted 2')],
                                   'v6': [('SKIP', 'no GID')], 'bare': [('PASS', '')]})
        self.assertEqual(r.malformed, ['what is this'])

    def test_missing_file_is_no_line(self):
        self.assertEqual(protocol.Results('/nonexistent/results').cases, {})


class HiddenFromGuests(unittest.TestCase):
    def test_guest_mounts(self):
        self.assertEqual(lab_env.hidden_from_guests('/tmp/clone/build'), '/tmp')
        self.assertEqual(lab_env.hidden_from_guests('/run'), '/run')
        self.assertIsNone(lab_env.hidden_from_guests('/work/clone/build'))
        self.assertIsNone(lab_env.hidden_from_guests('/tmpfoo/build'))


class FakeEnv:
    """A LabEnv whose QEMU is a shell script (no guest boots)."""

    def __init__(self, tmp, script):
        self.dir = tmp
        self.sockdir = tmp
        self.qemu = tmp / 'qemu'
        self.qemu.write_text('#!/bin/sh\n' + script)
        self.qemu.chmod(0o755)

    def prepare(self):
        pass


class GuestProcess(InTempDir):
    def test_command_line(self):
        env = FakeEnv(self.tmp, 'for a; do echo "$a"; done\n')
        g = Guest(env, self.tmp / 'g', 'lab.run=/lab/x.sh', 'user', '52:54:00:00:00:01',
                  vrdma=True, vrdma_opts='max-sge=8').start(limit=10)
        self.assertEqual(g.wait(), 0)
        args = (g.out / 'qemu.log').read_text().splitlines()
        self.assertIn('virtio-net-pci,netdev=n0,mac=52:54:00:00:00:01,addr=04.0,multifunction=on',
                      args)
        self.assertIn('virtio-rdma-pci,addr=04.1,max-sge=8', args)
        self.assertIn(f'unix:{g.qmp_path},server=on,wait=off', args)
        self.assertIn(f'local,id=fsout,path={g.out},security_model=none,multidevs=remap', args)
        self.assertTrue(args[args.index('-append') + 1].endswith(' lab.run=/lab/x.sh'))

    def test_killed_at_its_limit(self):
        g = Guest(FakeEnv(self.tmp, 'exec sleep 30\n'), self.tmp / 'g', '', 'user',
                  '52:54:00:00:00:01').start(limit=0.3)
        g.wait()
        self.assertTrue(g.timed_out)
        self.assertFalse(g.running())
        self.assertIn('killed at its 0.3 s limit', g.results().origin)


class Net(unittest.TestCase):
    def test_dgram_pair(self):
        a, b = net.dgram_pair()
        pa, pb = (int(nd.split('local.port=')[1].split(',')[0]) for nd in (a, b))
        self.assertEqual(a, net.dgram(pa, pb))
        self.assertEqual(b, net.dgram(pb, pa))


class Paths(unittest.TestCase):
    def test_kernel_dir(self):
        self.assertEqual(paths.kernel_dir('6.1'), paths.BUILD / 'lab')
        self.assertEqual(paths.kernel_dir('6.12'), paths.BUILD / 'lab-6.12')
        with self.assertRaises(ValueError):
            paths.kernel_dir('../x')



class Kernels(unittest.TestCase):
    """A class that runs on some kernels only (LabTest.kernels)."""

    def setUp(self):
        class Everywhere(LabTest):
            def test_a(self):
                pass

        class Only61(LabTest):
            kernels = ('6.1',)

            def test_b(self):
                pass

        self.only = Only61
        self.modules = [fake_part('kn', Everywhere, Only61)]

    def test_left_out_elsewhere(self):
        names = lambda kernel: [t.name for t in collect.select(self.modules, kernel=kernel)]
        self.assertEqual(names('6.1'), ['kn/a', 'kn/b'])
        self.assertEqual(names('6.12'), ['kn/a'])
        self.assertEqual(self.only.chosen(), [])

    def test_unittest_skips_it(self):
        from vrdma_lab import env
        saved = env._current
        try:
            env._current = env.LabEnv(kernel='6.12')
            with self.assertRaises(unittest.SkipTest):
                self.only.setUpClass()
        finally:
            env._current = saved


class UdpRcvbufErrors(InTempDir):
    def test_reads_snmp(self):
        snmp = self.tmp / 'snmp'
        snmp.write_text('Ip: Forwarding DefaultTTL\nIp: 1 64\n'
                        'Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors\n'
                        'Udp: 10 2 3 9 7\n')
        self.assertEqual(net.udp_rcvbuf_errors(snmp), 7)
        self.assertGreaterEqual(net.udp_rcvbuf_errors(), 0)


class PartName(unittest.TestCase):
    """A part whose name is no module name (rxe-mw): LabTest.lab_part."""

    def test_lab_part_names_the_part_and_its_cases(self):
        class Named(LabTest):
            lab_part = 'x-y'

            def test_one(self):
                pass

        module = fake_part('x_y', Named)
        self.assertEqual(Named.part(), 'x-y')
        self.assertEqual([t.name for t in collect.select([module], pattern='^x-y/')],
                         ['x-y/one'])

    def test_parts_keys_by_part_name(self):
        self.assertIn('mux', collect.parts())


class ToolCaseWait(InTempDir):
    """ToolCases.wait: until the guest ended a case, stopped, or a limit."""

    def test_until_rc(self):
        tc = protocol.ToolCases(self.tmp)
        threading.Timer(0.3, lambda: (self.tmp / 'c.rc').write_text('0\n')).start()
        t0 = time.monotonic()
        self.assertEqual(tc.wait('c', lambda: True, 10, interval=0.05).rc, 0)
        self.assertLess(time.monotonic() - t0, 5)

    def test_until_guest_stops_or_limit(self):
        tc = protocol.ToolCases(self.tmp)
        self.assertIsNone(tc.wait('c', lambda: False, 10).rc)
        t0 = time.monotonic()
        self.assertIsNone(tc.wait('c', lambda: True, 0.2, interval=0.05).rc)
        self.assertLess(time.monotonic() - t0, 5)



class KernelTrouble(InTempDir):
    def test_dmesg_final_first(self):
        (self.tmp / 'dmesg.txt').write_text('[1] WARNING: CPU: 0 PID: 1 at x\n')
        (self.tmp / 'dmesg-final.txt').write_text('[1] virtio_rdma: probe\n')
        self.assertEqual(kernel_trouble(self.tmp), (self.tmp / 'dmesg-final.txt', []))

    def test_lines_of_trouble(self):
        (self.tmp / 'dmesg.txt').write_text(
            '[1] ok\n[2] BUG: kernel NULL pointer dereference\n[3] Call Trace:\n[4] fine\n')
        log, lines = kernel_trouble(self.tmp)
        self.assertEqual(log, self.tmp / 'dmesg.txt')
        self.assertEqual(lines, ['[2] BUG: kernel NULL pointer dereference', '[3] Call Trace:'])

    def test_lockups_and_stalls(self):
        (self.tmp / 'dmesg.txt').write_text(
            '[1] NMI watchdog: Watchdog detected hard LOCKUP on cpu 1\n'
            '[2] rcu: INFO: rcu_preempt self-detected stall on CPU\n'
            '[3] watchdog: BUG: soft lockup - CPU#0 stuck for 22s! [x:1]\n'
            '[4] rcu: 1-...!: (2 ticks this GP)\n')
        self.assertEqual(len(kernel_trouble(self.tmp)[1]), 3)

    def test_no_log(self):
        (self.tmp / 'dmesg.txt').write_text('')
        self.assertEqual(kernel_trouble(self.tmp), (None, []))

    def test_assert_kernel_clean(self):
        class Case(LabTest):
            def test_it(self):
                pass
        t = Case('test_it')
        t.notes = []
        g = types.SimpleNamespace(out=self.tmp, console=self.tmp / 'console.log',
                                  status=lambda: 'guest x: QEMU exit 0')
        g.console.write_text('LAB: ready at 5.0s with rxe0\n')
        with self.assertRaisesRegex(AssertionError, 'no kernel log'):
            t.assertKernelClean(g)
        (self.tmp / 'dmesg.txt').write_text('[1] fine\n')
        t.assertKernelClean(g)
        self.assertEqual(t.notes, ['no oops/BUG/WARNING in dmesg.txt; LAB: ready at 5.0s with rxe0'])
        (self.tmp / 'dmesg.txt').write_text('[1] Call Trace:\n[2] WARNING: at x\n')
        with self.assertRaisesRegex(AssertionError, '2 lines of oops/BUG/WARNING in .*: .2. WARNING'):
            t.assertKernelClean(g)


class ServeAll(InTempDir):
    """protocol.serve_all: the stages of two guests' jobs from one loop."""

    def test_both_served(self):
        outs = [self.tmp / 'A', self.tmp / 'B']
        for out in outs:
            out.mkdir()
        seen = []
        stages = [protocol.Stages(out, {'up': lambda text, n=out.name: seen.append((n, text))})
                  for out in outs]
        # The stages wait already; the guests have ended: served once more.
        for out in outs:
            (out / 'stage.up').write_text(f'{out.name} is up\n')
        protocol.serve_all(stages, lambda: False, interval=0.01)
        self.assertEqual(sorted(seen), [('A', 'A is up'), ('B', 'B is up')])
        self.assertTrue(all((out / 'stage.up.ok').exists() for out in outs))


class ClassCleanups(unittest.TestCase):
    """case.class_cleanups: what an interrupted run left pending runs once."""

    def test_pending_run_once(self):
        from vrdma_lab.case import class_cleanups
        done = []

        class Owner(LabTest):
            def test_a(self):
                pass

            def test_b(self):
                pass

        Owner.addClassCleanup(done.append, 'daemons')
        tests = [Owner('test_a'), Owner('test_b')]
        class_cleanups(tests)
        class_cleanups(tests)
        self.assertEqual(done, ['daemons'])


class KernelArgs(InTempDir):
    def test_guest_command_line_starts_with_them(self):
        from vrdma_lab.guest import KERNEL_ARGS
        env = FakeEnv(self.tmp, 'for a; do echo "$a"; done\n')
        g = Guest(env, self.tmp / 'g', 'lab.run=/lab/x.sh', 'user', '52:54:00:00:00:01')
        self.assertEqual(g.args[g.args.index('-append') + 1],
                         KERNEL_ARGS + ' lab.run=/lab/x.sh')


if __name__ == '__main__':
    unittest.main()

#!/usr/bin/python3
"""rdma-core's test suite (tests/ of its source) with one result per test.

Runs in a lab guest (tests/lab/suite/job.sh), with PYTHONPATH set to the
suite build's python/ (pyverbs), as rdma-core's bin/run_tests.py does:

  runner.py --src DIR --dev DEV --out FILE [--only REGEX] [--tmo SECONDS]

DIR is rdma-core's tests/ directory.  Every test id that run_tests.py
--list-tests would print (less those --only leaves out) is run, in that
order, by a child process speaking JSON lines; one line per finished test
goes to FILE:
  {"id": ..., "outcome": "pass|fail|error|skip|xfail|upass|timeout|crash",
   "secs": ..., "detail": "skip reason or traceback"}
A test that does not finish within --tmo seconds, or whose child dies (a
segfault in a provider, a kernel oops that kills the process), is recorded
as timeout / crash and the child is restarted with the tests after it: one
hung test does not lose the rest of the run.  Python's random is seeded
with each test's id before it runs (the suite draws QP types, sizes and
flags from it), so both guests and every run draw the same.
"""
import argparse
import json
import os
import random
import re
import select
import signal
import subprocess
import sys
import time
import traceback
import unittest
from importlib.machinery import SourceFileLoader


def load_tests_module(src, dev):
    """rdma-core's tests package, loaded as run_tests.py loads it."""
    sys.path.insert(0, src)
    from args_parser import parser
    sys.argv = ['run_tests.py', '--dev', dev]
    parser.parse_args()
    return SourceFileLoader('tests', os.path.join(src, '__init__.py')).load_module()


def list_ids(mod):
    ids = []
    for m in mod.__test_modules__:
        for t in unittest.TestLoader().loadTestsFromModule(m):
            for case in t:
                ids.append(case.id())
    return ids


class LineResult(unittest.TestResult):
    """One JSON line per test on fd 1 (sub-tests fold into their test)."""

    def __init__(self, out):
        super().__init__()
        self.out = out
        self.cur = None

    def emit(self, **kw):
        self.out.write(json.dumps(kw) + '\n')
        self.out.flush()

    def startTest(self, test):
        super().startTest(test)
        # The suite draws QP types, sizes, flags and access bits from
        # random: seeded by the test's id, each test draws the same on
        # both sides and from run to run.
        random.seed(test.id())
        self.cur = {'id': test.id(), 'outcome': 'pass', 'detail': '', 't0': time.monotonic()}
        self.emit(ev='start', id=test.id())

    def _set(self, outcome, detail):
        # The worst outcome wins: error > fail > others.
        rank = {'error': 3, 'fail': 2}
        if rank.get(outcome, 1) >= rank.get(self.cur['outcome'], 0):
            self.cur['outcome'] = outcome
        if detail:
            self.cur['detail'] = (self.cur['detail'] + '\n' + detail).strip()

    def addError(self, test, err):
        super().addError(test, err)
        if self.cur is None or self.cur['id'] != test.id():
            # setUpClass / module errors come without a startTest.
            self.emit(ev='end', id=test.id(), outcome='error', secs=0,
                      detail=self._exc_info_to_string(err, test))
            return
        self._set('error', self._exc_info_to_string(err, test))

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._set('fail', self._exc_info_to_string(err, test))

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        if self.cur is None or self.cur['id'] != test.id():
            self.emit(ev='end', id=test.id(), outcome='skip', secs=0, detail=reason)
            return
        self._set('skip', reason)

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._set('xfail', self._exc_info_to_string(err, test))

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._set('upass', '')

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is not None:
            bad = 'fail' if issubclass(err[0], test.failureException) else 'error'
            self._set(bad, f'{subtest.id()}: ' + self._exc_info_to_string(err, test))

    def stopTest(self, test):
        super().stopTest(test)
        c, self.cur = self.cur, None
        if c is not None:
            self.emit(ev='end', id=c['id'], outcome=c['outcome'],
                      secs=round(time.monotonic() - c['t0'], 2), detail=c['detail'])


def child(args):
    # Our stdout is the protocol; the tests' own prints go to stderr.
    proto = os.fdopen(os.dup(1), 'w')
    os.dup2(2, 1)
    try:
        mod = load_tests_module(args.src, args.dev)
    except Exception:
        proto.write(json.dumps({'ev': 'loaderror', 'detail': traceback.format_exc()}) + '\n')
        return 1
    if args.list:
        for i in list_ids(mod):
            proto.write(json.dumps({'ev': 'id', 'id': i}) + '\n')
        return 0
    ids = [line.strip() for line in sys.stdin if line.strip()]
    suite = unittest.TestLoader().loadTestsFromNames(ids, module=mod)
    suite.run(LineResult(proto))
    proto.write(json.dumps({'ev': 'done'}) + '\n')
    proto.flush()
    return 0


def spawn(args, extra, stdin_text, errlog):
    p = subprocess.Popen([sys.executable, os.path.abspath(__file__), '--child',
                          '--src', args.src, '--dev', args.dev] + extra,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=errlog, start_new_session=True, text=True)
    p.stdin.write(stdin_text)
    p.stdin.close()
    return p


def kill(p):
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait()


class Lines:
    """Lines from a pipe, with a timeout: select() on the descriptor and
    our own buffer (a buffered file would hold lines select() cannot see)."""

    def __init__(self, f):
        self.fd, self.buf = f.fileno(), b''

    def get(self, timeout):
        """The next line; None at a timeout, '' at end of file."""
        end = time.monotonic() + timeout
        while b'\n' not in self.buf:
            left = end - time.monotonic()
            if left <= 0 or not select.select([self.fd], [], [], left)[0]:
                return None
            chunk = os.read(self.fd, 65536)
            if not chunk:
                rest, self.buf = self.buf, b''
                return rest.decode()
            self.buf += chunk
        line, self.buf = self.buf.split(b'\n', 1)
        return line.decode() + '\n'


def supervise(args):
    errlog = open(args.out + '.stderr', 'a')
    p = spawn(args, ['--list'], '', errlog)
    ids, err = [], None
    for line in p.stdout:
        ev = json.loads(line)
        if ev['ev'] == 'id':
            ids.append(ev['id'])
        elif ev['ev'] == 'loaderror':
            err = ev['detail']
    p.wait()
    if err or p.returncode:
        sys.stderr.write(f'runner: listing the tests failed (rc {p.returncode})\n{err or ""}')
        return 2
    if args.only:
        ids = [i for i in ids if re.search(args.only, i)]
    print(f'runner: {len(ids)} tests on {args.dev}', flush=True)
    out = open(args.out, 'w')
    todo = list(ids)
    while todo:
        p = spawn(args, [], '\n'.join(todo) + '\n', errlog)
        cur, t0, lines = None, time.monotonic(), Lines(p.stdout)
        finished = False
        while True:
            line = lines.get(max(args.tmo - (time.monotonic() - t0), 0))
            if line is None:
                kill(p)
                rec = {'id': cur or todo[0], 'outcome': 'timeout', 'secs': args.tmo,
                       'detail': f'no result within {args.tmo} s'}
                break
            if not line:
                p.wait()
                if cur is None and not todo:
                    finished = True
                    rec = None
                else:
                    rec = {'id': cur or todo[0], 'outcome': 'crash',
                           'secs': round(time.monotonic() - t0, 2),
                           'detail': f'the test process ended (status {p.returncode})'
                                     ' without a result'}
                break
            ev = json.loads(line)
            if ev['ev'] == 'start':
                cur, t0 = ev['id'], time.monotonic()
            elif ev['ev'] == 'end':
                ev.pop('ev')
                m = re.match(r'^setUp(Class|Module) \((.*)\)$', ev['id'])
                if m:
                    # A class or module fixture skipped or failed: its
                    # tests never start; each gets the fixture's outcome.
                    for i in [i for i in todo if i.startswith(m.group(2) + '.')]:
                        rec = dict(ev, id=i)
                        out.write(json.dumps(rec) + '\n')
                        todo.remove(i)
                        print(f"{ev['outcome']:7} {0:7.2f} {i}", flush=True)
                    out.flush()
                    cur, t0 = None, time.monotonic()
                    continue
                out.write(json.dumps(ev) + '\n')
                out.flush()
                if ev['id'] in todo:
                    todo.remove(ev['id'])
                print(f"{ev['outcome']:7} {ev['secs']:7.2f} {ev['id']}", flush=True)
                cur, t0 = None, time.monotonic()
            elif ev['ev'] == 'done':
                kill(p)
                finished = True
                rec = None
                break
        if rec is not None:
            out.write(json.dumps(rec) + '\n')
            out.flush()
            print(f"{rec['outcome']:7} {rec['secs']:7.2f} {rec['id']}", flush=True)
            if rec['id'] in todo:
                todo.remove(rec['id'])
        if finished:
            # Tests the loader could not resolve never started: say so.
            for i in todo:
                out.write(json.dumps({'id': i, 'outcome': 'error', 'secs': 0,
                                      'detail': 'not run (unknown to the loader)'}) + '\n')
            break
    out.close()
    print('runner: done', flush=True)
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--src', required=True)
    ap.add_argument('--dev', required=True)
    ap.add_argument('--out')
    ap.add_argument('--only')
    ap.add_argument('--tmo', type=float, default=300)
    ap.add_argument('--child', action='store_true')
    ap.add_argument('--list', action='store_true')
    args = ap.parse_args()
    if args.child:
        return child(args)
    return supervise(args)


if __name__ == '__main__':
    sys.exit(main())

"""Runs unittest cases and reports them in KTAP, version 1
(Documentation/dev-tools/ktap.rst of the kernel):

    KTAP version 1
    # diagnostics
    1..N
    # what case 1 noted or why it failed
    ok 1 NAME
    not ok 2 NAME
    ok 3 NAME # SKIP reason
    not ok 4 NAME # TIMEOUT 60 s

One line per case, in order, as each ends; every other line starts with
"# ".  KTAP also admits "TAP version 13" as its version line, which is
what meson's TAP parser knows.  A case that never ran because its class's
set-up failed is "not ok" with that error.
"""
import traceback
import unittest

from .case import CaseTimeout
from .env import LabSetupError

KTAP_VERSION = 'KTAP version 1'
TAP13_VERSION = 'TAP version 13'


def case_name(test):
    """A case's name in the report: PART/CASE for a LabTest (no '#')."""
    name = getattr(test, 'name', None) or test.id()
    return name.replace('#', '_')


def _error_lines(err):
    """What to say about an exception: the message of a failed assertion,
    a timeout or a missing prerequisite, the whole traceback of anything
    else (a bug)."""
    etype, value, tb = err
    if issubclass(etype, (AssertionError, CaseTimeout, LabSetupError)):
        text = str(value)
    else:
        text = ''.join(traceback.format_exception(etype, value, tb))
    return text.rstrip().splitlines() or [etype.__name__]


class KtapResult(unittest.TestResult):
    """Prints each case's KTAP line when it ends; LOG (a file object, or
    None) gets "PASS|FAIL|SKIP NAME DETAILS" lines, like the bash parts'
    results.txt."""

    def __init__(self, out, planned, log=None):
        super().__init__()
        self.out = out
        self.log = log
        self.number = {id(t): i + 1 for i, t in enumerate(planned)}
        self.planned = list(planned)
        self.reported = set()
        self.fixture = None   # (verdict, directive, lines) of a set-up
        self.failed = False
        self._state = None

    def _print(self, line):
        self.out.write(line + '\n')
        self.out.flush()

    def _diagnostics(self, lines):
        for line in lines:
            self._print('# ' + line)

    def _report(self, test, verdict, directive, lines):
        self.reported.add(id(test))
        self._diagnostics(lines)
        name = case_name(test)
        ok = 'not ok' if verdict == 'FAIL' else 'ok'
        self._print(f'{ok} {self.number[id(test)]} {name}'
                    + (f' # {directive}' if directive else ''))
        if verdict == 'FAIL':
            self.failed = True
        if self.log:
            # A failure's last line says most (an exception's message).
            said = lines[-1:] if verdict == 'FAIL' else lines
            details = ' '.join([directive.removeprefix('SKIP')] + said).strip()
            self.log.write(f'{verdict} {name} {details}'.rstrip() + '\n')
            self.log.flush()

    def report_not_run(self, upto=None):
        """Reports the cases before UPTO (all, without) that never started:
        their class's set-up failed or skipped them."""
        verdict, directive, lines = self.fixture or ('FAIL', 'ERROR not run', [])
        for t in self.planned:
            if t is upto:
                break
            if id(t) not in self.reported:
                self._report(t, verdict, directive, lines)

    def startTest(self, test):
        super().startTest(test)
        self.report_not_run(upto=test)
        self.fixture = None
        self._state = {'verdict': 'PASS', 'directive': '', 'lines': []}

    def stopTest(self, test):
        super().stopTest(test)
        s = self._state
        lines = s['lines'] + list(getattr(test, 'notes', []))
        self._report(test, s['verdict'], s['directive'], lines)

    def _fail(self, test, err, directive=''):
        if not isinstance(test, unittest.TestCase):
            # A class's or module's set-up or tear-down: its cases, if
            # they never start, are reported with this error.
            lines = [f'{test}:'] + _error_lines(err)
            self._diagnostics(lines)
            self.fixture = ('FAIL', f'ERROR {lines[-1]}', [])
            self.failed = True
            return
        if issubclass(err[0], CaseTimeout):
            directive = f'TIMEOUT {test.case_timeout()} s'
        s = self._state
        s['verdict'] = 'FAIL'
        s['directive'] = s['directive'] or directive
        s['lines'] += _error_lines(err)

    def addError(self, test, err):
        super().addError(test, err)
        self._fail(test, err, 'ERROR')

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._fail(test, err)

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is not None:
            self._fail(test, err)

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        if not isinstance(test, unittest.TestCase):
            self.fixture = ('SKIP', f'SKIP {reason}', [])
        elif self._state['verdict'] == 'PASS':
            self._state.update(verdict='SKIP', directive=f'SKIP {reason}')

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._state['directive'] = 'XFAIL'

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._state.update(verdict='FAIL', lines=['passed, but expected to fail'])


def run(tests, out, version_line=KTAP_VERSION, header=(), log=None):
    """Runs TESTS (in this order) and prints KTAP to OUT; true when none
    failed."""
    out.write(version_line + '\n')
    for line in header:
        out.write(f'# {line}\n')
    out.write(f'1..{len(tests)}\n')
    out.flush()
    result = KtapResult(out, tests, log)
    unittest.TestSuite(tests).run(result)
    result.report_not_run()
    return not result.failed

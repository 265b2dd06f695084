"""LabTest, the base of every part's test classes, and what is declared
beside a case: @timeout(SECONDS) and @quick.

A part is tests/lab/test_PART.py; each test method is a case, named
PART/CASE after the method: test_CASE, with '-' for '_' (test_cm_held is
mux/cm-held).  A case's files go to its own directory, self.case_dir =
<results>/<run>/PART/CASE/; what a class shares (its guests) to
self.part_dir = <results>/<run>/PART/.
"""
import contextlib
import re
import signal
import threading
import unittest

from . import env as lab_env
from . import guest as lab_guest

DEFAULT_TIMEOUT = 60


class CaseTimeout(Exception):
    """A case overran the time declared beside it."""


def timeout(seconds):
    """Declares a case's time limit: setUp, the case and its clean-ups
    (default DEFAULT_TIMEOUT)."""
    def mark(fn):
        fn.lab_timeout = seconds
        return fn
    return mark


def quick(obj):
    """Marks a case, or every case of a class, as quick: what --quick and
    the meson suite lab-quick run (the CI's)."""
    obj.lab_quick = True
    return obj


@contextlib.contextmanager
def deadline(seconds, what):
    """Raises CaseTimeout in the main thread after SECONDS (SIGALRM: the
    lab runs its cases in the main thread, one at a time)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum, frame):
        raise CaseTimeout(f'{what} overran its {seconds} s')

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def case_of(method_name, method=None):
    """The case a test method is (and its guest line's name): the name
    add_case gave it, else the method's name."""
    named = getattr(method, 'lab_case', None)
    return named or method_name.removeprefix('test_').replace('_', '-')


def add_case(cls, name, check, quick=False, timeout=DEFAULT_TIMEOUT):
    """Gives CLS a case named NAME that runs check(self): for the cases a
    part generates from a table (a tool per address family and role), whose
    names keep what a method's cannot ('_', '+', '.').  After the class
    statement; cases keep the order they are added in."""
    method = 'test_' + re.sub(r'\W', '_', name)
    if method in vars(cls):
        raise ValueError(f'{cls.__name__}: case {name!r} twice ({method})')

    def case(self):
        return check(self)
    case.__name__ = case.__qualname__ = method
    case.lab_case = name
    case.lab_timeout = timeout
    if quick:
        case.lab_quick = True
    setattr(cls, method, case)
    return case


def class_cleanups(tests):
    """Runs the class clean-ups (addClassCleanup) still pending for the
    classes of TESTS: an interrupted run (SIGTERM, SIGINT) leaves unittest
    before it reaches them, and what a class set up outside its guests
    (libvirt's daemons and namespace) must still go.  Those already run
    are not run again."""
    for cls in dict.fromkeys(type(t) for t in tests):
        cls.doClassCleanups()


class LabTest(unittest.TestCase):
    env = None       # the LabEnv, from setUpClass
    part_dir = None  # <results>/<run>/PART/, from setUpClass
    results = None   # a class's guest job's Results, for assertGuestPass
    lab_chosen = None  # the test methods of this class the run chose (collect.select)
    kernels = None   # the guest kernel series the class runs on (None: every one)
    lab_part = None  # the part's name, where it is no module name ('rxe-mw')

    @classmethod
    def runs_on(cls, kernel):
        """Whether the class has cases on guest kernel series KERNEL: a
        class that the CI runs on some kernels only says so in kernels
        (collect.select leaves it out elsewhere; unittest skips it)."""
        return cls.kernels is None or kernel in cls.kernels

    @classmethod
    def part(cls):
        """The part's name: lab_part where test_PART.py cannot spell it
        (rxe-mw), else the file's."""
        return cls.lab_part or cls.__module__.rsplit('.', 1)[-1].removeprefix('test_')

    @classmethod
    def chosen(cls):
        """The names of this class's test methods this run runs (what
        --quick and -k left; all of them under plain unittest): a class
        whose guests run one job for all its cases gives them only these."""
        if cls.lab_chosen is not None:
            return list(cls.lab_chosen)
        return list(unittest.defaultTestLoader.getTestCaseNames(cls))

    @classmethod
    def chosen_cases(cls):
        """The case names of chosen(): what a guest job is told to run."""
        return [case_of(n, getattr(cls, n)) for n in cls.chosen()]

    @property
    def case(self):
        return case_of(self._testMethodName, getattr(self, self._testMethodName))

    @property
    def name(self):
        return f'{self.part()}/{self.case}'

    def case_timeout(self):
        return getattr(getattr(self, self._testMethodName), 'lab_timeout', DEFAULT_TIMEOUT)

    def is_quick(self):
        return bool(getattr(getattr(self, self._testMethodName), 'lab_quick', False)
                    or getattr(type(self), 'lab_quick', False))

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.env = lab_env.current()
        if not cls.runs_on(cls.env.kernel):
            raise unittest.SkipTest(f'not on kernel {cls.env.kernel} '
                                    f'(only {", ".join(cls.kernels)})')
        cls.env.prepare()
        cls.part_dir = cls.env.run_dir / cls.part()

    @property
    def case_dir(self):
        d = self.part_dir / self.case
        d.mkdir(parents=True, exist_ok=True)
        return d

    def run(self, result=None):
        self.notes = []
        with deadline(self.case_timeout(), self.name):
            return super().run(result)

    def note(self, text):
        """A line about this case for the report (a KTAP diagnostic)."""
        self.notes.append(text)

    def assertGuestPass(self, name=None, results=None):
        """The guest job's line of case NAME (default: this case) is PASS;
        its details become a note.  A SKIP line skips the case."""
        name = name or self.case
        results = results or self.results
        lines = results.cases.get(name)
        if not lines:
            self.fail(f"no line '{name}' in {results.path} ({results.origin})")
        for verdict, details in lines:
            if verdict == 'FAIL':
                self.fail(details)
        if all(verdict == 'SKIP' for verdict, _ in lines):
            self.skipTest(lines[0][1])
        for _, details in lines:
            self.note(details)

    def assertNoOtherGuestLines(self, results=None):
        """Every line of the guest job is a case of this class: a case the
        job gained is not lost."""
        results = results or self.results
        known = {case_of(n, getattr(self, n))
                 for n in unittest.defaultTestLoader.getTestCaseNames(type(self))}
        extra = [n for n in results.names() if n not in known] + results.malformed
        self.assertEqual(extra, [], f'lines of no case here in {results.path}')

    def assertKernelClean(self, g):
        """No oops, BUG or WARNING in the kernel log guest G's job left
        (guest.kernel_trouble); notes when its kernel was ready."""
        log, trouble = lab_guest.kernel_trouble(g.out)
        if log is None:
            self.fail(f'no kernel log ({g.status()})')
        if trouble:
            first = next((l for l in trouble if 'Call Trace' not in l), trouble[0])
            self.fail(f'{len(trouble)} lines of oops/BUG/WARNING in {log}: {first}')
        ready = re.search(r'LAB: ready at [0-9.]*s.*', g.console.read_text(errors='replace'))
        self.note(f'no oops/BUG/WARNING in {log.name}; {ready.group(0) if ready else ""}'.rstrip())

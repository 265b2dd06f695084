"""Which cases run: the parts (tests/lab/test_PART.py), then --quick and
-k REGEX over PART/CASE.  Cases keep the order they are written in; each
class learns which of its cases run (LabTest.chosen), for a job its guests
run once for all of them."""
import importlib
import inspect
import re

from . import paths
from . import env as lab_env
from .case import LabTest


def part_classes(module):
    """The LabTest classes a module defines, in order."""
    return [c for c in vars(module).values()
            if inspect.isclass(c) and issubclass(c, LabTest) and c is not LabTest
            and c.__module__ == module.__name__]


def parts():
    """PART -> module: each tests/lab/test_PART.py with LabTest classes
    (PART: their part(), the file's unless they set lab_part)."""
    found = {}
    for path in sorted(paths.LAB_SRC.glob('test_*.py')):
        module = importlib.import_module(path.stem)
        classes = part_classes(module)
        if classes:
            found[classes[0].part()] = module
    return found


def cases(cls):
    """A class's cases in the order its methods are written."""
    names = []
    for klass in reversed(cls.__mro__):
        names += [n for n, v in vars(klass).items()
                  if n.startswith('test') and callable(v) and n not in names]
    return [cls(n) for n in names]


def select(modules, quick=False, pattern=None, kernel=None):
    """The cases of MODULES; with QUICK only the quick ones; with PATTERN
    (a regex) those whose PART/CASE it matches; none of a class that does
    not run on KERNEL (default: the configured environment's; LabTest.kernels)."""
    regex = re.compile(pattern) if pattern else None
    chosen = []
    for module in modules:
        for cls in part_classes(module):
            on = cls.kernels is None or cls.runs_on(kernel or lab_env.current().kernel)
            mine = [t for t in cases(cls)
                    if on and (not quick or t.is_quick())
                    and (not regex or regex.search(t.name))]
            cls.lab_chosen = [t._testMethodName for t in mine]
            chosen += mine
    return chosen

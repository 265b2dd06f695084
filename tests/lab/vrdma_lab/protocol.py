"""The guest protocol: how a lab guest and the host talk, for every part.

Shares.  A guest sees three 9p shares, mounted by its /init
(tests/lab/guest-init.sh): the host's / read-only as its root (under a tmpfs
overlay), tests/lab read-only at /lab (the guest's scripts), and its own
result directory, Guest.out, writable at /out.  Its kernel command line
configures it (lab.* arguments, listed in guest-init.sh) and names its job:
lab.run=/lab/PART/guest.sh.

Into the guest.  What the job needs beyond the command line, the host writes
into Guest.out before the boot (mux: /out/env, sourced by the job).

Out of the guest.  The job writes one line a case to /out/results:

    PASS|FAIL|SKIP NAME DETAILS...

NAME has no spaces; DETAILS say what was seen (a FAIL: what was wanted and
what came).  Anything else it leaves in /out (logs, captures) is for the
host to read afterwards.  Results.read() parses the file; a test asserts a
case with LabTest.assertGuestPass().  A job that stops early leaves cases
out: each of them fails on the host ("no line").

Stages, the one synchronisation.  When the job needs the host (to read the
device's counters at a point, to kill a peer's QEMU), it calls
`stage NAME [TEXT]` from tests/lab/guest-lib.sh: TEXT goes to
/out/stage.NAME (written to stage.NAME.tmp, then renamed, so the host never
reads half of it), then the job waits, at most LAB_STAGE_WAIT seconds
(default 60), for /out/stage.NAME.ok; `stage` fails when no answer came.
A job passes each stage NAME once.
The host serves stages with Stages: for each stage.NAME that appears it
calls the part's handler for NAME with TEXT, then creates stage.NAME.ok --
also when there is no handler or the handler failed, so that a guest never
waits for a host that has given up.  Both sides' waits are bounded: the
guest's per stage, the host's by the guest's life limit (Guest.start).

Tool cases (tests/lab/guest-cases.sh, the job lab.run=/lab/guest-cases.sh of
the parts that run RDMA tools between guests).  The host writes /out/cases
before the boot (ToolCases), one case a line:

    ROLE NAME TIMEOUT COMMAND...

ROLE srv runs COMMAND once; ROLE cli runs it until it gets past connecting
to its server (which may not listen yet), for at most TIMEOUT seconds in
all, or until the host creates /out/NAME.abort (its server failed: nothing
will listen).  In COMMAND, @D@ is the RDMA device (LAB_DEV from /init,
default rxe0), @G4@ / @G6@ the index of its IPv4-mapped / global IPv6 GID.  The job
runs the cases in order, then powers the guest off; per case it leaves
NAME.out (the tool's output), NAME.rc (its exit status), NAME.cnt (the
device's hw_counters that changed: "name before after") and NAME.net (the
same for eth0's statistics and its qdisc's drops), and at the end
dmesg.txt and counters-final.txt.  No results lines: the host judges a case
from both sides' artefacts (ToolCases.run(NAME) -> CaseRun); while the
guests run it may abort a client whose server failed (abort_orphans).  The bash
parts (interop, driver, libvirt) read the same files.

The 9p share of /out is mounted without caching, so each side sees the
other's files at once.
"""
import os
import re
import time
from pathlib import Path

VERDICTS = ('PASS', 'FAIL', 'SKIP')


class Results:
    """The results lines of one guest job: NAME -> [(VERDICT, DETAILS)]."""

    def __init__(self, path, origin=''):
        self.path = Path(path)
        self.origin = origin or str(self.path)
        self.cases = {}
        self.malformed = []
        try:
            lines = self.path.read_text(errors='replace').splitlines()
        except FileNotFoundError:
            lines = []
        for line in lines:
            fields = line.split(' ', 2)
            if len(fields) >= 2 and fields[0] in VERDICTS and fields[1]:
                details = fields[2] if len(fields) == 3 else ''
                self.cases.setdefault(fields[1], []).append((fields[0], details))
            elif line.strip():
                self.malformed.append(line)

    def names(self):
        return list(self.cases)


class Stages:
    """The host's side of the stages of one guest job writing into OUT.

    handlers: NAME -> callable(TEXT), run when the guest reaches stage NAME.
    served: [(NAME, TEXT)] in the order the stages were answered.
    """

    def __init__(self, out, handlers=None):
        self.out = Path(out)
        self.handlers = dict(handlers or {})
        self.served = []

    def poll(self):
        """Answers every stage waiting now; a caller with more to watch (two
        guests, its own files) calls this from its own loop."""
        for f in sorted(self.out.glob('stage.*')):
            name = f.name[len('stage.'):]
            ok = f.with_name(f.name + '.ok')
            if name.endswith(('.ok', '.tmp')) or ok.exists():
                continue
            text = f.read_text().strip()
            self.served.append((name, text))
            try:
                handler = self.handlers.get(name)
                if handler:
                    handler(text)
            finally:
                ok.touch()

    def serve(self, running, interval=0.2):
        """Answers stages while running() is true (e.g. Guest.running: the
        guest's life limit bounds this), then once more; returns served."""
        serve_all([self], running, interval)
        return self.served


def serve_all(stages, running, interval=0.2):
    """Answers the stages of several guests' jobs (Stages each) while
    running() is true, then once more: Stages.serve for guests that run
    together."""
    while True:
        alive = running()
        for s in stages:
            s.poll()
        if not alive:
            return
        time.sleep(interval)


class CaseRun:
    """What one case of guest-cases.sh left in OUT: rc (None when it left
    none: it never ran or did not finish), out (the tool's output), counters
    and net (NAME -> after - before, of those that changed)."""

    def __init__(self, out, name):
        self.dir = Path(out)
        self.name = name
        try:
            self.rc = int(self._text('rc').strip())
        except ValueError:
            self.rc = None
        self.out = self._text('out')
        self.counters = self._deltas('cnt')
        self.net = self._deltas('net')

    def _text(self, ext):
        try:
            return (self.dir / f'{self.name}.{ext}').read_text(errors='replace')
        except FileNotFoundError:
            return ''

    def _deltas(self, ext):
        deltas = {}
        for line in self._text(ext).splitlines():
            f = line.split()
            if len(f) == 3 and all(re.fullmatch(r'-?[0-9]+', v) for v in f[1:]):
                deltas[f[0]] = int(f[2]) - int(f[1])
        return deltas

    def counters_text(self):
        """The counters as the report shows them: "name+N,other+M"."""
        return ','.join(f'{k}{v:+d}' for k, v in self.counters.items())


class ToolCases:
    """The tool cases of one guest running guest-cases.sh, writing into
    OUT: add() the cases, write() /out/cases before the boot, run(NAME)
    each case's artefacts afterwards."""

    ROLES = ('srv', 'cli')

    def __init__(self, out):
        self.out = Path(out)
        self.lines = []

    def add(self, role, name, timeout, command):
        if role not in self.ROLES or not re.fullmatch(r'[\w.+-]+', name):
            raise ValueError(f'tool case {role!r} {name!r}')
        # LAB_STRACE (e.g. "strace -f"): each tool under it, into NAME.strace.
        strace = os.environ.get('LAB_STRACE')
        if strace:
            command = f'{strace} -o /out/{name}.strace {command}'
        self.lines.append(f'{role} {name} {int(timeout)} {command}')
        return self

    def write(self):
        self.out.mkdir(parents=True, exist_ok=True)
        (self.out / 'cases').write_text(''.join(l + '\n' for l in self.lines))

    def run(self, name):
        return CaseRun(self.out, name)

    def abort(self, name):
        """Tells the guest to stop retrying client case NAME."""
        (self.out / f'{name}.abort').touch()

    def wait(self, name, running, limit, interval=0.5):
        """Waits until the guest has ended case NAME (NAME.rc), running()
        is false (e.g. Guest.running) or LIMIT seconds have passed; returns
        run(NAME).  For a host that drives the other side of each case
        itself and must stay in step with the guest's job."""
        done = self.out / f'{name}.rc'
        end = time.monotonic() + limit
        while not done.exists() and running() and time.monotonic() < end:
            time.sleep(interval)
        return self.run(name)


def abort_orphans(server, client, names):
    """Aborts each client case of NAMES whose server side has ended with a
    failure while the client has not ended (it would retry to its limit).
    For the host's loop while a pair of guests runs."""
    for name in names:
        rc = server.run(name).rc
        if rc not in (None, 0) and not (client.out / f'{name}.rc').exists() \
                and not (client.out / f'{name}.abort').exists():
            client.abort(name)

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

The 9p share of /out is mounted without caching, so each side sees the
other's files at once.
"""
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
        while True:
            alive = running()
            self.poll()
            if not alive:
                return self.served
            time.sleep(interval)

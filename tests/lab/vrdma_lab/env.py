"""The lab's environment, one object configured in one place: the guest
kernel, the QEMU the guests run on, where results go.

lab.py configures it from its command line; a part run straight under
unittest gets the default (LAB_KERNEL, else 6.1).
"""
import atexit
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from . import paths


class LabSetupError(Exception):
    """A prerequisite of the lab is missing: says what and how to make it."""


# Where a guest mounts file systems of its own over the host's root
# (guest-init.sh): the build under one of them is out of the guests' sight.
GUEST_MOUNTS = ('/tmp', '/run', '/dev', '/proc', '/sys')


def hidden_from_guests(path):
    """The guest mount that hides PATH from the guests, or None."""
    p = Path(path).resolve()
    return next((m for m in GUEST_MOUNTS if p == Path(m) or Path(m) in p.parents), None)


class LabEnv:
    def __init__(self, kernel=paths.DEFAULT_KERNEL, results=None):
        self.kernel = kernel
        self.dir = paths.kernel_dir(kernel)
        self.run_dir = Path(results) if results else \
            self.dir / 'results' / time.strftime('%Y%m%d-%H%M%S')
        self.kver = None
        self.qemu = None
        self._checked = None
        self._sockdir = None

    def prepare(self):
        """Checks the prerequisites once (what lab_check_prereqs checks);
        raises LabSetupError, the same one again on each later call."""
        if self._checked is None:
            try:
                self._check()
                self._checked = True
            except LabSetupError as e:
                self._checked = e
        if self._checked is not True:
            raise self._checked

    def _check(self):
        hidden = hidden_from_guests(paths.BUILD)
        if hidden:
            raise LabSetupError(f'{paths.BUILD} is under {hidden}, where the guests mount '
                                'their own file system: the guests would not see the '
                                'driver, the provider or the tools built there (use a '
                                f'checkout outside {", ".join(GUEST_MOUNTS)})')
        if not os.access(paths.QEMU, os.X_OK):
            raise LabSetupError(f'{paths.QEMU} missing (bash scripts/build.sh)')
        initrd = self.dir / 'initrd.img'
        if not (self.dir / 'vmlinux').is_file() or not initrd.is_file():
            raise LabSetupError(f'no kernel/initramfs in {self.dir} '
                                f'({paths.setup_hint(self.kernel)})')
        if (paths.LAB_SRC / 'guest-init.sh').stat().st_mtime > initrd.stat().st_mtime:
            raise LabSetupError(f'{initrd} is older than tests/lab/guest-init.sh '
                                f'({paths.setup_hint(self.kernel)})')
        self.kver = (self.dir / 'kver').read_text().strip()
        # QEMU finds its firmware in the qemu-bundle next to its binary.
        bundle = paths.QEMU.parent / 'qemu-bundle'
        if not bundle.is_dir():
            raise LabSetupError(f'no qemu-bundle next to {paths.QEMU}')
        self.qemu = self.snapshot(paths.QEMU)
        link = self.qemu.parent / 'qemu-bundle'
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(bundle)
        try:
            subprocess.run([self.qemu, '-version'], check=True, timeout=30,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        except (OSError, subprocess.SubprocessError) as e:
            raise LabSetupError(f'{self.qemu} does not run: {e}') from e

    def snapshot(self, built):
        """A snapshot of a built binary in the kernel's bin/, which the
        guests see over 9p: a hard link, so that a relink by a concurrent
        build makes a new file and leaves ours alone (a copy where a link
        cannot be made)."""
        dst = self.dir / 'bin' / Path(built).name
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.unlink(missing_ok=True)
        try:
            os.link(built, dst)
        except OSError:
            shutil.copy2(built, dst)
        return dst

    @property
    def sockdir(self):
        """A short directory for UNIX sockets: sun_path holds 108 bytes,
        result directories may be longer."""
        if self._sockdir is None:
            self._sockdir = Path(tempfile.mkdtemp(prefix='lab-qmp.', dir='/tmp'))
        return self._sockdir

    def close(self):
        if self._sockdir is not None:
            shutil.rmtree(self._sockdir, ignore_errors=True)
            self._sockdir = None


_current = None


def configure(**kwargs):
    """Makes the environment the lab runs in (lab.py, once)."""
    global _current
    if _current is not None:
        _current.close()
    _current = LabEnv(**kwargs)
    return _current


@atexit.register
def _close():
    if _current is not None:
        _current.close()


def current():
    """The configured environment, or the default one."""
    if _current is None:
        configure(kernel=os.environ.get('LAB_KERNEL') or paths.DEFAULT_KERNEL)
    return _current

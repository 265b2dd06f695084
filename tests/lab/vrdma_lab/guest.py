"""A lab guest: Debian's kernel under TCG on our QEMU, with the lab's 9p
shares (protocol.py), its console in OUT/console.log and QEMU's own output
in OUT/qemu.log."""
import hashlib
import os
import re
import subprocess
import time
import weakref
from pathlib import Path

from . import paths, protocol, qmp

_running = weakref.WeakSet()


def kill_all():
    """Kills every guest still running (on an interrupted run)."""
    for g in list(_running):
        g.kill()


# What a kernel log must not hold: an oops, a BUG, a WARNING and the like,
# and the lockup and RCU stall reports (a hard LOCKUP and an RCU stall need
# not say BUG:).
KERNEL_TROUBLE = re.compile(r'BUG:|Oops|WARNING:|Call Trace|general protection|refcount_t'
                            r'|soft lockup|hard LOCKUP|rcu: INFO:')


def kernel_trouble(out):
    """The kernel log a guest's job left in OUT (dmesg-final.txt, which
    guest-init.sh writes after its rmmod, else dmesg.txt) and its lines of
    trouble (KERNEL_TROUBLE): (path, lines); path None when there is no
    log."""
    for name in ('dmesg-final.txt', 'dmesg.txt'):
        path = Path(out) / name
        if path.is_file() and path.stat().st_size:
            text = path.read_text(errors='replace')
            return path, [l for l in text.splitlines() if KERNEL_TROUBLE.search(l)]
    return None, []


# The start of every lab guest's kernel command line (the lab.* arguments
# follow): also the libvirt part's domain XML's <cmdline>.
KERNEL_ARGS = ('console=ttyS0 quiet loglevel=4 panic=-1 rdinit=/init '
               'mitigations=off nokaslr tsc=reliable no_timer_check')


class Guest:
    """One guest; eth0 (the RoCE link, slot 4 function 0) on NETDEV with MAC.

    netdev1: eth1 (slot 5) on this netdev, if given.
    vrdma: our virtio-rdma-pci as function 1 of eth0's slot (vrdma_opts:
    more of its properties, e.g. 'max-qp=1024'), with a QMP socket
    (Guest.qmp()).
    smp: vCPUs; a guest that runs alone may take both host cores (one TCG
    thread per vCPU).
    """

    def __init__(self, env, out, append, netdev, mac, netdev1=None,
                 vrdma=False, vrdma_opts='', smp=1, mem=512):
        self.env = env
        self.out = Path(out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.console = self.out / 'console.log'
        self.qmp_path = None
        self.proc = None
        self.limit = None
        self.timed_out = False
        self.args = self._command(append, netdev, mac, netdev1, vrdma,
                                  vrdma_opts, smp, mem)

    def _command(self, append, netdev, mac, netdev1, vrdma, vrdma_opts, smp, mem):
        env = self.env
        env.prepare()
        kernel_args = KERNEL_ARGS + ' ' + append
        shares = [('fsroot', '/', 'hostroot', ',readonly=on'),
                  ('fslab', paths.LAB_SRC, 'labsrc', ',readonly=on'),
                  ('fsout', self.out, 'labout', '')]
        cmd = [env.qemu, '-name', f'lab-{self.out.name}', '-machine', 'q35',
               '-accel', f'tcg,thread={"multi" if smp > 1 else "single"},tb-size=128',
               '-cpu', 'max', '-smp', str(smp), '-m', str(mem),
               '-nodefaults', '-no-user-config', '-display', 'none', '-no-reboot',
               '-serial', f'file:{self.console}',
               '-kernel', env.dir / 'vmlinux', '-initrd', env.dir / 'initrd.img',
               '-append', kernel_args]
        for fsid, path, tag, ro in shares:
            cmd += ['-fsdev', f'local,id={fsid},path={path},security_model=none{ro},'
                    'multidevs=remap', '-device', f'virtio-9p-pci,fsdev={fsid},mount_tag={tag}']
        # LAB_NIC_MTU (the benchmark's jumbo runs: 9000 gives RoCE MTU
        # 4096): eth0 comes up with it (VIRTIO_NET_F_MTU), and our device
        # and the guest's rxe take their RoCE MTU from it.
        mtu = os.environ.get('LAB_NIC_MTU')
        cmd += ['-netdev', f'{netdev},id=n0',
                '-device', f'virtio-net-pci,netdev=n0,mac={mac},addr=04.0'
                + (f',host_mtu={int(mtu)}' if mtu else '')
                + (',multifunction=on' if vrdma else '')]
        if vrdma:
            name = hashlib.md5(str(self.out).encode()).hexdigest()[:12]
            self.qmp_path = env.sockdir / f'{name}.sock'
            opts = f',{vrdma_opts}' if vrdma_opts else ''
            cmd += ['-device', f'virtio-rdma-pci,addr=04.1{opts}',
                    '-qmp', f'unix:{self.qmp_path},server=on,wait=off']
        if netdev1:
            cmd += ['-netdev', f'{netdev1},id=n1', '-device',
                    'virtio-net-pci,netdev=n1,mac=52:54:00:00:99:01,addr=05.0']
        return [str(a) for a in cmd]

    def start(self, limit):
        """Boots the guest in the background; it is killed after LIMIT
        seconds at the latest (by wait() or kill())."""
        self.limit = limit
        self._deadline = time.monotonic() + limit
        with open(self.out / 'qemu.log', 'wb') as log:
            self.proc = subprocess.Popen(self.args, stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=subprocess.STDOUT)
        _running.add(self)
        return self

    def running(self):
        """True while QEMU runs and its limit has not passed."""
        if self.proc is None or self.proc.poll() is not None:
            return False
        if time.monotonic() < self._deadline:
            return True
        self.timed_out = True
        self.kill()
        return False

    def wait(self):
        """Waits for the guest to power off, or kills it at its limit;
        returns QEMU's exit status."""
        try:
            return self.proc.wait(max(0, self._deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.timed_out = True
            return self.kill()

    def kill(self):
        """Stops QEMU (SIGTERM, SIGKILL 5 s later) if it still runs."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        _running.discard(self)
        return self.proc.returncode

    def status(self):
        """How the guest is or ended, for messages."""
        if self.proc is None:
            state = 'not started'
        elif self.timed_out:
            state = f'killed at its {self.limit} s limit'
        elif self.proc.poll() is None:
            state = 'running'
        else:
            state = f'QEMU exit {self.proc.returncode}'
        return f'guest {self.out.name}: {state}; console {self.console}'

    def results(self):
        """The job's results lines (protocol.py)."""
        return protocol.Results(self.out / 'results', origin=self.status())

    def qmp(self):
        """A QMP connection to the guest's QEMU (vrdma guests)."""
        return qmp.QMP(self.qmp_path)

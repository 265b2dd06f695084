"""libvirt: two lab guests defined and started by a real libvirtd (Debian's
libvirt-daemon + libvirt-daemon-driver-qemu) from the domain XML in
tests/lab/libvirt/ -- the files docs/system/devices/virtio-rdma.rst shows --
with our QEMU as <emulator>: guest A on q35 (engine in the main loop), guest
B on pc with the engine in libvirt's iothread1.  Their NICs are taps libvirt
makes on a bridge; virtio-rdma-pci comes from <qemu:commandline> at
function 1 of the NIC's slot.

The guests load our driver and run libvirt/job.sh: ibv_rc_pingpong and
ib_write_bw (A serves); the host reads both devices through "virsh
qemu-monitor-command"; B adds and deletes addresses on eth0 and the host
watches libvirt's RDMA_GID_STATUS_CHANGED handler put them on B's tap and
take them off (which libvirt 9.0 fails to do on Linux >= 5.19: gid-del);
then A is destroyed ("virsh destroy") while B writes to it, and B's
ib_write_bw must end with an error completion (retry count exceeded) and
B's QEMU must log no error.  The job stops at its stages (guest-lib.sh),
the host's handlers below do their part there.

The machines have no systemd: the class starts virtlogd and libvirtd itself
(Libvirtd), inside a network namespace it makes (taps, bridge and every
address libvirt's GID handler adds live there) and with a private mount
namespace in which the run's own directories are bind-mounted over
/etc/libvirt, /run/libvirt, /var/lib/libvirt, /var/log/libvirt and
/var/cache/libvirt: nothing of the host's configuration is read or written,
and a libvirtd the host may run is not disturbed.  Its clean-up (domains,
daemons by PID, namespace) runs at the end of the set-up and, as a class
clean-up, on any way out (lab.py runs the pending ones when interrupted).

Every case is judged on the host, from what the run saw (cls.seen) and the
files the guests and libvirt left.  Kernel 6.1 only (scripts/test.sh: once,
it adds libvirtd over the same driver); every case is quick.
"""
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import unittest
from pathlib import Path

from vrdma_lab import guest, paths, protocol, qmp, tools
from vrdma_lab.case import CaseTimeout, LabTest, deadline, quick, timeout
from vrdma_lab.env import LabSetupError

SRC = paths.LAB_SRC / 'libvirt'
BRIDGE = 'lvbr0'
TOOLS = ('rc_pingpong', 'write_bw')
PORT = 18700
# The transfer during which A is destroyed: long (-D), line-buffered (B's
# job watches its output for the exchange).
DESTROY_CASE = 'write_bw-D'
DESTROY_ARGS = f'stdbuf -oL ib_write_bw -d @D@ -x @G4@ -p {PORT + 3} -F -s 65536 -D 60'
# The run's limit beyond its tool cases' (daemons, defines, boots, the GID
# events, power-off): libvirt probes a new QEMU binary for 40 s under TCG.
SETUP = 300
GID4, GID6 = '10.88.9.2/24', 'fd88:9::2/64'
# QEMU's lines in libvirt's log of a domain that are no error: the
# deprecation warnings libvirt's own "-fsdev ...,readonly" draws, and the
# SIGTERM with which libvirtd ends every domain (-no-shutdown).
QEMU_NOT_ERRORS = re.compile(r'warning: short-form boolean|'
                             r'terminating on signal 15 from pid [0-9]+ \(libvirtd\)')


class Stopped(Exception):
    """A step failed such that the rest cannot run (the bash part's return)."""


def until(get, ok, seconds, interval=0.2):
    """get() until ok() of its value or SECONDS have passed; the last value."""
    end = time.monotonic() + seconds
    while True:
        value = get()
        if ok(value) or time.monotonic() >= end:
            return value
        time.sleep(interval)


def oneline(text, limit=600):
    return ' '.join(text.split())[:limit]


class Libvirtd:
    """virtlogd and libvirtd in a network namespace (bridge BRIDGE) and a
    mount namespace of their own; STATE: their /etc, /var/lib and /var/log
    (libvirtd.log, qemu/DOMAIN.log); CACHE: their /var/cache, which keeps
    libvirt's probe of QEMU's capabilities across runs (it re-probes when
    the binary changes)."""

    def __init__(self, state, cache):
        self.state = state
        self.cache = cache
        self.ns = None
        self.run = None   # their /run/libvirt, on a short path (sockets)

    def start(self):
        """What Debian's libvirt-daemon-system would have set up (the
        libvirt-qemu user: the QEMU driver refuses to start without the
        user it was built for, even when qemu.conf names another; the
        directories, here only mount points), then the namespace, the
        bridge and the daemons.  Stopped when one fails."""
        users = subprocess.run(['sh', '-c', '''
            getent group kvm >/dev/null || addgroup --quiet --system kvm
            getent passwd libvirt-qemu >/dev/null ||
                adduser --quiet --system --ingroup kvm --disabled-login --disabled-password \
                    --home /var/lib/libvirt --no-create-home --gecos "Libvirt Qemu" libvirt-qemu
            getent group libvirt-qemu >/dev/null ||
                { addgroup --quiet --system libvirt-qemu && adduser --quiet libvirt-qemu libvirt-qemu; }
            getent passwd libvirt-qemu >/dev/null'''], capture_output=True, text=True)
        if users.returncode:
            raise Stopped(f'could not add the libvirt-qemu user: {oneline(users.stderr)}')
        for d in ('/etc/libvirt', '/run/libvirt', '/var/lib/libvirt/qemu',
                  '/var/log/libvirt/qemu', '/var/cache/libvirt/qemu'):
            os.makedirs(d, exist_ok=True)
        self.run = Path(tempfile.mkdtemp(prefix='vrdma-lv.', dir='/tmp'))
        for d in ('etc/qemu', 'lib', 'log'):
            (self.state / d).mkdir(parents=True, exist_ok=True)
        self.cache.mkdir(parents=True, exist_ok=True)
        for f in ('qemu.conf', 'libvirtd.conf'):
            shutil.copy(SRC / f, self.state / 'etc')
        ns = f'vrdma-lv{os.getpid()}'
        if subprocess.run(['ip', 'netns', 'add', ns]).returncode:
            raise Stopped('ip netns add failed')
        self.ns = ns
        for cmd in (['link', 'set', 'lo', 'up'], ['link', 'add', BRIDGE, 'type', 'bridge'],
                    ['link', 'set', BRIDGE, 'up']):
            if subprocess.run(['ip', '-n', ns] + cmd).returncode:
                raise Stopped(f'no bridge in {ns}')
        # Our QEMU is TCG-only.  Where /dev/kvm exists, libvirt 9.0 finds
        # that QEMU "should" have KVM, calls its cached capabilities
        # outdated at every look-up and probes QEMU again (about 20 times,
        # 40 s, per define): the daemons see a read-only regular file there
        # instead (access(W_OK) is EROFS).  Domains are type 'qemu' (TCG)
        # either way.
        (self.state / 'no-kvm').write_text('')
        # ip netns exec gives the shell its own mount namespace (mounts do
        # not propagate back); the daemons and their QEMUs stay in it.
        script = f'''
            mount --bind '{self.state}/etc' /etc/libvirt
            mount --bind '{self.run}' /run/libvirt
            mount --bind '{self.state}/lib' /var/lib/libvirt
            mount --bind '{self.state}/log' /var/log/libvirt
            mount --bind '{self.cache}' /var/cache/libvirt
            if [ -e /dev/kvm ]; then
                mount --bind '{self.state}/no-kvm' /dev/kvm
                mount -o remount,bind,ro /dev/kvm
            fi
            virtlogd -d -p /run/libvirt/virtlogd.pid
            libvirtd -d -p /run/libvirt/libvirtd.pid'''
        # A file, not a pipe: the daemons keep what they inherit.
        log = self.state.parent / 'daemons.log'
        with open(log, 'w') as f:
            rc = subprocess.run(['ip', 'netns', 'exec', ns, 'sh', '-ec', script],
                                stdout=f, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, timeout=60).returncode
        if rc:
            raise Stopped(f'starting them failed: {log.read_text()[:300]}')
        # "virsh version" wants a QEMU on $PATH; the domain list needs none.
        answer = until(lambda: self.virsh('list', '--all', limit=10).returncode == 0, bool, 30)
        pids = self.pids()
        if not answer or len(pids) != 2:
            said = self.virsh('list', '--all', limit=10)
            raise Stopped(f'libvirtd does not answer (pids {" ".join(pids)}): '
                          f'{" ".join((said.stdout + said.stderr).strip().splitlines()[-1:])}; '
                          f'{"; ".join(self.log_lines(" error : ")[:3])}')
        return pids

    def virsh(self, *args, limit=60):
        """virsh on these daemons (the socket in their /run/libvirt)."""
        uri = f'qemu+unix:///system?socket={self.run}/libvirt-sock'
        try:
            return subprocess.run(['virsh', '-q', '-c', uri, *args], capture_output=True,
                                  text=True, timeout=limit, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as e:
            return subprocess.CompletedProcess(e.cmd, 124, '', f'virsh {args[0]}: no answer '
                                               f'in {limit} s')

    def pids(self):
        found = []
        for name in ('virtlogd', 'libvirtd'):
            try:
                found.append((self.run / f'{name}.pid').read_text().strip())
            except (OSError, TypeError):
                pass
        return [p for p in found if p]

    def running(self, dom):
        """Whether DOMAIN's QEMU runs (libvirt's pid file, /proc)."""
        try:
            pid = int((self.run / 'qemu' / f'{dom}.pid').read_text())
            with open(f'/proc/{pid}/stat') as f:
                return f.read().rsplit(')', 1)[1].split()[0] not in 'ZX'
        except (OSError, ValueError, IndexError, TypeError):
            return False

    def log_lines(self, pattern):
        """The lines of libvirtd.log with PATTERN (a regex)."""
        try:
            text = (self.state / 'log' / 'libvirtd.log').read_text(errors='replace')
        except OSError:
            return []
        return [l for l in text.splitlines() if re.search(pattern, l)]

    def qemu_errors(self, dom):
        """What QEMU itself wrote to libvirt's log of DOMAIN, less what is
        no error (QEMU_NOT_ERRORS)."""
        try:
            text = (self.state / 'log' / 'qemu' / f'{dom}.log').read_text(errors='replace')
        except OSError:
            return []
        return [l for l in text.splitlines()
                if 'qemu-system-x86_64: ' in l and not QEMU_NOT_ERRORS.search(l)]

    def query(self, dom, prefix):
        """query-virtio-rdma (its return) into PREFIX.json and "info rdma"
        into PREFIX.txt, through libvirt (what qmp.query does over our own
        socket); errors into PREFIX.err."""
        errors = []
        r = self.virsh('qemu-monitor-command', dom, '{"execute":"query-virtio-rdma"}')
        try:
            devices = json.loads(r.stdout)['return']
            prefix.with_suffix('.json').write_text(json.dumps(devices, indent=1))
        except (ValueError, KeyError):
            errors.append(f'query-virtio-rdma: {r.stdout}{r.stderr}')
        r = self.virsh('qemu-monitor-command', dom, '--hmp', 'info rdma')
        prefix.with_suffix('.txt').write_text(r.stdout)
        if r.returncode:
            errors.append(f'info rdma: {r.stderr}')
        prefix.with_suffix('.err').write_text('\n'.join(errors))

    def ip(self, *args):
        return subprocess.run(['ip', '-n', self.ns, *args], capture_output=True,
                              text=True).stdout

    def tap_addrs(self, tap):
        """TAP's addresses (ADDR/N) in the namespace."""
        return [l.split()[3] for l in self.ip('-o', 'addr', 'show', 'dev', tap).splitlines()]

    def del_refused(self, tap, addr):
        """libvirtd's handler got a gid_status=0 event for ADDR on TAP and
        its removal failed ("Fail to update address ADDR[%N] to TAP")."""
        return bool(self.log_lines(f'Error removing IP address from {re.escape(tap)}$')
                    and self.log_lines(f'Fail to update address {re.escape(addr)}'
                                       f'(%[0-9]+)? to {re.escape(tap)}$'))

    def cleanup(self):
        """Ends the domains (their QEMUs, by libvirt's pid files), the
        daemons (by PID: SIGTERM, SIGKILL 5 s later) and the namespace,
        quickest first (a run may be killed soon after a SIGTERM: meson's
        timeout allows it half a second); again is nothing.  The domains'
        definitions and logs stay in STATE."""
        pids = self.pids() if self.run else []
        if self.run:
            for f in self.run.glob('qemu/*.pid'):
                signal_pid(f, 9)
            for p in pids:
                signal_pid(p, 15)
        if self.ns:
            subprocess.run(['ip', 'netns', 'del', self.ns], stderr=subprocess.DEVNULL)
            self.ns = None
        for p in pids:
            if until(lambda: os.path.exists(f'/proc/{p}'), lambda alive: not alive, 5, 0.1):
                signal_pid(p, 9)
        if self.run:
            shutil.rmtree(self.run, ignore_errors=True)
            self.run = None


def signal_pid(pid_or_file, sig):
    """Sends SIG to a PID, or to the one in a pid file."""
    try:
        if not isinstance(pid_or_file, str):
            pid_or_file = pid_or_file.read_text()
        os.kill(int(pid_or_file.strip()), sig)
    except (OSError, ValueError):
        pass


class Domain:
    """One guest: its domain XML, tap, addresses, and what the run saw."""

    def __init__(self, name, xml, dom, tap, mac, ip4, ip6, out):
        self.name, self.xml, self.dom, self.tap = name, xml, dom, tap
        self.mac, self.ip4, self.ip6, self.out = mac, ip4, ip6, out
        self.t_start = None
        self.up = None        # the up stage's text: the RDMA device
        self.up_after = None  # seconds from "virsh start" to the up stage
        self.tap_info = ''    # how libvirt opened the tap (vnet_hdr)

    def fill(self, env, peer, cmdline):
        """The domain XML with its placeholders filled in."""
        text = (SRC / self.xml).read_text()
        for key, value in {'NAME': self.dom, 'EMULATOR': env.qemu,
                           'KERNEL': env.dir / 'vmlinux', 'INITRD': env.dir / 'initrd.img',
                           'CMDLINE': cmdline, 'LABSRC': paths.LAB_SRC, 'OUT': self.out,
                           'BRIDGE': BRIDGE, 'TAP': self.tap, 'MAC': self.mac}.items():
            text = text.replace(f'@{key}@', str(value))
        return text

    def console(self, pattern, most=1):
        """The first MOST matches of PATTERN in the guest's console."""
        try:
            text = (self.out / 'console.log').read_text(errors='replace')
        except OSError:
            return ''
        return ' '.join(re.findall(pattern, text)[:most])


@quick
class Libvirt(LabTest):
    kernels = ('6.1',)

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.ko = paths.BUILD / 'guest' / cls.env.kver / 'virtio_rdma.ko'
        cls.prov = paths.BUILD / 'guest' / 'rdma-core'
        if not cls.ko.is_file():
            raise LabSetupError(f'no {cls.ko} (scripts/build-guest.sh)')
        missing = [b for b in ('libvirtd', 'virtlogd', 'virsh') if not shutil.which(b)]
        if missing:
            raise LabSetupError(f'{" ".join(missing)} missing (scripts/deps.sh)')
        for d in ('A', 'B', 'state'):
            shutil.rmtree(cls.part_dir / d, ignore_errors=True)
        cls.lv = Libvirtd(cls.part_dir / 'state', cls.env.dir / 'libvirt-cache')
        cls.addClassCleanup(cls.lv.cleanup)
        cls.a = Domain('A', 'guest-q35.xml', 'vrdma-lv-a', 'lvtap-a', '52:54:00:88:00:01',
                       '10.88.0.1', 'fd88::1', cls.part_dir / 'A')
        cls.b = Domain('B', 'guest-pc.xml', 'vrdma-lv-b', 'lvtap-b', '52:54:00:88:00:02',
                       '10.88.0.2', 'fd88::2', cls.part_dir / 'B')
        cls.seen = {}      # step -> what the run saw there
        cls.stopped = None  # why the run stopped before its end
        limit = SETUP + sum(cls.tool_limit(t) for t in TOOLS + (DESTROY_CASE,))
        try:
            with deadline(limit, 'libvirt: the run'):
                cls.scenario()
        except (Stopped, CaseTimeout) as e:
            cls.stopped = str(e)
        finally:
            cls.lv.cleanup()

    @classmethod
    def tool_limit(cls, case):
        """A tool's limit in the guest: its case's @timeout (the destroy
        case's: destroy-peer's)."""
        name = 'destroy_peer' if case == DESTROY_CASE else case
        return getattr(cls, f'test_{name}').lab_timeout

    @classmethod
    def scenario(cls):
        t0 = time.monotonic()
        pids = cls.lv.start()
        version = subprocess.run(['libvirtd', '--version'], capture_output=True, text=True)
        cls.seen['daemons'] = (f'libvirtd {version.stdout.split()[-1]}, virtlogd and libvirtd '
                               f'pids {" ".join(pids)} in netns {cls.lv.ns}, '
                               f'up in {time.monotonic() - t0:.0f} s')
        cls.write_jobs()
        for g, peer in ((cls.a, cls.b), (cls.b, cls.a)):
            cls.define_start(g, peer)
        stages = [protocol.Stages(cls.a.out, cls.handlers(cls.a)),
                  protocol.Stages(cls.b.out, cls.handlers(cls.b))]
        protocol.serve_all(stages, lambda: any(cls.lv.running(g.dom) for g in (cls.a, cls.b)))
        # B powers off after its job; libvirt then closes its log.
        cls.seen['end'] = until(lambda: oneline(cls.lv.virsh('domstate', cls.b.dom).stdout),
                                lambda state: state == 'shut off', 30)

    @classmethod
    def write_jobs(cls):
        """Into the guests: role, the tools (A serves, B connects, over the
        IPv4-mapped GID), the destroy case, B's addresses."""
        a, b = cls.a, cls.b
        srv, cli = protocol.ToolCases(a.out), protocol.ToolCases(b.out)
        for i, t in enumerate(TOOLS):
            port = str(PORT + 1 + i)
            args, cargs = (tools.args(t, side).replace('@G@', '@G4@').replace('@P@', port)
                           for side in ('srv', 'cli'))
            srv.add('srv', t, cls.tool_limit(t), args)
            cli.add('cli', t, cls.tool_limit(t), f'{cargs} {a.ip4}')
        limit = cls.tool_limit(DESTROY_CASE)
        dsrv = protocol.ToolCases(a.out / 'destroy').add('srv', DESTROY_CASE, limit, DESTROY_ARGS)
        dcli = protocol.ToolCases(b.out / 'destroy').add('cli', DESTROY_CASE, limit,
                                                         f'{DESTROY_ARGS} {a.ip4}')
        for tc in (srv, cli, dsrv, dcli):
            tc.write()
        for g in (a, b):
            (g.out / 'role').write_text(g.name + '\n')
        (b.out / 'gid').write_text(f'{GID4} {GID6}\n')

    @classmethod
    def define_start(cls, g, peer):
        """Defines and starts G's domain.  Its kernel command line is any
        lab guest's, with lab.* options for guest-init.sh.  Permanent
        neighbours: libvirt's GID handler puts the guests' addresses into
        the namespace the bridge lives in (on the taps); the guests' ARP
        and ND do not depend on what that namespace makes of them."""
        step = f'define-start-{g.name}'
        cmdline = (f'{guest.KERNEL_ARGS} lab.ip={g.ip4}/24 lab.ip6={g.ip6}/64 '
                   f'lab.neigh={peer.ip4}@{peer.mac},{peer.ip6}@{peer.mac} lab.rdma=vrdma '
                   f'lab.ko={cls.ko} lab.prov={cls.prov} lab.run=/lab/libvirt/job.sh')
        xml = g.out / 'domain.xml'
        xml.write_text(g.fill(cls.env, peer, cmdline))
        left = sorted(set(re.findall(r'@[A-Z]+@', xml.read_text())))
        if left:
            raise Stopped(f'{step}: placeholders left in {xml}: {" ".join(left)}')
        t0 = time.monotonic()
        r = cls.lv.virsh('define', str(xml))
        (g.out / 'define.log').write_text(r.stdout + r.stderr)
        if r.returncode:
            errors = [l for l in (r.stdout + r.stderr).splitlines() if 'error' in l][:2]
            raise Stopped(f'{step}: define {g.xml}: {oneline(" ".join(errors))}')
        defined = time.monotonic() - t0
        g.t_start = time.monotonic()
        r = cls.lv.virsh('start', g.dom)
        (g.out / 'start.log').write_text(r.stdout + r.stderr)
        if r.returncode:
            # QEMU's own complaint is the last line; libvirt's -fsdev
            # deprecation warnings come first.
            said = [l for l in (r.stdout + r.stderr).splitlines()
                    if l.strip() and not re.search(r'short-form boolean|^Please use', l)]
            raise Stopped(f'{step}: start {g.xml}: {oneline(" ".join(said[-2:]))}')
        machine = re.search(r"machine='([a-z0-9]+)'", xml.read_text()).group(1)
        cls.seen[step] = f'{g.dom} ({machine}) defined in {defined:.0f} s, started'

    @classmethod
    def handlers(cls, g):
        """The host's side of G's job's stages."""
        def up(text):
            g.up, g.up_after = text, time.monotonic() - g.t_start
            if text != 'vrdma0':
                raise Stopped(f'define-start-{g.name}: no vrdma0 in {g.dom}')

        def tools_done(text):
            # Both devices read through libvirt after the tools; how libvirt
            # opened the tap (it asks for a virtio-net header).
            cls.lv.query(g.dom, g.out / 'info-tools')
            m = re.search(r'vnet_hdr o[nf]*', cls.lv.ip('-d', 'link', 'show', 'dev', g.tap))
            g.tap_info = m.group(0) if m else 'no vnet_hdr'
            cls.seen[f'tools-{g.name}'] = text

        def gid_added(text):
            # The event is handled by a libvirtd worker: allow it a moment.
            addrs = until(lambda: cls.lv.tap_addrs(g.tap), lambda a: {GID4, GID6} <= set(a), 10)
            cls.seen['gid-added'] = (text, addrs)

        def gid_deleted(text):
            # Gone, or libvirt could not remove them (test_gid_del).
            cls.seen['gid-deleted'] = (text, until(
                lambda: cls.lv.tap_addrs(g.tap),
                lambda a: not {GID4, GID6} & set(a) or cls.refused(g.tap), 10))

        def writing(text):
            # A is destroyed 3 s into B's transfer.
            if text != 'writing':
                cls.seen['writing'] = (None, f"B's ib_write_bw {text}")
                return
            time.sleep(3)
            t_kill = time.monotonic()
            r = cls.lv.virsh('destroy', cls.a.dom)
            (cls.a.out / 'destroy.log').write_text(r.stdout + r.stderr)
            cls.seen['writing'] = (t_kill, '' if r.returncode == 0 else
                                   f'virsh destroy: {oneline(r.stdout + r.stderr)}')

        def destroyed(text):
            t_end = time.monotonic()
            cls.lv.query(g.dom, g.out / 'info-destroyed')
            cls.seen['destroyed'] = (t_end, text)

        if g.name == 'A':
            return {'up': up, 'tools': tools_done}
        return {'up': up, 'tools': tools_done, 'gid-added': gid_added,
                'gid-deleted': gid_deleted, 'writing': writing, 'destroyed': destroyed}

    @classmethod
    def refused(cls, tap):
        """libvirt's handler got the DEL_GID events of both addresses and
        failed to remove them from TAP."""
        return all(cls.lv.del_refused(tap, a.split('/')[0]) for a in (GID4, GID6))

    def step(self, name):
        """What the run saw at step NAME; the case fails when the run never
        got there."""
        if name not in self.seen:
            self.fail(f'not reached: {self.stopped or "the guests ended before it"}')
        return self.seen[name]

    @property
    def case(self):
        # The tools keep their names, as in the other parts and vrdma_lab/report.
        name = self._testMethodName.removeprefix('test_')
        return name if name in TOOLS else super().case

    def test_daemons(self):
        if 'daemons' not in self.seen and self.stopped:
            self.fail(self.stopped)
        self.note(self.step('daemons'))

    def assertDefinedStarted(self, g):
        said = self.step(f'define-start-{g.name}')
        if g.up != 'vrdma0':
            self.fail(f'no vrdma0 in {g.dom}: {g.up or "(no stage up)"} '
                      f'{g.console(r".*FATAL.*", 2)} {" ".join(self.lv.qemu_errors(g.dom)[:2])}')
        self.note(f'{said}, vrdma0 up {g.up_after:.0f} s after the start; '
                  f'{g.console(r"LAB: ready at [0-9.]*s")}')

    def test_define_start_A(self):
        self.assertDefinedStarted(self.a)

    def test_define_start_B(self):
        self.assertDefinedStarted(self.b)

    def assertToolCase(self):
        a = protocol.CaseRun(self.a.out, self.case)
        b = protocol.CaseRun(self.b.out, self.case)
        fig = tools.figures(b.out)
        if a.rc == 0 and b.rc == 0 and fig:
            self.note(f'A serves, B connects: {fig}')
            return
        said = [l for l in (a.out + b.out).splitlines()
                if re.search(r'error|fail|couldn', l, re.I)][:1]
        self.fail(f'rc(A)={a.rc} rc(B)={b.rc} {fig} {" ".join(said)} ({self.stopped or ""})')

    # @timeout: each side's limit in the guest (the client's retries
    # included), and the case's on the host.
    @timeout(90)
    def test_rc_pingpong(self):
        self.assertToolCase()

    @timeout(90)
    def test_write_bw(self):
        self.assertToolCase()

    def test_qmp_traffic(self):
        """Both devices through "virsh qemu-monitor-command": traffic, no
        error completion, and B's engine in libvirt's iothread1."""
        why, info = [], []
        for g in (self.a, self.b):
            self.step(f'tools-{g.name}')
            try:
                dev = qmp.first_device(g.out / 'info-tools.json')
            except (OSError, LookupError) as e:
                err = (g.out / 'info-tools.err')
                why.append(f'{g.name}: no query-virtio-rdma ({e}; '
                           f'{err.read_text()[:200] if err.exists() else ""})')
                continue
            tr = qmp.traffic(dev)
            if not re.search(r'tx=[1-9].*rx=[1-9].* error-completions=0', tr):
                why.append(f'{g.name}: {tr}')
            engine = dev.get('iothread', 'main-loop')
            if g is self.b and engine != 'iothread1':
                why.append(f"B's engine runs in {engine}, not iothread1")
            info.append(f'{g.name}[{g.dom} engine={engine} netdev={dev.get("netdev")} '
                        f'tap {g.tap_info} {tr}]')
        said = 'virsh qemu-monitor-command query-virtio-rdma: ' + ' '.join(info)
        if why:
            self.fail(f'{said} | {"; ".join(why)}')
        self.note(said)

    def test_gid_add(self):
        """B added GID4 and GID6 to eth0: libvirt's handler put them on
        B's tap (IPv4 GIDs as /24, IPv6 as /64)."""
        text, addrs = self.step('gid-added')
        if text != 'ok':
            self.fail(f'guest: {text}')
        if not {GID4, GID6} <= set(addrs):
            self.fail(f'{self.b.tap} has only {" ".join(addrs)}; libvirtd: '
                      f'{" ".join(self.lv.log_lines("RdmaGid")[:2])}')
        self.note(f'{self.b.tap} has {" ".join(addrs)} after B\'s eth0 got {GID4} {GID6}')

    def test_gid_del(self):
        """B deleted them: libvirt's handler took them off B's tap -- or
        tried: libvirt 9.0 sends RTM_DELADDR with NLM_F_CREATE|NLM_F_EXCL,
        and NLM_F_EXCL means NLM_F_BULK in a delete request since Linux
        5.19 (EOPNOTSUPP).  libvirt's defect, not the device's: when the
        events reached its handler and the kernel refused the removal, the
        case passes and says so."""
        text, addrs = self.step('gid-deleted')
        if text != 'ok':
            self.fail(f'guest: {text}')
        tap, left = self.b.tap, ' '.join(addrs)
        if not {GID4, GID6} & set(addrs):
            self.note(f'{tap} is back to {left} after B deleted them')
        elif self.refused(tap):
            self.note(f'DEL_GID events for both reached libvirt, which could not remove them '
                      f'(libvirt 9.0 sends RTM_DELADDR with NLM_F_EXCL, which Linux >= 5.19 '
                      f'refuses; host kernel {os.uname().release}): {tap} keeps {left}')
        else:
            self.fail(f'{tap} still has {left} and libvirtd logged no removal of them: '
                      f'{" ".join(self.lv.log_lines(f"netdev={tap},gid_status=0")[:2])}')

    @timeout(120)
    def test_destroy_peer(self):
        """A is destroyed while B's ib_write_bw writes to it.  The spec
        (docs/specs/virtio-rdma.rst, "Reliable connection"): after
        retry_cnt retransmit timeouts without progress the request completes
        with RETRY_EXC_ERR (ibv_wc_status 12) and the QP goes to ERR, which
        flushes the rest of its send queue.  The tool must report status 12,
        B's device must count the retry timeouts and the error completions
        (the flushed ones included)."""
        t_kill, why = self.step('writing')
        if t_kill is None:
            self.fail(why)
        t_end, rc = self.step('destroyed')
        out = protocol.CaseRun(self.b.out / 'destroy', DESTROY_CASE).out
        why = [why] if why else []
        try:
            dev = qmp.first_device(self.b.out / 'info-destroyed.json')
            tr, rto = qmp.traffic(dev), dev['data-path']['retry-timeouts']
        except (OSError, LookupError) as e:
            tr, rto = f'no query-virtio-rdma ({e})', None
        if rc == '0':
            why.append("B's ib_write_bw exited 0")
        if not re.search(r'status 12|transport retry counter exceeded|RETRY_EXC', out):
            errors = [l for l in out.splitlines() if re.search(r'error|fail', l, re.I)][:2]
            why.append(f"no retry-exceeded completion in B's output: {' '.join(errors)}")
        if not re.search(r'error-completions=[1-9]', tr) or not rto:
            why.append(f"B's device: retry-timeouts={rto} {tr}")

        def first(pattern):
            m = re.search(pattern, out, re.I | re.M)
            return ' '.join(m.group(0).split()) if m else ''
        said = (f"A destroyed 3 s into the transfer; B's ib_write_bw: "
                f"'{first(r'^.*completion with error.*$')}', "
                f"'{first(r'^.*failed status.*$')}' after {t_end - t_kill:.1f} s, rc={rc}; "
                f"B's device: retry-timeouts={rto} {tr}")
        if why:
            self.fail(f'{said} | {"; ".join(why)}')
        self.note(said)

    def test_no_qemu_error(self):
        """libvirt's logs of both QEMUs, A destroyed and B powered off: no
        error from QEMU itself."""
        state = self.step('end')
        self.step('destroyed')
        errors = self.lv.qemu_errors(self.a.dom) + self.lv.qemu_errors(self.b.dom)
        log = self.lv.state / 'log' / 'qemu' / f'{self.b.dom}.log'
        if errors or not log.exists() or not log.stat().st_size:
            self.fail('; '.join(errors[:3]) or f'no {log}')
        self.note(f"libvirt's QEMU logs of {self.a.dom} (destroyed) and {self.b.dom}: "
                  f'no error; B {state}')

    def assertKernelClean(self, g):
        """No oops, BUG or WARNING in G's kernel log (B's after the
        destroy, A's after the tools)."""
        path, trouble = guest.kernel_trouble(g.out)
        if path is None:
            self.fail(f'no kernel log in {g.out} ({self.stopped or "no dmesg"})')
        if trouble:
            self.fail(f'{len(trouble)} lines of oops/BUG/WARNING in {path}: {trouble[0]}')
        self.note(f'no oops/BUG/WARNING in {path.name}; '
                  f'{g.console(r"LAB: ready at [0-9.]*s.*")}')

    def test_A_kernel(self):
        self.assertKernelClean(self.a)

    def test_B_kernel(self):
        self.assertKernelClean(self.b)


if __name__ == '__main__':
    unittest.main()

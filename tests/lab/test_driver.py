"""driver: guests on our QEMU whose RDMA device is virtio-rdma-pci (function 1
of their eth0's slot) through our kernel module (build/guest/<KVER>/
virtio_rdma.ko) and rdma-core provider (build/guest/rdma-core), against each
other (vv) and against a guest on kernel rxe (vr), joined by -netdev dgram
over 127.0.0.1 as in the baseline.

Each pair's guests run guest-cases.sh (protocol.py: tool cases): the tools
of tools.DRV_CASES over the IPv4-mapped (v4-) and the global IPv6 (v6-)
GID.  In vv guest A serves every tool; in vr each tool runs with the
virtio-rdma guest A as server (-vsrv: rxe is the client) and as client
(-vcli).  vv adds tools.RING_CASES, among them mpi_pingpong: Open MPI's
ping-pong over UCX, B's mpirun starting its orted on A through A's server,
mpi-rsh.py (the guests have no ssh).  vv also kills ib_send_bw on both
sides in the middle of a transfer (kill-send_bw) and runs vrdma-abuse
(guest/tests, what a hostile local user tries) in each guest (A-abuse,
B-abuse).  A tool case passes when both sides exit 0 and no rxe side
counted a sequence error on a clean wire (a wire the host dropped datagrams
of during the pair makes them rxe's correct recovery), mpi_pingpong when
also each rank said UCX chose rc_verbs on its device; its note is the
client's figures and the counters that changed.

The virtio-rdma guests run with lab.stages=1: their /init stops at the
stages up, done (after the job), held (an application holds objects),
unloaded (rmmod under it) and reloaded; the host answers each with QMP
"info rdma" / query-virtio-rdma into the guest's info-STAGE.{txt,json}.
G-device: traffic went through the device, the object counts after the
tools equal those of the idle driver, the holder held more than idle, after
rmmod they are zero, the reloaded driver is idle again, QEMU said nothing.
G-kernel: no oops, BUG or WARNING in the guest's kernel log.

ctrl-storm (class Storm): one guest with two vCPUs, processes asking
QUERY_PORT on both while another registers large MRs
(guest/tests/vrdma-storm.c): no error, the askers slept for their
answers, the control queue alive
after it, no lockup or RCU stall in the kernel log.

no-direct-dma (class DirectDma): a guest booted with swiotlb=force, where
DMA addresses are not guest-physical: the driver refuses to probe.

The CI runs vr on 6.1 only (on 6.12 vv, the driver against itself: against
rxe the wire is the device's, the same on both kernels): Vr.kernels.

Developer knobs (environment): LAB_DRV_KO (virtio_rdma.ko), LAB_DRV_PROV
(the provider's directory), LAB_DRV_AS=rxe (the virtio-rdma guests carry
the device but run rxe: the runner without the driver; the device checks
then fail).
"""
import collections
import os
import re
import subprocess
import time
import unittest
from pathlib import Path

from vrdma_lab import net, paths, protocol, qmp, tools
from vrdma_lab.case import LabTest, add_case, quick, timeout
from vrdma_lab.env import LabSetupError
from vrdma_lab.guest import Guest

TOOL_TIMEOUT = 90    # a tool case's limit, on each side
ABUSE_TIMEOUT = 300
# vrdma-qps: QPs in one process, more than virtqueues allow (511).
QPS_COUNT, QPS_TIMEOUT = 2048, 300
# vrdma-bigmr: an MR of BIGMR_MIB (above 1 GiB: a three-level page table)
# in a guest of less RAM (one memfd mapped again and again).
BIGMR_MIB, BIGMR_TIMEOUT = 1536, 300
BOOT = 300           # a guest's limit beyond its cases'
MAXFAIL = 8          # failed cases in a row that end a pair
# perftest sets a QP's max_rd_atomic to the peer's outstanding reads (its
# device maximum by default: rxe 128); ours offers fewer and refuses more,
# as hardware does.  Both sides of read_* and atomic_* ask for this many.
OUTSTANDING = 16
PORT = 18600
STAGES = ('up', 'done', 'held', 'unloaded', 'reloaded')
NO_OBJECTS = 'pd=0 cq=0 qp=0 mr=0 gid=0 pages=0'
SEQ_ERRORS = ('rcvd_seq_err', 'out_of_seq_request')

# The quick cases (the CI's): against itself every tool over IPv4, deeper
# queues, SRQs, UCX and MPI over UCX, the system calls, RC SEND and rping over IPv6, more
# QPs than virtqueues allowed, an MR above 1 GiB, the kill and the abuse;
# against rxe, both ways, RC and UD SEND, WRITE, READ, atomics and rping
# over IPv4, RC SEND and rping over IPv6; every pair's device and kernel
# checks.
QUICK = {
    ('vv', 4): set(tools.DRV_CASES + tools.RING_CASES) | {'rc_pingpong_sys'},
    ('vv', 6): {'rc_pingpong', 'rping'},
    ('vr', 4): {'rc_pingpong', 'ud_pingpong', 'write_bw', 'read_bw', 'atomic_bw', 'rping'},
    ('vr', 6): {'rc_pingpong', 'rping'},
}
# The client's write() and ioctl() during rc_pingpong_sys, all of its
# set-up and teardown commands included, stay below this share of its
# iterations (the rings: posting and polling make none; the virtqueue path
# made several per iteration).
SYS_PER_ITER = 0.25


def module_path(env):
    return os.environ.get('LAB_DRV_KO') or \
        str(paths.BUILD / 'guest' / env.kver / 'virtio_rdma.ko')


def provider_dir():
    return os.environ.get('LAB_DRV_PROV') or str(paths.BUILD / 'guest' / 'rdma-core')


def as_rxe():
    return os.environ.get('LAB_DRV_AS') == 'rxe'


def check_built(ko, prov):
    """Raises LabSetupError unless the module and the provider are built."""
    if not os.path.isfile(ko):
        raise LabSetupError(f'no {ko} (scripts/build-guest.sh)')
    if not any(p.is_file() for p in Path(prov).glob('lib*-rdmav*.so')):
        raise LabSetupError(f'no provider lib*-rdmav*.so in {prov} '
                            '(scripts/build-guest.sh)')


def build_program(env, name='vrdma-abuse'):
    """guest/tests/NAME.c (with the headers beside it), built (at most 300 s) against the
    host's libibverbs -- the guests' root is the host's -- into the kernel's
    lab directory when missing or older than its sources; its path.  Raises
    LabSetupError when it cannot be built."""
    src = paths.TOP / 'guest' / 'tests' / f'{name}.c'
    exe, log = env.dir / name, env.dir / f'{name}.log'
    if not src.is_file():
        raise LabSetupError(f'{name} did not build: no {src}')
    newest = max(p.stat().st_mtime for p in [src, *src.parent.glob('*.h')])
    if os.access(exe, os.X_OK) and exe.stat().st_mtime >= newest:
        return exe
    tmp = exe.with_name(f'{name}.{os.getpid()}')
    try:
        with open(log, 'wb') as f:
            subprocess.run(['gcc', '-O2', '-g', '-Wall', '-o', str(tmp), str(src),
                            '-libverbs', '-lpthread'], stdin=subprocess.DEVNULL,
                           stdout=f, stderr=subprocess.STDOUT, timeout=300, check=True)
        os.replace(tmp, exe)  # a concurrent run keeps the binary it has
    except (OSError, subprocess.SubprocessError) as e:
        tmp.unlink(missing_ok=True)
        raise LabSetupError(f'{name} did not build ({log}): {e}') from e
    return exe


class Side:
    """One guest of a pair: A or B, its kind (vrdma or rxe), its address,
    its tool cases, its stages."""

    def __init__(self, name, kind, host, out):
        self.name, self.kind = name, kind
        self.ip4, self.ip6 = f'10.77.0.{host}', f'fd77::{host}'
        self.mac = f'52:54:00:77:00:{host}'
        self.tc = protocol.ToolCases(out)
        self.out = self.tc.out
        self.guest = None
        self.stages = None
        self.nodev = False

    @property
    def vrdma(self):
        return self.kind == 'vrdma'

    @property
    def runs_rxe(self):
        return self.kind == 'rxe' or as_rxe()

    def stage_handlers(self):
        """QMP "info rdma" at each stage into info-STAGE.{txt,json} (an
        error into info-STAGE.err: the device check says so)."""
        def handler(stage):
            def query(text):
                if stage == 'up' and text == 'nodev':
                    self.nodev = True
                try:
                    qmp.query(self.guest.qmp_path, self.out / f'info-{stage}')
                except Exception as e:  # the guest must get its answer
                    (self.out / f'info-{stage}.err').write_text(f'{e}\n')
            return query
        return {stage: handler(stage) for stage in STAGES}


def tool_table(cls):
    """(NAME, TOOL, FAMILY, SERVER) of a pair's tool cases, in the order
    the guests run them; SERVER is 'A' or 'B'."""
    servers = cls.servers
    for fam in cls.families:
        for tool in cls.cases:
            for s in servers:
                suffix = '' if len(servers) == 1 else ('-vsrv' if s == 'A' else '-vcli')
                yield f'v{fam}-{tool}{suffix}', tool, fam, s


class _Pair(LabTest):
    """Two guests A and B (kinds), their tool cases and their checks; a
    subclass is one pair and generates its cases with add_cases()."""
    pair = None
    kinds = ()      # the kinds of A and B
    servers = ()    # who serves the tools: 'A', 'B'
    kill = False    # kill-send_bw
    abuse = False   # A-abuse, B-abuse
    qps = False     # A-qps: vrdma-qps
    bigmr = False   # A-bigmr: vrdma-bigmr
    cases = tools.DRV_CASES + ('rc_pingpong_sys',)
    families = (4, 6)
    vrdma_opts = '' # the device's properties

    @classmethod
    def add_cases(cls):
        for name, tool, fam, server in tool_table(cls):
            check = {'rc_pingpong_sys': cls.assertSyscalls,
                     'mpi_pingpong': cls.assertMpi}.get(tool, cls.assertToolCase)
            add_case(cls, f'{cls.pair}/{name}',
                     lambda self, n=name, s=server, c=check: c(self, n, s),
                     quick=tool in QUICK[cls.pair, fam], timeout=TOOL_TIMEOUT)
        if cls.kill:
            add_case(cls, f'{cls.pair}/kill-send_bw',
                     lambda self: self.assertToolCase('kill-send_bw', 'A'),
                     quick=True, timeout=TOOL_TIMEOUT)
        if cls.abuse:
            for g in 'AB':
                add_case(cls, f'{cls.pair}/{g}-abuse',
                         lambda self, g=g: self.assertAbuse(g), quick=True,
                         timeout=ABUSE_TIMEOUT)
        if cls.qps:
            add_case(cls, f'{cls.pair}/A-qps',
                     lambda self: self.assertTap('A', 'qps', self.qps_error),
                     quick=True, timeout=QPS_TIMEOUT)
        if cls.bigmr:
            add_case(cls, f'{cls.pair}/A-bigmr',
                     lambda self: self.assertTap('A', 'bigmr', self.bigmr_error),
                     quick=True, timeout=BIGMR_TIMEOUT)
        for g, kind in zip('AB', cls.kinds):
            if kind == 'vrdma':
                add_case(cls, f'{cls.pair}/{g}-device',
                         lambda self, g=g: self.assertDevice(g), quick=True)
            add_case(cls, f'{cls.pair}/{g}-kernel',
                     lambda self, g=g: self.assertKernel(g), quick=True)

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        env = cls.env
        ko, prov = module_path(env), provider_dir()
        if not as_rxe():
            check_built(ko, prov)
        pair_dir = cls.part_dir / cls.pair
        cls.sides = {g: Side(g, kind, host, pair_dir / g)
                     for g, kind, host in zip('AB', cls.kinds, ('31', '32'))}
        a, b = cls.sides['A'], cls.sides['B']
        chosen = set(cls.chosen_cases())
        want = lambda name: f'{cls.pair}/{name}' in chosen
        cls.order = []  # (NAME, SERVER) of the tool cases, in order
        port = PORT
        for name, tool, fam, server in tool_table(cls):
            if not want(name):
                continue
            port += 1
            args, cargs = tools.args(tool), tools.args(tool, 'cli')
            if tool.startswith(('read_', 'atomic_')):
                args, cargs = f'{args} -o {OUTSTANDING}', f'{cargs} -o {OUTSTANDING}'
            args, cargs = (s.replace('@G@', f'@G{fam}@').replace('@P@', str(port))
                           for s in (args, cargs))
            srv, cli = cls.sides[server], cls.sides['B' if server == 'A' else 'A']
            # rping's address picks its GID (the server binds it: its
            # wildcard would be IPv4's); the others talk TCP over IPv4.
            addr = srv.ip6 if tool == 'rping' and fam == 6 else srv.ip4
            if tool == 'rping':
                args += f' {addr}'
            srv.tc.add('srv', name, TOOL_TIMEOUT, args)
            cli.tc.add('cli', name, TOOL_TIMEOUT, tools.with_server(cargs, addr))
            cls.order.append((name, server))
        if cls.kill and want('kill-send_bw'):
            port += 1
            args = tools.args('send_bw').replace('@G@', '@G4@').replace('@P@', str(port))
            # Each side kills its own tool 3 s after the exchange, and the
            # two guests' clocks of that drift apart under TCG: a sender
            # whose peer died first must outlive the gap.  -u 20 makes its
            # retries 4.3 s apart (perftest's default, 14, gives up after
            # 8 tries 67 ms apart, and the client ends by itself).
            args = f'/lab/kill-mid.sh 3 {args} -D 60 -u 20'
            a.tc.add('srv', 'kill-send_bw', TOOL_TIMEOUT, args)
            b.tc.add('cli', 'kill-send_bw', TOOL_TIMEOUT, f'{args} {a.ip4}')
            cls.order.append(('kill-send_bw', 'A'))
        cls.abuse_error = None
        abusers = [s for s in (a, b) if cls.abuse and want(f'{s.name}-abuse')]
        if abusers:
            try:
                exe = build_program(env)
                for s in abusers:
                    s.tc.add('srv', 'abuse', ABUSE_TIMEOUT, f'{exe} @D@ @G4@')
            except LabSetupError as e:
                cls.abuse_error = str(e)
        cls.qps_error = None
        if cls.qps and want('A-qps'):
            try:
                exe = build_program(env, 'vrdma-qps')
                a.tc.add('srv', 'qps', QPS_TIMEOUT, f'{exe} @D@ @G4@ {QPS_COUNT}')
            except LabSetupError as e:
                cls.qps_error = str(e)
        cls.bigmr_error = None
        if cls.bigmr and want('A-bigmr'):
            try:
                exe = build_program(env, 'vrdma-bigmr')
                a.tc.add('srv', 'bigmr', BIGMR_TIMEOUT, f'{exe} @D@ @G4@ {BIGMR_MIB}')
            except LabSetupError as e:
                cls.bigmr_error = str(e)
        cls.stopped = None
        cls.booted = bool(a.tc.lines or b.tc.lines)
        if not cls.booted:
            return
        cls.drops = cls.run_pair(ko, prov)

    @classmethod
    def run_pair(cls, ko, prov):
        """Boots both guests and watches them until both have ended;
        returns the datagrams the host dropped meanwhile."""
        a, b = cls.sides['A'], cls.sides['B']
        limit = BOOT + max(sum(int(l.split()[2]) for l in s.tc.lines) for s in (a, b))
        links = dict(zip('AB', net.dgram_pair()))
        u0 = net.udp_rcvbuf_errors()
        for s in (a, b):
            s.tc.write()
            rdma = 'rxe' if s.runs_rxe else s.kind
            s.guest = Guest(cls.env, s.out,
                            f'lab.ip={s.ip4}/24 lab.ip6={s.ip6}/64 lab.rdma={rdma} '
                            f'lab.ko={ko} lab.prov={prov} lab.stages={int(s.vrdma)} '
                            'lab.run=/lab/guest-cases.sh',
                            links[s.name], s.mac, vrdma=s.vrdma,
                            vrdma_opts=cls.vrdma_opts)
            if s.vrdma:
                s.stages = protocol.Stages(s.out, s.stage_handlers())
            cls.addClassCleanup(s.guest.kill)
            s.guest.start(limit=limit)
        served = {g: [n for n, srv in cls.order if srv == g] for g in 'AB'}
        done = failed_in_a_row = 0
        while any([s.guest.running() for s in (a, b)]):
            for s in (a, b):
                if s.stages:
                    s.stages.poll()
                if s.nodev:
                    cls.stopped = f'guest {s.name} has no RDMA device'
            protocol.abort_orphans(a.tc, b.tc, served['A'])
            protocol.abort_orphans(b.tc, a.tc, served['B'])
            # Cases in order, once both sides' rc are known.
            while done < len(cls.order):
                name = cls.order[done][0]
                rcs = [s.tc.run(name).rc for s in (a, b)]
                if None in rcs:
                    break
                failed_in_a_row = 0 if rcs == [0, 0] else failed_in_a_row + 1
                done += 1
                if failed_in_a_row >= MAXFAIL:
                    cls.stopped = f'{failed_in_a_row} cases in a row failed'
            if cls.stopped:
                (a.out.parent / 'stopped').write_text(cls.stopped + '\n')
                print(f'lab: driver/{cls.pair}: stopping the guests: {cls.stopped}')
                for s in (a, b):
                    s.guest.kill()
                break
            time.sleep(0.5)
        return net.udp_rcvbuf_errors() - u0

    def status(self):
        return '; '.join(s.guest.status() for s in self.sides.values() if s.guest)

    def booted_or_skip(self):
        if not self.booted:
            self.skipTest('no tool case chosen: the pair did not boot')

    def assertToolCase(self, name, server):
        """Both sides exited 0; no rxe side counted sequence errors on a
        clean wire.  Notes the client's figures (or what kill-mid killed)
        and each side's counters that changed."""
        srv_side = self.sides[server]
        cli_side = self.sides['B' if server == 'A' else 'A']
        runs = {g: s.tc.run(name) for g, s in self.sides.items()}
        srv, cli = runs[srv_side.name], runs[cli_side.name]
        failed, why = False, []
        if srv.rc != 0 or cli.rc != 0:
            failed = True
            why.append(f'rc(srv)={srv.rc} rc(cli)={cli.rc}')
            if srv.rc is None and cli.rc is None and self.stopped:
                why = [f'not run: {self.stopped}']
        for g, s in self.sides.items():
            if not s.runs_rxe:
                continue
            seq = ' '.join(f'{k}{v:+d}' for k, v in runs[g].counters.items()
                           if k in SEQ_ERRORS and v)
            if not seq:
                continue
            if self.drops > 0:
                why.append(f'lossy wire (host dropped {self.drops} datagrams in '
                           f'the pair): {g} seq-errors: {seq}')
            else:
                failed = True
                why.append(f'{g} seq-errors on a clean wire: {seq}')
        fig = tools.figures(cli.out) or self.kills(runs.values())
        cnt = ''.join(f' {g}[{r.counters_text()}]' for g, r in runs.items() if r.counters)
        said = f'{fig}{cnt}'.strip() + (f' | {"; ".join(why)}' if why else '')
        if failed:
            self.fail(f'{said} ({self.status()})')
        if said:
            self.note(said)

    def assertSyscalls(self, name, server):
        """rc_pingpong_sys: the tool case passed, and each side's write()
        and ioctl() (uverbs commands and methods) are noted per iteration;
        the client's stay below SYS_PER_ITER of its iterations: posting
        and polling make none."""
        self.assertToolCase(name, server)
        said = []
        for g, s in self.sides.items():
            calls = tools.syscalls(s.tc.run(name).out)
            n = calls.get('write', 0) + calls.get('ioctl', 0)
            said.append(f'{g}: write={calls.get("write", 0)} ioctl={calls.get("ioctl", 0)} '
                        f'({n / tools.SYS_ITERS:.2f} per iteration)')
            if not calls:
                self.fail(f'{g}: no strace -c table in its output')
            if g != server and n >= SYS_PER_ITER * tools.SYS_ITERS:
                self.fail(f'{"; ".join(said)}: the client made {n} uverbs calls in '
                          f'{tools.SYS_ITERS} iterations')
        self.note('; '.join(said))

    def assertMpi(self, name, server):
        """mpi_pingpong: the tool case passed, and each rank (0 the
        client's, mpirun's; 1 the server's) said that UCX gave its peer's
        messages to rc_verbs on its own guest's device (UCX_LOG_LEVEL=info:
        "ep_cfg[N]: tag(rc_verbs/vrdma0:1)"): MPI went over RDMA."""
        self.assertToolCase(name, server)
        cli = 'B' if server == 'A' else 'A'
        out = self.sides[cli].tc.run(name).out
        said = []
        for rank, g in enumerate((cli, server)):
            dev = 'rxe0' if self.sides[g].runs_rxe else 'vrdma0'
            said_by = rf'^\[[0-9]+,{rank}\]<std\w+>:.* ep_cfg\[[0-9]+\]: (tag\([^)]*\))'
            tags = re.findall(said_by, out, re.M)
            if not any(f'rc_verbs/{dev}:1' in t for t in tags):
                self.fail(f'rank {rank} ({g}) chose no rc_verbs/{dev}:1 for its peer: '
                          f'{" ".join(tags) or "no ep_cfg line"}')
            said.append(f'rank {rank} ({g}): {" ".join(sorted(set(tags)))}')
        self.note('; '.join(said))

    @staticmethod
    def kills(runs):
        """What kill-mid.sh said, on both sides: "killed ib_send_bw 3s into
        its transfer x2", or that the tool was not running at the kill, with
        the error perftest gave."""
        said = collections.Counter(
            re.sub(r' \(pid [0-9]+\)', '', m.group(1) or m.group(2))
            for r in runs for m in re.finditer(
                r"kill-mid: (.*)|^ *((?:Failed status|Completion with error|Couldn't).*)",
                r.out, re.M))
        return '; '.join(f'{k} x{n}' for k, n in sorted(said.items()))

    def assertAbuse(self, g):
        """vrdma-abuse's TAP: exit 0, some "ok", no "not ok"."""
        self.assertTap(g, 'abuse', self.abuse_error)

    def assertTap(self, g, case, error):
        """A guest test program's TAP (CASE on side G): exit 0, some "ok",
        no "not ok"; its "#" lines are the note."""
        if error:
            self.fail(error)
        self.booted_or_skip()
        r = self.sides[g].tc.run(case)
        lines = r.out.splitlines()
        ok = sum(l.startswith('ok ') for l in lines)
        nok = [l for l in lines if l.startswith('not ok ')]
        if r.rc != 0 or nok or not ok:
            self.fail(f'rc={r.rc}, {ok} ok, {len(nok)} not ok: {";".join(nok[:3])} '
                      f'({self.status()})')
        said = [l[2:] for l in lines if l.startswith('# ')]
        self.note('; '.join([f'{ok} ok'] + said))

    def assertDevice(self, g):
        """The device's object counts at the stages, its traffic, QEMU's
        silence."""
        self.booted_or_skip()
        s = self.sides[g]
        dev = {}
        for stage in STAGES:
            try:
                dev[stage] = qmp.first_device(s.out / f'info-{stage}.json')
            except (OSError, ValueError, LookupError) as e:
                try:
                    err = (s.out / f'info-{stage}.err').read_text()[:200].strip()
                except FileNotFoundError:
                    err = str(e)
                self.fail(f"no info rdma at '{stage}' ({err}) ({self.status()})")
        text = dict(s.stages.served)
        up, done, held, un, re_ = (qmp.objects(dev[p]) for p in STAGES)
        why = []
        if up != done:
            why.append(f'objects idle [{up}] after the tools [{done}]')
        if not (dev['held']['qps'] > dev['up']['qps'] and text.get('held') == '1'):
            why.append(f'the holder held no more than idle [{held}]')
        if not (un == NO_OBJECTS and text.get('unloaded') == 'rmmod=0'):
            why.append(f'after rmmod ({text.get("unloaded")}) [{un}]')
        if not (re_ == up and text.get('reloaded') == 'reload=0'):
            why.append(f'reloaded ({text.get("reloaded")}) [{re_}]')
        data = dev['done']['data-path']
        if not (data['tx-packets'] > 0 and data['rx-packets'] > 0):
            why.append('no traffic through the device')
        log = (s.out / 'qemu.log').read_text(errors='replace').splitlines()
        if log:
            why.append(f'QEMU: {log[0]}')
        said = (f'idle [{up}] after tools [{done}] app holding [{held}] '
                f'after rmmod under it [{un}] reloaded [{re_}] {qmp.traffic(dev["done"])}')
        if why:
            self.fail(f'{said} | {"; ".join(why)}')
        self.note(said)

    def assertKernel(self, g):
        """No oops, BUG or WARNING in the guest's kernel log (the one after
        rmmod when it ran)."""
        self.booted_or_skip()
        self.assertKernelClean(self.sides[g].guest)


class Vv(_Pair):
    """Our driver against itself, on its default data path (the queues in
    guest memory: VIRTIO_RDMA_F_RINGS, the provider on uverbs ABI 2 posts,
    polls and arms in its own rings): every tool with A serving, deeper
    queues and more QPs than virtqueues allowed, an MR above 1 GiB, SRQs,
    UCX, MPI over UCX, the kill, the abuse, the stages, and the system
    calls of a ping-pong."""
    pair = 'vv'
    kinds = ('vrdma', 'vrdma')
    servers = ('A',)
    kill = abuse = qps = bigmr = True
    # Room for vrdma-qps, and a table vrdma-abuse can fill in a 512 MiB
    # guest (the default, 131072, it cannot); vrdma-bigmr's MR (the default,
    # guest RAM but at least 1 GiB, is smaller).
    vrdma_opts = f'max-qp={2 * QPS_COUNT},max-mr-size=2G'
    cases = _Pair.cases + tools.RING_CASES


class Vr(_Pair):
    """Our driver (A) against kernel rxe (B), each serving in turn.  On
    6.1 only: on 6.12 the CI runs the driver against itself (the wire
    against rxe is the device's, the same on both kernels)."""
    pair = 'vr'
    kinds = ('vrdma', 'rxe')
    servers = ('A', 'B')
    kernels = ('6.1',)


Vv.add_cases()
Vr.add_cases()


# The storm: STORM_ASKERS processes loop ibv_query_port for STORM_SECONDS
# on both vCPUs while one more registers and deregisters STORM_MR_MIB.
STORM_SECONDS, STORM_ASKERS, STORM_MR_MIB = 20, 4, 256
STORM_MEM = 1024
STORM_SMP = 2
# Soft lockups reported after 6 s, RCU stalls after 5 s (defaults 20 s and
# 21 s, more than the storm lasts).
STORM_KERNEL_ARGS = 'watchdog_thresh=3 rcupdate.rcu_cpu_stall_timeout=5'
STORM_LIMIT = 240


def run_alone(cls, name, append, mac, env_text, limit, **kw):
    """One guest with the device on a wire to nowhere, /out/env holding
    ENV_TEXT for its lab.run job, as cls.guest; returns when it ended."""
    g = Guest(cls.env, cls.part_dir / name, append,
              net.dgram(net.free_port('udp'), net.free_port('udp')), mac,
              vrdma=True, **kw)
    (g.out / 'env').write_text(env_text)
    cls.addClassCleanup(g.kill)
    cls.guest = g.start(limit=limit)
    g.wait()


class Storm(LabTest):
    """ctrl-storm: one guest, two vCPUs, our driver under a control-queue
    storm (guest/tests/vrdma-storm.c through driver/storm.sh).

    The soft device answers every command within one main-loop turn, and a
    turn long enough to trip a watchdog would stop the guest's timers as
    well (QEMU runs them in the same loop), so a spinning driver shows no
    lockup here; what shows it is that the asking processes never sleep
    (vrdma-storm's askers-slept).  Against the driver that spun with
    interrupts off: 681 voluntary context switches in 40829 CQ arms (then
    a control command; on the rings an arm is a doorbell)."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if as_rxe():
            raise unittest.SkipTest('LAB_DRV_AS=rxe: the storm is the driver\'s')
        ko, prov = module_path(cls.env), provider_dir()
        check_built(ko, prov)
        exe = build_program(cls.env, 'vrdma-storm')
        run_alone(cls, 'ctrl-storm',
                  f'lab.ip=10.77.1.31/24 lab.rdma=vrdma lab.ko={ko} lab.prov={prov} '
                  f'lab.run=/lab/driver/storm.sh {STORM_KERNEL_ARGS}'.strip(),
                  '52:54:00:77:01:31',
                  f'STORM={exe}\nARGS="{STORM_SECONDS} {STORM_ASKERS} {STORM_MR_MIB}"\n',
                  STORM_LIMIT, smp=STORM_SMP, mem=STORM_MEM)

    @quick
    @timeout(STORM_LIMIT + 30)
    def test_ctrl_storm(self):
        """Every asker and the registrar ended without an error, the askers
        slept for their answers, a control command after the storm worked,
        and the kernel reported no lockup, RCU stall, oops or WARNING: the
        driver sleeps on its control queue in process context instead of
        spinning with interrupts off, and slow commands do not kill the
        queue."""
        g = self.guest
        try:
            out = (g.out / 'storm.out').read_text(errors='replace')
            rc = (g.out / 'storm.rc').read_text().strip()
        except FileNotFoundError:
            self.fail(f'the storm did not end ({g.status()})')
        lines = [l for l in out.splitlines() if l.startswith(('ok ', 'not ok '))]
        bad = [l for l in lines if l.startswith('not ok ')]
        if rc != '0' or bad or len(lines) != 3:
            self.fail(f'rc={rc}: {"; ".join(bad or lines or out.splitlines()[-1:])} '
                      f'({g.status()})')
        self.assertKernelClean(g)
        self.note('; '.join(l.split(': ', 1)[-1] for l in lines[:2]))


class _Refused(LabTest):
    """A guest whose driver must refuse the device: driver/load.sh loads
    the module by hand; then no vrdma0, the kernel log says why (@why), and
    the kernel is clean.  A subclass names its guest and how it boots."""
    guest_name = ip = mac = append = vrdma_opts = why = None

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if as_rxe():
            raise unittest.SkipTest('LAB_DRV_AS=rxe: the check is the driver\'s')
        ko = module_path(cls.env)
        check_built(ko, provider_dir())
        run_alone(cls, cls.guest_name,
                  f'lab.ip={cls.ip}/24 lab.run=/lab/driver/load.sh{cls.append}',
                  cls.mac, f'KO={ko}\n', BOOT, vrdma_opts=cls.vrdma_opts)

    def assertRefused(self, what):
        g = self.guest
        try:
            devices = (g.out / 'devices.txt').read_text().split()
            dmesg = (g.out / 'dmesg.txt').read_text(errors='replace')
        except FileNotFoundError:
            self.fail(f'the job did not end ({g.status()})')
        self.assertNotIn('vrdma0', devices, what)
        for w in self.why:
            self.assertIn(w, dmesg)
        self.assertKernelClean(g)
        self.note(f'devices: {" ".join(devices) or "none"}')


class DirectDma(_Refused):
    """no-direct-dma: a guest booted with swiotlb=force, where the DMA
    addresses of our PCI function are bounce buffers: the driver must not
    probe (the device would read and write guest memory at addresses that
    are not the data's)."""
    guest_name, ip, mac = 'no-direct-dma', '10.77.1.32', '52:54:00:77:01:32'
    append, vrdma_opts = ' swiotlb=force', ''
    why = ('virtio-rdma needs direct DMA',)

    @quick
    @timeout(BOOT + 30)
    def test_no_direct_dma(self):
        """No vrdma0, and the kernel log says why (issue 25: the driver
        used DMA-API addresses as guest-physical ones)."""
        self.assertRefused('probed although DMA addresses are not guest-physical')


if __name__ == '__main__':
    unittest.main()

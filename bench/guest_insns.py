#!/usr/bin/python3
"""Guest instructions per message: the answer to "why not rxe in the guest?"
that TCG timings cannot give.  Under KVM a guest's CPU time follows the
instructions it executes; under TCG they can be counted exactly.

Two guests of the lab (tests/lab: Debian's kernel, the host's rdma-core
and perftest) run on a QEMU built with TCG plugins (scripts/build.sh
--plugins) and the plugin bench/tcg/insn_marks.c, which counts every
instruction each guest executes, kernel and user, and records the count
whenever a program in the guest executes a marker instruction
(bench/tcg/mark.c).  Each tool runs between two marks on both sides, once
with N1 messages and once with N2: the difference of the two windows over
N2 - N1 is the cost of a message with the set-up (process start, device
open, connection, MRs) cancelled out.

The devices, each a pair of the same guests (the module's virtqueue data
path, a system call per post and per poll, was measured here too until it
went: docs/devel/virtio-rdma-benchmarks.rst keeps its figures):
  rings  virtio-rdma-pci through our module, its default: queues in guest
         memory, posted and polled in user space
  rxe    the guest kernel's rxe over the same virtio-net

The tools run with completion events (-e): a process that sleeps between
completions executes no instructions while it waits, where a polling one
would count its spinning, which follows how fast the host emulates, not
the work a message costs.  "idle" is a guest's rate while both sleep.

  bench/guest_insns.py [--kernel 6.1] [--devices rings,rxe]
                       [--tools NAME,...] [--results DIR]

Prints one table: per device and tool, the client's and the server's
instructions per message and their sum, and each device's sum over
rxe's (for the polling WRITE the server's alone).  A benchmark, not a
test: it fails only when a tool fails.
"""
import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

TOP = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TOP / 'tests' / 'lab'))

from vrdma_lab import env as lab_env  # noqa: E402
from vrdma_lab import net, protocol, tools  # noqa: E402
from vrdma_lab.guest import Guest  # noqa: E402

PLUGIN_QEMU = TOP / 'build' / 'qemu-plugins' / 'qemu-system-x86_64'
PLUGIN_SRC = TOP / 'bench' / 'tcg' / 'insn_marks.c'
MARK_SRC = TOP / 'bench' / 'tcg' / 'mark.c'
QEMU_PLUGIN_H = TOP / 'subprojects' / 'qemu' / 'include' / 'qemu'

PORT = 18700
TOOL_TIMEOUT = 600
IDLE_SECONDS = 10
# (name, tool and options but -n, N1, N2, whether the client polls):
# SENDs of 64 bytes and of 64 KiB with completion events; RDMA WRITEs of
# 64 KiB, for which perftest has no events ("Events feature not available
# on WRITE verb"): its client polls, so its count includes the spinning
# while the device works (a figure of the host's speed, not of the work),
# while its server sleeps on TCP until the end -- the responder's work in
# the guest is all its count holds.
TOOLS = [
    ('send-64B', 'ib_send_bw -d @D@ -x @G4@ -F -e -s 64', 1000, 41000, False),
    ('send-64KiB', 'ib_send_bw -d @D@ -x @G4@ -F -e -s 65536', 200, 12200, False),
    ('write-64KiB', 'ib_write_bw -d @D@ -x @G4@ -F -s 65536', 200, 12200, True),
    # A ping-pong that sleeps on CQ events (arming a CQ each time): per
    # iteration, and its latency as the tool prints it.
    ('pingpong-ev', 'ibv_rc_pingpong -d @D@ -g @G4@ -e -s 64', 200, 2200, False),
]
# Each tool's pair of windows, this many times: the spread of the
# estimates shows what the set-up's variation leaves in them.
ROUNDS = 2
DEVICES = ('rings', 'rxe')
SERVER, CLIENT = ('A', '10.77.0.31', '52:54:00:77:00:31'), ('B', '10.77.0.32', '52:54:00:77:00:32')


def build(out, args, what):
    """Runs a compiler command; exits with its log on failure."""
    log = out.with_suffix('.log')
    with open(log, 'wb') as f:
        if subprocess.run(args, stdout=f, stderr=subprocess.STDOUT).returncode:
            sys.exit(f'guest_insns: {what} did not build ({log})')
    return out


def prepare(lab):
    """The plugin QEMU's snapshot, the plugin and the marker program (in
    the lab's directory, which the guests see)."""
    if not os.access(PLUGIN_QEMU, os.X_OK):
        sys.exit(f'guest_insns: no {PLUGIN_QEMU} (bash scripts/build.sh --plugins)')
    lab.prepare()
    qemu = lab.snapshot(PLUGIN_QEMU)
    glib = subprocess.run(['pkg-config', '--cflags', 'glib-2.0'], check=True,
                          capture_output=True, text=True).stdout.split()
    plugin = build(lab.dir / 'insn_marks.so',
                   ['gcc', '-O2', '-Wall', '-shared', '-fPIC', f'-I{QEMU_PLUGIN_H}', *glib,
                    '-o', str(lab.dir / 'insn_marks.so'), str(PLUGIN_SRC)], 'the plugin')
    mark = build(lab.dir / 'mark', ['gcc', '-O2', '-Wall', '-o', str(lab.dir / 'mark'),
                                    str(MARK_SRC)], 'the marker')
    return qemu, plugin, mark


def chosen_tools(names):
    """TOOLS, or those of NAMES (a comma-separated list)."""
    if not names:
        return TOOLS
    want = names.split(',')
    bad = [n for n in want if n not in {t[0] for t in TOOLS}]
    if bad:
        sys.exit(f'guest_insns: unknown tool {" ".join(bad)}')
    return [t for t in TOOLS if t[0] in want]


def cases(mark):
    """The cases both sides run, in order: (name, server command, client
    command); a window is "mark start && TOOL && mark end"."""
    window = lambda cmd: f'{mark} start && {cmd} && {mark} end'
    out = [('idle', window(f'sleep {IDLE_SECONDS}'), window(f'sleep {IDLE_SECONDS}'))]
    port = PORT
    for r in range(ROUNDS):
        for name, tool, n1, n2, _ in TOOLS:
            for n in (n1, n2):
                port += 1
                cmd = f'{tool} -p {port} -n {n}'
                out.append((f'{name}-{n}-r{r}', window(cmd), window(f'{cmd} {SERVER[1]}')))
    return out


def windows(path, ok_cases):
    """The instructions of each successful case's window, from the plugin's
    marks: an end mark minus the start mark before it (a client's attempt
    that did not connect, or a case that failed, left a start without an
    end).  The ends are the successful cases', in order: {case: insns}."""
    ends, start = [], None
    for line in Path(path).read_text().splitlines():
        f = line.split()
        if len(f) == 3 and f[0] == 'start':
            start = int(f[2])
        elif len(f) == 3 and f[0] == 'end' and start is not None:
            ends.append(int(f[2]) - start)
            start = None
    if len(ends) != len(ok_cases):
        return {}
    return dict(zip(ok_cases, ends))


def run_device(lab, qemu, plugin, mark, kind, results):
    """One pair on device KIND: ({side: {case: insns}}, [what failed])."""
    out = results / kind
    links = dict(zip('AB', net.dgram_pair()))
    vrdma = kind != 'rxe'
    sides = {}
    for (g, ip, mac), role in ((SERVER, 'srv'), (CLIENT, 'cli')):
        tc = protocol.ToolCases(out / g)
        for name, srv, cli in cases(mark):
            tc.add(role, name, TOOL_TIMEOUT, srv if role == 'srv' else cli)
        tc.write()
        append = (f'lab.ip={ip}/24 lab.rdma={"vrdma" if vrdma else "rxe"} '
                  f'lab.ko={TOP}/build/guest/{lab.kver}/virtio_rdma.ko '
                  f'lab.prov={TOP}/build/guest/rdma-core '
                  'lab.run=/lab/guest-cases.sh')
        guest = Guest(lab, tc.out, append, links[g], mac, vrdma=vrdma)
        guest.args[0] = str(qemu)
        guest.args += ['-plugin', f'{plugin},out={tc.out / "insns.txt"}']
        sides[g] = (guest, tc)
    limit = 300 + TOOL_TIMEOUT * len(TOOLS) * 2 * ROUNDS
    t0 = time.monotonic()
    for guest, _ in sides.values():
        guest.start(limit)
    for guest, _ in sides.values():
        guest.wait()
    names = [c[0] for c in cases(mark)]
    per, failed = {}, []
    for g, (guest, tc) in sides.items():
        ok = [n for n in names if tc.run(n).rc == 0]
        failed += [f'{g}:{n} rc={tc.run(n).rc}' for n in names if n not in ok]
        if (tc.out / 'insns.txt').is_file():
            per[g] = windows(tc.out / 'insns.txt', ok)
            if not per[g]:
                failed.append(f'{g}: the marks do not match its cases')
        else:
            per[g] = {}
            failed.append(f'{g}: no insns.txt ({guest.status()})')
    for name, _, _, n2, _ in TOOLS:
        figs = [tools.figures(sides['B'][1].run(f'{name}-{n2}-r{r}').out) for r in range(ROUNDS)]
        print(f'guest_insns: {kind}: {name} x{n2}: {"; ".join(f or "-" for f in figs)}'
              ' (wall clock under TCG)', file=sys.stderr)
    print(f'guest_insns: {kind}: {time.monotonic() - t0:.0f} s'
          + (f'; failed: {" ".join(failed)}' if failed else ''), file=sys.stderr)
    return per, failed


def per_message(per, name, n1, n2):
    """Instructions per message on each side, one estimate a round:
    {side: [estimate, ...]} (a round with a missing window left out)."""
    got = {}
    for g in 'AB':
        w = per.get(g, {})
        got[g] = []
        for r in range(ROUNDS):
            a, b = w.get(f'{name}-{n1}-r{r}'), w.get(f'{name}-{n2}-r{r}')
            if a is not None and b is not None:
                got[g].append((b - a) / (n2 - n1))
    return got


def mean(v):
    return sum(v) / len(v) if v else None


def cell(v):
    """A mean and the spread of the rounds' estimates: "12345 (12000-12700)"."""
    if not v:
        return f'{"-":>22}'
    spread = f'({min(v):.0f}..{max(v):.0f})' if len(v) > 1 else ''
    return f'{mean(v):8.0f} {spread:>13}'


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--kernel', default='6.1')
    p.add_argument('--devices', default=','.join(DEVICES))
    p.add_argument('--results', metavar='DIR')
    p.add_argument('--tools', metavar='NAME,...', help='some of: '
                   + ', '.join(t[0] for t in TOOLS))
    args = p.parse_args()
    TOOLS[:] = chosen_tools(args.tools)
    kinds = args.devices.split(',')
    bad = [k for k in kinds if k not in DEVICES]
    if bad:
        sys.exit(f'guest_insns: unknown device {" ".join(bad)} (devices: {" ".join(DEVICES)})')
    lab = lab_env.configure(kernel=args.kernel)
    results = Path(args.results) if args.results else \
        lab.dir / 'results' / time.strftime('insns-%Y%m%d-%H%M%S')
    results.mkdir(parents=True, exist_ok=True)
    qemu, plugin, mark = prepare(lab)
    cpu = next((l.split(':', 1)[1].strip() for l in open('/proc/cpuinfo')
                if l.startswith('model name')), '?')
    print(f'guest_insns: kernel {lab.kver}, {os.cpu_count()} CPUs ({cpu}), '
          f'results {results}')
    measured, rc = {}, 0
    for kind in kinds:
        per, failed = run_device(lab, qemu, plugin, mark, kind, results)
        measured[kind] = per
        rc |= bool(failed)
    print(f'{"device":6} {"case":12} {"client/msg":>22} {"server/msg":>22} '
          f'{"sum/msg":>8} {"vs rxe":>7}')
    for kind in kinds:
        per = measured[kind]
        idle = [per.get(g, {}).get('idle') for g in 'AB']
        print(f'{kind:6} {"idle":12} ' + ' '.join(
            f'{(v / IDLE_SECONDS if v is not None else float("nan")):22.0f}' for v in idle)
            + '   (instructions per second, both asleep)')
        for name, _, n1, n2, polls in TOOLS:
            got = per_message(per, name, n1, n2)
            ref = per_message(measured.get('rxe', {}), name, n1, n2)
            if polls:  # only the server's count is work
                a, ra = mean(got['A']), mean(ref['A'])
                ratio = f'{a / ra:7.3f}' if a is not None and ra else '      -'
                print(f'{kind:6} {name:12} {"(polls)":>22} {cell(got["A"])} {"-":>8} {ratio}'
                      '   (server only: the client spins)')
                continue
            total = [a + b for a, b in zip(got['A'], got['B'])]
            ref_total = [a + b for a, b in zip(ref['A'], ref['B'])]
            ratio = (f'{mean(total) / mean(ref_total):7.3f}' if total and ref_total
                     else '      -')
            t = f'{mean(total):8.0f}' if total else f'{"-":>8}'
            print(f'{kind:6} {name:12} {cell(got["B"])} {cell(got["A"])} {t} {ratio}')
    return rc


if __name__ == '__main__':
    sys.exit(main())

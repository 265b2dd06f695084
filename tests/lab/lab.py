#!/usr/bin/python3
"""The lab tier's runner: Debian's kernel in TCG guests of our QEMU, real
RDMA tools in them (tests/lab/README.rst).

  lab.py [--kernel 6.1|6.12] [--quick] [-k REGEX] [PART...]
  lab.py --list [...]
  lab.py --report [--kernel ...]

Runs the cases of each PART (tests/lab/test_PART.py; default: every part)
and prints KTAP on stdout; exit status 1 when a case failed.  --quick: the
quick cases only (the CI's); -k: the cases whose PART/CASE the regex
matches.  Results under build/lab/results/<time>/ (build/lab-KERNEL/... for
another kernel): results.txt, report.txt (the figures side by side, each
part's from its newest run: --report prints it), and a directory per part
and per case.
"""
import argparse
import signal
import sys

from vrdma_lab import case, collect, env, guest, ktap, paths, report


def arguments():
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('parts', nargs='*', metavar='PART')
    p.add_argument('--kernel', default=paths.DEFAULT_KERNEL,
                   help='guest kernel series (default %(default)s)')
    p.add_argument('--quick', action='store_true', help='quick cases only')
    p.add_argument('-k', metavar='REGEX', help='cases whose PART/CASE match')
    p.add_argument('--list', action='store_true',
                   help='list the chosen cases (quick, time limit), run none')
    p.add_argument('--report', action='store_true',
                   help="print the figures of the kernel's newest runs, run none")
    p.add_argument('--results', metavar='DIR', help='result directory of this run')
    p.add_argument('--tap13', action='store_true',
                   help='"TAP version 13" as the version line, which KTAP '
                        'admits and meson\'s TAP parser knows')
    return p.parse_args()


def interrupted(signum, frame):
    # unittest lets KeyboardInterrupt through (it records anything else as
    # the current case's error and carries on).
    raise KeyboardInterrupt(signum)


def main():
    args = arguments()
    try:
        lab = env.configure(kernel=args.kernel, results=args.results)
    except ValueError as e:
        sys.exit(f'lab: {e}')
    if args.report:
        lines, sources = report.latest(lab.run_dir.parent)
        print(report.render(lines) + ''.join(f'({s})\n' for s in sources), end='')
        return 0
    known = collect.parts()
    unknown = [p for p in args.parts if p not in known]
    if unknown:
        sys.exit(f'lab: unknown part {" ".join(unknown)} (parts: {" ".join(known)})')
    modules = [known[p] for p in args.parts or known]
    tests = collect.select(modules, args.quick, args.k)
    if args.list:
        for t in tests:
            print(f'{t.name:40} {"quick" if t.is_quick() else "     "} {t.case_timeout():4} s')
        return 0

    signal.signal(signal.SIGTERM, interrupted)
    signal.signal(signal.SIGINT, interrupted)
    lab.run_dir.mkdir(parents=True, exist_ok=True)
    header = [f'lab: kernel {lab.kernel} ({lab.dir}), results {lab.run_dir}']
    if tests:
        try:
            lab.prepare()
            header.append(f'lab: guest kernel {lab.kver}')
        except env.LabSetupError as e:
            header.append(f'lab: {e}')  # and each case fails with it
    version = ktap.TAP13_VERSION if args.tap13 else ktap.KTAP_VERSION
    # Only KTAP on stdout: anything a case prints goes to stderr.
    out, sys.stdout = sys.stdout, sys.stderr
    try:
        with open(lab.run_dir / 'results.txt', 'a') as log:
            ok = ktap.run(tests, out, version, header, log)
    except KeyboardInterrupt as e:
        signum = e.args[0] if e.args else signal.SIGINT
        out.write(f'Bail out! {signal.Signals(signum).name}\n')
        return 128 + signum
    finally:
        # Nothing interrupts the clean-ups: the classes' pending ones (an
        # interrupted class never reached them), then any guest left.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        case.class_cleanups(tests)
        guest.kill_all()
        lab.close()
    lines, sources = report.latest(lab.run_dir.parent)
    (lab.run_dir / 'report.txt').write_text(
        report.render(lines) + ''.join(f'({s})\n' for s in sources))
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())

#!/usr/bin/env python3
"""Side by side: rdma-core's test suite on kernel rxe and on virtio-rdma.

  table.py RXE.jsonl VRDMA.jsonl EXPECTED OUTDIR
  (tests/lab/test_suite.py calls judge() with the same four)

Reads the per-test results of tests/lab/suite/runner.py from both guests and
the expected-difference list, writes OUTDIR/table.txt (every test, both
outcomes, the skip reason or first error line), OUTDIR/differences.txt and
OUTDIR/table.rst (the counts and every difference, for
docs/devel/rdma-core-tests.rst), and prints the verdicts, one per line:
  PASS|FAIL NAME DETAILS
EXPECTED lines: GLOB | SKIP-REGEX | reason, split at ' | ' (a regex may
hold a bare '|'); '#' starts a comment line.
An entry covers tests whose id matches GLOB (fnmatch) that pass on rxe and
are skipped on virtio-rdma with a skip message matching SKIP-REGEX: the
skip must be for the stated reason, not any skip.
A line "limit GLOB | ERROR-REGEX | reason" covers tests that fail on
virtio-rdma because they ask for more than a device limit the device
reports (a test that does not read the limit first): the failure's text
must match ERROR-REGEX.
"""
import fnmatch
import json
import os
import re
import sys

OK = ('pass', 'xfail')
BAD = ('fail', 'error', 'timeout', 'crash', 'upass')


def load(path):
    res = {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    r = json.loads(line)
                    res[r['id']] = r
    return res


def load_expected(path):
    ent = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if not line.strip() or line.lstrip().startswith('#'):
                continue
            kind = 'skip'
            if line.startswith('limit '):
                kind, line = 'limit', line[len('limit '):]
            parts = [p.strip() for p in line.split(' | ', 2)]
            if len(parts) != 3 or not all(parts):
                raise ValueError(f'{path}:{n}: want "[limit ]GLOB | REGEX | reason"')
            ent.append({'glob': parts[0], 're': re.compile(parts[1]), 'why': parts[2],
                        'kind': kind, 'line': n, 'used': 0, 'wrong': []})
    return ent


def cls(r):
    if r is None:
        return 'missing'
    o = r['outcome']
    return 'pass' if o in OK else 'skip' if o == 'skip' else 'FAIL'


def note(r):
    """The skip reason, or the last line of a traceback (the exception)."""
    if r is None:
        return ''
    d = (r.get('detail') or '').strip()
    if r['outcome'] == 'skip':
        return d.splitlines()[0][:100] if d else ''
    if r['outcome'] in BAD:
        lines = [l for l in d.splitlines() if l.strip()]
        return (r['outcome'] + ': ' + (lines[-1] if lines else ''))[:140]
    return ''


def short(tid):
    return tid[len('tests.'):] if tid.startswith('tests.') else tid


def counts(res):
    c = {'pass': 0, 'skip': 0, 'FAIL': 0}
    for r in res.values():
        c[cls(r)] += 1
    return c


def write_rst(f, ids, rxe, vr, explained):
    """Counts per test module, every test that passes or fails on either
    side (one row each), and the tests skipped on both, by skip reason."""
    why = {i: e['why'] for i, e in explained}
    mods = {}
    for i in ids:
        m = short(i).split('.')[0]
        c = mods.setdefault(m, {'rxe': counts({}), 'vrdma': counts({})})
        c['rxe'][cls(rxe.get(i)) if cls(rxe.get(i)) in c['rxe'] else 'FAIL'] += 1
        c['vrdma'][cls(vr.get(i)) if cls(vr.get(i)) in c['vrdma'] else 'FAIL'] += 1
    f.write('Per module (passed / failed / skipped):\n\n.. list-table::\n   :header-rows: 1\n\n'
            '   * - module\n     - rxe\n     - virtio-rdma\n')
    tot = {'rxe': counts({}), 'vrdma': counts({})}
    for m, c in mods.items():
        f.write(f'   * - ``{m}``\n')
        for side in ('rxe', 'vrdma'):
            x = c[side]
            for k in x:
                tot[side][k] += x[k]
            f.write(f"     - {x['pass']} / {x['FAIL']} / {x['skip']}\n")
    f.write('   * - total\n')
    for side in ('rxe', 'vrdma'):
        x = tot[side]
        f.write(f"     - {x['pass']} / {x['FAIL']} / {x['skip']}\n")
    f.write('\nEvery test that passes or fails on either side:\n\n.. list-table::\n'
            '   :header-rows: 1\n\n   * - test\n     - rxe\n     - virtio-rdma\n     - note\n')
    for i in ids:
        a, b = rxe.get(i), vr.get(i)
        if cls(a) == 'skip' and cls(b) == 'skip':
            continue
        n = why.get(i) or note(b) or note(a)
        f.write(f'   * - ``{short(i)}``\n     - {cls(a)}\n     - {cls(b)}\n'
                f'     - {n.replace("`", "")}\n')
    reasons = {}
    for i in ids:
        a, b = rxe.get(i), vr.get(i)
        if cls(a) == 'skip' and cls(b) == 'skip':
            ra, rb = note(a), note(b)
            key = rb if ra == rb else f'rxe: {ra}; virtio-rdma: {rb}'
            reasons[key] = reasons.get(key, 0) + 1
    f.write('\nSkipped on both sides, by skip message:\n\n.. list-table::\n'
            '   :header-rows: 1\n\n   * - tests\n     - skip message\n')
    for k, n in sorted(reasons.items(), key=lambda x: -x[1]):
        f.write(f'   * - {n}\n     - {k.replace("`", "")}\n')


def judge(rxe_p, vr_p, exp_p, outdir):
    """The verdicts, [(ok, NAME, DETAILS)] (NAME without 'suite/'), of
    the two sides' results against the expected list; writes OUTDIR's
    tables.  ValueError for a malformed expected list."""
    rxe, vr = load(rxe_p), load(vr_p)
    exp = load_expected(exp_p)
    ids = list(rxe) + [i for i in vr if i not in rxe]
    verdicts = []

    def verdict(ok, name, detail):
        verdicts.append((bool(ok), name.removeprefix('suite/'), detail))

    for side, res in (('rxe', rxe), ('vrdma', vr)):
        c = counts(res)
        verdict(len(res) > 0 and c['pass'] > 0, f'suite/ran-{side}',
                f"{len(res)} tests: {c['pass']} passed, {c['FAIL']} failed, {c['skip']} skipped")
    # Judged when both sides ran (ran-rxe and ran-vrdma judge the rest).
    differ = len(rxe) and len(vr) and set(rxe) != set(vr)
    verdict(not differ, 'suite/same-tests',
            f'the two sides ran different tests: only rxe {len(set(rxe) - set(vr))}, '
            f'only vrdma {len(set(vr) - set(rxe))}' if differ else
            f'{len(set(rxe) & set(vr))} tests ran on both sides')

    # Every test that passes on rxe passes on virtio-rdma, or is skipped
    # there for a reason the expected list names.
    lost, explained = [], []
    for i in ids:
        a, b = rxe.get(i), vr.get(i)
        if cls(a) != 'pass' or cls(b) == 'pass':
            continue
        hit = None
        kind = {'skip': 'skip', 'FAIL': 'limit'}.get(cls(b))
        for e in exp:
            if kind != e['kind']:
                continue
            if fnmatch.fnmatchcase(i, e['glob']) or fnmatch.fnmatchcase(short(i), e['glob']):
                if e['re'].search(b.get('detail') or ''):
                    hit = e
                else:
                    e['wrong'].append(i)
                break
        if hit:
            hit['used'] += 1
            explained.append((i, hit))
        else:
            lost.append(i)
    verdict(not lost and bool(rxe), 'suite/rxe-pass-is-vrdma-pass',
            f'{len(explained)} rxe passes skipped on vrdma, or failed by a device limit, '
            'for a listed reason' if not lost else
            f'{len(lost)} tests pass on rxe but not on vrdma: ' +
            '; '.join(f'{short(i)} ({note(vr.get(i)) or cls(vr.get(i))})' for i in lost))

    # No test fails on virtio-rdma (whatever rxe did with it), but where a
    # listed device limit is the reason.
    limited = {i for i, e in explained if e['kind'] == 'limit'}
    bad = [i for i in ids if cls(vr.get(i)) == 'FAIL' and i not in limited]
    verdict(not bad and bool(vr), 'suite/vrdma-no-failures',
            'no test failed, errored, hung or crashed on vrdma' +
            (f' but {len(limited)} asking for more than a listed device limit' if limited else '')
            if not bad else
            f'{len(bad)} tests fail on vrdma: ' +
            '; '.join(f'{short(i)} [rxe {cls(rxe.get(i))}] {note(vr.get(i))}' for i in bad))

    # The list holds no entry that matches no test, none that covers a test
    # virtio-rdma passes (its reason is gone), and none whose skip happened
    # with another message than it states.  An entry whose tests rxe does
    # not pass either (an older kernel's rxe) explains nothing in this run
    # and is only counted.
    stale = []
    for e in exp:
        hits = [i for i in ids if fnmatch.fnmatchcase(short(i), e['glob'])
                or fnmatch.fnmatchcase(i, e['glob'])]
        passing = [i for i in hits if cls(vr.get(i)) == 'pass']
        if not hits:
            stale.append(f"line {e['line']} {e['glob']}: matches no test")
        elif passing:
            stale.append(f"line {e['line']} {e['glob']}: {short(passing[0])} passes on vrdma")
        elif e['wrong']:
            stale.append(f"line {e['line']} {e['glob']}: skip message does not match for "
                         f"{short(e['wrong'][0])}")
    idle = sum(1 for e in exp if not e['used'])
    verdict(not stale, 'suite/expected-list-current',
            f"{len(exp)} entries, {len(exp) - idle} explain a difference"
            f"{f', {idle} not exercised (rxe does not pass their tests here)' if idle else ''}"
            if not stale else '; '.join(stale))

    os.makedirs(outdir, exist_ok=True)
    w = max([len(short(i)) for i in ids] + [10])
    with open(os.path.join(outdir, 'table.txt'), 'w') as f:
        cr, cv = counts(rxe), counts(vr)
        f.write(f"{'test':{w}}  {'rxe':7} {'vrdma':7} note (vrdma; rxe when only rxe has one)\n")
        for i in ids:
            a, b = rxe.get(i), vr.get(i)
            mark = ' ' if cls(a) == cls(b) else '*'
            f.write(f"{short(i):{w}}  {cls(a):7} {cls(b):7}{mark}{note(b) or note(a)}\n")
        f.write(f"\ntotal: rxe {cr['pass']} passed, {cr['FAIL']} failed, {cr['skip']} skipped; "
                f"vrdma {cv['pass']} passed, {cv['FAIL']} failed, {cv['skip']} skipped\n")
    with open(os.path.join(outdir, 'differences.txt'), 'w') as f:
        for i in ids:
            a, b = rxe.get(i), vr.get(i)
            if cls(a) != cls(b):
                why = next((e['why'] for j, e in explained if j == i), '')
                f.write(f"{short(i)}: rxe {cls(a)} ({note(a)}), vrdma {cls(b)} ({note(b)})"
                        f"{'; listed: ' + why if why else ''}\n")
    with open(os.path.join(outdir, 'table.rst'), 'w') as f:
        write_rst(f, ids, rxe, vr, explained)
    return verdicts


def main():
    try:
        verdicts = judge(*sys.argv[1:5])
    except ValueError as e:
        sys.exit(str(e))
    for ok, name, detail in verdicts:
        print(f"{'PASS' if ok else 'FAIL'} suite/{name} {detail}")


if __name__ == '__main__':
    main()

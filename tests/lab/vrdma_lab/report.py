"""The figures side by side: guest rxe <-> guest rxe (baseline) against our
device <-> guest rxe (interop, each direction and GID family), and the
driver part's guests on virtio-rdma against each other and against rxe.

Each part runs in a lab.py of its own (one meson test a part and kernel),
so a report takes each part's lines from the newest run of that kernel
that has them (latest()); lab.py --report prints it, and a run writes it to
its report.txt.
"""
import re
from pathlib import Path

TOOLS = ['rc_pingpong', 'ud_pingpong', 'write_bw', 'read_bw', 'send_bw', 'atomic_bw']
INTEROP_COLS = ['rxe<->rxe', 'dev->rxe v4', 'rxe->dev v4', 'dev->rxe v6', 'rxe->dev v6']
DRIVER_COLS = ['vrdma<->vrdma v4', 'vrdma<->vrdma v6', 'vrdma->rxe v4', 'rxe->vrdma v4',
               'vrdma->rxe v6', 'rxe->vrdma v6']
DRIVER_TOOLS = TOOLS + ['write_lat', 'read_lat', 'send_lat', 'atomic_lat', 'rping',
                        'rc_pingpong_wr']


def cell_of(name):
    """(table, tool, column) of a results line's case, or None."""
    m = re.fullmatch(r'baseline/(\w+)', name)
    if m:
        return 'interop', m.group(1), 'rxe<->rxe'
    m = re.fullmatch(r'interop/v([46])-(\w+)-(gsrv|gcli)', name)
    if m:
        way = 'dev->rxe' if m.group(3) == 'gsrv' else 'rxe->dev'
        return 'interop', m.group(2), f'{way} v{m.group(1)}'
    m = re.fullmatch(r'driver/(vv|vr)/v([46])-(\w+?)(-vsrv|-vcli)?', name)
    if m:
        if m.group(1) == 'vv':
            col = 'vrdma<->vrdma'
        else:
            col = 'rxe->vrdma' if m.group(4) == '-vsrv' else 'vrdma->rxe'
        return 'driver', m.group(3), f'{col} v{m.group(2)}'
    return None


def cell_text(tool, verdict, details):
    fig = dict(re.findall(r'\b(bw|lat|rate)=([0-9.]+)', details))
    s = ''
    if 'bw' in fig:
        s = fig['bw'] + ' MB/s'
    if 'lat' in fig:
        s += ' ' + fig['lat'] + ' us'
    if 'rate' in fig and 'atomic_bw' in tool:
        s = '%.0f op/s' % (float(fig['rate']) * 1e6)
    s = s.strip() or ('ok' if verdict == 'PASS' else '')
    return (s + ('' if verdict == 'PASS' else ' ' + verdict)).strip()


def render(lines):
    """The report of results lines ("VERDICT PART/CASE DETAILS")."""
    tables = {'interop': {}, 'driver': {}}
    for line in lines:
        f = line.rstrip('\n').split(None, 2)
        if len(f) < 2:
            continue
        where = cell_of(f[1])
        if where:
            table, tool, col = where
            tables[table].setdefault(tool, {})[col] = cell_text(tool, f[0], f[2] if len(f) > 2 else '')
    out = []

    def table(rows, cols, tools):
        out.append('%-15s' % 'case' + ''.join('%-24s' % c for c in cols).rstrip())
        for t in tools:
            if t in rows:
                out.append(('%-15s' % t + ''.join('%-24s' % rows[t].get(c, '-') for c in cols)).rstrip())

    if tables['interop']:
        out.append('Figures (client side; "dev->rxe": our device is the client, the '
                   "guest's rxe the server; pingpong: MB/s and round-trip us/iter):")
        table(tables['interop'], INTEROP_COLS, TOOLS)
    if tables['driver']:
        out.append('Driver: guests on virtio-rdma through virtio_rdma.ko (client side; '
                   '"vrdma->rxe": the virtio-rdma guest is the client; *_lat: t_typical):')
        table(tables['driver'], DRIVER_COLS, DRIVER_TOOLS)
    return '\n'.join(out) + ('\n' if out else '')


def latest(results_root, parts=('baseline', 'interop', 'driver')):
    """Each of PARTS' lines from the newest run under RESULTS_ROOT (a
    kernel's results/) that has lines of it; and the runs they came from."""
    runs = sorted(Path(results_root).glob('*/results.txt'), key=lambda p: p.stat().st_mtime,
                  reverse=True)
    lines, sources = [], []
    for part in parts:
        for path in runs:
            mine = [l for l in path.read_text(errors='replace').splitlines()
                    if l.split(None, 2)[1:2] and l.split(None, 2)[1].startswith(part + '/')]
            if mine:
                lines += mine
                sources.append(f'{part}: {path.parent}')
                break
    return lines, sources

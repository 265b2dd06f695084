#!/usr/bin/env python3
"""Side-by-side figures of one lab run: guest rxe <-> guest rxe (baseline)
against our device <-> guest rxe (interop, each direction and GID family).
usage: report.py RESULTS.TXT  (the lines run.sh wrote)"""
import re
import sys

rows = {}
for line in open(sys.argv[1]):
    parts = line.split(None, 2)
    if len(parts) < 2:
        continue
    res, name, rest = parts[0], parts[1], parts[2] if len(parts) > 2 else ''
    fig = dict(re.findall(r'\b(bw|lat|rate)=([0-9.]+)', rest))
    m = re.match(r'baseline/(\w+)$', name)
    if m:
        rows.setdefault(m.group(1), {})['rxe<->rxe'] = (res, fig)
        continue
    m = re.match(r'interop/v([46])-(\w+)-(gsrv|gcli)$', name)
    if m:
        col = 'dev->rxe v%s' % m.group(1) if m.group(3) == 'gsrv' else 'rxe->dev v%s' % m.group(1)
        rows.setdefault(m.group(2), {})[col] = (res, fig)

cols = ['rxe<->rxe', 'dev->rxe v4', 'rxe->dev v4', 'dev->rxe v6', 'rxe->dev v6']
def cell(c):
    if not c:
        return '-'
    res, f = c
    s = ''
    if 'bw' in f:
        s = f['bw'] + ' MB/s'
    if 'lat' in f:
        s += ' ' + f['lat'] + ' us'
    if 'rate' in f and 'atomic' in cur:
        s = '%.0f op/s' % (float(f['rate']) * 1e6)
    return (s.strip() or '?') + ('' if res == 'PASS' else ' FAIL')

print('Figures of one run (client side; "dev->rxe": our device is the client, '
      'the guest\'s rxe the server; pingpong: MB/s and round-trip us/iter):')
print('%-12s' % 'case' + ''.join('%-24s' % c for c in cols))
for cur in ['rc_pingpong', 'ud_pingpong', 'write_bw', 'read_bw', 'send_bw', 'atomic_bw']:
    if cur in rows:
        print('%-12s' % cur + ''.join('%-24s' % cell(rows[cur].get(c)) for c in cols))

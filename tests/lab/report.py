#!/usr/bin/env python3
"""Side-by-side figures of one lab run: guest rxe <-> guest rxe (baseline)
against our device <-> guest rxe (interop, each direction and GID family), and
the driver part's guests on virtio-rdma against each other and against rxe.
usage: report.py RESULTS.TXT  (the lines run.sh wrote)"""
import re
import sys

rows = {}
drows = {}
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
        continue
    m = re.match(r'driver/(vv|vr)/v([46])-(\w+?)(-vsrv|-vcli)?$', name)
    if m:
        if m.group(1) == 'vv':
            col = 'vrdma<->vrdma v%s' % m.group(2)
        elif m.group(4) == '-vsrv':
            col = 'rxe->vrdma v%s' % m.group(2)
        else:
            col = 'vrdma->rxe v%s' % m.group(2)
        drows.setdefault(m.group(3), {})[col] = (res, fig)


def cell(cur, c):
    if not c:
        return '-'
    res, f = c
    s = ''
    if 'bw' in f:
        s = f['bw'] + ' MB/s'
    if 'lat' in f:
        s += ' ' + f['lat'] + ' us'
    if 'rate' in f and 'atomic_bw' in cur:
        s = '%.0f op/s' % (float(f['rate']) * 1e6)
    return ((s.strip() or ('ok' if res == 'PASS' else '')) + ('' if res == 'PASS' else ' FAIL')).strip()


def table(rows, cols, cases):
    print('%-12s' % 'case' + ''.join('%-24s' % c for c in cols))
    for cur in cases:
        if cur in rows:
            print('%-12s' % cur + ''.join('%-24s' % cell(cur, rows[cur].get(c)) for c in cols))


if rows:
    print('Figures of one run (client side; "dev->rxe": our device is the client, '
          'the guest\'s rxe the server; pingpong: MB/s and round-trip us/iter):')
    table(rows, ['rxe<->rxe', 'dev->rxe v4', 'rxe->dev v4', 'dev->rxe v6', 'rxe->dev v6'],
          ['rc_pingpong', 'ud_pingpong', 'write_bw', 'read_bw', 'send_bw', 'atomic_bw'])
if drows:
    print('Driver: guests on virtio-rdma through virtio_rdma.ko (client side; '
          '"vrdma->rxe": the virtio-rdma guest is the client; *_lat: t_typical):')
    table(drows, ['vrdma<->vrdma v4', 'vrdma<->vrdma v6', 'vrdma->rxe v4', 'rxe->vrdma v4',
                  'vrdma->rxe v6', 'rxe->vrdma v6'],
          ['rc_pingpong', 'ud_pingpong', 'write_bw', 'read_bw', 'send_bw', 'atomic_bw',
           'write_lat', 'read_lat', 'send_lat', 'atomic_lat', 'rping', 'rc_pingpong_wr'])

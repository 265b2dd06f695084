#!/usr/bin/env python3
"""QMP helper of the lab's driver part.
  qmp.py query SOCK PREFIX   PREFIX.txt = HMP "info rdma", PREFIX.json =
                             query-virtio-rdma (the first device)
  qmp.py objects JSON        "pd=N cq=N qp=N mr=N gid=N pages=N"
  qmp.py traffic JSON        packets, completions and errors of the data path
"""
import json
import socket
import sys


def qmp(sock_path, timeout=20):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(sock_path)
    f = s.makefile('rw')

    def cmd(name, **args):
        f.write(json.dumps({'execute': name, 'arguments': args}) + '\n')
        f.flush()
        while True:
            r = json.loads(f.readline())
            if 'return' in r:
                return r['return']
            if 'error' in r:
                raise RuntimeError('%s: %s' % (name, r['error']))
            # anything else is an event: skip it

    json.loads(f.readline())  # greeting
    cmd('qmp_capabilities')
    return cmd


def load(path):
    d = json.load(open(path))
    if not d:
        sys.exit('%s: no virtio-rdma device' % path)
    return d[0]


def main():
    op = sys.argv[1]
    if op == 'query':
        cmd = qmp(sys.argv[2])
        prefix = sys.argv[3]
        open(prefix + '.txt', 'w').write(
            cmd('human-monitor-command', **{'command-line': 'info rdma'}))
        json.dump(cmd('query-virtio-rdma'), open(prefix + '.json', 'w'), indent=1)
    elif op == 'objects':
        i = load(sys.argv[2])
        print('pd=%d cq=%d qp=%d mr=%d gid=%d pages=%d' % (
            i['pds'], i['cqs'], i['qps'], i['mrs'], i['gids'], i['mapped-pages']))
    elif op == 'traffic':
        i = load(sys.argv[2])
        d = i['data-path']
        print('tx=%d rx=%d completions=%d error-completions=%d drops=%d '
              'retransmits=%d commands=%d command-errors=%d' % (
                  d['tx-packets'], d['rx-packets'], d['completions'],
                  d['error-completions'], d['drops'], d['retransmits'],
                  i['commands'], i['command-errors']))
    else:
        sys.exit(__doc__)


if __name__ == '__main__':
    main()

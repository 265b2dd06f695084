"""QMP for the lab: a minimal client, and what the parts read from our
device through it (HMP "info rdma", query-virtio-rdma)."""
import json
import socket


class QMP:
    """One QMP connection, capabilities negotiated; events are skipped."""

    def __init__(self, path, timeout=20):
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.settimeout(timeout)
        try:
            self._sock.connect(str(path))
            self._file = self._sock.makefile('rw')
            json.loads(self._file.readline())  # the greeting
            self.cmd('qmp_capabilities')
        except BaseException:
            self._sock.close()
            raise

    def cmd(self, name, **args):
        self._file.write(json.dumps({'execute': name, 'arguments': args}) + '\n')
        self._file.flush()
        while True:
            line = self._file.readline()
            if not line:
                raise ConnectionError(f'{name}: QMP closed')
            r = json.loads(line)
            if 'return' in r:
                return r['return']
            if 'error' in r:
                raise RuntimeError(f'{name}: {r["error"]}')

    def hmp(self, command_line):
        return self.cmd('human-monitor-command', **{'command-line': command_line})

    def close(self):
        self._file.close()
        self._sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def query(path, prefix):
    """PREFIX.txt = "info rdma", PREFIX.json = query-virtio-rdma."""
    with QMP(path) as q:
        with open(f'{prefix}.txt', 'w') as f:
            f.write(q.hmp('info rdma'))
        with open(f'{prefix}.json', 'w') as f:
            json.dump(q.cmd('query-virtio-rdma'), f, indent=1)


def first_device(json_path):
    """The first device of a query-virtio-rdma answer saved by query()."""
    with open(json_path) as f:
        devices = json.load(f)
    if not devices:
        raise LookupError(f'{json_path}: no virtio-rdma device')
    return devices[0]


def objects(dev):
    """"pd=N cq=N qp=N mr=N gid=N pages=N" of one device."""
    return 'pd=%d cq=%d qp=%d mr=%d gid=%d pages=%d' % (
        dev['pds'], dev['cqs'], dev['qps'], dev['mrs'], dev['gids'],
        dev['mapped-pages'])


def traffic(dev):
    """The data path's packets, completions and errors of one device."""
    d = dev['data-path']
    return ('tx=%d rx=%d completions=%d error-completions=%d drops=%d '
            'retransmits=%d commands=%d command-errors=%d' % (
                d['tx-packets'], d['rx-packets'], d['completions'],
                d['error-completions'], d['drops'], d['retransmits'],
                dev['commands'], dev['command-errors']))

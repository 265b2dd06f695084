#!/usr/bin/python3
"""mpi-rsh: the remote shell of mpirun between two lab guests, which have
no ssh (vrdma_lab/tools.py's mpi_pingpong).

  mpi-rsh.py -p PORT --serve SECONDS [ADDRESS]
      the peer guest: listen on TCP PORT (of ADDRESS; default: every
      address), take ONE session, run its command as sshd would (its words
      joined by spaces, through /bin/sh -c: Open MPI quotes orted's
      arguments for a shell), relay the command's stdout and stderr, exit
      with its status.  The command is killed (its whole process group)
      when SECONDS have passed, the client went away or the server got
      SIGTERM.
  mpi-rsh.py -p PORT [OPTIONS] HOST COMMAND...
      mpirun's --mca plm_rsh_agent "mpi-rsh.py -p PORT": run COMMAND on
      HOST's server, print what it printed, exit with its status; 255 (as
      ssh) when there is no session.  OPTIONS (rsh's, none expected) are
      ignored.

Wire: the client sends the command as one JSON line (a list of strings);
the server answers with frames: a kind byte (o stdout, e stderr, x exit),
a 4-byte big-endian length, the payload; x's is the status in ASCII.  No
authentication: the lab's guests talk over their private links only, and
a server takes one session.
"""
import json
import os
import selectors
import signal
import socket
import struct
import subprocess
import sys
import time

HEADER = struct.Struct('>cI')
NO_SESSION = 255


def frame(kind, data):
    return HEADER.pack(kind, len(data)) + data


def frames(buf):
    """The whole frames at the start of BUF as [(kind, payload)], and the
    bytes after them."""
    out = []
    while len(buf) >= HEADER.size:
        kind, n = HEADER.unpack_from(buf)
        if len(buf) < HEADER.size + n:
            break
        out.append((kind, bytes(buf[HEADER.size:HEADER.size + n])))
        buf = buf[HEADER.size + n:]
    return out, buf


def status(returncode):
    """A Popen returncode as a shell's exit status (killed: 128 + signal)."""
    return 128 - returncode if returncode < 0 else returncode


def serve(port, seconds, address=''):
    end = time.monotonic() + seconds
    with socket.create_server((address, port)) as ls:
        ls.settimeout(seconds)
        try:
            conn, _ = ls.accept()
        except TimeoutError:
            print(f'mpi-rsh: no session on port {port} in {seconds} s', file=sys.stderr)
            return NO_SESSION
    with conn:
        line = b''
        while not line.endswith(b'\n'):
            conn.settimeout(max(0.1, end - time.monotonic()))
            got = conn.recv(4096)
            if not got:
                return NO_SESSION
            line += got
        conn.settimeout(None)
        argv = json.loads(line)
        child = subprocess.Popen(['/bin/sh', '-c', ' '.join(argv)], stdin=subprocess.DEVNULL,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 start_new_session=True)
        try:
            return relay(conn, child, end, seconds)
        finally:  # also on SIGTERM (timeout(1)): no orted left behind
            if child.poll() is None:
                os.killpg(child.pid, signal.SIGKILL)


def relay(conn, child, end, seconds):
    """CHILD's output to CONN until it ended, END passed or the client
    went away; sends and returns its status."""
    sel = selectors.DefaultSelector()
    sel.register(child.stdout, selectors.EVENT_READ, b'o')
    sel.register(child.stderr, selectors.EVENT_READ, b'e')
    sel.register(conn, selectors.EVENT_READ, None)
    why = None
    # Until both pipes are closed, or the command exited (a process it
    # left may hold them).
    while len(sel.get_map()) > 1 and not why:
        left = end - time.monotonic()
        ready = sel.select(min(left, 0.5)) if left > 0 else []
        for key, _ in ready:
            if key.data is None:  # the client sends nothing more: it is gone
                why = 'mpi-rsh: the client went away\n'
                break
            data = os.read(key.fd, 65536)
            if data:
                conn.sendall(frame(key.data, data))
            else:
                sel.unregister(key.fileobj)
        if left <= 0:
            why = f'mpi-rsh: killed after {seconds} s\n'
        elif not ready and child.poll() is not None:
            break
    try:
        child.wait(0 if why else max(0.1, end - time.monotonic()))
    except subprocess.TimeoutExpired:
        why = why or f'mpi-rsh: killed after {seconds} s\n'
        os.killpg(child.pid, signal.SIGKILL)
    rc = status(child.wait())
    try:
        if why:
            conn.sendall(frame(b'e', why.encode()))
        conn.sendall(frame(b'x', str(rc).encode()))
    except OSError:  # the client is gone
        pass
    return rc


def client(port, args):
    while args and args[0].startswith('-'):
        args = args[1:]
    if len(args) < 2:
        print('mpi-rsh: no HOST COMMAND', file=sys.stderr)
        return NO_SESSION
    host, command = args[0], args[1:]
    try:
        conn = socket.create_connection((host, port), timeout=10)
    except OSError as e:  # "Connection refused": guest-cases.sh retries
        print(f'mpi-rsh: {host}:{port}: {e.strerror or e}', file=sys.stderr)
        return NO_SESSION
    with conn:
        conn.settimeout(None)
        conn.sendall(json.dumps(command).encode() + b'\n')
        buf, out = b'', {b'o': sys.stdout.buffer, b'e': sys.stderr.buffer}
        while True:
            data = conn.recv(65536)
            if not data:
                print(f'mpi-rsh: {host}:{port}: the session ended without a status',
                      file=sys.stderr)
                return NO_SESSION
            got, buf = frames(buf + data)
            for kind, payload in got:
                if kind == b'x':
                    return int(payload)
                out[kind].write(payload)
                out[kind].flush()


def main(argv):
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    if len(argv) < 3 or argv[1] != '-p':
        print(__doc__, file=sys.stderr)
        return 2
    port = int(argv[2])
    if argv[3:4] == ['--serve']:
        return serve(port, int(argv[4]), *argv[5:6])
    return client(port, argv[3:])


if __name__ == '__main__':
    sys.exit(main(sys.argv))

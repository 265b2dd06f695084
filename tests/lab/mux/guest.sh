#!/bin/sh
# Lab guest job of the mux part (tests/lab/test_mux.py): contrib/rdmacm-mux on
# this guest's rxe0, driven by protocol clients.  Each case writes
# "PASS|FAIL NAME details" to /out/results; the mux's log is /out/mux.log.
. /out/env
out=/out/results
: > $out
sock=/run/rdmacm-mux.sock
state=/run/rdmacm-mux-state

# check NAME WANT TEXT: PASS when TEXT contains WANT.
check() {
    if printf '%s' "$3" | grep -qF -- "$2"; then
        echo "PASS $1 $(printf '%s' "$3" | grep -F -- "$2" | head -1 | cut -c1-160)" >> $out
    else
        echo "FAIL $1 wanted \"$2\", got: $(printf '%s' "$3" | tr '\n' ' ' | cut -c1-300)" >> $out
    fi
}

cat /sys/class/infiniband/rxe0/ports/1/gids/* > /out/gids.txt 2>&1
lsmod > /out/lsmod.txt 2>&1

# The lab's initramfs loads rdma_ucm, so ib_cm holds the CM class: the mux
# must say so and what to unload.
e=$(timeout 30 "$MUX" --ibdev rxe0 --socket /run/refused.sock 2>&1; echo "exit $?")
check cm-held "the kernel's ib_cm is loaded" "$e"
check cm-held-exit "exit 1" "$e"
check no-device "no host RDMA device 'rxe9' (the host has: rxe0)" \
    "$(timeout 30 "$MUX" --ibdev rxe9 2>&1)"
check no-port "rxe0 has no port 2 (ports 1..1)" \
    "$(timeout 30 "$MUX" --ibdev rxe0 --ibport 2 2>&1)"

# nvme_rdma and nvmet_rdma (the nvme part) hold rdma_cm too.
rmmod nvme_rdma nvmet_rdma rdma_ucm rdma_cm iw_cm ib_cm 2>> /out/rmmod.txt
dmesg > /out/dmesg-before.txt

"$MUX" --ibdev rxe0 --socket $sock --state-dir $state -v > /out/mux.log 2>&1 &
mux=$!
i=0
while [ ! -S $sock ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
if [ ! -S $sock ]; then
    echo "FAIL start no socket after 10 s: $(tr '\n' ' ' < /out/mux.log | cut -c1-300)" >> $out
    exit 0
fi
echo "PASS start $(grep -m1 serving /out/mux.log)" >> $out
check socket-mode "660" "$(stat -c %a $sock)"
# One mux per socket, one CM agent per port.
check second-socket "another rdmacm-mux is listening on $sock" \
    "$(timeout 30 "$MUX" --ibdev rxe0 --socket $sock 2>&1)"
check second-agent "another rdmacm-mux or CM agent already runs on this port" \
    "$(timeout 30 "$MUX" --ibdev rxe0 --socket /run/second.sock 2>&1)"

# Protocol clients (include/hw/rdma/rdmacm-mux-proto.h, version 3), shared
# by the two scripts below: one line per case on stdout.
cat > /run/muxclient.py <<'PY'
import os, select, socket, struct, sys, time

MAGIC, VERSION = 0x584D4352, 3
HELLO, HELLO_ACK, GID_ADD, GID_DEL, GID_ACK, MAD_SEND, MAD_RECV = range(1, 8)
SIZE = {1: 1484, 2: 80, 3: 16, 4: 16, 5: 24, 6: 300, 7: 300}
OK, NOT_ON_HOST, CLAIMED, NOT_ALLOWED, RESERVED = 0, 3, 4, 7, 8
ALL = [(bytes(16), 0)]  # the allow-list ::/0
path = sys.argv[1]


def result(ok, name, text):
    print(("PASS" if ok else "FAIL"), name, text, flush=True)


def host_gids():
    """rxe0's GID table: index -> 16 bytes, valid entries only."""
    d = "/sys/class/infiniband/rxe0/ports/1/gids/"
    gids = {}
    for i in range(32):
        try:
            g = bytes.fromhex(open(d + str(i)).read().strip().replace(":", ""))
        except OSError:
            continue
        if any(g):
            gids[i] = g
    return gids


class Client:
    def __init__(self):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.connect(path)
        self.seq = 0
        self.buf = b""

    def send_raw(self, b):
        self.s.sendall(b)

    def send(self, t, payload):
        self.seq += 1
        self.send_raw(struct.pack("<IHHII", MAGIC, VERSION, t, self.seq,
                                  len(payload)) + payload)
        return self.seq

    def recv(self, timeout=5.0):
        """(type, seq, payload), None on timeout, "closed" at EOF."""
        end = time.time() + timeout
        while True:
            if len(self.buf) >= 16:
                magic, ver, t, seq, n = struct.unpack_from("<IHHII", self.buf)
                assert magic == MAGIC and ver == VERSION and n == SIZE[t]
                if len(self.buf) >= 16 + n:
                    p = self.buf[16:16 + n]
                    self.buf = self.buf[16 + n:]
                    return t, seq, p
            left = end - time.time()
            if left <= 0 or not select.select([self.s], [], [], left)[0]:
                return None
            b = self.s.recv(4096)
            if not b:
                return "closed"
            self.buf += b

    def hello(self, owner, allow=ALL):
        """HELLO as OWNER allowed ALLOW [(gid, prefix length)]."""
        p = (b"rxe0".ljust(64, b"\0") + struct.pack("<II", 1, VERSION) +
             owner.encode().ljust(128, b"\0") + struct.pack("<I", len(allow)))
        for g, n in allow:
            p += g + bytes([n, 0, 0, 0])
        self.send(HELLO, p.ljust(1484, b"\0"))
        t, _, p = self.recv()
        assert t == HELLO_ACK
        return p[:64].rstrip(b"\0").decode(), struct.unpack_from("<IIII", p, 64)

    def gid(self, t, g):
        seq = self.send(t, g)
        t, _, p = self.recv()
        req_seq, status = struct.unpack_from("<II", p)
        assert t == GID_ACK and req_seq == seq and p[8:] == g
        return status

    def mad_send(self, sgid, dgid, mad, hop=64):
        self.send(MAD_SEND, sgid + dgid + struct.pack("<IHBBI", 0, 0, 0, hop,
                                                     256) + mad)


def cm_mad(attr, fill):
    """A CM MAD (base 1, class 0x07 v2, Send) with @fill in its body."""
    hdr = struct.pack(">BBBBHHQHHI", 1, 0x07, 2, 0x03, 0, 0,
                      0x1234 << 32 | fill, attr, 0, 0)
    return hdr + bytes([fill]) * (256 - len(hdr))


def mad_recv(c, timeout=5.0):
    r = c.recv(timeout)
    if r is None or r == "closed" or r[0] != MAD_RECV:
        return None
    p = r[2]
    return {"local": p[0:16], "remote": p[16:32], "hop": p[39],
            "len": struct.unpack_from("<I", p, 40)[0], "mad": p[44:]}
PY

timeout 120 python3 - $sock >> $out 2> /out/client.err <<'PY'
import sys
sys.path.insert(0, "/run")
from muxclient import *


gids = host_gids()
link_local = gids.get(0)
v6 = [g for g in gids.values() if g[:2] != b"\xfe\x80" and g[:12] !=
      b"\0" * 10 + b"\xff\xff"]
result(link_local is not None and link_local[:2] == b"\xfe\x80", "gid-table",
       "rxe0 GIDs: " + " ".join(f"{i}:{g.hex()}" for i, g in gids.items()))

a, b = Client(), Client()
dev, (port, ver, status, max_gids) = a.hello("lab-a")
result(dev == "rxe0" and port == 1 and ver == 3 and status == 0, "hello",
       f"{dev} port {port} version {ver} status {status} max_gids {max_gids}")
b.hello("lab-b")

# A client of protocol version 2 is told, in its own framing, and closed.
old = Client()
old.s.settimeout(5)
old.send_raw(struct.pack("<IHHII", MAGIC, 2, HELLO, 1, 72) + b"rxe0".ljust(64, b"\0")
             + struct.pack("<II", 1, 2))
hdr = old.s.recv(16)
ack = old.s.recv(80)
v, st, mv = (struct.unpack_from("<IHHII", hdr)[1], struct.unpack_from("<I", ack, 72)[0],
             struct.unpack_from("<I", ack, 68)[0]) if len(hdr) == 16 and len(ack) == 80 else (0, 0, 0)
result(v == 2 and st == 1 and mv == 3 and old.s.recv(1) == b"", "old-client",
       f"HELLO_ACK framed as version {v}: status {st} (1 = BAD_VERSION), mux version {mv}, closed")

absent = bytes.fromhex("fd00000000000000000000000000abcd")
st = a.gid(GID_ADD, absent)
result(st == 3, "claim-not-on-host", f"status {st} (3 = NOT_ON_HOST)")
st = a.gid(GID_ADD, link_local)
result(st == 0, "claim", f"{link_local.hex()} status {st}")
st = b.gid(GID_ADD, link_local)
result(st == 4, "claim-taken", f"status {st} (4 = CLAIMED)")

# To the port's own link-local GID: out through rxe0, back in on index 0,
# to a (the owner), not b.
mad = cm_mad(0x0015, 0x3c)  # DREQ
a.mad_send(link_local, link_local, mad)
r = mad_recv(a)
ok = (r is not None and r["local"] == link_local and r["remote"] == link_local
      and r["len"] == 256 and r["mad"][16:] == mad[16:] and r["mad"][:8] ==
      mad[:8])
result(ok, "loopback", "MAD_RECV to its owner, MAD intact" if ok else
       f"got {r}")
result(b.recv(0.5) is None, "loopback-owner-only", "b got nothing")

# A MAD the mux refuses (class 0x03): dropped, a stays connected.
bad = bytearray(mad)
bad[1] = 0x03
a.mad_send(link_local, link_local, bytes(bad))
result(mad_recv(a, 1.0) is None, "refused-class", "not sent, no MAD back")

# Across clients, when rxe loops it back: b owns the global IPv6 GID.
if v6:
    st = b.gid(GID_ADD, v6[0])
    a.mad_send(link_local, v6[0], cm_mad(0x0014, 0x77))  # RTU
    r = mad_recv(b)
    result(st == 0 and r is not None and r["local"] == v6[0], "cross-client",
           f"claim {st}, MAD_RECV on {v6[0].hex()} to b" if r else
           f"claim {st}, nothing reached b (rxe loopback across GIDs?)")

# A client breaking the framing is closed; a and b carry on.
c = Client()
c.send_raw(struct.pack("<IHHII", 0xDEADBEEF, 2, 1, 1, 72) + bytes(72))
r = c.recv()
a.mad_send(link_local, link_local, cm_mad(0x0016, 0x41))  # DREP
result(r == "closed" and mad_recv(a) is not None, "violation-isolated",
       "bad magic: that client closed, the others served")

# Claims are authorised by the allow-list sent with HELLO: outside it, or
# with none, refused -- before whether anybody holds it.
c = Client()
c.hello("lab-c", [(link_local[:8] + bytes(8), 64)])
st = c.gid(GID_ADD, v6[0]) if v6 else c.gid(GID_ADD, absent)
result(st == NOT_ALLOWED, "claim-not-allowed", f"outside fe80::/64: status {st} (7 = NOT_ALLOWED)")
st = c.gid(GID_ADD, link_local)
result(st == CLAIMED, "claim-allowed", f"inside it, held by a: status {st} (4 = CLAIMED)")
d = Client()
d.hello("lab-d", [])
st = d.gid(GID_ADD, link_local)
result(st == NOT_ALLOWED, "claim-no-allow-list", f"no allow-list: status {st} (7 = NOT_ALLOWED)")

# The issue's theft: a's claim lapses (its QEMU goes), b re-claims: refused,
# the GID stays reserved for a, and a's CM traffic reaches nobody else.
a.s.close()
time.sleep(0.3)
st = [b.gid(GID_ADD, link_local) for _ in range(3)]
result(st == [RESERVED] * 3, "claim-reserved", f"b claims a's GID after a left: {st} (8 = RESERVED)")
a2 = Client()
a2.hello("lab-a")
st = a2.gid(GID_ADD, link_local)
a2.mad_send(link_local, link_local, cm_mad(0x0015, 0x3d))
r = mad_recv(a2)
result(st == OK and r is not None and b.recv(0.5) is None, "claim-resumed",
       f"a again: status {st}, its MADs to it, none to b")
PY
echo "client exit $?" >> /out/client.err

kill -USR1 $mux
sleep 0.5
check stats-drop "send dropped mgmt_class: 1" "$(cat /out/mux.log)"
kill -TERM $mux
wait $mux
rc=$?
check stop "exit 0 socket-removed" "exit $rc $([ -e $sock ] && echo socket-left || echo socket-removed)"

# The reservations outlive the mux: a's of the link-local GID (its
# clients left before the stop); another tenant first after the restart is
# refused, a resumes.
ll=$(cat /sys/class/infiniband/rxe0/ports/1/gids/0)
check state-file "600 $ll lab-a" "$(stat -c %a $state/claims-rxe0-1) $(grep "^$ll [0-9]* lab-a\$" $state/claims-rxe0-1 | cut -d' ' -f1,3)"
"$MUX" --ibdev rxe0 --socket $sock --state-dir $state -v >> /out/mux.log 2>&1 &
mux=$!
i=0
while [ ! -S $sock ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
timeout 60 python3 - $sock >> $out 2>> /out/client.err <<'PY'
import sys
sys.path.insert(0, "/run")
from muxclient import *

link_local = host_gids().get(0)
thief, owner = Client(), Client()
thief.hello("lab-b")
owner.hello("lab-a")
st1 = thief.gid(GID_ADD, link_local)
st2 = owner.gid(GID_ADD, link_local)
result(st1 == RESERVED and st2 == OK, "restart-reserved",
       f"after a mux restart: another owner {st1} (8 = RESERVED), the owner {st2}")
PY
kill -TERM $mux
wait $mux
dmesg > /out/dmesg.txt

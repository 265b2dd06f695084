"""baseline: two guests on Debian's kernel rxe, joined by -netdev dgram over
127.0.0.1, run the RDMA tools of vrdma_lab.tools.TOOL_CASES: the reference
figures (guest rxe <-> guest rxe) the interop and driver parts compare with.

A (10.77.0.11) runs the server side of every tool, B (10.77.0.12) the
client side, both through guest-cases.sh (protocol.py: tool cases) over
the IPv4-mapped GID.  A case passes when both sides exit 0; its note is the
client's figures and the server's rxe counters that changed.  Each case is
the tool's name (baseline/write_bw), as in the interop and driver parts.
"""
import time
import unittest

from vrdma_lab import net, protocol, tools
from vrdma_lab.case import DEFAULT_TIMEOUT, LabTest, quick, timeout
from vrdma_lab.guest import Guest

PORT = 18515
BOOT = 120  # a guest's limit beyond its cases' (boot, power-off)


class Baseline(LabTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        chosen = cls.chosen()
        cls.tools = [t for t in tools.TOOL_CASES if f'test_{t}' in chosen]
        cls.server = protocol.ToolCases(cls.part_dir / 'A')
        cls.client = protocol.ToolCases(cls.part_dir / 'B')
        for t in cls.tools:
            args = tools.args(t).replace('@G@', '@G4@').replace('@P@', str(PORT))
            limit = getattr(getattr(cls, f'test_{t}'), 'lab_timeout', DEFAULT_TIMEOUT)
            cls.server.add('srv', t, limit, args)
            cls.client.add('cli', t, limit, args + ' 10.77.0.11')
        cls.guests = []
        if not cls.tools:
            return
        limit = BOOT + sum(int(l.split()[2]) for l in cls.server.lines)
        link_a, link_b = net.dgram_pair()
        for side, ip, link in ((cls.server, '11', link_a), (cls.client, '12', link_b)):
            side.write()
            g = Guest(cls.env, side.out, f'lab.ip=10.77.0.{ip}/24 lab.ip6=fd77::{ip}/64 '
                      'lab.run=/lab/guest-cases.sh', link, f'52:54:00:77:00:{ip}')
            cls.addClassCleanup(g.kill)
            cls.guests.append(g.start(limit=limit))
        while any([g.running() for g in cls.guests]):
            protocol.abort_orphans(cls.server, cls.client, cls.tools)
            time.sleep(0.5)

    def assertToolCase(self):
        """Both sides of this case exited 0; notes the client's figures
        and the server's counters (what the bash part printed)."""
        srv, cli = self.server.run(self.case), self.client.run(self.case)
        said = f'{tools.figures(cli.out)} srv-rxe[{srv.counters_text()}]'.strip()
        if srv.rc != 0 or cli.rc != 0:
            self.fail(f'{said} rc(srv)={srv.rc} rc(cli)={cli.rc} '
                      f'({"; ".join(g.status() for g in self.guests)})')
        self.note(said)

    @property
    def case(self):
        # The tool's name, as vrdma_lab/report reads it.
        return self._testMethodName.removeprefix('test_')

    # The reference figures of RC SEND, UD SEND and RC WRITE are quick.
    # @timeout: each side's limit in the guest (the client's retries
    # included), and the case's on the host.
    @quick
    @timeout(120)
    def test_rc_pingpong(self):
        self.assertToolCase()

    @quick
    @timeout(120)
    def test_ud_pingpong(self):
        self.assertToolCase()

    @quick
    @timeout(120)
    def test_write_bw(self):
        self.assertToolCase()

    @timeout(120)
    def test_read_bw(self):
        self.assertToolCase()

    @timeout(120)
    def test_send_bw(self):
        self.assertToolCase()

    @timeout(120)
    def test_atomic_bw(self):
        self.assertToolCase()


if __name__ == '__main__':
    unittest.main()

"""mux: contrib/rdmacm-mux on a lab guest's kernel rxe (the host here has no
RDMA stack).

One guest, rxe0 on eth0, runs mux/guest.sh: the mux refuses to start while
ib_cm holds the CM class, starts once the guest unloads the kernel's CM,
and passes CM MADs between rxe0 and protocol clients (python3, speaking
include/hw/rdma/rdmacm-mux-proto.h): claims checked against rxe0's GID
table, a MAD sent to the port's own GID comes back to the owner of the GID
it arrived on, a client breaking the framing is closed alone; claims only
inside the allow-list a client sent with HELLO, a released claim reserved
for its owner (issue 25 item 6: no theft when the owner's claim lapses),
also across a restart of the mux (its state file).  Each case below is the
guest's line of the same name.
"""
import os
import unittest

from vrdma_lab import net, paths
from vrdma_lab.case import LabTest, quick
from vrdma_lab.env import LabSetupError
from vrdma_lab.guest import Guest


@quick
class Mux(LabTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if not os.access(paths.RDMACM_MUX, os.X_OK):
            raise LabSetupError(f'{paths.RDMACM_MUX} missing (ninja -C build/unit; '
                                'needs libibumad-dev)')
        # Nothing at eth0's other end: the guest talks to itself.
        g = Guest(cls.env, cls.part_dir / 'guest',
                  'lab.ip=10.79.2.11/24 lab.ip6=fd79:2::11/64 lab.run=/lab/mux/guest.sh',
                  net.dgram(net.free_port('udp'), net.free_port('udp')),
                  '52:54:00:79:02:11')
        # The guest's /tmp and /run are its own: it runs a snapshot on 9p.
        (g.out / 'env').write_text(f'MUX={cls.env.snapshot(paths.RDMACM_MUX)}\n')
        cls.addClassCleanup(g.kill)
        g.start(limit=300)
        g.wait()
        cls.results = g.results()

    # Before the kernel's CM is unloaded: refused, and why.
    def test_cm_held(self):
        self.assertGuestPass()

    def test_cm_held_exit(self):
        self.assertGuestPass()

    def test_no_device(self):
        self.assertGuestPass()

    def test_no_port(self):
        self.assertGuestPass()

    # Started: one mux per socket, one CM agent per port.
    def test_start(self):
        self.assertGuestPass()

    def test_socket_mode(self):
        self.assertGuestPass()

    def test_second_socket(self):
        self.assertGuestPass()

    def test_second_agent(self):
        self.assertGuestPass()

    # Protocol clients.
    def test_gid_table(self):
        self.assertGuestPass()

    def test_hello(self):
        self.assertGuestPass()

    def test_old_client(self):
        self.assertGuestPass()

    def test_claim_not_on_host(self):
        self.assertGuestPass()

    def test_claim(self):
        self.assertGuestPass()

    def test_claim_taken(self):
        self.assertGuestPass()

    def test_loopback(self):
        self.assertGuestPass()

    def test_loopback_owner_only(self):
        self.assertGuestPass()

    def test_refused_class(self):
        self.assertGuestPass()

    def test_cross_client(self):
        self.assertGuestPass()

    def test_violation_isolated(self):
        self.assertGuestPass()

    # Who may claim: the allow-list, and the owner's reservation.
    def test_claim_not_allowed(self):
        self.assertGuestPass()

    def test_claim_allowed(self):
        self.assertGuestPass()

    def test_claim_no_allow_list(self):
        self.assertGuestPass()

    def test_claim_reserved(self):
        self.assertGuestPass()

    def test_claim_resumed(self):
        self.assertGuestPass()

    # The mux's statistics (SIGUSR1) and its exit (SIGTERM).
    def test_stats_drop(self):
        self.assertGuestPass()

    def test_stop(self):
        self.assertGuestPass()

    # The reservations outlive the mux (--state-dir).
    def test_state_file(self):
        self.assertGuestPass()

    def test_restart_reserved(self):
        self.assertGuestPass()

    # Every line the guest wrote is a case here.
    def test_no_other_lines(self):
        self.assertNoOtherGuestLines()


if __name__ == '__main__':
    unittest.main()

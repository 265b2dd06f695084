"""Unit tests of the tool runs' library that need no guest: the tools'
argument table and figure parser (vrdma_lab.tools),
the tool-case protocol (protocol.ToolCases, CaseRun) against
guest-cases.sh run on the host, mpi-rsh.py over 127.0.0.1.  Fast; run from
tests/lab:

    /usr/bin/python3 -m unittest test_tools
"""
import importlib.util
import os
import subprocess
import sys
import unittest
from unittest import mock

import test_baseline
import test_driver
from test_lib import InTempDir
from vrdma_lab import net, paths, protocol, report, tools

# Outputs of the tools as the lab's guests print them: ibv_rc_pingpong and
# ib_write_bw from a baseline run (B/NAME.out); ib_write_lat in perftest's
# report format (no run had kept one).
RC_PINGPONG = '''\
  local address:  LID 0x0000, QPN 0x000011, PSN 0x790310, GID ::ffff:10.77.0.12
  remote address: LID 0x0000, QPN 0x000011, PSN 0xee4452, GID ::ffff:10.77.0.11
1638400 bytes in 0.74 seconds = 17.64 Mbit/sec
200 iters in 0.74 seconds = 3715.41 usec/iter
'''
WRITE_BW = '''\
---------------------------------------------------------------------------------------
                    RDMA_Write BW Test
 Dual-port       : OFF\t\tDevice         : rxe0
 Number of qps   : 1\t\tTransport type : IB
 Connection type : RC\t\tUsing SRQ      : OFF
 Mtu             : 1024[B]
 Link type       : Ethernet
 GID index       : 1
---------------------------------------------------------------------------------------
 local address: LID 0000 QPN 0x0014 PSN 0xedf8b4 RKey 0x00056d VAddr 0x0055f7a478b000
 GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:77:00:12
 remote address: LID 0000 QPN 0x0013 PSN 0xf92af4 RKey 0x0004b7 VAddr 0x00555f24664000
 GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:77:00:11
---------------------------------------------------------------------------------------
 #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]
 65536      200              17.34              15.31  \t\t   0.000245
---------------------------------------------------------------------------------------
'''
WRITE_LAT = '''\
---------------------------------------------------------------------------------------
                    RDMA_Write Latency Test
 Connection type : RC\t\tUsing SRQ      : OFF
---------------------------------------------------------------------------------------
 #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] 
 64      200          912.35         4120.77      1003.18            1101.62          301.44  3977.10  4120.77
---------------------------------------------------------------------------------------
'''
# NPopenmpi under mpirun --tag-output in the driver part's mpi_pingpong
# (B/NAME.out, shortened): each result line in two tagged pieces.
NETPIPE = '''\
[1,0]<stdout>:[1796276880.735903] [lab-guest:320  :0]      ucp_worker.c:1763 UCX  INFO    ep_cfg[0]: tag(rc_verbs/vrdma0:1)
[1,0]<stderr>:Now starting the main loop
[1,0]<stderr>:  0:       1 bytes     50 times --> [1,0]<stderr>:     0.02 Mbps in     411.02 usec
[1,0]<stderr>:  1:       2 bytes     50 times --> [1,0]<stderr>:     0.04 Mbps in     375.75 usec
[1,0]<stderr>: 31:   65536 bytes     50 times --> [1,0]<stderr>:   127.48 Mbps in    3922.29 usec
'''


class Figures(unittest.TestCase):
    def test_pingpong(self):
        self.assertEqual(tools.figures(RC_PINGPONG), 'bw=2.21MB/s lat=3715.41us')

    def test_bw(self):
        self.assertEqual(tools.figures(WRITE_BW), 'bw=15.31MB/s rate=0.000245Mpps mtu=1024')

    def test_lat_is_t_typical(self):
        self.assertEqual(tools.figures(WRITE_LAT), 'lat=1003.18us')

    def test_netpipe(self):
        """bw at the largest message, lat at the smallest."""
        self.assertEqual(tools.figures(NETPIPE), 'bw=15.94MB/s lat=411.02us')

    def test_none(self):
        self.assertEqual(tools.figures("Couldn't connect to 10.77.0.11:18515\n"), '')
        self.assertEqual(tools.figures(''), '')

    def test_mtu_alone_is_no_figure(self):
        """A tool killed after its header (kill-send_bw) has no figures:
        its note is what kill-mid said."""
        self.assertEqual(tools.figures(' Mtu             : 4096[B]\n'), '')


class Args(unittest.TestCase):
    def test_table(self):
        self.assertEqual(tools.args('write_bw'),
                         'ib_write_bw -d @D@ -x @G@ -p @P@ -F -s 65536 -n 200')
        self.assertEqual(tools.args('write_bw', 'cli'), tools.args('write_bw'))
        self.assertEqual(tools.args('rc_pingpong'),
                         'ibv_rc_pingpong -d @D@ -g @G@ -p @P@ -s 4096 -n 200 -c')

    def test_rping_sides(self):
        self.assertEqual(tools.args('rping'), 'rping -s -V -C 50 -S 4096 -p @P@ -a')
        self.assertEqual(tools.args('rping', 'cli'), 'rping -c -V -C 50 -S 4096 -p @P@ -a')

    def test_client_args(self):
        """A client that runs another program than its server, and the
        server's address put where the client's command says."""
        cli = tools.args('mpi_pingpong', 'cli')
        self.assertRegex(cli, r'^env UCX_.* mpirun .*--host localhost,@S@ ')
        self.assertIn('"/lab/mpi-rsh.py -p @P@"', cli)
        self.assertIn('/lab/mpi-rsh.py -p @P@ --serve', tools.args('mpi_pingpong'))
        self.assertEqual(tools.with_server('a --host x,@S@ b', '10.0.0.1'),
                         'a --host x,10.0.0.1 b')
        self.assertEqual(tools.with_server('a -p 1', '10.0.0.1'), 'a -p 1 10.0.0.1')
        self.assertLess(tools.MPI_SECONDS, test_driver.TOOL_TIMEOUT)

    def test_cases(self):
        self.assertEqual(tools.DRV_CASES[:len(tools.TOOL_CASES)], tools.TOOL_CASES)
        self.assertEqual(set(tools.DRV_CASES + tools.RING_CASES) | {'rc_pingpong_sys'},
                         set(tools.ARGS))
        self.assertFalse(set(tools.DRV_CASES) & set(tools.RING_CASES))
        for case in tools.DRV_CASES + tools.RING_CASES:
            self.assertRegex(tools.args(case), r'-p @P@')
        with self.assertRaises(KeyError):
            tools.args('bogus')

    def test_syscalls(self):
        """strace -c's table: calls per system call, without the total."""
        table = ('% time     seconds  usecs/call     calls    errors syscall\n'
                 '------ ----------- ----------- --------- --------- ----------------\n'
                 ' 95.00    0.010000          10      1003           write\n'
                 '  5.00    0.000500          50        10         2 ioctl\n'
                 '------ ----------- ----------- --------- --------- ----------------\n'
                 '100.00    0.010500                  1013         2 total\n')
        self.assertEqual(tools.syscalls('  local address: ...\n' + table),
                         {'write': 1003, 'ioctl': 10})
        self.assertEqual(tools.syscalls('no table'), {})

    def test_baseline_has_each_tool_case(self):
        """test_baseline.py has a case for each of TOOL_CASES."""
        names = unittest.defaultTestLoader.getTestCaseNames(test_baseline.Baseline)
        self.assertEqual(sorted(n.removeprefix('test_') for n in names),
                         sorted(tools.TOOL_CASES))


class ToolCases(InTempDir):
    def test_cases_file(self):
        with mock.patch.dict(os.environ, {'LAB_STRACE': ''}):
            tc = protocol.ToolCases(self.tmp / 'A').add('srv', 'write_bw', 120, 'ib_write_bw -d @D@')
        with mock.patch.dict(os.environ, {'LAB_STRACE': 'strace -f'}):
            tc.add('cli', 'x', 30, 'true')
        tc.write()
        self.assertEqual((self.tmp / 'A' / 'cases').read_text(),
                         'srv write_bw 120 ib_write_bw -d @D@\n'
                         'cli x 30 strace -f -o /out/x.strace true\n')
        for bad in (('srv', 'a b', 1, 'true'), ('both', 'a', 1, 'true')):
            with self.assertRaises(ValueError):
                tc.add(*bad)

    def test_case_run(self):
        (self.tmp / 'c.rc').write_text('0\n')
        (self.tmp / 'c.out').write_text(RC_PINGPONG)
        (self.tmp / 'c.cnt').write_text('rcvd_pkts 1035 1235\nsent_pkts 0 7\n')
        (self.tmp / 'c.net').write_text('rx_packets 10 12\n')
        run = protocol.ToolCases(self.tmp).run('c')
        self.assertEqual((run.rc, run.out), (0, RC_PINGPONG))
        self.assertEqual(run.counters, {'rcvd_pkts': 200, 'sent_pkts': 7})
        self.assertEqual(run.counters_text(), 'rcvd_pkts+200,sent_pkts+7')
        self.assertEqual(run.net, {'rx_packets': 2})
        missing = protocol.ToolCases(self.tmp).run('never')
        self.assertEqual((missing.rc, missing.out, missing.counters), (None, '', {}))

    def test_abort_orphans(self):
        srv, cli = protocol.ToolCases(self.tmp / 'A'), protocol.ToolCases(self.tmp / 'B')
        for d in (srv.out, cli.out):
            d.mkdir()
        (srv.out / 'failed.rc').write_text('1\n')
        (srv.out / 'ok.rc').write_text('0\n')
        (srv.out / 'done.rc').write_text('1\n')
        (cli.out / 'done.rc').write_text('1\n')
        protocol.abort_orphans(srv, cli, ['failed', 'ok', 'done', 'running'])
        self.assertEqual(sorted(p.name for p in cli.out.glob('*.abort')), ['failed.abort'])

    def test_guest_cases_sh(self):
        """The guest's half, guest-cases.sh (on the host: no device, so no
        counters), against ToolCases: a client retried past connecting, a
        case reading its stdin does not eat the cases after it."""
        tc = protocol.ToolCases(self.tmp)
        tc.add('srv', 'one', 10, 'echo "dev @D@"; exit 3')
        tc.add('srv', 'eats', 10, 'cat')  # as mpirun: reads its stdin
        tc.add('cli', 'two', 10, '[ -e flag ] || { touch flag; echo "Couldn\'t connect"; exit 1; }; '
               'echo "200 iters in 1.00 seconds = 5000.00 usec/iter"')
        tc.write()
        out = subprocess.run(['bash', str(paths.LAB_SRC / 'guest-cases.sh')], cwd=self.tmp,
                             env={'PATH': '/usr/bin:/bin', 'LAB_DEV': 'nodev0'}, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=30).stdout
        self.assertRegex(out, r'LAB-CASE one rc=3 tries=0 ')
        self.assertRegex(out, r'LAB-CASE eats rc=0 tries=0 ')
        self.assertRegex(out, r'LAB-CASE two rc=0 tries=2 ')
        one, two = tc.run('one'), tc.run('two')
        self.assertEqual((one.rc, one.out, one.counters), (3, 'dev nodev0\n', {}))
        self.assertEqual((two.rc, tools.figures(two.out)), (0, 'lat=5000.00us'))



def _load_mpi_rsh():
    spec = importlib.util.spec_from_file_location('mpi_rsh', paths.LAB_SRC / 'mpi-rsh.py')
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class MpiRsh(unittest.TestCase):
    """mpi-rsh.py: its frames, and a session over 127.0.0.1 as mpirun
    makes one (the command's words quoted for a shell)."""
    rsh = _load_mpi_rsh()
    EXE = [sys.executable, str(paths.LAB_SRC / 'mpi-rsh.py')]

    def test_frames(self):
        wire = self.rsh.frame(b'o', b'out') + self.rsh.frame(b'x', b'3')
        self.assertEqual(self.rsh.frames(wire), ([(b'o', b'out'), (b'x', b'3')], b''))
        # A frame cut short stays for the next read.
        self.assertEqual(self.rsh.frames(wire[:-1]), ([(b'o', b'out')], wire[8:-1]))
        self.assertEqual((self.rsh.status(3), self.rsh.status(-9)), (3, 137))

    def client(self, port, *command):
        """The client until it got past connecting (the server listens
        when it listens), as guest-cases.sh retries it."""
        for _ in range(50):
            r = subprocess.run(self.EXE + ['-p', str(port), '127.0.0.1', *command],
                               capture_output=True, text=True, timeout=30)
            if 'Connection refused' not in r.stderr:
                return r
        return r

    def serve(self, port, seconds):
        srv = subprocess.Popen(self.EXE + ['-p', str(port), '--serve', str(seconds), '127.0.0.1'],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.addCleanup(srv.wait)
        self.addCleanup(srv.kill)
        return srv

    def test_session(self):
        port = net.free_port()
        srv = self.serve(port, 20)
        r = self.client(port, ' printf', "'%s\\n'", '"a;b"', ';', 'echo err >&2;', 'exit 3')
        self.assertEqual((r.returncode, r.stdout, r.stderr), (3, 'a;b\n', 'err\n'))
        self.assertEqual(srv.wait(10), 3)

    def test_killed_after_its_time(self):
        port = net.free_port()
        srv = self.serve(port, 1)
        r = self.client(port, 'sleep 30')
        self.assertEqual((r.returncode, r.stderr), (137, 'mpi-rsh: killed after 1 s\n'))
        self.assertEqual(srv.wait(10), 137)

    def test_no_server(self):
        """ssh's 255, and the words guest-cases.sh retries on."""
        port = net.free_port()
        r = subprocess.run(self.EXE + ['-p', str(port), '127.0.0.1', 'true'],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 255)
        self.assertIn('Connection refused', r.stderr)


class Report(InTempDir):
    def run_with(self, name, lines, mtime):
        d = self.tmp / name
        d.mkdir()
        (d / 'results.txt').write_text(''.join(l + '\n' for l in lines))
        os.utime(d / 'results.txt', (mtime, mtime))

    def test_each_part_from_its_newest_run(self):
        self.run_with('old', ['PASS baseline/write_bw bw=1.00MB/s',
                              'PASS interop/v4-write_bw-gsrv bw=2.00MB/s'], 1000)
        self.run_with('new', ['PASS interop/v4-write_bw-gsrv bw=3.00MB/s',
                              'FAIL interop/v6-write_bw-gcli bw=4.00MB/s',
                              'PASS driver/vr/v4-rping-vsrv'], 2000)
        lines, sources = report.latest(self.tmp)
        self.assertEqual(len(sources), 3)
        text = report.render(lines)
        row = next(l for l in text.splitlines() if l.startswith('write_bw'))
        # rxe<->rxe from the old run (the new one has no baseline), dev->rxe
        # v4 from the new, a failure marked.
        self.assertEqual(row.split()[:7], ['write_bw', '1.00', 'MB/s', '3.00', 'MB/s', '-', '-'])
        self.assertIn('4.00 MB/s FAIL', row)
        self.assertRegex(text, r'rping +- +- +- +ok')

    def test_no_tool_lines_no_report(self):
        self.assertEqual(report.render(['PASS mux/start ok']), '')


if __name__ == '__main__':
    unittest.main()

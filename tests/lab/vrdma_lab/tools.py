"""The tool runs of the lab tier, in one place: shared by the baseline
(guest rxe <-> guest rxe), the interop runs (guest rxe <-> our device driven
by a libqos peer) and the driver runs (guests on our device through
virtio_rdma.ko), so that the figures compare like with like.

  ARGS        CASE -> the tool and its options (the server's side; args()
              gives either side, the client's without the server's address,
              which the caller appends, or puts at @S@: with_server()).
              Placeholders: @D@ the RDMA device, @G@ the GID index, @P@ the
              TCP port.
  CLI_ARGS    the client's command of a case whose client runs another
              program than its server (mpi_pingpong: mpirun).
  TOOL_CASES  the cases of baseline and interop;
  DRV_CASES   the driver part's: the same plus the latency tools, rping
              (rdma_cm: the connection goes through the guest's CM MADs on
              QP1) and rc_pingpong on the ibv_wr_* post API (-N: the
              provider's extended QP under Debian's libibverbs).
  RING_CASES  queues deeper than the virtqueue path's 1024 entries (UCX's
              and MPI's over UCX too), and SRQs: the rings' only.
  figures()   a tool's output -> "bw=<MB/s> rate=<Mpps> lat=<usec>", what
              the tool gives (lat: for ibv_*_pingpong usec/iter, for the
              ib_*_lat tools t_typical; NetPIPE: the smallest message's
              one-way time, bw at its largest).
"""
import re

# mpi_pingpong's UCX (UCX_LOG_LEVEL=info: each rank says which transport
# and device it chose), and the most its server waits and runs: less than
# a driver case's limit (test_driver.TOOL_TIMEOUT), so that it says so.
_MPI_UCX = 'UCX_TLS=rc_verbs,ud_verbs UCX_NET_DEVICES=@D@:1 UCX_LOG_LEVEL=info'
MPI_SECONDS = 80

ARGS = {
    'rc_pingpong': 'ibv_rc_pingpong -d @D@ -g @G@ -p @P@ -s 4096 -n 200 -c',
    'rc_pingpong_wr': 'ibv_rc_pingpong -d @D@ -g @G@ -p @P@ -s 4096 -n 200 -c -N',
    'ud_pingpong': 'ibv_ud_pingpong -d @D@ -g @G@ -p @P@ -s 512 -n 200 -r 64',
    'write_bw': 'ib_write_bw -d @D@ -x @G@ -p @P@ -F -s 65536 -n 200',
    'read_bw': 'ib_read_bw -d @D@ -x @G@ -p @P@ -F -s 65536 -n 200',
    'send_bw': 'ib_send_bw -d @D@ -x @G@ -p @P@ -F -s 65536 -n 200',
    'atomic_bw': 'ib_atomic_bw -d @D@ -x @G@ -p @P@ -F -n 200',
    'write_lat': 'ib_write_lat -d @D@ -x @G@ -p @P@ -F -s 64 -n 200',
    'read_lat': 'ib_read_lat -d @D@ -x @G@ -p @P@ -F -s 64 -n 200',
    'send_lat': 'ib_send_lat -d @D@ -x @G@ -p @P@ -F -s 64 -n 200',
    'atomic_lat': 'ib_atomic_lat -d @D@ -x @G@ -p @P@ -F -n 200',
    # The address family of the server's address picks the GID: both sides
    # add it (the server binds it).  The client verifies every ping (-V);
    # @R@ is the side: s or c.
    'rping': 'rping -@R@ -V -C 50 -S 4096 -p @P@ -a',
    # The system calls of an RC ping-pong (polling, no events): strace -c's
    # table of write() (uverbs commands) and ioctl() (uverbs methods) after
    # the tool's output (syscalls()).
    'rc_pingpong_sys': 'strace -f -c -e trace=write,ioctl '
                       'ibv_rc_pingpong -d @D@ -g @G@ -p @P@ -s 4096 -n 500',
    # Queues deeper than a virtqueue's 1024: 8192 receives posted (and a
    # CQ of 8193); perftest with UCX's 4096-entry send and receive queues.
    'rc_pingpong_deep': 'ibv_rc_pingpong -d @D@ -g @G@ -p @P@ -s 1024 -n 1000 '
                        '-r 8192',
    'send_bw_deep': 'ib_send_bw -d @D@ -x @G@ -p @P@ -F -s 64 -n 5000 -t 4096 '
                    '-r 4096',
    # A shared receive queue: 16 RC QPs each way receiving from one SRQ of
    # 500 (ibv_srq_pingpong's defaults, spelled out).
    'srq_pingpong': 'ibv_srq_pingpong -d @D@ -g @G@ -p @P@ -s 1024 -n 200 '
                    '-q 16 -r 500',
    # UCX (Debian's ucx-utils) between the guests at its defaults but for
    # the transports and the device: rc_verbs (with ud_verbs, its wire-up),
    # ud_verbs alone.
    'ucx_rc': 'env UCX_TLS=rc_verbs,ud_verbs UCX_NET_DEVICES=@D@:1 UCX_LOG_LEVEL=info ucx_perftest '
              '-t tag_lat -s 64 -n 1000 -p @P@',
    'ucx_ud': 'env UCX_TLS=ud_verbs UCX_NET_DEVICES=@D@:1 ucx_perftest '
              '-t tag_lat -s 64 -n 1000 -p @P@',
    # Open MPI's ping-pong over UCX (Debian's openmpi-bin, pml ucx, and
    # netpipe-openmpi's NPopenmpi): the server is mpi-rsh.py, through
    # which the client's mpirun starts its orted (the guests have no ssh).
    # Each side's environment names its own device: orted's, which its rank
    # inherits, is the server's.
    'mpi_pingpong': f'env {_MPI_UCX} /lab/mpi-rsh.py -p @P@ --serve {MPI_SECONDS}',
}

CLI_ARGS = {
    # Rank 0 here, rank 1 on the server's guest; TCP (orted's, and the
    # PMIx exchange of UCX addresses) on eth0 only; no BTL but self: pml
    # ucx needs none, so nothing but UCX can carry a message.
    # --tag-output: each line says its rank, so the case can tell that
    # both ranks chose rc_verbs.
    # NPopenmpi: 1 byte to 64 KiB, 50 round trips a size, no
    # perturbations (sizes in powers of two and halfway): some seconds
    # in TCG.
    'mpi_pingpong': f'env {_MPI_UCX} mpirun --allow-run-as-root -np 2 '
                    '--host localhost,@S@ --tag-output '
                    '--mca plm_rsh_agent "/lab/mpi-rsh.py -p @P@" '
                    '--mca oob_tcp_if_include eth0 '
                    '--mca pml ucx --mca btl self '
                    'NPopenmpi -u 65536 -n 50 -p 0 -o /dev/null',
}

# rc_pingpong_sys's iterations.
SYS_ITERS = 500

TOOL_CASES = ('rc_pingpong', 'ud_pingpong', 'write_bw', 'read_bw', 'send_bw',
              'atomic_bw')
DRV_CASES = TOOL_CASES + ('write_lat', 'read_lat', 'send_lat', 'atomic_lat',
                          'rping', 'rc_pingpong_wr')
RING_CASES = ('rc_pingpong_deep', 'send_bw_deep', 'srq_pingpong', 'ucx_rc', 'ucx_ud',
              'mpi_pingpong')


def args(case, side='srv'):
    """The tool and its options for CASE on SIDE ('srv' or 'cli');
    KeyError for an unknown case."""
    if side == 'cli' and case in CLI_ARGS:
        return CLI_ARGS[case]
    return ARGS[case].replace('@R@', 'c' if side == 'cli' else 's')


def with_server(command, addr):
    """A client's COMMAND given its server's address ADDR: at @S@, or
    appended."""
    return command.replace('@S@', addr) if '@S@' in command else f'{command} {addr}'


_NUMBER = re.compile(r'[0-9]+')
_BW_HEADER = re.compile(r'#bytes +#iterations +BW peak')
_LAT_HEADER = re.compile(r'#bytes +#iterations +t_min')
_NETPIPE = re.compile(r' [0-9]+ bytes +[0-9]+ times --> +([0-9.]+) Mbps in +([0-9.]+) usec')
# mpirun --tag-output's prefix: "[JOB,RANK]<stderr>:" (NetPIPE writes a
# line in two pieces: each gets one).
MPI_TAG = re.compile(r'\[[0-9]+,([0-9]+)\]<std(?:out|err)>:')


def syscalls(text):
    """strace -c's calls per system call in TEXT: {'write': N, ...}."""
    calls = {}
    for m in re.finditer(r'^ *[0-9.]+ +[0-9.]+ +[0-9]+ +([0-9]+)(?: +[0-9]+)? +(\w+)$',
                         text, re.M):
        if m.group(2) != 'total':
            calls[m.group(2)] = int(m.group(1))
    return calls


_PERFTEST_MTU = re.compile(r' *Mtu +: ([0-9]+)\[B\]')


def figures(text):
    """The figures in a tool's output TEXT, '' when it has none: the last
    of each kind wins (but NetPIPE's lat: its first line's, the smallest
    message's); with a figure, the RoCE MTU perftest said it ran at."""
    bw = rate = lat = mtu = None
    bw_header = lat_header = netpipe = False
    for line in MPI_TAG.sub('', text).splitlines():
        f = line.split()
        m = _PERFTEST_MTU.match(line)
        if m:
            mtu = m.group(1)  # the RoCE MTU perftest's QPs ran at
        m = _NETPIPE.search(line)
        if m:
            bw = '%.2f' % (float(m.group(1)) / 8)
            lat, netpipe = (lat if netpipe else m.group(2)), True
        if re.search(r' bytes in .* seconds = .* Mbit/sec', line):
            bw = '%.2f' % (float(f[-2]) / 8)
        if re.search(r' iters in .* seconds = .* usec/iter', line):
            lat = f[-2]
        if bw_header and len(f) >= 4 and _NUMBER.fullmatch(f[0]):
            bw, rate, bw_header = f[3], (f[4] if len(f) > 4 else None), False
        if _BW_HEADER.search(line):
            bw_header = True
        if lat_header and len(f) >= 5 and _NUMBER.fullmatch(f[0]):
            lat, lat_header = f[4], False
        if _LAT_HEADER.search(line):
            lat_header = True
    return ' '.join(s for s in (bw and f'bw={bw}MB/s', rate and f'rate={rate}Mpps',
                                lat and f'lat={lat}us',
                                (bw or lat) and mtu and f'mtu={mtu}') if s)


"""The guests' links: free ports on 127.0.0.1 and QEMU dgram netdevs."""
import socket


def free_port(kind='tcp'):
    """A port on 127.0.0.1 that is free now ('tcp' or 'udp')."""
    t = socket.SOCK_DGRAM if kind == 'udp' else socket.SOCK_STREAM
    with socket.socket(socket.AF_INET, t) as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def dgram(local, remote):
    """-netdev options of a dgram link from LOCAL to REMOTE (UDP ports on
    127.0.0.1); the caller adds the id."""
    return ('dgram,local.type=inet,local.host=127.0.0.1,local.port=%d,'
            'remote.type=inet,remote.host=127.0.0.1,remote.port=%d' % (local, remote))


def dgram_pair():
    """The two ends of one link between two guests."""
    a, b = free_port('udp'), free_port('udp')
    return dgram(a, b), dgram(b, a)


def udp_rcvbuf_errors(snmp='/proc/net/snmp'):
    """The host's UDP receive-buffer errors so far (Udp: RcvbufErrors):
    datagrams of the guests' dgram links that the host dropped."""
    with open(snmp) as f:
        rows = [line.split() for line in f if line.startswith('Udp:')]
    return int(rows[1][rows[0].index('RcvbufErrors')])

#!/usr/bin/env python3
"""Summary of bench.sh's guest benchmark: per NIC MTU and tool, each round's
figure for rxe and for virtio-rdma, the medians and their ratio (higher is
better for bandwidth, lower for latency), and the RoCE MTU perftest said it
ran at.  Input lines: KIND NIC_MTU ROUND PASS|FAIL NAME figures."""
import re
import statistics
import sys

TOOLS = [  # case, figure, unit, what "better" means
    ("write_bw", "bw", "MB/s", "higher"),
    ("send_lat", "lat", "us", "lower"),
    ("rc_pingpong", "lat", "us/iter", "lower"),
]
runs = {}
mtus = []
for line in open(sys.argv[1]):
    kind, mtu, rnd, res, name, *rest = line.split()
    case = name.rsplit("/", 1)[1].removeprefix("v4-")
    figs = dict(re.findall(r"\b(bw|lat|mtu)=([0-9.]+)", " ".join(rest)))
    runs.setdefault((mtu, case, kind), []).append((rnd, res, figs))
    if mtu not in mtus:
        mtus.append(mtu)

print("guests: ratio = virtio-rdma / rxe for bandwidth, rxe / virtio-rdma for latency")
for mtu in mtus:
    print(f" NIC MTU {mtu}")
    for case, fig, unit, better in TOOLS:
        med = {}
        for kind in ("rxe", "vrdma"):
            got = runs.get((mtu, case, kind), [])
            vals = [float(f[fig]) for _, res, f in got if res == "PASS" and fig in f]
            fails = sum(1 for _, res, _ in got if res != "PASS")
            roce = sorted({f["mtu"] for _, _, f in got if "mtu" in f})
            med[kind] = statistics.median(vals) if vals else None
            shown = " ".join(f"{v:g}" for v in vals) or "-"
            said = f" (RoCE MTU {'/'.join(roce)})" if roce else ""
            print(f"  {case:12s} {kind:6s} {fig}: {shown} {unit}{said}"
                  f"{f' ({fails} failed)' if fails else ''}")
        if med["rxe"] and med["vrdma"]:
            ratio = (med["vrdma"] / med["rxe"] if better == "higher"
                     else med["rxe"] / med["vrdma"])
            print(f"  {case:12s} ratio {ratio:.2f}x (medians {med['vrdma']:g} vs {med['rxe']:g} {unit})")
        else:
            print(f"  {case:12s} ratio: not measured (a side failed)")

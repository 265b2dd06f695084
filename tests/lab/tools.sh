# The tool runs of the lab tier, shared by the baseline (guest rxe <-> guest
# rxe), the interop runs (guest rxe <-> our device driven by a libqos peer)
# and the driver runs (guests on our device through virtio_rdma.ko), so that
# the figures compare like with like.  Sourced.
# lab_tool_args CASE [cli] -> the tool and its options (server side, or the
# client side with "cli"; the client adds the server's address).  @D@ = the
# RDMA device, @G@ = the GID index, @P@ = the TCP port.
# shellcheck shell=bash
LAB_TOOL_CASES="rc_pingpong ud_pingpong write_bw read_bw send_bw atomic_bw"
# The driver part: the same plus the latency tools, rping (rdma_cm: the
# connection goes through the guest's CM MADs on QP1) and rc_pingpong on
# the ibv_wr_* post API (-N: the provider's extended QP under Debian's
# libibverbs).
LAB_DRV_CASES=${LAB_DRV_CASES:-"$LAB_TOOL_CASES write_lat read_lat send_lat atomic_lat rping rc_pingpong_wr"}
lab_tool_args() {
    case $1 in
    rc_pingpong) echo "ibv_rc_pingpong -d @D@ -g @G@ -p @P@ -s 4096 -n 200 -c" ;;
    rc_pingpong_wr) echo "ibv_rc_pingpong -d @D@ -g @G@ -p @P@ -s 4096 -n 200 -c -N" ;;
    ud_pingpong) echo "ibv_ud_pingpong -d @D@ -g @G@ -p @P@ -s 512 -n 200 -r 64" ;;
    write_bw)    echo "ib_write_bw -d @D@ -x @G@ -p @P@ -F -s 65536 -n 200" ;;
    read_bw)     echo "ib_read_bw -d @D@ -x @G@ -p @P@ -F -s 65536 -n 200" ;;
    send_bw)     echo "ib_send_bw -d @D@ -x @G@ -p @P@ -F -s 65536 -n 200" ;;
    atomic_bw)   echo "ib_atomic_bw -d @D@ -x @G@ -p @P@ -F -n 200" ;;
    write_lat)   echo "ib_write_lat -d @D@ -x @G@ -p @P@ -F -s 64 -n 200" ;;
    read_lat)    echo "ib_read_lat -d @D@ -x @G@ -p @P@ -F -s 64 -n 200" ;;
    send_lat)    echo "ib_send_lat -d @D@ -x @G@ -p @P@ -F -s 64 -n 200" ;;
    atomic_lat)  echo "ib_atomic_lat -d @D@ -x @G@ -p @P@ -F -n 200" ;;
    # The address family of the server's address picks the GID: both sides
    # add it (the server binds it).  The client verifies every ping (-V).
    rping) echo "rping -$([ "${2:-}" = cli ] && echo c || echo s) -V -C 50 -S 4096 -p @P@ -a" ;;
    *) echo "lab_tool_args: unknown case $1" >&2; return 1 ;;
    esac
}

# Figures from a tool's output: "bw=<MB/s> lat=<usec>" (what the tool gives;
# for the ib_*_lat tools lat is t_typical, for ibv_*_pingpong us/iter).
lab_figures() {
    awk '
        / bytes in .* seconds = .* Mbit\/sec/ { bw = sprintf("%.2f", $(NF-1) / 8) }
        / iters in .* seconds = .* usec\/iter/ { lat = $(NF-1) }
        hdr && NF >= 4 && $1 ~ /^[0-9]+$/ { bw = $4; mpps = $5; hdr = 0 }
        /#bytes +#iterations +BW peak/ { hdr = 1 }
        lhdr && NF >= 5 && $1 ~ /^[0-9]+$/ { lat = $5; lhdr = 0 }
        /#bytes +#iterations +t_min/ { lhdr = 1 }
        END {
            s = ""
            if (bw != "") s = s "bw=" bw "MB/s "
            if (mpps != "") s = s "rate=" mpps "Mpps "
            if (lat != "") s = s "lat=" lat "us"
            print s
        }' "$1"
}

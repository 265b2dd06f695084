# The tool runs of the lab tier, shared by the baseline (guest rxe <-> guest
# rxe) and the interop runs (guest rxe <-> our device), so that the figures
# compare like with like.  Sourced.
# lab_tool_args CASE -> the tool and its options (server side; the client adds
# the server's address).  @G@ = the GID index, @P@ = the TCP port.
# shellcheck shell=bash
LAB_TOOL_CASES="rc_pingpong ud_pingpong write_bw read_bw send_bw atomic_bw"
lab_tool_args() {
    case $1 in
    rc_pingpong) echo "ibv_rc_pingpong -d rxe0 -g @G@ -p @P@ -s 4096 -n 200 -c" ;;
    ud_pingpong) echo "ibv_ud_pingpong -d rxe0 -g @G@ -p @P@ -s 512 -n 200 -r 64" ;;
    write_bw)    echo "ib_write_bw -d rxe0 -x @G@ -p @P@ -F -s 65536 -n 200" ;;
    read_bw)     echo "ib_read_bw -d rxe0 -x @G@ -p @P@ -F -s 65536 -n 200" ;;
    send_bw)     echo "ib_send_bw -d rxe0 -x @G@ -p @P@ -F -s 65536 -n 200" ;;
    atomic_bw)   echo "ib_atomic_bw -d rxe0 -x @G@ -p @P@ -F -n 200" ;;
    *) echo "lab_tool_args: unknown case $1" >&2; return 1 ;;
    esac
}

# Figures from a tool's output: "bw=<MB/s> lat=<usec>" (what the tool gives).
lab_figures() {
    awk '
        / bytes in .* seconds = .* Mbit\/sec/ { bw = sprintf("%.2f", $(NF-1) / 8) }
        / iters in .* seconds = .* usec\/iter/ { lat = $(NF-1) }
        hdr && NF >= 4 && $1 ~ /^[0-9]+$/ { bw = $4; mpps = $5; hdr = 0 }
        /#bytes +#iterations +BW peak/ { hdr = 1 }
        END {
            s = ""
            if (bw != "") s = s "bw=" bw "MB/s "
            if (mpps != "") s = s "rate=" mpps "Mpps "
            if (lat != "") s = s "lat=" lat "us"
            print s
        }' "$1"
}

# The tool runs of the lab tier, shared by the baseline, interop and driver
# runs so that the figures compare like with like.  Sourced.  The table and
# the figure parser live in vrdma_lab/tools.py (one home, also the Python
# parts'); these are its bash face.
# lab_tool_args CASE [cli] -> the tool and its options (server side, or the
# client side with "cli"; the client adds the server's address).  @D@ = the
# RDMA device, @G@ = the GID index, @P@ = the TCP port.
# lab_figures FILE -> "bw=<MB/s> rate=<Mpps> lat=<usec>" from a tool's output.
# shellcheck shell=bash
LAB_TOOLS_PY=${top:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}/tests/lab/vrdma_lab/tools.py
lab_tools_py() { /usr/bin/python3 "$LAB_TOOLS_PY" "$@"; }
# shellcheck disable=SC2034  # the parts that source this read it
LAB_TOOL_CASES=$(lab_tools_py cases)
# The driver part's (a caller may set its own list).
LAB_DRV_CASES=${LAB_DRV_CASES:-$(lab_tools_py drv-cases)}
lab_tool_args() { lab_tools_py args "$@"; }
lab_figures() { lab_tools_py figures "$1"; }

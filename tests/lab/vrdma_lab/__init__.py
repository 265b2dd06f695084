"""The lab tier's library (tests/lab/README.rst), standard library only.

  paths     the tree, what the builds make, the guest kernels' set-ups
  env       LabEnv: the kernel, the QEMU snapshot, the run's results
  guest     Guest: boot (9p shares, console, QMP), wait, kill, results
  protocol  the guest protocol: results lines, stages, tool cases (read it first)
  tools     the RDMA tools' arguments, case lists and figures
  qmp       a QMP client and what the parts read from our device
  net       free ports, dgram links
  case      LabTest, @timeout, @quick
  collect   which cases run: parts, --quick, -k
  ktap      a unittest result printing KTAP
"""

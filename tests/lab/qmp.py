#!/usr/bin/env python3
"""QMP helper of the lab's bash parts (vrdma_lab/qmp.py does the work).
  qmp.py query SOCK PREFIX   PREFIX.txt = HMP "info rdma", PREFIX.json =
                             query-virtio-rdma (the first device)
  qmp.py objects JSON        "pd=N cq=N qp=N mr=N gid=N pages=N"
  qmp.py traffic JSON        packets, completions and errors of the data path
"""
import sys

from vrdma_lab import qmp


def main():
    op, args = (sys.argv[1], sys.argv[2:]) if len(sys.argv) > 1 else ('', [])
    try:
        if op == 'query' and len(args) == 2:
            qmp.query(*args)
        elif op == 'objects' and len(args) == 1:
            print(qmp.objects(qmp.first_device(args[0])))
        elif op == 'traffic' and len(args) == 1:
            print(qmp.traffic(qmp.first_device(args[0])))
        else:
            sys.exit(__doc__)
    except LookupError as e:
        sys.exit(str(e))


if __name__ == '__main__':
    main()

#include "trace/trace-hw_rdma_virtio.h"

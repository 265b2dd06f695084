/*
 * virtio-rdma ibverbs backend: the seam over the host's verbs.
 *
 * Every libibverbs call the backend makes goes through one HostVerbs,
 * given when the host device is opened (HostDevice::open) and reached from
 * there (Backend::verbs()): system_verbs() in QEMU, an in-memory device in
 * the unit tests (tests/unit/fake_host_verbs.h).  One virtual per call the
 * backend makes, with libibverbs' signature and return convention: those
 * returning a pointer set errno when they return nullptr; those returning
 * int return the errno value (poll_cq: negative) and leave errno alone;
 * get_cq_event and get_async_event return -1 with errno set.
 *
 * The soft-RoCE engine does not use it; on the ibverbs data path a virtual
 * call is nothing beside the host's own (a syscall-bound provider).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_VIRTIO_CORE_IB_HOST_VERBS_H
#define HW_RDMA_VIRTIO_CORE_IB_HOST_VERBS_H

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <sys/types.h>

#include "hw/rdma/virtio-rdma-core.h"
#include "hw/rdma/virtio-rdma-ibverbs.h"

namespace vrdma::ib {

class HostVerbs {
public:
    virtual ~HostVerbs() = default;

    /* ---- the device ---- */
    virtual ibv_device **get_device_list(int *num) = 0;
    virtual void free_device_list(ibv_device **list) = 0;
    virtual const char *get_device_name(ibv_device *dev) = 0;
    virtual ibv_context *open_device(ibv_device *dev) = 0;
    virtual int close_device(ibv_context *ctx) = 0;
    virtual int query_device(ibv_context *ctx, ibv_device_attr *attr) = 0;
    virtual int query_port(ibv_context *ctx, uint8_t port,
                           ibv_port_attr *attr) = 0;
    virtual ssize_t query_gid_table(ibv_context *ctx, ibv_gid_entry *entries,
                                    size_t max, uint32_t flags) = 0;

    /* ---- PDs, CQs and their completion channel ---- */
    virtual ibv_pd *alloc_pd(ibv_context *ctx) = 0;
    virtual int dealloc_pd(ibv_pd *pd) = 0;
    virtual ibv_comp_channel *create_comp_channel(ibv_context *ctx) = 0;
    virtual int destroy_comp_channel(ibv_comp_channel *ch) = 0;
    virtual ibv_cq *create_cq(ibv_context *ctx, int cqe, void *cq_context,
                              ibv_comp_channel *ch, int comp_vector) = 0;
    virtual int destroy_cq(ibv_cq *cq) = 0;
    virtual int req_notify_cq(ibv_cq *cq, int solicited_only) = 0;
    virtual int poll_cq(ibv_cq *cq, int num, ibv_wc *wc) = 0;
    virtual int get_cq_event(ibv_comp_channel *ch, ibv_cq **cq,
                             void **cq_context) = 0;
    virtual void ack_cq_events(ibv_cq *cq, unsigned int n) = 0;

    /* ---- QPs and their work requests ---- */
    virtual ibv_qp *create_qp(ibv_pd *pd, ibv_qp_init_attr *attr) = 0;
    virtual int modify_qp(ibv_qp *qp, ibv_qp_attr *attr, int mask) = 0;
    virtual int destroy_qp(ibv_qp *qp) = 0;
    virtual int post_send(ibv_qp *qp, ibv_send_wr *wr, ibv_send_wr **bad) = 0;
    virtual int post_recv(ibv_qp *qp, ibv_recv_wr *wr, ibv_recv_wr **bad) = 0;

    /* ---- MRs, SRQs, address handles ---- */
    virtual ibv_mr *reg_mr_iova2(ibv_pd *pd, void *addr, size_t len,
                                 uint64_t iova, unsigned int access) = 0;
    virtual int dereg_mr(ibv_mr *mr) = 0;
    virtual ibv_srq *create_srq(ibv_pd *pd, ibv_srq_init_attr *attr) = 0;
    virtual int modify_srq(ibv_srq *srq, ibv_srq_attr *attr, int mask) = 0;
    virtual int destroy_srq(ibv_srq *srq) = 0;
    virtual int post_srq_recv(ibv_srq *srq, ibv_recv_wr *wr,
                              ibv_recv_wr **bad) = 0;
    virtual ibv_ah *create_ah(ibv_pd *pd, ibv_ah_attr *attr) = 0;
    virtual int destroy_ah(ibv_ah *ah) = 0;

    /* ---- asynchronous events ---- */
    virtual int get_async_event(ibv_context *ctx, ibv_async_event *ev) = 0;
    virtual void ack_async_event(ibv_async_event *ev) = 0;
};

/* libibverbs itself: what QEMU's device runs on. */
HostVerbs &system_verbs();

/*
 * vrdma_ib_probe() and vrdma_core_new_ibverbs() on @verbs: the unit
 * tests' entries (the C ones pass system_verbs()).  Same arguments,
 * results and messages.
 */
bool probe(HostVerbs &verbs, const char *ibdev, unsigned ibport,
           VrdmaLimits *lim, VrdmaIbHostInfo *info, char *err,
           size_t errlen);
VrdmaCore *core_new(HostVerbs &verbs, const VrdmaLimits *lim,
                    const VrdmaHostOps *ops, const char *ibdev,
                    unsigned ibport, char *err, size_t errlen);

} // namespace vrdma::ib

#endif

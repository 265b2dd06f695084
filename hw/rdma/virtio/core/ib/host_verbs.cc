/*
 * virtio-rdma ibverbs backend: the seam over the host's verbs
 * (host_verbs.h), passed through to libibverbs.  Several of these are
 * static inline in verbs.h (the provider's ops): here they get an address.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "host_verbs.h"

namespace vrdma::ib {

namespace {

class SystemVerbs final : public HostVerbs {
public:
    ibv_device **get_device_list(int *num) override
    {
        return ibv_get_device_list(num);
    }
    void free_device_list(ibv_device **list) override
    {
        ibv_free_device_list(list);
    }
    const char *get_device_name(ibv_device *dev) override
    {
        return ibv_get_device_name(dev);
    }
    ibv_context *open_device(ibv_device *dev) override
    {
        return ibv_open_device(dev);
    }
    int close_device(ibv_context *ctx) override
    {
        return ibv_close_device(ctx);
    }
    int query_device(ibv_context *ctx, ibv_device_attr *attr) override
    {
        return ibv_query_device(ctx, attr);
    }
    int query_port(ibv_context *ctx, uint8_t port, ibv_port_attr *attr) override
    {
        return ibv_query_port(ctx, port, attr);
    }
    ssize_t query_gid_table(ibv_context *ctx, ibv_gid_entry *entries,
                            size_t max, uint32_t flags) override
    {
        return ibv_query_gid_table(ctx, entries, max, flags);
    }

    ibv_pd *alloc_pd(ibv_context *ctx) override { return ibv_alloc_pd(ctx); }
    int dealloc_pd(ibv_pd *pd) override { return ibv_dealloc_pd(pd); }
    ibv_comp_channel *create_comp_channel(ibv_context *ctx) override
    {
        return ibv_create_comp_channel(ctx);
    }
    int destroy_comp_channel(ibv_comp_channel *ch) override
    {
        return ibv_destroy_comp_channel(ch);
    }
    ibv_cq *create_cq(ibv_context *ctx, int cqe, void *cq_context,
                      ibv_comp_channel *ch, int comp_vector) override
    {
        return ibv_create_cq(ctx, cqe, cq_context, ch, comp_vector);
    }
    int destroy_cq(ibv_cq *cq) override { return ibv_destroy_cq(cq); }
    int req_notify_cq(ibv_cq *cq, int solicited_only) override
    {
        return ibv_req_notify_cq(cq, solicited_only);
    }
    int poll_cq(ibv_cq *cq, int num, ibv_wc *wc) override
    {
        return ibv_poll_cq(cq, num, wc);
    }
    int get_cq_event(ibv_comp_channel *ch, ibv_cq **cq,
                     void **cq_context) override
    {
        return ibv_get_cq_event(ch, cq, cq_context);
    }
    void ack_cq_events(ibv_cq *cq, unsigned int n) override
    {
        ibv_ack_cq_events(cq, n);
    }

    ibv_qp *create_qp(ibv_pd *pd, ibv_qp_init_attr *attr) override
    {
        return ibv_create_qp(pd, attr);
    }
    int modify_qp(ibv_qp *qp, ibv_qp_attr *attr, int mask) override
    {
        return ibv_modify_qp(qp, attr, mask);
    }
    int destroy_qp(ibv_qp *qp) override { return ibv_destroy_qp(qp); }
    int post_send(ibv_qp *qp, ibv_send_wr *wr, ibv_send_wr **bad) override
    {
        return ibv_post_send(qp, wr, bad);
    }
    int post_recv(ibv_qp *qp, ibv_recv_wr *wr, ibv_recv_wr **bad) override
    {
        return ibv_post_recv(qp, wr, bad);
    }

    ibv_mr *reg_mr_iova2(ibv_pd *pd, void *addr, size_t len, uint64_t iova,
                         unsigned int access) override
    {
        return ibv_reg_mr_iova2(pd, addr, len, iova, access);
    }
    int dereg_mr(ibv_mr *mr) override { return ibv_dereg_mr(mr); }
    ibv_srq *create_srq(ibv_pd *pd, ibv_srq_init_attr *attr) override
    {
        return ibv_create_srq(pd, attr);
    }
    int modify_srq(ibv_srq *srq, ibv_srq_attr *attr, int mask) override
    {
        return ibv_modify_srq(srq, attr, mask);
    }
    int destroy_srq(ibv_srq *srq) override { return ibv_destroy_srq(srq); }
    int post_srq_recv(ibv_srq *srq, ibv_recv_wr *wr,
                      ibv_recv_wr **bad) override
    {
        return ibv_post_srq_recv(srq, wr, bad);
    }
    ibv_ah *create_ah(ibv_pd *pd, ibv_ah_attr *attr) override
    {
        return ibv_create_ah(pd, attr);
    }
    int destroy_ah(ibv_ah *ah) override { return ibv_destroy_ah(ah); }

    int get_async_event(ibv_context *ctx, ibv_async_event *ev) override
    {
        return ibv_get_async_event(ctx, ev);
    }
    void ack_async_event(ibv_async_event *ev) override
    {
        ibv_ack_async_event(ev);
    }
};

} // namespace

HostVerbs &system_verbs()
{
    static SystemVerbs v;
    return v;
}

} // namespace vrdma::ib

/*
 * A fake host RDMA device for the ibverbs backend's unit tests: the
 * library side of the seam (hw/rdma/virtio/core/ib/host_verbs.h), in
 * memory.
 *
 * It hands out real ibv_* structs (the backend reads their fields: qp_num,
 * lkey, cq_context, fds), keeps what a device keeps for each (posted work
 * requests, CQEs, armed CQs, events) and checks what a kernel would: a
 * destroy of an object something still uses is EBUSY, objects of two
 * contexts do not mix (EINVAL).  It records every call, refuses the next
 * call of a kind with an errno when told (refuse()), and makes completions
 * and asynchronous events on demand.  The completion channel and the
 * async-event fd are real eventfds, so the backend's fcntl()s work.
 *
 * Several contexts may be open on it at once: the tenants of one host
 * device (one per core).  live() counts what is open; a test ends with
 * none (leaks() names them).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef TESTS_UNIT_FAKE_HOST_VERBS_H
#define TESTS_UNIT_FAKE_HOST_VERBS_H

#include <array>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ib/host_verbs.h"

namespace vrdma_test {

/* The calls the fake can refuse and counts. */
enum class Verb {
    kOpenDevice,
    kQueryDevice,
    kQueryPort,
    kAllocPd,
    kDeallocPd,
    kCreateCompChannel,
    kCreateCq,
    kDestroyCq,
    kReqNotifyCq,
    kPollCq,
    kCreateQp,
    kModifyQp,
    kDestroyQp,
    kPostSend,
    kPostRecv,
    kRegMr,
    kDeregMr,
    kCreateSrq,
    kModifySrq,
    kDestroySrq,
    kPostSrqRecv,
    kCreateAh,
    kDestroyAh,
    kCount,
};

/* A work request as the host got it (its SGEs copied; no chain). */
struct PostedSend {
    ibv_send_wr wr;
    std::vector<ibv_sge> sge;
};
struct PostedRecv {
    ibv_recv_wr wr;
    std::vector<ibv_sge> sge;
};

class FakeHostVerbs final : public vrdma::ib::HostVerbs {
public:
    /* Host devices of these names, each with one RoCE port. */
    explicit FakeHostVerbs(std::vector<std::string> names = {"fake0"});
    ~FakeHostVerbs() override;
    FakeHostVerbs(const FakeHostVerbs &) = delete;
    FakeHostVerbs &operator=(const FakeHostVerbs &) = delete;

    /* ---- what the device says of itself (change before opening) ---- */
    ibv_device_attr dev_attr{};
    ibv_port_attr port_attr{};
    /* The host's GID table of port 1 (management adds the guest's). */
    void add_gid(const std::array<uint8_t, 16> &gid, uint32_t index,
                 uint32_t type = IBV_GID_TYPE_ROCE_V2);
    void remove_gid(const std::array<uint8_t, 16> &gid);

    /* ---- refusals and the record ---- */
    /* The next call of @v (after @skip others) fails with @err. */
    void refuse(Verb v, int err, unsigned skip = 0);
    unsigned calls(Verb v) const { return calls_[static_cast<int>(v)]; }
    /* Rule breaks a real device would not let pass (cross-context, ...). */
    std::vector<std::string> violations;

    /* ---- the objects ---- */
    struct Cq {
        ibv_cq cq{};
        std::deque<ibv_wc> cqes;
        bool armed = false;
        unsigned unacked = 0;
    };
    struct Qp {
        ibv_qp qp{};
        ibv_qp_init_attr init{};
        ibv_qp_attr attr{};            /* the last modify's */
        int mask = 0;                  /* and its mask */
        std::vector<PostedSend> sends;
        std::vector<PostedRecv> recvs;
    };
    struct Mr {
        ibv_mr mr{};
        uint64_t iova = 0;
        unsigned access = 0;
    };
    struct Srq {
        ibv_srq srq{};
        ibv_srq_attr attr{};
        std::vector<PostedRecv> recvs;
    };
    struct Channel {
        ibv_comp_channel ch{};
        std::deque<ibv_cq *> events;
    };
    struct Context {
        ibv_context ctx{};
        std::deque<ibv_async_event> events;
        unsigned unacked = 0;
    };

    /* Open host objects of context @ctx (nullptr: of every context). */
    size_t pds(const ibv_context *ctx = nullptr) const;
    size_t cqs(const ibv_context *ctx = nullptr) const;
    size_t qps(const ibv_context *ctx = nullptr) const;
    size_t mrs(const ibv_context *ctx = nullptr) const;
    size_t srqs(const ibv_context *ctx = nullptr) const;
    size_t ahs(const ibv_context *ctx = nullptr) const;
    size_t contexts() const { return ctxs_.size(); }
    size_t channels() const { return chans_.size(); }
    /* Everything open, device lists included; leaks() names it. */
    size_t live() const;
    std::string leaks() const;

    /* The context opened last (a core's, just made). */
    ibv_context *last_context() const { return last_ctx_; }
    Channel *channel_of(const ibv_context *ctx);
    Qp *qp(uint32_t qp_num);
    Qp *qp(const ibv_qp *q);
    Cq *cq(const ibv_cq *c);
    Mr *mr_by_lkey(uint32_t lkey);
    Srq *srq(const ibv_srq *s);
    std::vector<Qp *> qps_of(const ibv_context *ctx);
    std::vector<Cq *> cqs_of(const ibv_context *ctx);
    std::vector<Srq *> srqs_of(const ibv_context *ctx);

    /* ---- on demand ---- */
    /* A CQE in @cq; an event on its channel if it is armed (then disarmed). */
    void complete(ibv_cq *cq, const ibv_wc &wc);
    /* A CQE of QP @qp's send (or receive) CQ, for its wr @wr_id. */
    void complete_qp(Qp &qp, bool send, uint64_t wr_id, ibv_wc_status status,
                     ibv_wc_opcode opcode, uint32_t byte_len = 0);
    /* An asynchronous event on @ctx. */
    void qp_event(Qp &qp, ibv_event_type type);
    void port_event(ibv_context *ctx, ibv_event_type type, uint8_t port = 1);
    void cq_event(Cq &cq, ibv_event_type type);
    void srq_event(Srq &srq, ibv_event_type type);

    /* ---- HostVerbs ---- */
    ibv_device **get_device_list(int *num) override;
    void free_device_list(ibv_device **list) override;
    const char *get_device_name(ibv_device *dev) override;
    ibv_context *open_device(ibv_device *dev) override;
    int close_device(ibv_context *ctx) override;
    int query_device(ibv_context *ctx, ibv_device_attr *attr) override;
    int query_port(ibv_context *ctx, uint8_t port,
                   ibv_port_attr *attr) override;
    ssize_t query_gid_table(ibv_context *ctx, ibv_gid_entry *entries,
                            size_t max, uint32_t flags) override;
    ibv_pd *alloc_pd(ibv_context *ctx) override;
    int dealloc_pd(ibv_pd *pd) override;
    ibv_comp_channel *create_comp_channel(ibv_context *ctx) override;
    int destroy_comp_channel(ibv_comp_channel *ch) override;
    ibv_cq *create_cq(ibv_context *ctx, int cqe, void *cq_context,
                      ibv_comp_channel *ch, int comp_vector) override;
    int destroy_cq(ibv_cq *cq) override;
    int req_notify_cq(ibv_cq *cq, int solicited_only) override;
    int poll_cq(ibv_cq *cq, int num, ibv_wc *wc) override;
    int get_cq_event(ibv_comp_channel *ch, ibv_cq **cq,
                     void **cq_context) override;
    void ack_cq_events(ibv_cq *cq, unsigned int n) override;
    ibv_qp *create_qp(ibv_pd *pd, ibv_qp_init_attr *attr) override;
    int modify_qp(ibv_qp *qp, ibv_qp_attr *attr, int mask) override;
    int destroy_qp(ibv_qp *qp) override;
    int post_send(ibv_qp *qp, ibv_send_wr *wr, ibv_send_wr **bad) override;
    int post_recv(ibv_qp *qp, ibv_recv_wr *wr, ibv_recv_wr **bad) override;
    ibv_mr *reg_mr_iova2(ibv_pd *pd, void *addr, size_t len, uint64_t iova,
                         unsigned int access) override;
    int dereg_mr(ibv_mr *mr) override;
    ibv_srq *create_srq(ibv_pd *pd, ibv_srq_init_attr *attr) override;
    int modify_srq(ibv_srq *srq, ibv_srq_attr *attr, int mask) override;
    int destroy_srq(ibv_srq *srq) override;
    int post_srq_recv(ibv_srq *srq, ibv_recv_wr *wr,
                      ibv_recv_wr **bad) override;
    ibv_ah *create_ah(ibv_pd *pd, ibv_ah_attr *attr) override;
    int destroy_ah(ibv_ah *ah) override;
    int get_async_event(ibv_context *ctx, ibv_async_event *ev) override;
    void ack_async_event(ibv_async_event *ev) override;

private:
    /* Counts the call; @returns the errno it is to fail with, or 0. */
    int enter(Verb v);
    void raise(ibv_context *ctx, const ibv_async_event &ev);
    bool ours(const ibv_context *ctx) const { return ctxs_.count(ctx) != 0; }

    std::vector<std::unique_ptr<ibv_device>> devs_;
    std::vector<ibv_gid_entry> gids_;
    std::array<unsigned, static_cast<int>(Verb::kCount)> calls_{};
    struct Refusal {
        Verb v;
        int err;
        unsigned skip;
    };
    std::vector<Refusal> refusals_;
    uint32_t next_qpn_ = 0x11;
    uint32_t next_key_ = 0x100;
    size_t lists_ = 0; /* device lists not freed */
    ibv_context *last_ctx_ = nullptr;

    std::map<const ibv_context *, std::unique_ptr<Context>> ctxs_;
    std::map<const ibv_comp_channel *, std::unique_ptr<Channel>> chans_;
    std::map<const ibv_pd *, std::unique_ptr<ibv_pd>> pds_;
    std::map<const ibv_cq *, std::unique_ptr<Cq>> cqs_;
    std::map<const ibv_qp *, std::unique_ptr<Qp>> qps_;
    std::map<const ibv_mr *, std::unique_ptr<Mr>> mrs_;
    std::map<const ibv_srq *, std::unique_ptr<Srq>> srqs_;
    std::map<const ibv_ah *, std::unique_ptr<ibv_ah>> ahs_;
};

} // namespace vrdma_test

#endif

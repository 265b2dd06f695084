/*
 * Test fixture: a core on a fake guest, typed command helpers, and the
 * refusal check every error test uses.  The core runs the rings data path
 * (kRingFeatures, as the guest driver negotiates it): CQs and QPs are
 * CREATE_CQ_RING / CREATE_QP_RING in context 0, on zeroed rings the
 * fixture places at the top of the guest's high RAM.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef TESTS_UNIT_CORE_FIXTURE_H
#define TESTS_UNIT_CORE_FIXTURE_H

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <type_traits>
#include <vector>

#include "driver_features.h"
#include "fake_guest.h"
#include "hw/rdma/virtio-rdma-core.h"

namespace vrdma_test {

struct None {
};

inline VrdmaLimits default_limits()
{
    return VrdmaLimits{
        .max_qp = 8,
        .max_cq = 8,
        .max_mr = 8,
        .max_pd = 4,
        .max_ah = 4,
        .max_mr_size = 8ull << 20, /* 2048 pages */
        .max_sge = 4,
        .sys_image_guid = 0x0123456789abcdefull,
        .phys_mtu = 1500,
        .mac = {0x52, 0x54, 0x00, 0x12, 0x34, 0x56},
        .max_mapped_pages = 0, /* no cap */
        .rng_seed = 0,         /* deterministic numbers and keys */
        .max_qp_rd_atom = 0,   /* the soft engine's capabilities */
        .max_qp_init_rd_atom = 0,
        .no_atomics = false,
        .no_fast_reg = false,
        .allow = {},            /* no allowed-gids */
        .max_ctx = 8,
        .max_ring_cqe = 0,      /* the ring bounds it */
        .max_ring_qp_wr = 0,    /* the ring bounds it */
        .max_srq = 16,
        .max_srq_wr = 0,        /* VIRTIO_RDMA_RING_MAX_SRQ_WR */
        .max_srq_sge = 0,       /* max_sge */
    };
}

/* The object counts a refused command must leave alone. */
struct Snapshot {
    uint32_t pds, cqs, qps, mrs, gids;
    uint64_t mapped_pages, live_maps, gid_events;
    bool operator==(const Snapshot &) const = default;
};

inline std::ostream &operator<<(std::ostream &os, const Snapshot &s)
{
    return os << "{pds " << s.pds << " cqs " << s.cqs << " qps " << s.qps
              << " mrs " << s.mrs << " gids " << s.gids << " pages "
              << s.mapped_pages << " maps " << s.live_maps << " gid_events "
              << s.gid_events << "}";
}

class CoreTest : public ::testing::Test {
protected:
    void SetUp() override { start(default_limits()); }

    void TearDown() override
    {
        vrdma_core_free(core_);
        core_ = nullptr;
        EXPECT_EQ(guest_.maps, guest_.unmaps) << "leaked guest mappings";
        EXPECT_EQ(guest_.bad_unmaps, 0u);
    }

    /*
     * Replaces the core by one with @lim (asserting it is accepted) and
     * negotiates @features.
     */
    void start(const VrdmaLimits &lim, uint64_t features = kRingFeatures)
    {
        vrdma_core_free(core_);
        lim_ = lim;
        core_ = vrdma_core_new(&lim_, &guest_.ops());
        ASSERT_NE(core_, nullptr);
        vrdma_core_set_features(core_, features);
        features_ = features;
        next_ring_ = kRingArea;
        ring_pages_ = 0;
    }

    /* vrdma_core_reset; the driver negotiates the same features again. */
    void reset_core()
    {
        vrdma_core_reset(core_);
        vrdma_core_set_features(core_, features_);
    }

    uint8_t raw(uint8_t cmd, const void *req, size_t req_len, void *rsp,
                size_t rsp_cap, size_t *rsp_len)
    {
        return vrdma_core_ctrl(core_, cmd, req, req_len, rsp, rsp_cap, rsp_len);
    }

    /*
     * Runs @cmd with a request of type Req; the guest offers a response
     * buffer of VRDMA_CTRL_RSP_MAX bytes.  On success, a response of type
     * Rsp is expected (unless Rsp is None) and copied to @rsp.
     */
    template <typename Req, typename Rsp = None>
    uint8_t ctrl(uint8_t cmd, const Req &req, Rsp *rsp = nullptr)
    {
        constexpr size_t req_len = std::is_same_v<Req, None> ? 0 : sizeof(Req);
        uint8_t buf[VRDMA_CTRL_RSP_MAX];
        size_t rsp_len = 12345;

        std::memset(buf, 0xa5, sizeof(buf));
        const uint8_t st = raw(cmd, &req, req_len, buf, sizeof(buf), &rsp_len);
        if (st != VIRTIO_RDMA_OK) {
            EXPECT_EQ(rsp_len, 0u);
        } else if constexpr (!std::is_same_v<Rsp, None>) {
            EXPECT_EQ(rsp_len, sizeof(Rsp));
            if (rsp) {
                std::memcpy(rsp, buf, sizeof(Rsp));
            }
        }
        return st;
    }

    Snapshot snapshot() const
    {
        VrdmaStats st;
        vrdma_core_get_stats(core_, &st);
        return Snapshot{st.pds, st.cqs, st.qps, st.mrs, st.gids,
                        st.mapped_pages, guest_.live_maps(),
                        guest_.gid_events.size()};
    }

    /*
     * Runs a command that must be refused with @err: the status byte is
     * the one mapped from @err, guest_error() was called exactly once with
     * @err, and nothing changed.
     */
    template <typename Req, typename Rsp = None>
    void expect_refused(uint8_t cmd, const Req &req, VrdmaErr err,
                        Rsp *rsp = nullptr)
    {
        const Snapshot before = snapshot();
        const size_t errors = guest_.errors.size();
        const uint8_t st = ctrl(cmd, req, rsp);

        EXPECT_EQ(st, status_for(err)) << vrdma_err_name(err);
        ASSERT_EQ(guest_.errors.size(), errors + 1) << "one guest_error";
        EXPECT_EQ(guest_.errors.back().cmd, cmd);
        EXPECT_EQ(guest_.errors.back().err, err)
            << "got " << vrdma_err_name(guest_.errors.back().err) << ", want "
            << vrdma_err_name(err);
        EXPECT_EQ(snapshot(), before) << "a refusal changed something";
    }

    static uint8_t status_for(VrdmaErr err)
    {
        switch (err) {
        case VRDMA_ERR_UNKNOWN_CMD: return VIRTIO_RDMA_EOPNOTSUPP;
        case VRDMA_ERR_BAD_HANDLE: return VIRTIO_RDMA_ENOENT;
        case VRDMA_ERR_TABLE_FULL: return VIRTIO_RDMA_ENOMEM;
        case VRDMA_ERR_IN_USE: return VIRTIO_RDMA_EBUSY;
        case VRDMA_ERR_LIMIT: return VIRTIO_RDMA_ERANGE;
        case VRDMA_ERR_BAD_ADDR: return VIRTIO_RDMA_EFAULT;
        case VRDMA_ERR_NOT_ALLOWED: return VIRTIO_RDMA_EPERM;
        case VRDMA_ERR_UNSUPPORTED: return VIRTIO_RDMA_EOPNOTSUPP;
        case VRDMA_ERR_NONE: return VIRTIO_RDMA_OK;
        default: return VIRTIO_RDMA_EINVAL;
        }
    }

    /* ---- object helpers (each asserts success) ---- */

    uint32_t create_pd()
    {
        virtio_rdma_rsp_create_pd rsp{};
        EXPECT_EQ(ctrl(VIRTIO_RDMA_CMD_CREATE_PD, None{}, &rsp), VIRTIO_RDMA_OK);
        return rsp.pdn;
    }

    uint8_t destroy_pd(uint32_t pdn)
    {
        return ctrl(VIRTIO_RDMA_CMD_DESTROY_PD,
                    virtio_rdma_cmd_destroy_pd{.pdn = pdn});
    }

    /* The log2 of the smallest power of two >= @n (0 for 0 and 1). */
    static uint8_t log2_ceil(uint64_t n)
    {
        return static_cast<uint8_t>(
            std::countr_zero(std::bit_ceil(std::max<uint64_t>(n, 1))));
    }

    /*
     * A zeroed ring of 2^@log_entries entries of 2^@log_stride bytes and
     * its page table, from the fixture's area; ring_pages_ counts its
     * pages (they are mapped while the queue lives).
     */
    virtio_rdma_ring ring(uint8_t log_entries, uint8_t log_stride)
    {
        const uint64_t bytes = (uint64_t{1} << (log_entries + log_stride)) +
                               sizeof(virtio_rdma_ring_trailer);
        const size_t npages = (bytes + VIRTIO_RDMA_PAGE_SIZE - 1) /
                              VIRTIO_RDMA_PAGE_SIZE;
        const uint64_t data = next_ring_;
        const uint64_t table = data + npages * VIRTIO_RDMA_PAGE_SIZE;
        next_ring_ = table + (1 + (npages + 511) / 512) * VIRTIO_RDMA_PAGE_SIZE;
        EXPECT_LE(next_ring_, FakeGuest::kRam1.base + FakeGuest::kRam1.size)
            << "test ran out of ring room";
        std::memset(guest_.host(data, npages * VIRTIO_RDMA_PAGE_SIZE), 0,
                    npages * VIRTIO_RDMA_PAGE_SIZE);
        write_page_table(table, pages_from(data, npages));
        ring_pages_ += npages;
        return virtio_rdma_ring{.pages = table,
                                .npages = static_cast<uint32_t>(npages),
                                .log_entries = log_entries,
                                .log_stride = log_stride,
                                .reserved = 0};
    }

    /*
     * A work queue's ring for @wr requests of @entry_bytes: none for a
     * queue without requests, and none for a depth or an entry beyond the
     * ABI's bounds (such a request is refused before its rings are looked
     * at).
     */
    virtio_rdma_ring wq_ring(uint32_t wr, uint64_t entry_bytes)
    {
        if (!wr || wr > VIRTIO_RDMA_RING_MAX_QP_WR ||
            entry_bytes > (1u << VIRTIO_RDMA_RING_MAX_LOG_STRIDE)) {
            return virtio_rdma_ring{};
        }
        return ring(log2_ceil(wr),
                    std::max<uint8_t>(log2_ceil(entry_bytes),
                                      VIRTIO_RDMA_RING_MIN_LOG_STRIDE));
    }

    /*
     * CREATE_CQ_RING of @cqe in context 0 on a ring of at least cqe
     * entries; none for a depth no ring holds (refused before the ring).
     */
    virtio_rdma_cmd_create_cq_ring cq_req(uint32_t cqe)
    {
        virtio_rdma_cmd_create_cq_ring r{.ctx = VIRTIO_RDMA_KERNEL_CTX,
                                         .cqe = cqe,
                                         .ring = {}};
        if (cqe <= (1u << VIRTIO_RDMA_RING_MAX_LOG_ENTRIES)) {
            r.ring = ring(log2_ceil(cqe), VIRTIO_RDMA_CQE_LOG_STRIDE);
        }
        return r;
    }

    uint32_t create_cq(uint32_t cqe = 16)
    {
        virtio_rdma_rsp_create_cq rsp{};
        EXPECT_EQ(ctrl(VIRTIO_RDMA_CMD_CREATE_CQ_RING, cq_req(cqe), &rsp),
                  VIRTIO_RDMA_OK);
        return rsp.cqn;
    }

    uint8_t destroy_cq(uint32_t cqn)
    {
        return ctrl(VIRTIO_RDMA_CMD_DESTROY_CQ,
                    virtio_rdma_cmd_destroy_cq{.cqn = cqn});
    }

    /* Arms CQ @cqn by its doorbell; @returns what the doorbell returns. */
    bool arm_cq(uint32_t cqn, uint32_t flags)
    {
        return vrdma_core_doorbell(
            core_, VIRTIO_RDMA_KERNEL_CTX,
            VIRTIO_RDMA_DB(VIRTIO_RDMA_DB_CQ_ARM, cqn, flags));
    }

    static virtio_rdma_cmd_create_qp qp_req(uint32_t pdn, uint8_t type,
                                            uint32_t cqn)
    {
        virtio_rdma_cmd_create_qp r{};
        r.pdn = pdn;
        r.qp_type = type;
        r.sq_sig_type = VIRTIO_RDMA_SIGNAL_REQ_WR;
        r.max_send_wr = 16;
        r.max_send_sge = 2;
        r.send_cqn = cqn;
        r.max_recv_wr = 32;
        r.max_recv_sge = 3;
        r.recv_cqn = cqn;
        return r;
    }

    /* CREATE_QP_RING of @q in context 0, each ring as deep as its queue. */
    virtio_rdma_cmd_create_qp_ring qp_ring_req(const virtio_rdma_cmd_create_qp &q)
    {
        virtio_rdma_cmd_create_qp_ring r{};
        r.qp = q;
        r.ctx = VIRTIO_RDMA_KERNEL_CTX;
        r.sq = wq_ring(q.max_send_wr,
                       sizeof(virtio_rdma_sq_req) +
                           uint64_t{q.max_send_sge} * sizeof(virtio_rdma_sge));
        r.rq = wq_ring(q.max_recv_wr,
                       sizeof(virtio_rdma_rq_req) +
                           uint64_t{q.max_recv_sge} * sizeof(virtio_rdma_sge));
        return r;
    }

    uint32_t create_qp(const virtio_rdma_cmd_create_qp &req)
    {
        virtio_rdma_rsp_create_qp_wire rsp{};
        EXPECT_EQ(ctrl(VIRTIO_RDMA_CMD_CREATE_QP_RING, qp_ring_req(req), &rsp),
                  VIRTIO_RDMA_OK);
        return rsp.qpn;
    }

    uint8_t destroy_qp(uint32_t qpn)
    {
        return ctrl(VIRTIO_RDMA_CMD_DESTROY_QP,
                    virtio_rdma_cmd_destroy_qp{.qpn = qpn});
    }

    uint8_t modify_qp(uint32_t qpn, uint32_t mask,
                      const virtio_rdma_qp_attr &attrs)
    {
        return ctrl(VIRTIO_RDMA_CMD_MODIFY_QP,
                    virtio_rdma_cmd_modify_qp{.qpn = qpn, .attr_mask = mask,
                                              .attrs = attrs});
    }

    virtio_rdma_qp_attr query_qp(uint32_t qpn)
    {
        virtio_rdma_qp_attr rsp{};
        EXPECT_EQ(ctrl(VIRTIO_RDMA_CMD_QUERY_QP,
                       virtio_rdma_cmd_query_qp{.qpn = qpn, .attr_mask = 0},
                       &rsp),
                  VIRTIO_RDMA_OK);
        return rsp;
    }

    uint8_t add_gid(uint16_t index, uint8_t fill,
                    uint32_t type = VIRTIO_RDMA_GID_TYPE_ROCE_UDP_ENCAP)
    {
        virtio_rdma_cmd_add_gid r{};
        std::memset(r.gid, fill, sizeof(r.gid));
        r.gid_type = type;
        r.index = index;
        r.port_num = 1;
        return ctrl(VIRTIO_RDMA_CMD_ADD_GID, r);
    }

    virtio_rdma_rsp_mr get_dma_mr(uint32_t pdn, uint32_t access)
    {
        virtio_rdma_rsp_mr rsp{};
        EXPECT_EQ(ctrl(VIRTIO_RDMA_CMD_GET_DMA_MR,
                       virtio_rdma_cmd_get_dma_mr{.pdn = pdn,
                                                  .access_flags = access},
                       &rsp),
                  VIRTIO_RDMA_OK);
        return rsp;
    }

    uint8_t dereg_mr(uint32_t mrn)
    {
        return ctrl(VIRTIO_RDMA_CMD_DEREG_MR,
                    virtio_rdma_cmd_dereg_mr{.mrn = mrn});
    }

    /*
     * Writes a two-level page table for @data (guest-physical page
     * addresses) at @table (L1 page; L2 pages follow it). @returns @table.
     */
    uint64_t write_page_table(uint64_t table, const std::vector<uint64_t> &data)
    {
        const size_t n_l2 = (data.size() + 511) / 512;
        for (size_t i = 0; i < n_l2; i++) {
            const uint64_t l2 = table + (i + 1) * VIRTIO_RDMA_PAGE_SIZE;
            guest_.poke64(table + i * 8, l2);
            for (size_t j = 0; j < 512 && i * 512 + j < data.size(); j++) {
                guest_.poke64(l2 + j * 8, data[i * 512 + j]);
            }
        }
        return table;
    }

    /* @n consecutive data pages from @first. */
    static std::vector<uint64_t> pages_from(uint64_t first, size_t n)
    {
        std::vector<uint64_t> v(n);
        for (size_t i = 0; i < n; i++) {
            v[i] = first + i * VIRTIO_RDMA_PAGE_SIZE;
        }
        return v;
    }

    /* The rings' area: the top 32 MiB of high RAM, clear of test data. */
    static constexpr uint64_t kRingArea =
        FakeGuest::kRam1.base + FakeGuest::kRam1.size - (32ull << 20);

    FakeGuest guest_;
    VrdmaLimits lim_{};
    VrdmaCore *core_ = nullptr;
    uint64_t features_ = kRingFeatures;
    uint64_t next_ring_ = kRingArea;
    uint64_t ring_pages_ = 0; /* pages of the rings made since start() */
};

} // namespace vrdma_test

#endif

/*
 * The C interface: limits, config space, the command gate (unknown
 * command, request/response sizes), stats, reset and free.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <gtest/gtest.h>

#include <functional>

#include "core_fixture.h"

namespace vrdma_test {
namespace {

TEST(CoreNew, AcceptsDefaultsAndExtremes)
{
    FakeGuest g;
    VrdmaLimits lim = default_limits();
    VrdmaCore *c = vrdma_core_new(&lim, &g.ops());
    ASSERT_NE(c, nullptr);
    vrdma_core_free(c);

    lim = VrdmaLimits{.max_qp = 2, .max_cq = 1, .max_mr = 1, .max_pd = 1,
                      .max_ah = 1, .max_mr_size = 4096,
                      .max_sge = 1, .sys_image_guid = 0, .phys_mtu = 0,
                      .mac = {}, .max_mapped_pages = 0, .rng_seed = 0,
                      .max_qp_rd_atom = 1, .max_qp_init_rd_atom = 1,
                      .no_atomics = true, .no_fast_reg = true, .allow = {},
                      .max_ctx = 0, .max_ring_cqe = 0,
                      .max_ring_qp_wr = 0, .max_srq = 0, .max_srq_wr = 0,
                      .max_srq_sge = 0};
    c = vrdma_core_new(&lim, &g.ops());
    ASSERT_NE(c, nullptr);
    vrdma_core_free(c);

    lim = VrdmaLimits{.max_qp = VIRTIO_RDMA_RING_MAX_QP,
                      .max_cq = VIRTIO_RDMA_RING_MAX_CQ, .max_mr = 16384,
                      .max_pd = 16384, .max_ah = 16384,
                      .max_mr_size = 512ull * 512 * 512 * 4096,
                      .max_sge = 32, .sys_image_guid = ~0ull,
                      .phys_mtu = 65535, .mac = {},
                      .max_mapped_pages = UINT64_MAX,
                      .rng_seed = UINT64_MAX,
                      .max_qp_rd_atom = UINT32_MAX,
                      .max_qp_init_rd_atom = UINT32_MAX,
                      .no_atomics = false, .no_fast_reg = false,
                      .allow = {}, .max_ctx = 0, .max_ring_cqe = 0,
                      .max_ring_qp_wr = 0, .max_srq = VIRTIO_RDMA_RING_MAX_SRQ,
                      .max_srq_wr = 0, .max_srq_sge = 0};
    c = vrdma_core_new(&lim, &g.ops());
    ASSERT_NE(c, nullptr);
    vrdma_core_free(c);
}

TEST(CoreNew, RejectsLimitsOutOfRange)
{
    FakeGuest g;
    const std::vector<std::function<void(VrdmaLimits &)>> bad = {
        [](VrdmaLimits &l) { l.max_qp = 0; },
        [](VrdmaLimits &l) { l.max_qp = 1; }, /* qpn 0 is never used */
        [](VrdmaLimits &l) { l.max_qp = VIRTIO_RDMA_RING_MAX_QP + 1; },
        [](VrdmaLimits &l) { l.max_cq = 0; },
        [](VrdmaLimits &l) { l.max_cq = 16385; },
        [](VrdmaLimits &l) { l.max_mr = 0; },
        [](VrdmaLimits &l) { l.max_mr = 16385; },
        [](VrdmaLimits &l) { l.max_pd = 0; },
        [](VrdmaLimits &l) { l.max_pd = 16385; },
        [](VrdmaLimits &l) { l.max_ah = 0; },
        [](VrdmaLimits &l) { l.max_ah = 16385; },
        [](VrdmaLimits &l) { l.max_sge = 0; },
        [](VrdmaLimits &l) { l.max_sge = 33; },
        [](VrdmaLimits &l) { l.max_mr_size = 0; },
        [](VrdmaLimits &l) { l.max_mr_size = 4095; },
        [](VrdmaLimits &l) { l.max_mr_size = 512ull * 512 * 512 * 4096 + 1; },
    };
    for (size_t i = 0; i < bad.size(); i++) {
        VrdmaLimits lim = default_limits();
        bad[i](lim);
        EXPECT_EQ(vrdma_core_new(&lim, &g.ops()), nullptr) << "case " << i;
    }
    VrdmaLimits lim = default_limits();
    EXPECT_EQ(vrdma_core_new(nullptr, &g.ops()), nullptr);
    EXPECT_EQ(vrdma_core_new(&lim, nullptr), nullptr);
    VrdmaHostOps ops = g.ops();
    ops.mem.map = nullptr;
    EXPECT_EQ(vrdma_core_new(&lim, &ops), nullptr);
}

using Config = CoreTest;

TEST_F(Config, Fields)
{
    virtio_rdma_config cfg;
    std::memset(&cfg, 0xee, sizeof(cfg));
    vrdma_core_get_config(core_, &cfg);

    EXPECT_EQ(cfg.phys_port_cnt, 1u);
    /* A copy: the packed field is not 8-byte aligned for a reference. */
    EXPECT_EQ(uint64_t{cfg.sys_image_guid}, 0x0123456789abcdefull); /* as given */
    EXPECT_EQ(cfg.vendor_id, 0x1af4u);
    EXPECT_EQ(cfg.vendor_part_id, 0x106au);
    EXPECT_EQ(cfg.hw_ver, uint32_t{VIRTIO_RDMA_ABI_VERSION});
    EXPECT_EQ(cfg.max_mr_size, 8ull << 20);
    EXPECT_EQ(cfg.page_size_cap, 4096u);
    /* Version 1's virtqueue limits: gone, 0. */
    EXPECT_EQ(cfg.reserved_max_qp, 0u);
    EXPECT_EQ(cfg.reserved_max_qp_wr, 0u);
    EXPECT_EQ(cfg.device_cap_flags, VIRTIO_RDMA_DEV_RC_RNR_NAK_GEN |
                                        VIRTIO_RDMA_DEV_MEM_MGT_EXTENSIONS |
                                        VIRTIO_RDMA_DEV_SYS_IMAGE_GUID);
    EXPECT_EQ(cfg.max_send_sge, 4u);
    EXPECT_EQ(cfg.max_recv_sge, 4u);
    EXPECT_EQ(cfg.max_sge_rd, 4u);
    EXPECT_EQ(cfg.reserved_max_cq, 0u);
    EXPECT_EQ(cfg.reserved_max_cqe, 0u);
    EXPECT_EQ(cfg.max_mr, 8u);
    EXPECT_EQ(cfg.max_pd, 4u);
    EXPECT_EQ(cfg.max_qp_rd_atom, 16u);
    EXPECT_EQ(cfg.max_res_rd_atom, 16u * 8);
    EXPECT_EQ(cfg.max_qp_init_rd_atom, 16u);
    EXPECT_EQ(cfg.atomic_cap, uint32_t{VIRTIO_RDMA_ATOMIC_HCA});
    EXPECT_EQ(cfg.max_mw, 0u);
    EXPECT_EQ(cfg.max_mcast_grp, 0u);
    EXPECT_EQ(cfg.max_mcast_qp_attach, 0u);
    EXPECT_EQ(cfg.max_total_mcast_qp_attach, 0u);
    EXPECT_EQ(cfg.max_ah, 4u);
    EXPECT_EQ(cfg.max_fast_reg_page_list_len, 2048u);
    EXPECT_EQ(cfg.max_pi_fast_reg_page_list_len, 0u);
    EXPECT_EQ(cfg.max_pkeys, 1u);
    EXPECT_EQ(cfg.local_ca_ack_delay, 15u);
    for (uint8_t b : cfg.reserved) {
        EXPECT_EQ(b, 0u);
    }
}

/* A backend that does less (a host device's caps) says so in the config. */
TEST(ConfigCaps, BackendLessThanSoft)
{
    FakeGuest g;
    VrdmaLimits lim = default_limits();
    lim.max_qp_rd_atom = 4;
    lim.max_qp_init_rd_atom = 2;
    lim.no_atomics = true;
    lim.no_fast_reg = true;
    VrdmaCore *c = vrdma_core_new(&lim, &g.ops());
    ASSERT_NE(c, nullptr);
    virtio_rdma_config cfg;
    vrdma_core_get_config(c, &cfg);
    EXPECT_EQ(cfg.device_cap_flags, VIRTIO_RDMA_DEV_RC_RNR_NAK_GEN |
                                        VIRTIO_RDMA_DEV_SYS_IMAGE_GUID);
    EXPECT_EQ(cfg.max_qp_rd_atom, 4u);
    EXPECT_EQ(cfg.max_res_rd_atom, 4u * lim.max_qp);
    EXPECT_EQ(cfg.max_qp_init_rd_atom, 2u);
    EXPECT_EQ(cfg.atomic_cap, uint32_t{VIRTIO_RDMA_ATOMIC_NONE});
    EXPECT_EQ(cfg.max_fast_reg_page_list_len, 0u);
    vrdma_core_free(c);

    /* Above the soft engine's own bound, the soft engine's stays. */
    lim = default_limits();
    lim.max_qp_rd_atom = 128;
    c = vrdma_core_new(&lim, &g.ops());
    ASSERT_NE(c, nullptr);
    vrdma_core_get_config(c, &cfg);
    EXPECT_EQ(cfg.max_qp_rd_atom, 16u);
    EXPECT_EQ(cfg.max_qp_init_rd_atom, 16u);
    vrdma_core_free(c);
}

TEST_F(Config, FastRegPageListIsCappedAt512x512)
{
    VrdmaLimits lim = default_limits();
    lim.max_mr_size = 512ull * 512 * 512 * 4096; /* a three-level MR */
    lim.max_qp = 16384;
    start(lim);
    virtio_rdma_config cfg;
    vrdma_core_get_config(core_, &cfg);
    EXPECT_EQ(cfg.max_mr_size, 512ull * 512 * 512 * 4096);
    EXPECT_EQ(cfg.max_fast_reg_page_list_len, 512u * 512);
    EXPECT_EQ(cfg.max_res_rd_atom, 16u * 16384);

    lim.max_mr_size = 4096 * 3 + 100; /* rounds down */
    start(lim);
    vrdma_core_get_config(core_, &cfg);
    EXPECT_EQ(cfg.max_fast_reg_page_list_len, 3u);
}

/* ---- the command gate ---- */

using Gate = CoreTest;

TEST_F(Gate, UnknownCommands)
{
    for (int cmd : {0, VIRTIO_RDMA_CMD_MAX + 1, 0x7f, 0xff}) {
        expect_refused(static_cast<uint8_t>(cmd), None{},
                       VRDMA_ERR_UNKNOWN_CMD);
    }
    EXPECT_EQ(create_pd(), 0x10000u); /* still works */
}

struct CmdSizes {
    uint8_t cmd;
    size_t req;
    size_t rsp;
};

constexpr CmdSizes kSizes[] = {
    {VIRTIO_RDMA_CMD_QUERY_PORT, 4, 172},
    {VIRTIO_RDMA_CMD_DESTROY_CQ, 4, 0},
    {VIRTIO_RDMA_CMD_CREATE_PD, 0, 4},
    {VIRTIO_RDMA_CMD_DESTROY_PD, 4, 0},
    {VIRTIO_RDMA_CMD_GET_DMA_MR, 8, 12},
    {VIRTIO_RDMA_CMD_CREATE_MR, 12, 12},
    {VIRTIO_RDMA_CMD_MAP_MR_SG, 32, 4},
    {VIRTIO_RDMA_CMD_REG_USER_MR, 48, 12},
    {VIRTIO_RDMA_CMD_DEREG_MR, 4, 0},
    {VIRTIO_RDMA_CMD_MODIFY_QP, 168, 0},
    {VIRTIO_RDMA_CMD_QUERY_QP, 8, 160},
    {VIRTIO_RDMA_CMD_DESTROY_QP, 4, 0},
    {VIRTIO_RDMA_CMD_QUERY_PKEY, 8, 2},
    {VIRTIO_RDMA_CMD_ADD_GID, 28, 0},
    {VIRTIO_RDMA_CMD_DEL_GID, 8, 0},
    {VIRTIO_RDMA_CMD_ALLOC_CONTEXT, 0, 4},
    {VIRTIO_RDMA_CMD_FREE_CONTEXT, 4, 0},
    {VIRTIO_RDMA_CMD_CREATE_CQ_RING, 24, 4},
    {VIRTIO_RDMA_CMD_CREATE_QP_RING, 80, 8},
    {VIRTIO_RDMA_CMD_CREATE_SRQ_RING, 40, 4},
    {VIRTIO_RDMA_CMD_MODIFY_SRQ, 16, 0},
    {VIRTIO_RDMA_CMD_QUERY_SRQ, 4, 16},
    {VIRTIO_RDMA_CMD_DESTROY_SRQ, 4, 0},
};

class GateSizes : public CoreTest,
                  public ::testing::WithParamInterface<CmdSizes> {
protected:
    void expect_raw_refused(uint8_t cmd, size_t req_len, size_t rsp_cap,
                            VrdmaErr err)
    {
        uint8_t req[VRDMA_CTRL_REQ_MAX + 8] = {};
        uint8_t rsp[VRDMA_CTRL_RSP_MAX];
        size_t rsp_len = 99;
        const Snapshot before = snapshot();
        const size_t errors = guest_.errors.size();

        EXPECT_EQ(raw(cmd, req, req_len, rsp, rsp_cap, &rsp_len),
                  VIRTIO_RDMA_EINVAL);
        EXPECT_EQ(rsp_len, 0u);
        ASSERT_EQ(guest_.errors.size(), errors + 1);
        EXPECT_EQ(guest_.errors.back().err, err);
        EXPECT_EQ(guest_.errors.back().a, err == VRDMA_ERR_REQ_SIZE ? req_len
                                                                    : rsp_cap);
        EXPECT_EQ(guest_.errors.back().field,
                  err == VRDMA_ERR_REQ_SIZE ? "request" : "response");
        EXPECT_EQ(snapshot(), before);
    }
};

TEST_P(GateSizes, RequestMustBeExactSize)
{
    const CmdSizes &s = GetParam();
    if (s.req > 0) {
        expect_raw_refused(s.cmd, s.req - 1, s.rsp, VRDMA_ERR_REQ_SIZE);
        expect_raw_refused(s.cmd, 0, s.rsp, VRDMA_ERR_REQ_SIZE);
    }
    expect_raw_refused(s.cmd, s.req + 1, s.rsp, VRDMA_ERR_REQ_SIZE);
    expect_raw_refused(s.cmd, VRDMA_CTRL_REQ_MAX + 1, s.rsp,
                       VRDMA_ERR_REQ_SIZE);
}

TEST_P(GateSizes, ResponseMustFit)
{
    const CmdSizes &s = GetParam();
    if (s.rsp > 0) {
        expect_raw_refused(s.cmd, s.req, s.rsp - 1, VRDMA_ERR_RSP_SIZE);
        expect_raw_refused(s.cmd, s.req, 0, VRDMA_ERR_RSP_SIZE);
    }
}

TEST_P(GateSizes, SizeIsCheckedBeforeFields)
{
    /* An all-zero request of the wrong size fails on size, not content. */
    const CmdSizes &s = GetParam();
    expect_raw_refused(s.cmd, s.req + 4, 0, VRDMA_ERR_REQ_SIZE);
}

INSTANTIATE_TEST_SUITE_P(AllCommands, GateSizes, ::testing::ValuesIn(kSizes),
                         [](const auto &info) {
                             return std::string(vrdma_cmd_name(info.param.cmd));
                         });

TEST_F(Gate, LargerResponseBufferIsFine)
{
    uint8_t rsp[VRDMA_CTRL_RSP_MAX];
    size_t rsp_len = 0;
    ASSERT_EQ(raw(VIRTIO_RDMA_CMD_CREATE_PD, nullptr, 0, rsp, sizeof(rsp),
                  &rsp_len),
              VIRTIO_RDMA_OK);
    EXPECT_EQ(rsp_len, 4u);
}

TEST_F(Gate, StatsCountCommandsAndErrors)
{
    create_pd();
    create_cq();
    expect_refused(VIRTIO_RDMA_CMD_DESTROY_PD,
                   virtio_rdma_cmd_destroy_pd{.pdn = 0x12345},
                   VRDMA_ERR_BAD_HANDLE);
    expect_refused(0, None{}, VRDMA_ERR_UNKNOWN_CMD);
    EXPECT_EQ(guest_.errors.back().field, "cmd");
    expect_refused(VIRTIO_RDMA_CMD_CREATE_CQ_RING, cq_req(0), VRDMA_ERR_LIMIT);

    VrdmaStats st;
    vrdma_core_get_stats(core_, &st);
    EXPECT_EQ(st.cmds, 5u);
    EXPECT_EQ(st.cmd_errors, 3u);
    EXPECT_EQ(st.err_count[VRDMA_ERR_BAD_HANDLE], 1u);
    EXPECT_EQ(st.err_count[VRDMA_ERR_UNKNOWN_CMD], 1u);
    EXPECT_EQ(st.err_count[VRDMA_ERR_LIMIT], 1u);
    EXPECT_EQ(st.err_count[VRDMA_ERR_NONE], 0u);
    EXPECT_EQ(st.pds, 1u);
    EXPECT_EQ(st.cqs, 1u);
    EXPECT_EQ(st.ahs, 0u);
}

/* ---- reset and free ---- */

class Lifecycle : public CoreTest {
protected:
    /* One of everything, with mapped pages (the MR's 3 and the rings'). */
    void populate()
    {
        const uint64_t maps = guest_.live_maps(), rings = ring_pages_;
        const uint32_t pd = create_pd();
        const uint32_t cq = create_cq();
        create_qp(qp_req(pd, VIRTIO_RDMA_QPT_RC, cq));
        create_qp(qp_req(pd, VIRTIO_RDMA_QPT_GSI, cq));
        get_dma_mr(pd, VIRTIO_RDMA_ACCESS_LOCAL_WRITE);
        const uint64_t table = write_page_table(
            FakeGuest::kRam0.base + 0x10000,
            pages_from(FakeGuest::kRam1.base, 3));
        virtio_rdma_cmd_reg_user_mr r{};
        r.pdn = pd;
        r.access_flags = VIRTIO_RDMA_ACCESS_LOCAL_WRITE;
        r.length = 3 * 4096;
        r.virt_addr = 0x7f0000000000;
        r.pages = table;
        r.npages = 3;
        virtio_rdma_rsp_mr mr{};
        ASSERT_EQ(ctrl(VIRTIO_RDMA_CMD_REG_USER_MR, r, &mr), VIRTIO_RDMA_OK);
        ASSERT_EQ(add_gid(0, 0x11), VIRTIO_RDMA_OK);
        ASSERT_EQ(add_gid(3, 0x33), VIRTIO_RDMA_OK);
        arm_cq(cq, VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION);
        ASSERT_EQ(vrdma_core_cq_armed(core_, cq),
                  VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION);
        ASSERT_EQ(guest_.live_maps(), maps + 3 + (ring_pages_ - rings));
    }
};

TEST_F(Lifecycle, ResetFreesEverything)
{
    populate();
    VrdmaStats st;
    vrdma_core_get_stats(core_, &st);
    EXPECT_EQ(st.pds, 1u);
    EXPECT_EQ(st.cqs, 1u);
    EXPECT_EQ(st.qps, 2u);
    EXPECT_EQ(st.mrs, 2u);
    EXPECT_EQ(st.gids, 2u);
    EXPECT_EQ(st.mapped_pages, 3u + ring_pages_);
    const uint64_t cmds = st.cmds;
    guest_.gid_events.clear();

    reset_core();

    vrdma_core_get_stats(core_, &st);
    EXPECT_EQ(st.pds, 0u);
    EXPECT_EQ(st.cqs, 0u);
    EXPECT_EQ(st.qps, 0u);
    EXPECT_EQ(st.mrs, 0u);
    EXPECT_EQ(st.gids, 0u);
    EXPECT_EQ(st.mapped_pages, 0u);
    EXPECT_EQ(st.cmds, cmds) << "monitoring counters survive reset";
    EXPECT_EQ(guest_.maps, guest_.unmaps);
    EXPECT_EQ(vrdma_core_cq_armed(core_, 0), 0u);
    /* Every GID still present is reported deleted. */
    ASSERT_EQ(guest_.gid_events.size(), 2u);
    EXPECT_EQ(guest_.gid_events[0].index, 0u);
    EXPECT_FALSE(guest_.gid_events[0].added);
    EXPECT_EQ(guest_.gid_events[1].index, 3u);
    EXPECT_FALSE(guest_.gid_events[1].added);

    /* As new: the same numbers come back, generations restart. */
    EXPECT_EQ(create_pd(), 0x10000u);
    EXPECT_EQ(create_cq(), 0u);
    populate();
}

TEST_F(Lifecycle, FreeWithLiveObjectsUnmapsEverything)
{
    populate();
    vrdma_core_free(core_);
    core_ = nullptr;
    EXPECT_EQ(guest_.maps, guest_.unmaps);
    EXPECT_EQ(guest_.bad_unmaps, 0u);
}

TEST_F(Lifecycle, ResetOfEmptyCoreIsQuiet)
{
    vrdma_core_reset(core_);
    vrdma_core_reset(core_);
    EXPECT_TRUE(guest_.gid_events.empty());
    EXPECT_TRUE(guest_.errors.empty());
}

} // namespace
} // namespace vrdma_test

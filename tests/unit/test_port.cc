/*
 * QUERY_PORT / QUERY_PKEY / ADD_GID / DEL_GID.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core_fixture.h"
#include "port.h"

namespace vrdma_test {
namespace {

using Port = CoreTest;


TEST_F(Port, QueryPort)
{
    virtio_rdma_port_attr a;
    std::memset(&a, 0x5a, sizeof(a));
    ASSERT_EQ(ctrl(VIRTIO_RDMA_CMD_QUERY_PORT,
                   virtio_rdma_cmd_query_port{.port = 1}, &a),
              VIRTIO_RDMA_OK);
    EXPECT_EQ(a.state, uint32_t{VIRTIO_RDMA_PORT_ACTIVE});
    EXPECT_EQ(a.max_mtu, uint32_t{VIRTIO_RDMA_MTU_4096});
    EXPECT_EQ(a.active_mtu, uint32_t{VIRTIO_RDMA_MTU_1024}); /* 1500 */
    EXPECT_EQ(a.phys_mtu, 1500u);
    EXPECT_EQ(a.gid_tbl_len, 16u);
    EXPECT_EQ(a.port_cap_flags, 1u << 16);
    EXPECT_EQ(a.max_msg_sz, 0x80000000u);
    EXPECT_EQ(a.bad_pkey_cntr, 0u);
    EXPECT_EQ(a.qkey_viol_cntr, 0u);
    EXPECT_EQ(a.pkey_tbl_len, 1u);
    EXPECT_EQ(a.active_width, 2u);
    EXPECT_EQ(a.pad0, 0u);
    EXPECT_EQ(a.active_speed, 32u);
    EXPECT_EQ(a.phys_state, 5u);
    EXPECT_EQ(a.pad1, 0u);
    for (uint32_t r : a.reserved) {
        EXPECT_EQ(r, 0u);
    }
}

TEST_F(Port, QueryPortBadPort)
{
    for (uint32_t port : {0u, 2u, 0x101u, 0xffffffffu}) {
        expect_refused(VIRTIO_RDMA_CMD_QUERY_PORT,
                       virtio_rdma_cmd_query_port{.port = port},
                       VRDMA_ERR_BAD_PORT);
    }
}

TEST(ActiveMtu, LargestIbMtuThatFitsWithRoceHeaders)
{
    const struct {
        uint32_t phys;
        uint32_t mtu;
    } cases[] = {
        {0, VIRTIO_RDMA_MTU_256},     {100, VIRTIO_RDMA_MTU_256},
        {591, VIRTIO_RDMA_MTU_256},   {592, VIRTIO_RDMA_MTU_512},
        {1103, VIRTIO_RDMA_MTU_512},  {1104, VIRTIO_RDMA_MTU_1024},
        {1500, VIRTIO_RDMA_MTU_1024}, {2127, VIRTIO_RDMA_MTU_1024},
        {2128, VIRTIO_RDMA_MTU_2048}, {4175, VIRTIO_RDMA_MTU_2048},
        {4176, VIRTIO_RDMA_MTU_4096}, {9000, VIRTIO_RDMA_MTU_4096},
        {0xffffffff, VIRTIO_RDMA_MTU_4096},
    };
    for (const auto &c : cases) {
        EXPECT_EQ(vrdma::active_mtu_for(c.phys), c.mtu) << c.phys;
    }
}

TEST_F(Port, ActiveMtuFollowsPhysMtu)
{
    VrdmaLimits lim = default_limits();
    lim.phys_mtu = 9000;
    start(lim);
    virtio_rdma_port_attr a{};
    ASSERT_EQ(ctrl(VIRTIO_RDMA_CMD_QUERY_PORT,
                   virtio_rdma_cmd_query_port{.port = 1}, &a),
              VIRTIO_RDMA_OK);
    EXPECT_EQ(a.active_mtu, uint32_t{VIRTIO_RDMA_MTU_4096});
    EXPECT_EQ(a.phys_mtu, 9000u);
}

TEST_F(Port, QueryPkey)
{
    virtio_rdma_rsp_query_pkey rsp{};
    ASSERT_EQ(ctrl(VIRTIO_RDMA_CMD_QUERY_PKEY,
                   virtio_rdma_cmd_query_pkey{.port = 1, .index = 0, .pad = 0},
                   &rsp),
              VIRTIO_RDMA_OK);
    EXPECT_EQ(rsp.pkey, 0xffffu);
    expect_refused(VIRTIO_RDMA_CMD_QUERY_PKEY,
                   virtio_rdma_cmd_query_pkey{.port = 2, .index = 0, .pad = 0},
                   VRDMA_ERR_BAD_PORT);
    expect_refused(VIRTIO_RDMA_CMD_QUERY_PKEY,
                   virtio_rdma_cmd_query_pkey{.port = 0, .index = 0, .pad = 0},
                   VRDMA_ERR_BAD_PORT);
    for (uint16_t index : {1, 2, 0xffff}) {
        expect_refused(VIRTIO_RDMA_CMD_QUERY_PKEY,
                       virtio_rdma_cmd_query_pkey{.port = 1, .index = index,
                                                  .pad = 0},
                       VRDMA_ERR_BAD_INDEX);
    }
}

virtio_rdma_cmd_add_gid gid_req(uint16_t index, uint8_t fill,
                                uint32_t type = VIRTIO_RDMA_GID_TYPE_ROCE_UDP_ENCAP,
                                uint32_t port = 1)
{
    virtio_rdma_cmd_add_gid r{};
    std::memset(r.gid, fill, sizeof(r.gid));
    r.gid_type = type;
    r.index = index;
    r.port_num = port;
    return r;
}

TEST_F(Port, AddGidReportsAddition)
{
    ASSERT_EQ(ctrl(VIRTIO_RDMA_CMD_ADD_GID, gid_req(0, 0xab)), VIRTIO_RDMA_OK);
    ASSERT_EQ(guest_.gid_events.size(), 1u);
    const GidEvent &e = guest_.gid_events[0];
    EXPECT_EQ(e.port, 1u);
    EXPECT_EQ(e.index, 0u);
    EXPECT_TRUE(e.added);
    EXPECT_EQ(e.gid_type, uint32_t{VIRTIO_RDMA_GID_TYPE_ROCE_UDP_ENCAP});
    for (uint8_t b : e.gid) {
        EXPECT_EQ(b, 0xab);
    }
    for (uint32_t type : {VIRTIO_RDMA_GID_TYPE_IB, VIRTIO_RDMA_GID_TYPE_ROCE}) {
        ASSERT_EQ(ctrl(VIRTIO_RDMA_CMD_ADD_GID, gid_req(15, 0xcd, type)),
                  VIRTIO_RDMA_OK);
    }
    VrdmaStats st;
    vrdma_core_get_stats(core_, &st);
    EXPECT_EQ(st.gids, 2u);
}

TEST_F(Port, AddSameGidIsQuiet)
{
    ASSERT_EQ(ctrl(VIRTIO_RDMA_CMD_ADD_GID, gid_req(2, 0x11)), VIRTIO_RDMA_OK);
    ASSERT_EQ(ctrl(VIRTIO_RDMA_CMD_ADD_GID, gid_req(2, 0x11)), VIRTIO_RDMA_OK);
    EXPECT_EQ(guest_.gid_events.size(), 1u);
    EXPECT_TRUE(guest_.errors.empty());
}

TEST_F(Port, AddDifferentGidReplaces)
{
    ASSERT_EQ(ctrl(VIRTIO_RDMA_CMD_ADD_GID, gid_req(4, 0x11)), VIRTIO_RDMA_OK);
    ASSERT_EQ(ctrl(VIRTIO_RDMA_CMD_ADD_GID, gid_req(4, 0x22)), VIRTIO_RDMA_OK);
    ASSERT_EQ(guest_.gid_events.size(), 3u);
    EXPECT_FALSE(guest_.gid_events[1].added);
    EXPECT_EQ(guest_.gid_events[1].index, 4u);
    EXPECT_EQ(guest_.gid_events[1].gid[0], 0x11);
    EXPECT_TRUE(guest_.gid_events[2].added);
    EXPECT_EQ(guest_.gid_events[2].gid[0], 0x22);
    /* Same GID, other type: also a replacement. */
    ASSERT_EQ(ctrl(VIRTIO_RDMA_CMD_ADD_GID,
                   gid_req(4, 0x22, VIRTIO_RDMA_GID_TYPE_ROCE)),
              VIRTIO_RDMA_OK);
    ASSERT_EQ(guest_.gid_events.size(), 5u);
    EXPECT_FALSE(guest_.gid_events[3].added);
    EXPECT_TRUE(guest_.gid_events[4].added);
    EXPECT_EQ(guest_.gid_events[4].gid_type,
              uint32_t{VIRTIO_RDMA_GID_TYPE_ROCE});
    VrdmaStats st;
    vrdma_core_get_stats(core_, &st);
    EXPECT_EQ(st.gids, 1u);
}

TEST_F(Port, AddGidErrors)
{
    for (uint32_t port : {0u, 2u, 0xffffffffu}) {
        expect_refused(VIRTIO_RDMA_CMD_ADD_GID,
                       gid_req(0, 1, VIRTIO_RDMA_GID_TYPE_ROCE, port),
                       VRDMA_ERR_BAD_PORT);
        EXPECT_EQ(guest_.errors.back().field, "port_num");
    }
    for (uint16_t index : {16, 17, 0xffff}) {
        expect_refused(VIRTIO_RDMA_CMD_ADD_GID, gid_req(index, 1),
                       VRDMA_ERR_BAD_INDEX);
        EXPECT_EQ(guest_.errors.back().field, "index");
    }
    for (uint32_t type : {3u, 0x100u, 0xffffffffu}) {
        expect_refused(VIRTIO_RDMA_CMD_ADD_GID, gid_req(0, 1, type),
                       VRDMA_ERR_BAD_ARG);
        EXPECT_EQ(guest_.errors.back().field, "gid_type");
    }
    EXPECT_TRUE(guest_.gid_events.empty());
    EXPECT_EQ(ctrl(VIRTIO_RDMA_CMD_ADD_GID, gid_req(0, 1)), VIRTIO_RDMA_OK);
}

TEST_F(Port, DelGid)
{
    ASSERT_EQ(ctrl(VIRTIO_RDMA_CMD_ADD_GID, gid_req(7, 0x77)), VIRTIO_RDMA_OK);
    ASSERT_EQ(ctrl(VIRTIO_RDMA_CMD_DEL_GID,
                   virtio_rdma_cmd_del_gid{.index = 7, .pad = 0, .port = 1}),
              VIRTIO_RDMA_OK);
    ASSERT_EQ(guest_.gid_events.size(), 2u);
    EXPECT_FALSE(guest_.gid_events[1].added);
    EXPECT_EQ(guest_.gid_events[1].index, 7u);
    EXPECT_EQ(guest_.gid_events[1].gid[0], 0x77);
    VrdmaStats st;
    vrdma_core_get_stats(core_, &st);
    EXPECT_EQ(st.gids, 0u);
}

TEST_F(Port, DelGidErrors)
{
    ASSERT_EQ(ctrl(VIRTIO_RDMA_CMD_ADD_GID, gid_req(1, 0x77)), VIRTIO_RDMA_OK);
    expect_refused(VIRTIO_RDMA_CMD_DEL_GID,
                   virtio_rdma_cmd_del_gid{.index = 1, .pad = 0, .port = 2},
                   VRDMA_ERR_BAD_PORT);
    EXPECT_EQ(guest_.errors.back().field, "port") << "DEL_GID's name for it";
    expect_refused(VIRTIO_RDMA_CMD_DEL_GID,
                   virtio_rdma_cmd_del_gid{.index = 0, .pad = 0, .port = 1},
                   VRDMA_ERR_BAD_INDEX); /* empty */
    expect_refused(VIRTIO_RDMA_CMD_DEL_GID,
                   virtio_rdma_cmd_del_gid{.index = 16, .pad = 0, .port = 1},
                   VRDMA_ERR_BAD_INDEX);
    expect_refused(VIRTIO_RDMA_CMD_DEL_GID,
                   virtio_rdma_cmd_del_gid{.index = 0xffff, .pad = 0, .port = 1},
                   VRDMA_ERR_BAD_INDEX);
    ASSERT_EQ(ctrl(VIRTIO_RDMA_CMD_DEL_GID,
                   virtio_rdma_cmd_del_gid{.index = 1, .pad = 0, .port = 1}),
              VIRTIO_RDMA_OK);
    expect_refused(VIRTIO_RDMA_CMD_DEL_GID,
                   virtio_rdma_cmd_del_gid{.index = 1, .pad = 0, .port = 1},
                   VRDMA_ERR_BAD_INDEX); /* already gone */
}

} // namespace
} // namespace vrdma_test

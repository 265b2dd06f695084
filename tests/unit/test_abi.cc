/*
 * ABI header as C and C++ see it; names and the status mapping.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "abi_c_check.h"
#include "errors.h"
#include "hw/rdma/virtio-rdma-core.h"

namespace {

TEST(Abi, CAndCppAgreeOnSizes)
{
    EXPECT_EQ(vrdma_c_sizeof(VRDMA_C_CONFIG), sizeof(virtio_rdma_config));
    EXPECT_EQ(vrdma_c_sizeof(VRDMA_C_CONFIG), 195u);
    EXPECT_EQ(vrdma_c_sizeof(VRDMA_C_PORT_ATTR), sizeof(virtio_rdma_port_attr));
    EXPECT_EQ(vrdma_c_sizeof(VRDMA_C_CREATE_QP),
              sizeof(virtio_rdma_cmd_create_qp));
    EXPECT_EQ(vrdma_c_sizeof(VRDMA_C_QP_ATTR), sizeof(virtio_rdma_qp_attr));
    EXPECT_EQ(vrdma_c_sizeof(VRDMA_C_MODIFY_QP),
              sizeof(virtio_rdma_cmd_modify_qp));
    EXPECT_EQ(vrdma_c_sizeof(VRDMA_C_REG_USER_MR),
              sizeof(virtio_rdma_cmd_reg_user_mr));
    EXPECT_EQ(vrdma_c_sizeof(VRDMA_C_SQ_REQ), sizeof(virtio_rdma_sq_req));
    EXPECT_EQ(vrdma_c_sizeof(VRDMA_C_CQ_REQ), sizeof(virtio_rdma_cq_req));
    EXPECT_EQ(vrdma_c_sizeof(VRDMA_C_STATS), sizeof(VrdmaStats));
    EXPECT_EQ(vrdma_c_sizeof(VRDMA_C_LIMITS), sizeof(VrdmaLimits));
}

TEST(Abi, ErrNamesAreDistinct)
{
    std::set<std::string> names;
    for (int e = 0; e < VRDMA_ERR__COUNT; e++) {
        const std::string n = vrdma_err_name(static_cast<VrdmaErr>(e));
        EXPECT_NE(n, "?") << e;
        EXPECT_TRUE(names.insert(n).second) << n;
    }
    /* Not a value past the enum's range: C++ leaves loading one undefined
     * (clang's UBSan stops on it); only the core makes these values. */
    EXPECT_STREQ(vrdma_err_name(VRDMA_ERR__COUNT), "?");
}

TEST(Abi, CmdNames)
{
    EXPECT_STREQ(vrdma_cmd_name(VIRTIO_RDMA_CMD_QUERY_PORT), "QUERY_PORT");
    EXPECT_STREQ(vrdma_cmd_name(VIRTIO_RDMA_CMD_REQ_NOTIFY_CQ),
                 "REQ_NOTIFY_CQ");
    EXPECT_STREQ(vrdma_cmd_name(0), "ILLEGAL");
    EXPECT_STREQ(vrdma_cmd_name(VIRTIO_RDMA_CMD_MAX + 1), "UNKNOWN");
    EXPECT_STREQ(vrdma_cmd_name(255), "UNKNOWN");
    std::set<std::string> names;
    for (int c = 0; c <= VIRTIO_RDMA_CMD_MAX; c++) {
        EXPECT_TRUE(names.insert(vrdma_cmd_name(static_cast<uint8_t>(c))).second);
    }
}

TEST(Abi, StatusMapping)
{
    using vrdma::status_of;
    EXPECT_EQ(status_of(VRDMA_ERR_NONE), VIRTIO_RDMA_OK);
    EXPECT_EQ(status_of(VRDMA_ERR_UNKNOWN_CMD), VIRTIO_RDMA_EOPNOTSUPP);
    EXPECT_EQ(status_of(VRDMA_ERR_REQ_SIZE), VIRTIO_RDMA_EINVAL);
    EXPECT_EQ(status_of(VRDMA_ERR_RSP_SIZE), VIRTIO_RDMA_EINVAL);
    EXPECT_EQ(status_of(VRDMA_ERR_BAD_ARG), VIRTIO_RDMA_EINVAL);
    EXPECT_EQ(status_of(VRDMA_ERR_OVERFLOW), VIRTIO_RDMA_EINVAL);
    EXPECT_EQ(status_of(VRDMA_ERR_BAD_STATE), VIRTIO_RDMA_EINVAL);
    EXPECT_EQ(status_of(VRDMA_ERR_BAD_MASK), VIRTIO_RDMA_EINVAL);
    EXPECT_EQ(status_of(VRDMA_ERR_BAD_PORT), VIRTIO_RDMA_EINVAL);
    EXPECT_EQ(status_of(VRDMA_ERR_BAD_INDEX), VIRTIO_RDMA_EINVAL);
    EXPECT_EQ(status_of(VRDMA_ERR_BAD_HANDLE), VIRTIO_RDMA_ENOENT);
    EXPECT_EQ(status_of(VRDMA_ERR_TABLE_FULL), VIRTIO_RDMA_ENOMEM);
    EXPECT_EQ(status_of(VRDMA_ERR_IN_USE), VIRTIO_RDMA_EBUSY);
    EXPECT_EQ(status_of(VRDMA_ERR_LIMIT), VIRTIO_RDMA_ERANGE);
    EXPECT_EQ(status_of(VRDMA_ERR_BAD_ADDR), VIRTIO_RDMA_EFAULT);
}

} // namespace

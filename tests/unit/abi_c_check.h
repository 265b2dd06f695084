/*
 * Sizes of ABI structs as the C compiler lays them out (abi_c_check.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef TESTS_UNIT_ABI_C_CHECK_H
#define TESTS_UNIT_ABI_C_CHECK_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum vrdma_c_struct {
    VRDMA_C_CONFIG,
    VRDMA_C_PORT_ATTR,
    VRDMA_C_CREATE_QP,
    VRDMA_C_QP_ATTR,
    VRDMA_C_MODIFY_QP,
    VRDMA_C_REG_USER_MR,
    VRDMA_C_SQ_REQ,
    VRDMA_C_CQ_REQ,
    VRDMA_C_STATS,
    VRDMA_C_LIMITS,
};

size_t vrdma_c_sizeof(enum vrdma_c_struct s);

#ifdef __cplusplus
}
#endif

#endif

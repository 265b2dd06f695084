/*
 * proto_c_check.c's view of the protocol header.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef RDMACM_MUX_TESTS_PROTO_C_CHECK_H
#define RDMACM_MUX_TESTS_PROTO_C_CHECK_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

uint32_t proto_c_size(uint32_t type);
uint32_t proto_c_hdr_size(void);
uint32_t proto_c_max_msg(void);
uint32_t proto_c_version(void);

#ifdef __cplusplus
}
#endif

#endif /* RDMACM_MUX_TESTS_PROTO_C_CHECK_H */

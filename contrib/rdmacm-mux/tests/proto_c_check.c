/*
 * The protocol header compiled as C: its _Static_asserts hold for C too,
 * and C's view of the sizes is compared with C++'s (test_proto.cc).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "proto_c_check.h"

#include "hw/rdma/rdmacm-mux-proto.h"

uint32_t proto_c_size(uint32_t type)
{
    return rdmacm_mux_payload_size(type);
}

uint32_t proto_c_hdr_size(void)
{
    return sizeof(struct rdmacm_mux_hdr);
}

uint32_t proto_c_max_msg(void)
{
    return RDMACM_MUX_MAX_MSG;
}

uint32_t proto_c_version(void)
{
    return RDMACM_MUX_VERSION;
}

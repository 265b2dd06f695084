/*
 * virtio-rdma core: byte order of the guest ABI.  Every multi-byte field is
 * little-endian; requests are converted to host order once, right after the
 * copy, and responses back right before they are handed out.  Swapping is
 * its own inverse, so one le_fields() overload serves both directions.  On a
 * little-endian host all of this compiles to nothing.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_VIRTIO_CORE_GUEST_ABI_H
#define HW_RDMA_VIRTIO_CORE_GUEST_ABI_H

#include <cstdint>

#include "byte_order.h"
#include "hw/rdma/virtio-rdma-abi.h"

namespace vrdma {

/* In-place swap of one field (a no-op on little-endian hosts). */
#define VRDMA_LE(field) ((field) = ::vrdma::le(field))

/* A command without request or response payload. */
struct NoPayload {
};

inline void le_fields(NoPayload &) {}

inline void le_fields(virtio_rdma_cmd_query_port &r) { VRDMA_LE(r.port); }

inline void le_fields(virtio_rdma_port_attr &r)
{
    VRDMA_LE(r.state);
    VRDMA_LE(r.max_mtu);
    VRDMA_LE(r.active_mtu);
    VRDMA_LE(r.phys_mtu);
    VRDMA_LE(r.gid_tbl_len);
    VRDMA_LE(r.port_cap_flags);
    VRDMA_LE(r.max_msg_sz);
    VRDMA_LE(r.bad_pkey_cntr);
    VRDMA_LE(r.qkey_viol_cntr);
    VRDMA_LE(r.pkey_tbl_len);
    VRDMA_LE(r.active_speed);
    for (auto &w : r.reserved) {
        VRDMA_LE(w);
    }
}

inline void le_fields(virtio_rdma_rsp_create_cq &r) { VRDMA_LE(r.cqn); }
inline void le_fields(virtio_rdma_cmd_destroy_cq &r) { VRDMA_LE(r.cqn); }
inline void le_fields(virtio_rdma_rsp_create_pd &r) { VRDMA_LE(r.pdn); }
inline void le_fields(virtio_rdma_cmd_destroy_pd &r) { VRDMA_LE(r.pdn); }

inline void le_fields(virtio_rdma_cmd_get_dma_mr &r)
{
    VRDMA_LE(r.pdn);
    VRDMA_LE(r.access_flags);
}

inline void le_fields(virtio_rdma_rsp_mr &r)
{
    VRDMA_LE(r.mrn);
    VRDMA_LE(r.lkey);
    VRDMA_LE(r.rkey);
}

inline void le_fields(virtio_rdma_cmd_create_mr &r)
{
    VRDMA_LE(r.pdn);
    VRDMA_LE(r.access_flags);
    VRDMA_LE(r.max_num_sg);
}

inline void le_fields(virtio_rdma_cmd_map_mr_sg &r)
{
    VRDMA_LE(r.mrn);
    VRDMA_LE(r.npages);
    VRDMA_LE(r.start);
    VRDMA_LE(r.length);
    VRDMA_LE(r.pages);
}

inline void le_fields(virtio_rdma_rsp_map_mr_sg &r) { VRDMA_LE(r.npages); }

inline void le_fields(virtio_rdma_cmd_reg_user_mr &r)
{
    VRDMA_LE(r.pdn);
    VRDMA_LE(r.access_flags);
    VRDMA_LE(r.start);
    VRDMA_LE(r.length);
    VRDMA_LE(r.virt_addr);
    VRDMA_LE(r.pages);
    VRDMA_LE(r.npages);
}

inline void le_fields(virtio_rdma_cmd_dereg_mr &r) { VRDMA_LE(r.mrn); }

inline void le_fields(virtio_rdma_cmd_create_qp &r)
{
    VRDMA_LE(r.pdn);
    VRDMA_LE(r.max_send_wr);
    VRDMA_LE(r.max_send_sge);
    VRDMA_LE(r.send_cqn);
    VRDMA_LE(r.max_recv_wr);
    VRDMA_LE(r.max_recv_sge);
    VRDMA_LE(r.recv_cqn);
    VRDMA_LE(r.max_inline_data);
}

inline void le_fields(virtio_rdma_rsp_create_qp_wire &r)
{
    VRDMA_LE(r.qpn);
    VRDMA_LE(r.wire_qpn);
}

/* ---- VIRTIO_RDMA_F_RINGS ---- */
inline void le_fields(virtio_rdma_rsp_alloc_context &r) { VRDMA_LE(r.ctx); }
inline void le_fields(virtio_rdma_cmd_free_context &r) { VRDMA_LE(r.ctx); }

inline void le_fields(virtio_rdma_ring &r)
{
    VRDMA_LE(r.pages);
    VRDMA_LE(r.npages);
    VRDMA_LE(r.reserved);
}

inline void le_fields(virtio_rdma_cmd_create_cq_ring &r)
{
    VRDMA_LE(r.ctx);
    VRDMA_LE(r.cqe);
    le_fields(r.ring);
}

inline void le_fields(virtio_rdma_cmd_create_qp_ring &r)
{
    le_fields(r.qp);
    VRDMA_LE(r.ctx);
    le_fields(r.sq);
    le_fields(r.rq);
    VRDMA_LE(r.srqn);
    VRDMA_LE(r.flags);
}

inline void le_fields(virtio_rdma_cmd_create_srq_ring &r)
{
    VRDMA_LE(r.ctx);
    VRDMA_LE(r.pdn);
    VRDMA_LE(r.max_wr);
    VRDMA_LE(r.max_sge);
    VRDMA_LE(r.srq_limit);
    VRDMA_LE(r.reserved);
    le_fields(r.ring);
}

inline void le_fields(virtio_rdma_rsp_create_srq &r) { VRDMA_LE(r.srqn); }

inline void le_fields(virtio_rdma_cmd_modify_srq &r)
{
    VRDMA_LE(r.srqn);
    VRDMA_LE(r.attr_mask);
    VRDMA_LE(r.max_wr);
    VRDMA_LE(r.srq_limit);
}

inline void le_fields(virtio_rdma_cmd_query_srq &r) { VRDMA_LE(r.srqn); }
inline void le_fields(virtio_rdma_cmd_destroy_srq &r) { VRDMA_LE(r.srqn); }

inline void le_fields(virtio_rdma_rsp_query_srq &r)
{
    VRDMA_LE(r.max_wr);
    VRDMA_LE(r.max_sge);
    VRDMA_LE(r.srq_limit);
    VRDMA_LE(r.reserved);
}

inline void le_fields(virtio_rdma_ah_attr &r)
{
    VRDMA_LE(r.grh.flow_label);
}

inline void le_fields(virtio_rdma_qp_cap &r)
{
    VRDMA_LE(r.max_send_wr);
    VRDMA_LE(r.max_recv_wr);
    VRDMA_LE(r.max_send_sge);
    VRDMA_LE(r.max_recv_sge);
    VRDMA_LE(r.max_inline_data);
}

inline void le_fields(virtio_rdma_qp_attr &r)
{
    VRDMA_LE(r.qp_state);
    VRDMA_LE(r.cur_qp_state);
    VRDMA_LE(r.path_mtu);
    VRDMA_LE(r.path_mig_state);
    VRDMA_LE(r.qkey);
    VRDMA_LE(r.rq_psn);
    VRDMA_LE(r.sq_psn);
    VRDMA_LE(r.dest_qp_num);
    VRDMA_LE(r.qp_access_flags);
    VRDMA_LE(r.pkey_index);
    VRDMA_LE(r.alt_pkey_index);
    VRDMA_LE(r.rate_limit);
    le_fields(r.cap);
    VRDMA_LE(r.pad1);
    le_fields(r.ah_attr);
    le_fields(r.alt_ah_attr);
}

inline void le_fields(virtio_rdma_cmd_modify_qp &r)
{
    VRDMA_LE(r.qpn);
    VRDMA_LE(r.attr_mask);
    le_fields(r.attrs);
}

inline void le_fields(virtio_rdma_cmd_query_qp &r)
{
    VRDMA_LE(r.qpn);
    VRDMA_LE(r.attr_mask);
}

inline void le_fields(virtio_rdma_cmd_destroy_qp &r) { VRDMA_LE(r.qpn); }

inline void le_fields(virtio_rdma_cmd_query_pkey &r)
{
    VRDMA_LE(r.port);
    VRDMA_LE(r.index);
}

inline void le_fields(virtio_rdma_rsp_query_pkey &r) { VRDMA_LE(r.pkey); }

inline void le_fields(virtio_rdma_cmd_add_gid &r)
{
    VRDMA_LE(r.gid_type);
    VRDMA_LE(r.index);
    VRDMA_LE(r.port_num);
}

inline void le_fields(virtio_rdma_cmd_del_gid &r)
{
    VRDMA_LE(r.index);
    VRDMA_LE(r.port);
}


/* ---- data path ---- */

inline void le_fields(virtio_rdma_sge &r)
{
    VRDMA_LE(r.addr);
    VRDMA_LE(r.length);
    VRDMA_LE(r.lkey);
}

inline void le_fields(virtio_rdma_rq_req &r)
{
    VRDMA_LE(r.num_sge);
    VRDMA_LE(r.wr_id);
}

/*
 * The fixed fields.  ex is left as it is (imm_data is big-endian as the
 * driver stores it; an rkey there is converted where it is used) and the wr
 * union is converted by the parser, member by member, for the opcode.
 */
inline void le_fields(virtio_rdma_sq_req &r)
{
    VRDMA_LE(r.num_sge);
    VRDMA_LE(r.send_flags);
    VRDMA_LE(r.opcode);
    VRDMA_LE(r.wr_id);
}

/* All but ex, which the engine fills in its wire form. */
inline void le_fields(virtio_rdma_cq_req &r)
{
    VRDMA_LE(r.wr_id);
    VRDMA_LE(r.status);
    VRDMA_LE(r.opcode);
    VRDMA_LE(r.vendor_err);
    VRDMA_LE(r.byte_len);
    VRDMA_LE(r.qp_num);
    VRDMA_LE(r.src_qp);
    VRDMA_LE(r.wc_flags);
    VRDMA_LE(r.pkey_index);
    VRDMA_LE(r.slid);
}

} // namespace vrdma

#endif

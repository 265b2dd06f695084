/*
 * virtio-rdma core: guest memory through MRs, as a data path reaches it --
 * an SGE's lkey for the device's own buffers, an rkey for a peer's access.
 * Every check is here (mr_access.cc says which); both backends use it.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_VIRTIO_CORE_MR_ACCESS_H
#define HW_RDMA_VIRTIO_CORE_MR_ACCESS_H

#include <cstdint>

#include "mr.h"
#include "qp.h"
#include "wqe.h"

struct VrdmaCore;

namespace vrdma {

/*
 * WC status of a failed local access (LOC_PROT_ERR...), or SUCCESS.  The
 * lkeys must be of MRs of PD @pd: the QP's for its sends, Qp::recv_pd()
 * for its receives (an SRQ's PD for a QP on an SRQ).
 */
uint8_t sgl_check(VrdmaCore &c, uint32_t pd, const Sge *sge, uint32_t n,
                  bool write);
uint8_t sgl_copy(VrdmaCore &c, uint32_t pd, const Sge *sge, uint32_t n,
                 uint64_t offset, uint8_t *buf, uint32_t len, bool to_sgl);
enum class RkeyErr : uint8_t { kOk, kKey, kPd, kAccess, kBounds };
/* The MR @rkey names, if it lets @qp's peer do @access on [va, va+len). */
Mr *rkey_check(VrdmaCore &c, const Qp &qp, uint32_t rkey, uint64_t va,
               uint64_t len, uint32_t access, RkeyErr *err);
bool mr_read(VrdmaCore &c, const Mr &mr, uint64_t va, uint8_t *buf,
             uint32_t len);
bool mr_write(VrdmaCore &c, const Mr &mr, uint64_t va, const uint8_t *buf,
              uint32_t len);
/* 8-byte atomic at @va (aligned, checked): @returns the old value. */
bool mr_atomic(VrdmaCore &c, const Mr &mr, uint64_t va, bool cmp_swap,
               uint64_t compare, uint64_t swap_add, uint64_t *orig);

} // namespace vrdma

#endif

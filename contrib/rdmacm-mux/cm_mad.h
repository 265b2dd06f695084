/*
 * rdmacm-mux: what a CM MAD must look like to pass the mux, in either
 * direction, and the names of the reasons a MAD is dropped.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef RDMACM_MUX_CM_MAD_H
#define RDMACM_MUX_CM_MAD_H

#include <cstddef>
#include <cstdint>
#include <optional>

namespace rdmacm_mux {

/* MAD common header (IBA 13.4.2) values of a CM message (IBA 12.6). */
inline constexpr size_t kMadLen = 256;
inline constexpr uint8_t kMadBaseVersion = 1;
inline constexpr uint8_t kCmClass = 0x07;
inline constexpr uint8_t kCmClassVersion = 2;
inline constexpr uint8_t kMethodSend = 0x03;
/* REQ .. APR: the attributes Linux's ib_cm sends and accepts. */
inline constexpr uint16_t kCmAttrFirst = 0x0010;
inline constexpr uint16_t kCmAttrLast = 0x001a;
/* The GSI's Q_Key (IBA 13.5.3.2) and QPN. */
inline constexpr uint32_t kGsiQkey = 0x80010000;
inline constexpr uint32_t kGsiQpn = 1;
inline constexpr uint32_t kFlowLabelMax = 0xfffff;

/*
 * Every reason a MAD is dropped, in either direction: name (logs and
 * counters) and what it means.  MAD_SEND refusals come first, then what
 * only happens to a MAD from the host port.
 */
#define RDMACM_MUX_DROPS(X)                                                 \
    X(mad_len, "MAD length is not 256")                                     \
    X(base_version, "MAD base version is not 1")                            \
    X(mgmt_class, "management class is not CM (0x07)")                     \
    X(class_version, "CM class version is not 2")                           \
    X(method, "method is not Send (0x03)")                                  \
    X(attribute, "attribute is not a CM message (0x0010..0x001a)")          \
    X(flow_label, "flow label wider than 20 bits")                          \
    X(sgid_not_claimed, "source GID not claimed by this client")            \
    X(sgid_not_on_host, "source GID no longer in the host GID table")       \
    X(sgid_stale, "the source GID's host index holds another GID now")      \
    X(pkey_index, "P_Key index outside the host P_Key table")               \
    X(rate, "over the client's MAD rate")                                   \
    X(send_failed, "the host port refused the MAD")                         \
    X(recv_status, "the host reported an error status")                     \
    X(recv_no_grh, "arrived without a global route")                        \
    X(recv_unknown_gid, "arrived on a GID index not in the host GID table") \
    X(recv_stale_gid, "its GID index holds another GID than the mux knew")  \
    X(recv_no_owner, "arrived on a GID no client claims")                   \
    X(queue_full, "the owner's output queue is full")

enum class Drop : uint8_t {
#define RDMACM_MUX_DROP_ENUM(name, text) name,
    RDMACM_MUX_DROPS(RDMACM_MUX_DROP_ENUM)
#undef RDMACM_MUX_DROP_ENUM
    count
};
inline constexpr size_t kDropCount = static_cast<size_t>(Drop::count);

const char *drop_name(Drop d);
const char *drop_text(Drop d);

/*
 * Checks @mad (@len bytes) is a CM Send the mux may pass on; the first
 * failing check in RDMACM_MUX_DROPS order, or nothing.
 */
std::optional<Drop> check_cm_mad(const uint8_t *mad, size_t len);

} // namespace rdmacm_mux

#endif /* RDMACM_MUX_CM_MAD_H */

/*
 * virtio-rdma names: the one list of each enum's names, as X-macros, for
 * the C++ core, the QEMU device, its QMP code and the qtest driver (which
 * does not link the core).  Each user expands a list into what it needs
 * (an enum, a switch of names); no list is written out anywhere else.
 *
 * Enums of ours (VrdmaErr, VrdmaDrop, roce::ParseError) are generated from
 * their list, so enumerators and names cannot drift; the lists of guest-ABI
 * enums (virtio-rdma-abi.h, whose values are fixed) are pinned to them by
 * the checks at the end of this file.  Names are QMP, trace and test
 * output: never rename one.
 *
 * Expand an entry's names only with # and ## (never pass one on to another
 * macro first): some are libc macros too (EPERM, OVERFLOW).  Plain C99,
 * macros and constant checks only.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_VIRTIO_RDMA_NAMES_H
#define HW_RDMA_VIRTIO_RDMA_NAMES_H

#include "hw/rdma/virtio-rdma-abi.h"

/*
 * Why the core refused a guest request (VrdmaErr: VRDMA_ERR_<up>, named
 * "<up>", first 0): X(up, status, why).  @status is the status byte the
 * guest sees, VIRTIO_RDMA_<status>.
 */
#define VRDMA_ERRS(X)                                                       \
    X(NONE, OK, "not refused")                                              \
    X(UNKNOWN_CMD, EOPNOTSUPP, "command byte of no known command")          \
    X(REQ_SIZE, EINVAL, "request length != sizeof(struct)")                 \
    X(RSP_SIZE, EINVAL, "response buffer too small")                        \
    X(BAD_HANDLE, ENOENT, "out of range, stale or wrong type")              \
    X(TABLE_FULL, ENOMEM, "object table full, or mapped-page cap reached")  \
    X(IN_USE, EBUSY, "object still referenced")                             \
    X(BAD_ARG, EINVAL, "a field outside its allowed values")                \
    X(LIMIT, ERANGE, "a size/count outside device limits")                  \
    X(OVERFLOW, EINVAL, "64-bit arithmetic would overflow")                 \
    X(BAD_ADDR, EFAULT, "guest address not (entirely) in RAM")              \
    X(BAD_STATE, EINVAL, "invalid QP state transition")                     \
    X(BAD_MASK, EINVAL, "attr mask wrong for the transition")               \
    X(BAD_PORT, EINVAL, "no such port")                                     \
    X(BAD_INDEX, EINVAL, "GID/P_Key index out of range")                    \
    X(UNSUPPORTED, EOPNOTSUPP, "not something the device's backend does")   \
    X(HOST, EIO, "the host RDMA device refused or failed it")              \
    X(NOT_ALLOWED, EPERM,                                                   \
      "a GID management does not allow this device (allowed-gids)")

/*
 * Why a received (or looped-back) frame was dropped (VrdmaDrop:
 * VRDMA_DROP_<up>, named "<low>"): first the ways a frame can fail to be a
 * well-formed RoCEv2 packet, in the order roce::parse_frame() checks them
 * (roce::ParseError::k<Camel>, the same values), then packets that are
 * well-formed but not acceptable.
 */
#define VRDMA_DROPS_FRAME(X)                                                \
    X(NONE, None, none, "not dropped")                                      \
    X(TRUNCATED_ETH, TruncatedEth, truncated_eth,                           \
      "shorter than the Ethernet (+ 802.1Q) header")                        \
    X(ETHERTYPE, EtherType, ethertype, "neither IPv4 nor IPv6")             \
    X(TRUNCATED_IP, TruncatedIp, truncated_ip,                              \
      "shorter than the fixed IP header")                                   \
    X(IP_VERSION, IpVersion, ip_version,                                    \
      "IP version not that of the EtherType")                               \
    X(IPV4_IHL, Ipv4Ihl, ipv4_ihl, "IPv4 header with options (IHL != 5)")   \
    X(IP_LENGTH, IpLength, ip_length,                                       \
      "IP total/payload length beyond the frame")                           \
    X(IPV4_CHECKSUM, Ipv4Checksum, ipv4_checksum,                           \
      "IPv4 header checksum wrong")                                         \
    X(IPV4_FRAGMENT, Ipv4Fragment, ipv4_fragment,                           \
      "MF set or fragment offset != 0 (never: fragments are not ours)")     \
    X(IP_PROTOCOL, IpProtocol, ip_protocol,                                 \
      "not UDP (IPv6: incl. any extension header)")                         \
    X(TRUNCATED_UDP, TruncatedUdp, truncated_udp,                           \
      "IP payload shorter than the UDP header")                             \
    X(UDP_LENGTH, UdpLength, udp_length, "UDP length != IP payload length") \
    X(UDP_PORT, UdpPort, udp_port, "destination port not 4791")             \
    X(TRUNCATED_BTH, TruncatedBth, truncated_bth,                           \
      "UDP payload shorter than the BTH")                                   \
    X(BTH_VERSION, BthVersion, bth_version, "TVer != 0")                    \
    X(OPCODE, Opcode, opcode, "unknown BTH opcode (not in the table)")      \
    X(TRUNCATED_EXT, TruncatedExt, truncated_ext,                           \
      "shorter than the opcode's extension headers")                        \
    X(TRUNCATED_ICRC, TruncatedIcrc, truncated_icrc,                        \
      "no room for the ICRC after the headers")                             \
    X(PAD, Pad, pad, "pad count larger than what follows the headers")      \
    X(PAYLOAD, Payload, payload, "payload on an opcode that carries none")  \
    X(ICRC, Icrc, icrc, "ICRC mismatch (corruption)")

#define VRDMA_DROPS_PACKET(X)                                               \
    X(PKEY, pkey, "BTH P_Key does not match ours")                          \
    X(NO_QP, no_qp, "destination QP does not exist")                        \
    X(QP_TYPE, qp_type, "opcode of another transport than the QP's")        \
    X(QP_STATE, qp_state, "the QP takes no such packet in its state")       \
    X(ADDR, addr, "RC/UC: not between the QP's two addresses")              \
    X(QKEY, qkey, "UD/GSI: Q_Key mismatch")                                 \
    X(NO_RECV_WQE, no_recv_wqe, "UD/UC: no receive WQE posted")             \
    X(LENGTH, length, "UD/UC: bad length or receive buffer too small")      \
    X(UC_MESSAGE, uc_message, "UC: rest of a message that lost a packet")   \
    X(UC_ACCESS, uc_access, "UC: RDMA WRITE the QP or the R_Key refuses")   \
    X(UNSUPPORTED, unsupported,                                             \
      "opcode this engine does not execute (UD/UC)")                        \
    X(RESPONSE, response, "response with no request outstanding")           \
    X(RESPONSE_OLD, response_old, "response for PSNs already acknowledged") \
    X(RESPONSE_AHEAD, response_ahead, "response beyond what was ever sent") \
    X(RESPONSE_READ, response_read,                                         \
      "ACK for a READ, or a READ response after a gap")                     \
    X(LOOPBACK_FULL, loopback_full, "internal loopback queue full")         \
    X(NOT_OURS, not_ours, "looped-back frame not for one of our GIDs")

/* Guest-ABI lists: X(up) names VIRTIO_RDMA_<prefix><up> "<up>". */

/* enum virtio_rdma_ctrl_cmd (VIRTIO_RDMA_CMD_), in value order from 0. */
#define VRDMA_CMDS(X)                                                       \
    X(ILLEGAL) X(QUERY_PORT) X(CREATE_CQ) X(DESTROY_CQ) X(CREATE_PD)        \
    X(DESTROY_PD) X(GET_DMA_MR) X(CREATE_MR) X(MAP_MR_SG) X(REG_USER_MR)    \
    X(DEREG_MR) X(CREATE_QP) X(MODIFY_QP) X(QUERY_QP) X(DESTROY_QP)         \
    X(QUERY_PKEY) X(ADD_GID) X(DEL_GID) X(REQ_NOTIFY_CQ)                  \
    X(ALLOC_CONTEXT) X(FREE_CONTEXT) X(CREATE_CQ_RING) X(CREATE_QP_RING)   \
    X(CREATE_SRQ_RING) X(MODIFY_SRQ) X(QUERY_SRQ) X(DESTROY_SRQ)

/* enum virtio_rdma_status (VIRTIO_RDMA_), in value order (not dense). */
#define VRDMA_STATUSES(X)                                                   \
    X(OK) X(EPERM) X(ENOENT) X(EIO) X(ENOMEM) X(EFAULT) X(EBUSY) X(EINVAL)  \
    X(ERANGE) X(EOPNOTSUPP)

/* enum virtio_rdma_wc_status (VIRTIO_RDMA_WC_), in value order from 0. */
#define VRDMA_WC_STATUSES(X)                                                \
    X(SUCCESS) X(LOC_LEN_ERR) X(LOC_QP_OP_ERR) X(LOC_EEC_OP_ERR)            \
    X(LOC_PROT_ERR) X(WR_FLUSH_ERR) X(MW_BIND_ERR) X(BAD_RESP_ERR)          \
    X(LOC_ACCESS_ERR) X(REM_INV_REQ_ERR) X(REM_ACCESS_ERR) X(REM_OP_ERR)    \
    X(RETRY_EXC_ERR) X(RNR_RETRY_EXC_ERR) X(LOC_RDD_VIOL_ERR)               \
    X(REM_INV_RD_REQ_ERR) X(REM_ABORT_ERR) X(INV_EECN_ERR)                  \
    X(INV_EEC_STATE_ERR) X(FATAL_ERR) X(RESP_TIMEOUT_ERR) X(GENERAL_ERR)

/*
 * Pins of the guest-ABI lists: an entry's place in its list is its value,
 * and a dense list ends at the enum's last value.  A name the ABI lacks
 * does not compile; a status the list lacks warns (-Wswitch) where it is
 * expanded into a switch over enum virtio_rdma_status.
 */
#define VRDMA_NAMES_CMD_POS_(up) VRDMA_NAMES_POS_CMD_##up,
#define VRDMA_NAMES_WC_POS_(up) VRDMA_NAMES_POS_WC_##up,
enum {
    VRDMA_CMDS(VRDMA_NAMES_CMD_POS_)
    VRDMA_NAMES_CMD_COUNT_
};
enum {
    VRDMA_WC_STATUSES(VRDMA_NAMES_WC_POS_)
    VRDMA_NAMES_WC_COUNT_
};
#define VRDMA_NAMES_CMD_PIN_(up)                                            \
    VRDMA_STATIC_ASSERT((int)VRDMA_NAMES_POS_CMD_##up ==                    \
                        (int)VIRTIO_RDMA_CMD_##up,                          \
                        "VRDMA_CMDS out of value order at " #up);
#define VRDMA_NAMES_WC_PIN_(up)                                             \
    VRDMA_STATIC_ASSERT((int)VRDMA_NAMES_POS_WC_##up ==                     \
                        (int)VIRTIO_RDMA_WC_##up,                           \
                        "VRDMA_WC_STATUSES out of value order at " #up);
VRDMA_CMDS(VRDMA_NAMES_CMD_PIN_)
VRDMA_WC_STATUSES(VRDMA_NAMES_WC_PIN_)
VRDMA_STATIC_ASSERT((int)VRDMA_NAMES_CMD_COUNT_ == VIRTIO_RDMA_CMD_MAX + 1,
                    "VRDMA_CMDS must name every command");
VRDMA_STATIC_ASSERT((int)VRDMA_NAMES_WC_COUNT_ ==
                    VIRTIO_RDMA_WC_GENERAL_ERR + 1,
                    "VRDMA_WC_STATUSES must name every status");
#undef VRDMA_NAMES_CMD_POS_
#undef VRDMA_NAMES_WC_POS_
#undef VRDMA_NAMES_CMD_PIN_
#undef VRDMA_NAMES_WC_PIN_

#endif /* HW_RDMA_VIRTIO_RDMA_NAMES_H */

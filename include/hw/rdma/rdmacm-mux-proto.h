/*
 * rdmacm-mux wire protocol: the messages between a virtio-rdma device in
 * backend=ibverbs mode (QEMU's mad-chardev=, a UNIX stream socket) and
 * contrib/rdmacm-mux, the daemon that owns the host port's CM MAD agent.
 *
 * Every message is a 16-byte header followed by a payload whose length is
 * fixed by the message type (rdmacm_mux_payload_size()).  A receiver closes
 * the connection on any framing violation: wrong magic or version, a type
 * it does not accept from that side, a length other than the type's.  There
 * is no resynchronisation: the client reconnects, says HELLO and claims its
 * GIDs again.
 *
 * Conversation (client = one QEMU device):
 *   client -> mux  HELLO            first message, exactly once: who the
 *                                   client is (owner) and which GIDs
 *                                   management allows it (allow-list)
 *   mux -> client  HELLO_ACK        status OK, or an error and the mux closes
 *   client -> mux  GID_ADD/GID_DEL  -> GID_ACK each, in order
 *   client -> mux  MAD_SEND         no reply (UD: the CM retransmits)
 *   mux -> client  MAD_RECV         a CM MAD that arrived on a claimed GID
 *
 * Versions: a HELLO whose header carries another version is answered, from
 * its header alone, by a HELLO_ACK with status BAD_VERSION and the mux's
 * version, framed in the HELLO's version (HELLO_ACK's layout is the same in
 * every version), and the mux closes: an old client learns why.
 *
 * All multi-byte integers are little-endian; GIDs and MADs are byte arrays
 * in network order, exactly as on the wire.  Plain C99 + stdint: included by
 * QEMU's C code and by the daemon's C++.  docs/tools/rdmacm-mux.rst has the
 * same in prose.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_RDMACM_MUX_PROTO_H
#define HW_RDMA_RDMACM_MUX_PROTO_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#define RDMACM_MUX_STATIC_ASSERT(c, m) static_assert(c, m)
#else
#define RDMACM_MUX_STATIC_ASSERT(c, m) _Static_assert(c, m)
#endif

/* "RCMX" in memory order (bytes 52 43 4d 58). */
#define RDMACM_MUX_MAGIC 0x584d4352u
/*
 * 3: HELLO carries the owner and the allow-list; statuses NOT_ALLOWED and
 * RESERVED.  2: the first of this mux.  pvrdma's unversioned 360-byte
 * message came before.
 */
#define RDMACM_MUX_VERSION 3

#define RDMACM_MUX_GID_LEN 16
/* A CM MAD is always one 256-byte MAD (IBA 13.4.2; the CM uses no RMPP). */
#define RDMACM_MUX_MAD_LEN 256
/* Host RDMA device names: IBV_SYSFS_NAME_MAX, NUL included. */
#define RDMACM_MUX_IBDEV_LEN 64
/* HELLO's owner, NUL included. */
#define RDMACM_MUX_OWNER_LEN 128
/* HELLO's allow-list entries (the device's VRDMA_GID_ALLOW_MAX). */
#define RDMACM_MUX_ALLOW_MAX 64

enum rdmacm_mux_type {
    RDMACM_MUX_HELLO = 1,      /* client -> mux: struct rdmacm_mux_hello */
    RDMACM_MUX_HELLO_ACK = 2,  /* mux -> client: struct rdmacm_mux_hello_ack */
    RDMACM_MUX_GID_ADD = 3,    /* client -> mux: struct rdmacm_mux_gid */
    RDMACM_MUX_GID_DEL = 4,    /* client -> mux: struct rdmacm_mux_gid */
    RDMACM_MUX_GID_ACK = 5,    /* mux -> client: struct rdmacm_mux_gid_ack */
    RDMACM_MUX_MAD_SEND = 6,   /* client -> mux: struct rdmacm_mux_mad */
    RDMACM_MUX_MAD_RECV = 7,   /* mux -> client: struct rdmacm_mux_mad */
};

/* HELLO_ACK and GID_ACK status. */
enum rdmacm_mux_status {
    RDMACM_MUX_OK = 0,
    /* HELLO: the mux speaks another protocol version (then closes). */
    RDMACM_MUX_BAD_VERSION = 1,
    /* HELLO: the mux serves another host device or port (then closes). */
    RDMACM_MUX_WRONG_PORT = 2,
    /*
     * GID_ADD: the GID is not in the host port's GID table (yet: after
     * RDMA_GID_STATUS_CHANGED the management layer adds the address to the
     * host netdev; retry when the host GID table changes).
     */
    RDMACM_MUX_NOT_ON_HOST = 3,
    /* GID_ADD: another client holds the GID. */
    RDMACM_MUX_CLAIMED = 4,
    /* GID_DEL: this client does not hold the GID. */
    RDMACM_MUX_NOT_CLAIMED = 5,
    /* GID_ADD: this client holds HELLO_ACK's max_gids GIDs already. */
    RDMACM_MUX_LIMIT = 6,
    /*
     * GID_ADD: the GID is outside the allow-list the client sent with
     * HELLO, or the client sent none and the mux takes no claim without
     * one.  The same answer for as long as the connection lasts.
     */
    RDMACM_MUX_NOT_ALLOWED = 7,
    /*
     * GID_ADD: the GID's previous owner released it (GID_DEL, disconnect,
     * a mux restart) less than the mux's grace period ago, and the client
     * is another owner: only that owner may claim it until then.
     */
    RDMACM_MUX_RESERVED = 8,
};

struct rdmacm_mux_hdr {
    uint32_t magic;    /* RDMACM_MUX_MAGIC */
    uint16_t version;  /* RDMACM_MUX_VERSION */
    uint16_t type;     /* enum rdmacm_mux_type */
    /*
     * The sender's message counter (each side counts its own from 1).  Not
     * checked; GID_ACK returns the request's in req_seq.
     */
    uint32_t seq;
    uint32_t len;      /* payload bytes: rdmacm_mux_payload_size(type) */
};

/* A GID prefix of HELLO's allow-list. */
struct rdmacm_mux_prefix {
    uint8_t gid[RDMACM_MUX_GID_LEN]; /* network order; bits past len zero */
    uint8_t len;       /* prefix length in bits, 0..128 */
    uint8_t pad[3];    /* zero */
};

/* HELLO: who the client expects to talk to, and who it is. */
struct rdmacm_mux_hello {
    /* Host device (ibdev=), NUL-terminated and NUL-padded; "" = any. */
    char ibdev[RDMACM_MUX_IBDEV_LEN];
    uint32_t port;     /* host port (ibport=); 0 = any */
    uint32_t version;  /* RDMACM_MUX_VERSION: the messages the client speaks */
    /*
     * Who holds the claims, the same across a reboot of the guest and a
     * restart of QEMU or of the mux: QEMU sends "<VM UUID>/<the device's
     * QOM path>".  Printable ASCII without space, NUL-terminated and
     * NUL-padded; "" = nobody in particular (its released claims are not
     * reserved).  The mux reserves released claims for this name.
     */
    char owner[RDMACM_MUX_OWNER_LEN];
    /*
     * The GIDs management allows the device (its allowed-gids property):
     * allow[0..allow_n-1]; the rest zero.  allow_n 0: none given.
     */
    uint32_t allow_n;
    struct rdmacm_mux_prefix allow[RDMACM_MUX_ALLOW_MAX];
};

/* HELLO_ACK: who the mux is, and whether the client may go on.  The same
 * layout in every version (see Versions above). */
struct rdmacm_mux_hello_ack {
    char ibdev[RDMACM_MUX_IBDEV_LEN]; /* the mux's host device, NUL-padded */
    uint32_t port;     /* the mux's host port */
    uint32_t version;  /* RDMACM_MUX_VERSION of the mux */
    uint32_t status;   /* OK, BAD_VERSION or WRONG_PORT */
    uint32_t max_gids; /* GIDs one client may hold at once */
};

/* GID_ADD / GID_DEL: claim or release one GID of the host port. */
struct rdmacm_mux_gid {
    uint8_t gid[RDMACM_MUX_GID_LEN];
};

/* GID_ACK: the answer to one GID_ADD or GID_DEL. */
struct rdmacm_mux_gid_ack {
    uint32_t req_seq;  /* the request's header seq */
    uint32_t status;   /* enum rdmacm_mux_status */
    uint8_t gid[RDMACM_MUX_GID_LEN]; /* the request's GID */
};

/*
 * MAD_SEND and MAD_RECV: one CM MAD (to or from QP1 of the peer) with its
 * global route.  MAD_SEND: local_gid is the source GID (claimed by the
 * sender), remote_gid the destination; the mux picks the host GID index of
 * local_gid itself.  MAD_RECV: local_gid is the host GID the MAD arrived on
 * (claimed by the receiver), remote_gid the sender's; route fields as the
 * host reports them, fit for the reply.  The mux refuses (drops and counts)
 * a MAD_SEND that is not a CM Send (base version 1, class 0x07, class
 * version 2, method 0x03, a CM attribute 0x0010..0x001a).
 */
struct rdmacm_mux_mad {
    uint8_t local_gid[RDMACM_MUX_GID_LEN];
    uint8_t remote_gid[RDMACM_MUX_GID_LEN];
    uint32_t flow_label;  /* 20 bits */
    uint16_t pkey_index;  /* host P_Key table index (RoCE: 0) */
    uint8_t tclass;       /* traffic class */
    uint8_t hop_limit;
    uint32_t mad_len;     /* RDMACM_MUX_MAD_LEN */
    uint8_t mad[RDMACM_MUX_MAD_LEN]; /* the MAD from its base version on */
};

RDMACM_MUX_STATIC_ASSERT(sizeof(struct rdmacm_mux_hdr) == 16, "hdr size");
RDMACM_MUX_STATIC_ASSERT(offsetof(struct rdmacm_mux_hdr, type) == 6,
                         "hdr.type");
RDMACM_MUX_STATIC_ASSERT(offsetof(struct rdmacm_mux_hdr, seq) == 8,
                         "hdr.seq");
RDMACM_MUX_STATIC_ASSERT(offsetof(struct rdmacm_mux_hdr, len) == 12,
                         "hdr.len");
RDMACM_MUX_STATIC_ASSERT(sizeof(struct rdmacm_mux_prefix) == 20, "prefix");
RDMACM_MUX_STATIC_ASSERT(sizeof(struct rdmacm_mux_hello) == 1484, "hello");
RDMACM_MUX_STATIC_ASSERT(offsetof(struct rdmacm_mux_hello, version) == 68,
                         "hello.version");
RDMACM_MUX_STATIC_ASSERT(offsetof(struct rdmacm_mux_hello, owner) == 72,
                         "hello.owner");
RDMACM_MUX_STATIC_ASSERT(offsetof(struct rdmacm_mux_hello, allow_n) == 200,
                         "hello.allow_n");
RDMACM_MUX_STATIC_ASSERT(offsetof(struct rdmacm_mux_hello, allow) == 204,
                         "hello.allow");
RDMACM_MUX_STATIC_ASSERT(sizeof(struct rdmacm_mux_hello_ack) == 80,
                         "hello_ack");
RDMACM_MUX_STATIC_ASSERT(offsetof(struct rdmacm_mux_hello_ack, max_gids) ==
                         76, "hello_ack.max_gids");
RDMACM_MUX_STATIC_ASSERT(sizeof(struct rdmacm_mux_gid) == 16, "gid");
RDMACM_MUX_STATIC_ASSERT(sizeof(struct rdmacm_mux_gid_ack) == 24, "gid_ack");
RDMACM_MUX_STATIC_ASSERT(sizeof(struct rdmacm_mux_mad) == 300, "mad");
RDMACM_MUX_STATIC_ASSERT(offsetof(struct rdmacm_mux_mad, flow_label) == 32,
                         "mad.flow_label");
RDMACM_MUX_STATIC_ASSERT(offsetof(struct rdmacm_mux_mad, pkey_index) == 36,
                         "mad.pkey_index");
RDMACM_MUX_STATIC_ASSERT(offsetof(struct rdmacm_mux_mad, tclass) == 38,
                         "mad.tclass");
RDMACM_MUX_STATIC_ASSERT(offsetof(struct rdmacm_mux_mad, hop_limit) == 39,
                         "mad.hop_limit");
RDMACM_MUX_STATIC_ASSERT(offsetof(struct rdmacm_mux_mad, mad_len) == 40,
                         "mad.mad_len");
RDMACM_MUX_STATIC_ASSERT(offsetof(struct rdmacm_mux_mad, mad) == 44,
                         "mad.mad");

/* The largest message: header + HELLO. */
#define RDMACM_MUX_MAX_MSG \
    (sizeof(struct rdmacm_mux_hdr) + sizeof(struct rdmacm_mux_hello))
RDMACM_MUX_STATIC_ASSERT(sizeof(struct rdmacm_mux_hello) >=
                         sizeof(struct rdmacm_mux_mad), "max_msg");

/* The payload length of @type, or 0 for a type that does not exist. */
static inline uint32_t rdmacm_mux_payload_size(uint32_t type)
{
    switch (type) {
    case RDMACM_MUX_HELLO:
        return sizeof(struct rdmacm_mux_hello);
    case RDMACM_MUX_HELLO_ACK:
        return sizeof(struct rdmacm_mux_hello_ack);
    case RDMACM_MUX_GID_ADD:
    case RDMACM_MUX_GID_DEL:
        return sizeof(struct rdmacm_mux_gid);
    case RDMACM_MUX_GID_ACK:
        return sizeof(struct rdmacm_mux_gid_ack);
    case RDMACM_MUX_MAD_SEND:
    case RDMACM_MUX_MAD_RECV:
        return sizeof(struct rdmacm_mux_mad);
    default:
        return 0;
    }
}

#endif /* HW_RDMA_RDMACM_MUX_PROTO_H */

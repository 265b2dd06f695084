/*
 * virtio-rdma core: the C interface between QEMU's thin device and the C++
 * engine (hw/rdma/virtio/core/).  The core includes no QEMU header; it
 * reaches guest memory and the management plane only through VrdmaHostOps.
 *
 * Threading: every function must be called with the same lock held that
 * serialises the device (in QEMU: the BQL).  The core never calls back into
 * the host from another thread.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_VIRTIO_RDMA_CORE_H
#define HW_RDMA_VIRTIO_RDMA_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hw/rdma/virtio-rdma-abi.h"
#include "hw/rdma/virtio-rdma-names.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct VrdmaCore VrdmaCore;

/* Largest request / response payload of any control command (bytes). */
#define VRDMA_CTRL_REQ_MAX 256
#define VRDMA_CTRL_RSP_MAX 256

/* GID table entries per port. */
#define VRDMA_GID_TABLE_LEN 16
/* P_Key table: one entry, the default full-membership key. */
#define VRDMA_PKEY_TABLE_LEN 1
#define VRDMA_DEFAULT_PKEY 0xffff

/* The most SGEs a work request may carry (VrdmaLimits.max_sge). */
#define VRDMA_MAX_SGE 32

/* Device limits, fixed at realize. */
/*
 * The GIDs management allows a device to claim and use as its source
 * (property allowed-gids; docs/system/devices/virtio-rdma.rst, "Tenant
 * isolation"): address prefixes.  An IPv4 address a.b.c.d/n is the GID
 * ::ffff:a.b.c.d with len 96 + n.
 */
#define VRDMA_GID_ALLOW_MAX 64
typedef struct VrdmaGidPrefix {
    uint8_t gid[16];         /* network order; bits past len are zero */
    uint8_t len;             /* prefix length in bits, 0..128 */
} VrdmaGidPrefix;

typedef struct VrdmaGidAllow {
    VrdmaGidPrefix prefix[VRDMA_GID_ALLOW_MAX];
    uint32_t n;              /* 0: no allow-list was given */
} VrdmaGidAllow;

/*
 * Parses allowed-gids' text into @out: entries separated by ';' and/or
 * whitespace, each an IPv4 address a.b.c.d[/n] or an IPv6 address [/n]
 * (no /n: one address).  Refused, with @why (NUL-terminated, cut to
 * @why_len) naming the entry: an entry that is neither, a prefix length
 * out of range, bits set past the prefix length, more than
 * VRDMA_GID_ALLOW_MAX entries, no entry at all.  @returns true on success;
 * on failure @out is untouched.  Pure: no core, any thread.
 */
bool vrdma_gid_allow_parse(const char *text, VrdmaGidAllow *out, char *why,
                           size_t why_len);
/* Whether @gid (network order) lies in one of @allow's prefixes. Pure. */
bool vrdma_gid_allowed(const VrdmaGidAllow *allow, const uint8_t gid[16]);

typedef struct VrdmaLimits {
    /*
     * QP numbers 0..max_qp-1 (2..VIRTIO_RDMA_RING_MAX_QP; 0 unused, 1 =
     * GSI) and CQ numbers 0..max_cq-1 (1..VIRTIO_RDMA_RING_MAX_CQ) of
     * CREATE_QP_RING / CREATE_CQ_RING.
     */
    uint32_t max_qp;
    uint32_t max_cq;
    uint32_t max_mr;
    uint32_t max_pd;
    uint32_t max_ah;
    uint64_t max_mr_size;    /* bytes; at most 512*512*512 pages of 4 KiB */
    uint32_t max_sge;        /* per WQE, send and receive */
    uint64_t sys_image_guid; /* network byte order as stored in config */
    uint32_t phys_mtu;       /* bytes, from the paired NIC */
    uint8_t mac[6];          /* the paired NIC's MAC: our frames' source */
    /*
     * Cap on the guest data pages all MRs together hold mapped (0: none).
     * A REG_USER_MR or MAP_MR_SG that would go above it is refused with
     * VRDMA_ERR_TABLE_FULL before anything is mapped; MAP_MR_SG counts its
     * new pages on top of the ones the MR holds (both are mapped at once).
     */
    uint64_t max_mapped_pages;
    /*
     * Seed of the core's pseudo-random generator, which picks each MR
     * slot's first key byte and which free QP number a new QP gets, so a
     * peer can guess neither.  The host seeds it from its entropy source;
     * 0 means deterministic (lowest free QP number, key bytes from 1), for
     * tests.
     */
    uint64_t rng_seed;
    /*
     * Where the backend does less than the soft engine (a host RDMA
     * device's capabilities; 0 / false: the soft engine's): RDMA READs and
     * atomics outstanding per QP (as responder, as requester), atomics at
     * all, fast registration (CREATE_MR, REG_MR).  The config space says
     * the same.
     */
    uint32_t max_qp_rd_atom;
    uint32_t max_qp_init_rd_atom;
    bool no_atomics;
    bool no_fast_reg;
    /*
     * The GIDs the guest may add and use as its source (allowed-gids;
     * n 0: none given).  ADD_GID of a GID outside it is refused
     * (VRDMA_ERR_NOT_ALLOWED), whatever the backend; backend=ibverbs checks
     * each use of a source GID against it again, and without a list
     * refuses ADD_GID of a GID the host's GID table holds already (the
     * host's own addresses, other tenants').  Each prefix must be
     * well-formed (len <= 128, no bit set past len), else vrdma_core_new
     * refuses the limits.
     */
    VrdmaGidAllow allow;
    /* User contexts (doorbell pages 1..max_ctx; page 0 is the kernel's), 0..VRDMA_MAX_CTX. */
    uint32_t max_ctx;
    /*
     * The deepest CQ ring (its cqe), 0 for
     * VIRTIO_RDMA_RING_MAX_CQE; a host RDMA device lowers it to its own.
     */
    uint32_t max_ring_cqe;
    /*
     * The deepest SQ or RQ ring (max_send_wr,
     * max_recv_wr), 0 for VIRTIO_RDMA_RING_MAX_QP_WR; a host RDMA device
     * lowers it to its own.
     */
    uint32_t max_ring_qp_wr;
    /*
     * SRQ numbers 1..max_srq (0: no SRQ, at most
     * VIRTIO_RDMA_RING_MAX_SRQ), the deepest SRQ ring (0 for
     * VIRTIO_RDMA_RING_MAX_SRQ_WR) and SGEs per SRQ request (0 for
     * max_sge); a host RDMA device lowers them to its own.
     */
    uint32_t max_srq;
    uint32_t max_srq_wr;
    uint32_t max_srq_sge;
} VrdmaLimits;

/* The most user contexts (VrdmaLimits.max_ctx). */
#define VRDMA_MAX_CTX 4096
/* Work requests one vrdma_core_rings_turn() copies out of rings at most. */
#define VRDMA_RING_TURN_BUDGET 1024

/*
 * Why a guest request was refused: VRDMA_ERRS in virtio-rdma-names.h says
 * what each means; names via vrdma_err_name().
 */
typedef enum VrdmaErr {
#define VRDMA_ERR_ENUM_(up, status, why) VRDMA_ERR_##up,
    VRDMA_ERRS(VRDMA_ERR_ENUM_)
#undef VRDMA_ERR_ENUM_
    VRDMA_ERR__COUNT,
} VrdmaErr;

const char *vrdma_err_name(VrdmaErr err);
const char *vrdma_cmd_name(uint8_t cmd);

/*
 * What the core asks of its host, grouped by who uses it.  Only mem.map,
 * mem.unmap and mem.read are required; a group or op left NULL means the
 * host has no such thing (the core's facade, core/host.h, says what that
 * means for each).
 */
/*
 * One MAD of the GSI QP (QP1) on the MAD link, with its global route: on a
 * send, local_gid is the source (one of the port's GIDs) and remote_gid the
 * destination; on a receive, local_gid is the GID it arrived on, remote_gid
 * the sender's.  Always one whole MAD (a CM MAD is 256 bytes, no RMPP).
 */
#define VRDMA_MAD_LEN 256
typedef struct VrdmaMad {
    uint8_t local_gid[16];
    uint8_t remote_gid[16];
    uint32_t flow_label;        /* 20 bits */
    uint8_t tclass;
    uint8_t hop_limit;
    uint16_t pkey_index;
    uint8_t mad[VRDMA_MAD_LEN];
} VrdmaMad;

/* A stretch of guest RAM, [gpa, gpa + len): see mem.ram_ranges. */
typedef struct VrdmaRamRange {
    uint64_t gpa;
    uint64_t len;
} VrdmaRamRange;

typedef struct VrdmaHostOps {
    void *opaque;

    /* ---- guest memory: MRs, page tables, DMA MRs ---- */
    struct {
        /*
         * Map [gpa, gpa + len) for long-lived access.  Returns a host
         * pointer only if the whole range is guest RAM; NULL otherwise.
         * Every non-NULL map is paired with exactly one unmap of the same
         * range.
         */
        void *(*map)(void *opaque, uint64_t gpa, uint64_t len, bool is_write);
        void (*unmap)(void *opaque, void *host, uint64_t len, bool is_write);
        /* Copy from / to guest memory.  @returns 0, or -1 if not accessible. */
        int (*read)(void *opaque, uint64_t gpa, void *buf, uint64_t len);
        int (*write)(void *opaque, uint64_t gpa, const void *buf,
                     uint64_t len);
        /*
         * The guest's RAM now (its memory backends' regions, where map
         * accepts them for writing), in GPA order: each range is one
         * region, contiguous in the host's mapping.  Fills at most @max; @returns how many there are.  A
         * backend on a host device needs it for DMA MRs (their addresses
         * are guest-physical); NULL: it refuses them.
         */
        size_t (*ram_ranges)(void *opaque, VrdmaRamRange *out, size_t max);
    } mem;

    /* ---- events for the management plane and the trace ---- */
    struct {
        /* A GID was added (added = true) or deleted on @port at @index. */
        void (*gid_changed)(void *opaque, uint32_t port, uint32_t index,
                            const uint8_t gid[16], uint32_t gid_type,
                            bool added);
        /*
         * A guest request was refused: one call per refusal (trace point).
         * @field names the request field that failed as the ABI struct
         * spells it ("send_cqn", "attrs.path_mtu"; "request"/"response"
         * for their sizes), a string literal, never NULL; @a is the
         * offending value, @b the bound or object it was checked against.
         * @cmd is 0 (no command has it) for what the data path refused:
         * a doorbell, a ring entry, a work request.
         */
        void (*guest_error)(void *opaque, uint8_t cmd, VrdmaErr err,
                            const char *field, uint64_t a, uint64_t b);
        /*
         * VIRTIO_RDMA_F_RINGS: an async event for the driver, a record of
         * enum virtio_rdma_event_type @type for object @handle on the event
         * queue (QP_FATAL: a qpn, CQ_ERR: a cqn).  At most one per object is
         * pending; the host stages it like a CQ event (never under
         * core_lock to the guest).
         */
        void (*async_event)(void *opaque, uint32_t type, uint32_t handle);
    } events;

    /* ---- completions (data path) ---- */
    struct {
        /*
         * An armed CQ @cqn fired (the core applies the arming rules): its
         * completions are in its ring; the host tells the driver.
         */
        void (*notify)(void *opaque, uint32_t cqn);
    } cq;

    /* ---- time and scheduling (data path) ---- */
    struct {
        /*
         * Monotonic nanoseconds on a clock that runs in real time, also
         * under -accel qtest, so retransmit timers match what a peer on a
         * wire sees.
         */
        uint64_t (*now_ns)(void *opaque);
        /*
         * (Re)arm the core's single timer for @deadline_ns on now_ns()'s
         * clock; UINT64_MAX cancels it.  On expiry the host calls
         * vrdma_core_timer().
         */
        void (*timer_mod)(void *opaque, uint64_t deadline_ns);
        /* Ask the host to call vrdma_core_run() soon (from its main loop). */
        void (*kick)(void *opaque);
    } time;

    /* ---- the soft-RoCE backend's wire: the paired NIC ---- */
    struct {
        /*
         * Transmit one Ethernet frame (no FCS) on the paired NIC's wire.
         * May be called from any vrdma_core_* entry point, including from
         * inside vrdma_core_net_receive(); the host queues if it must.
         */
        void (*send)(void *opaque, const void *frame, size_t len);
        /* A malformed or unexpected frame was dropped (rate-limited by the host). */
        void (*drop)(void *opaque, const char *why, uint32_t qpn);
    } wire;

    /*
     * ---- the host's event loop, for a backend on a host RDMA device ----
     * (the ibverbs backend's; no backend uses them yet, hosts leave them
     * NULL)
     */
    struct {
        /*
         * Call @ready(@ctx) from the context the core runs in whenever @fd
         * is readable (a completion channel, an async-event fd); @ready
         * NULL stops watching @fd.
         */
        void (*fd_watch)(void *opaque, int fd, void (*ready)(void *ctx),
                         void *ctx);
        /*
         * Run @work(@ctx), which may block (address resolution, RTR), on a
         * worker thread; then @done(@ctx, its result) under the core's lock
         * in the context that asked (a control command's: the main loop; a
         * work request's: the core's).  Every @done is called, also when
         * the device is reset or unplugged meanwhile: a reset does not
         * wait for it (the core orphans the work), and after
         * vrdma_core_end() the @dones still to come are the core's last
         * users -- the host frees it after the last one.
         */
        void (*defer)(void *opaque, int (*work)(void *ctx),
                      void (*done)(void *ctx, int ret), void *ctx);
        /*
         * The command vrdma_core_ctrl() answered VRDMA_CTRL_PENDING is done:
         * its status byte and @rsp_len bytes of response (at most
         * VRDMA_CTRL_RSP_MAX, guest order, copied before the call returns).
         * Called from a @done; never for a command a reset ended.
         */
        void (*ctrl_done)(void *opaque, uint8_t status, const void *rsp,
                          size_t rsp_len);
    } loop;

    /*
     * ---- the MAD link: QP1's datagrams through contrib/rdmacm-mux ----
     * (backend=ibverbs with mad-chardev=; NULL: the GSI QP is refused)
     */
    struct {
        /*
         * One MAD out to the mux, copied before the call returns.  @returns
         * 0, or -1 when the link's queue is full or down (the MAD is lost,
         * as a datagram is: the CM retransmits).
         */
        int (*send)(void *opaque, const struct VrdmaMad *mad);
    } mad;
} VrdmaHostOps;

/*
 * @returns a new core, or NULL if @lim is invalid (max_qp outside
 * 2..VIRTIO_RDMA_RING_MAX_QP, max_cq outside 1..VIRTIO_RDMA_RING_MAX_CQ,
 * another object limit outside 1..LIMIT_MAX, max_sge outside
 * 1..VRDMA_MAX_SGE, max_mr_size outside 4096..512*512*512*4096) or @ops lacks mem.map, mem.unmap
 * or mem.read.
 * @ops is copied.
 */
VrdmaCore *vrdma_core_new(const VrdmaLimits *lim, const VrdmaHostOps *ops);
/* Frees every object (unmapping every mapped page, reporting GIDs deleted), then the core. */
void vrdma_core_free(VrdmaCore *core);
/*
 * The host is going: frees every object as vrdma_core_free() does, but
 * keeps the core for the loop.defer work still running, whose @dones then
 * call no host-op (a registration's guest RAM is not unmapped: the host
 * drops its references itself).  vrdma_core_free() after the last @done.
 */
void vrdma_core_end(VrdmaCore *core);
/*
 * Frees every object (each GID still set is reported deleted through
 * gid_changed); objects and handles start over as in a new core, MR key
 * bytes from new random values (the generator is not re-seeded).  The
 * command counters of vrdma_core_get_stats() and the data-path counters of
 * vrdma_core_get_dp_stats() are kept (monitoring).  Outstanding work
 * requests are dropped without completions (the rings are reset too), and
 * the timer is cancelled through timer_mod(UINT64_MAX) if it was armed.
 */
void vrdma_core_reset(VrdmaCore *core);

/*
 * The device feature bits the driver negotiated (bit n = VIRTIO_RDMA_F_*
 * number n; transport bits are ignored).  vrdma_core_reset() clears them.
 * VIRTIO_RDMA_F_WIRE_QPN: CREATE_QP answers virtio_rdma_rsp_create_qp_wire
 * (its response room must hold 8 bytes), and every QP created from then on
 * but the GSI QP gets a random wire QPN distinct from its queue index.
 */
void vrdma_core_set_features(VrdmaCore *core, uint64_t features);

/* The config space this core presents, fields little-endian. */
void vrdma_core_get_config(const VrdmaCore *core, struct virtio_rdma_config *cfg);

/*
 * Execute one control command.  @req holds the request bytes after the
 * command byte, already copied out of guest memory (the core never reads a
 * request twice).  On VIRTIO_RDMA_OK the response (if any) is in @rsp and
 * *rsp_len says how long it is; on error nothing has changed, *rsp_len is 0
 * and guest_error() was called once.
 * @rsp_cap is the room the guest gave for the response.
 * @returns the status byte (enum virtio_rdma_status).
 */
/*
 * vrdma_core_ctrl()'s answer when the command is not done yet: a backend
 * runs blocking host work for it (loop.defer; on backend=ibverbs, MODIFY_QP
 * with an address, whose host modify resolves the destination, and the
 * first GET_DMA_MR of a PD, which registers guest RAM with the host).
 * The host keeps the command's buffer, sends no other command, and answers
 * it when loop.ctrl_done() says how it ended.  Only where the host has
 * loop.defer and loop.ctrl_done.
 */
#define VRDMA_CTRL_PENDING 0xFF

uint8_t vrdma_core_ctrl(VrdmaCore *core, uint8_t cmd,
                        const void *req, size_t req_len,
                        void *rsp, size_t rsp_cap, size_t *rsp_len);

typedef struct VrdmaStats {
    uint32_t pds, cqs, qps, mrs, ahs, gids;
    uint64_t mapped_pages;      /* guest pages held by MRs */
    uint64_t cmds;              /* control commands executed */
    uint64_t cmd_errors;        /* of which refused */
    uint64_t err_count[VRDMA_ERR__COUNT];
} VrdmaStats;

void vrdma_core_get_stats(const VrdmaCore *core, VrdmaStats *stats);

/*
 * Guest data pages all MRs hold mapped now (VrdmaStats.mapped_pages), in
 * O(1): a host can take the difference across one command to bound the
 * work it did.
 */
uint64_t vrdma_core_mapped_pages(const VrdmaCore *core);

/*
 * Guest memory at host addresses [@host, @host + @len) is going away (e.g.
 * a RAM block unplugged): every MR with a mapped data page overlapping it
 * is invalidated at once -- all its pages are unmapped now, through the
 * unmap host op -- and from then on any use of it fails as for a key that
 * names no valid MR: a local SGE (LOC_PROT_ERR), a peer's RDMA READ, WRITE
 * or atomic (NAK remote access error: REM_ACCESS_ERR at the requester), a
 * REG_MR work request (LOC_QP_OP_ERR).  DEREG_MR still frees it; a
 * fast-registration MR becomes usable again after a successful MAP_MR_SG
 * (new pages) and REG_MR.  DMA MRs hold no mapped pages (they reach guest
 * memory through the read/write ops) and are not affected -- unless a
 * backend holds RAM mapped for them (ibverbs: Mr::held), the same way.
 * Work is O(mapped pages); call it before the memory is unmapped.
 */
void vrdma_core_invalidate_host_range(VrdmaCore *core, const void *host,
                                      uint64_t len);

/*
 * The MAD link's answer to the device's claim of GID @gid
 * (backend=ibverbs with mad-chardev=): @ours true, the mux routes it to
 * this device; false, another of the mux's clients holds it.  From a
 * "held by another" answer on, until the mux grants the claim or the entry
 * is deleted or replaced, backend=ibverbs refuses every entry of the GID
 * table holding @gid as a source (MODIFY_QP's sgid_index: EPERM; a UD or
 * GSI send's gid_index: LOC_QP_OP_ERR), and a new entry of that value
 * starts refused: the guest does not send with an address another device
 * holds.  No entry holding @gid now: ignored (the answer is about an older
 * value).  Under the core's lock.
 */
void vrdma_core_gid_claim(VrdmaCore *core, const uint8_t gid[16], bool ours);

/* CQ number -> armed flags (VIRTIO_RDMA_NOTIFY_*), 0 if not armed/not live. */
uint32_t vrdma_core_cq_armed(const VrdmaCore *core, uint32_t cqn);

/* ---- data path ----------------------------------------------------------- */

/*
 * The driver wrote @value (8 bytes) at offset 0 of
 * context @ctx's doorbell page (docs/specs/virtio-rdma.rst, "Doorbells").
 * The core checks it (a queue of another context, or none: ignored and
 * traced through guest_error with cmd 0) and records it; a CQ arm takes
 * effect here.  @returns true when work waits in rings: the host then calls
 * vrdma_core_rings_turn() (from a bottom half: not in the vCPU's write).
 */
bool vrdma_core_doorbell(VrdmaCore *core, uint32_t ctx, uint64_t value);
/*
 * Copies work requests the doorbells announced out of their rings, each
 * once, and posts them to the QP's backend, at most
 * VRDMA_RING_TURN_BUDGET in all, queues taken in turn.  @returns true if
 * more waits (call again later).
 */
bool vrdma_core_rings_turn(VrdmaCore *core);

/*
 * Is @frame (Ethernet, no FCS, @len bytes) RoCEv2 by its L2/L3/L4 headers?
 * The one classifier of the device: vrdma_core_net_receive() takes exactly
 * the frames for which it returns true with a @dst_gid in the GID table, so
 * a host that pre-filters with it agrees with the core on every frame.
 * @returns true if the frame is Ethernet with at most one 802.1Q tag
 * (TPID 0x8100), then
 *  - IPv4: version 4, IHL >= 5 (options are taken, then dropped as
 *    malformed), protocol UDP, and not a fragment: MF clear and fragment
 *    offset 0 (DF may be set).  Any fragment, the first one too, is not
 *    RoCE, so every piece of a fragmented datagram goes the same way (to
 *    the NIC) and none is half-claimed; RoCEv2 senders set DF;
 *  - or IPv6: version 6, next header UDP (an extension header is not RoCE);
 * and the UDP header's destination port (the first 4 bytes of it present)
 * is 4791.  Then the destination address is written to @dst_gid as a GID
 * (IPv4: ::ffff:a.b.c.d); on false @dst_gid is untouched.  Lengths, IP
 * checksum, UDP length and the rest are not checked here: a frame that
 * passes is the core's, which drops it if it is malformed.
 * Pure: no state, no lock needed, callable from any thread (an exception to
 * the threading rule above).
 */
bool vrdma_frame_roce_dst(const void *frame, size_t len, uint8_t dst_gid[16]);

/*
 * A frame arrived on the paired NIC's wire (Ethernet, no FCS).
 * @returns true if vrdma_frame_roce_dst() says it is RoCEv2 and its
 * destination is one of our GIDs:
 * the core took it (even if it then dropped it as malformed); false if it is
 * not ours and must go on to virtio-net unchanged.
 */
bool vrdma_core_net_receive(VrdmaCore *core, const void *frame, size_t len);

/*
 * A MAD arrived on the MAD link for the GSI QP (host op mad.send's other
 * direction; untrusted, like a frame).  It goes into the GSI QP's next
 * posted receive: the 40-byte GRH area (the IPv6 header, or for
 * IPv4-mapped GIDs the IPv4 header in its last 20 bytes, as RoCEv2 puts it)
 * then the MAD; src_qp 1.  @returns true if it was delivered; false if it
 * was dropped (no GSI QP able to receive, no receive posted, @mad's
 * local_gid not one of the port's GIDs), counted in the backend's stats.
 */
bool vrdma_core_mad_receive(VrdmaCore *core, const VrdmaMad *mad);

/* The timer armed through timer_mod() expired. */
void vrdma_core_timer(VrdmaCore *core);

/*
 * Make progress on queued work (transmit, retransmit, complete), at most a
 * fixed budget.  @returns true if work remains (the host calls again soon).
 */
bool vrdma_core_run(VrdmaCore *core);

/* ---- data-path statistics ------------------------------------------------ */

/*
 * Why a received (or internally looped-back) frame was dropped: 1..20 are
 * the ways a frame can fail to be a well-formed RoCEv2 packet, in the order
 * they are checked (VRDMA_DROPS_FRAME); the rest are packets that are
 * well-formed but not acceptable (VRDMA_DROPS_PACKET).  Each is explained
 * in virtio-rdma-names.h.  Names via vrdma_drop_name(); each drop is also
 * reported through VrdmaHostOps.wire_drop with that name.
 */
typedef enum VrdmaDrop {
#define VRDMA_DROP_FRAME_(up, camel, low, why) VRDMA_DROP_##up,
#define VRDMA_DROP_PACKET_(up, low, why) VRDMA_DROP_##up,
    VRDMA_DROPS_FRAME(VRDMA_DROP_FRAME_)
    VRDMA_DROPS_PACKET(VRDMA_DROP_PACKET_)
#undef VRDMA_DROP_FRAME_
#undef VRDMA_DROP_PACKET_
    VRDMA_DROP__COUNT,
} VrdmaDrop;

const char *vrdma_drop_name(VrdmaDrop why);

/*
 * Data-path counters since the core was created (kept across reset, like
 * the command counters).  Packets looped back between two QPs of this core
 * count as sent and as received, and also in loopback_packets.
 */
typedef struct VrdmaDpStats {
    uint64_t tx_packets, tx_bytes;     /* frames built (wire + loopback) */
    uint64_t rx_packets, rx_bytes;     /* frames taken (ours, incl. dropped) */
    uint64_t loopback_packets;
    uint64_t retransmits;              /* request packets sent again */
    uint64_t retry_timeouts;           /* retransmit-timer expiries */
    uint64_t naks_sent, naks_received; /* NAKs other than RNR */
    uint64_t rnr_naks_sent, rnr_naks_received;
    uint64_t duplicates;               /* duplicate requests answered again */
    uint64_t completions;              /* CQEs written */
    uint64_t error_completions;        /* of which with an error status */
    uint64_t cq_overruns;              /* CQEs lost: the CQ ring full */
    uint64_t drops;                    /* sum of drop[] */
    uint64_t drop[VRDMA_DROP__COUNT];
} VrdmaDpStats;

void vrdma_core_get_dp_stats(const VrdmaCore *core, VrdmaDpStats *stats);

#ifdef __cplusplus
}
#endif

#endif /* HW_RDMA_VIRTIO_RDMA_CORE_H */

/*
 * virtio-rdma: the MAD link of backend=ibverbs -- the device's client of
 * contrib/rdmacm-mux over mad-chardev= (include/hw/rdma/rdmacm-mux-proto.h,
 * docs/tools/rdmacm-mux.rst).  The host kernel owns the host port's QP1;
 * the mux owns its CM agent and routes each CM MAD by the GID it arrived
 * on, so the guest's GSI QP is served here: its sends become MAD_SEND, a
 * MAD_RECV goes to the core (vrdma_core_mad_receive).
 *
 * On every connection: HELLO first -- with the device's owner name and its
 * allowed-gids, which the mux authorises claims by -- ; once HELLO_ACK says
 * OK, one claim per distinct GID of the guest's table, then MADs.  The
 * claims follow the guest's GID table (GID_ADD / GID_DEL as it changes);
 * one the mux refuses for now (the address is not on the host yet: libvirt
 * adds it after RDMA_GID_STATUS_CHANGED; another device holds it or it is
 * reserved for its previous owner) is retried every VRDMA_MAD_RETRY_MS,
 * one outside the allow-list (NOT_ALLOWED) not again on this connection.
 * The core learns which GIDs another device holds (vrdma_core_gid_claim):
 * the guest does not use them as its source.  A reconnecting chardev
 * (reconnect=) brings a restarted mux back the same way.
 *
 * The owner name is "<VM UUID>/<the device's QOM path>": the same after a
 * guest reboot and a QEMU restart (libvirt always passes -uuid; the path
 * follows the device's id), so the mux keeps a released claim for this
 * device and no other (docs/tools/rdmacm-mux.rst).  Without -uuid the
 * UUID is a random one of this QEMU process.
 *
 * Threads: the chardev's handlers, the flush bottom half and the claims run
 * in the main loop (BQL).  Sends come from the core, under core_lock, from
 * whichever thread runs it: they only queue (lock below) and schedule the
 * bottom half.  A MAD_RECV is given to the core under core_lock, as a frame
 * is.
 * Bounds: VRDMA_MAD_QUEUE MADs queued (then lost, as a datagram is: the CM
 * retransmits); one message written and one read at a time; the mux's
 * messages are checked (magic, version, type, length) and a malformed one
 * closes the connection.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qapi/qapi-types-rdma-virtio.h"
#include "qemu/cutils.h"
#include "qemu/error-report.h"
#include "qemu/lockable.h"
#include "qemu/main-loop.h"
#include "qemu/timer.h"
#include "qemu/uuid.h"
#include "qom/object.h"
#include "system/system.h"
#include "chardev/char-fe.h"
#include "hw/rdma/rdmacm-mux-proto.h"
#include "virtio-rdma.h"
#include "trace.h"

#define VRDMA_MAD_QUEUE     256   /* MAD_SENDs waiting for the socket */
#define VRDMA_MAD_RETRY_MS  1000  /* a refused claim is asked again */

typedef enum {
    VRDMA_CLAIM_NONE,       /* the mux routes nothing of this index to us */
    VRDMA_CLAIM_SENT,       /* GID_ADD sent, its GID_ACK not yet here */
    VRDMA_CLAIM_HELD,
    VRDMA_CLAIM_REFUSED,    /* until the retry timer */
    VRDMA_CLAIM_DENIED,     /* NOT_ALLOWED: not asked again on this link */
} VrdmaClaim;

QEMU_BUILD_BUG_ON(VRDMA_GID_ALLOW_MAX != RDMACM_MUX_ALLOW_MAX);

struct VirtIORdmaMad {
    VirtIORdma *r;
    CharBackend *chr;
    QEMUBH *bh;                     /* main loop: write what is due */
    QEMUTimer *retry;               /* main loop: refused claims again */

    QemuMutex lock;                 /* the queue and link_up */
    bool link_up;                   /* HELLO_ACK OK, not closed since */
    bool stopped;                   /* unrealize: nothing more is taken */
    struct rdmacm_mux_mad *queue;   /* VRDMA_MAD_QUEUE entries, a ring */
    unsigned q_head, q_count;

    /* Main loop only. */
    bool open, hello_sent;
    bool hello_warned;              /* closed before HELLO_ACK: said once */
    char owner[RDMACM_MUX_OWNER_LEN]; /* HELLO's owner */
    uint32_t seq;
    uint8_t out[RDMACM_MUX_MAX_MSG];
    size_t out_len, out_off;        /* the message being written */
    guint watch;                    /* waiting for room in the socket */
    uint8_t in[RDMACM_MUX_MAX_MSG];
    size_t in_len;                  /* the message being read */
    bool want[VRDMA_GID_TABLE_LEN]; /* the guest's GID table */
    uint8_t gid[VRDMA_GID_TABLE_LEN][16];
    VrdmaClaim claim[VRDMA_GID_TABLE_LEN];
    uint8_t claimed[VRDMA_GID_TABLE_LEN][16]; /* the value claim[] is about */
    uint32_t claim_seq[VRDMA_GID_TABLE_LEN];  /* its GID_ADD's seq */
    uint64_t connects, closed_bad;
};

static void virtio_rdma_mad_pump(VirtIORdmaMad *m);

/* ---- writing ------------------------------------------------------------- */

/* Lays out one message in m->out (nothing is being written). */
static void virtio_rdma_mad_put(VirtIORdmaMad *m, uint16_t type,
                                const void *payload)
{
    struct rdmacm_mux_hdr h = {
        .magic = cpu_to_le32(RDMACM_MUX_MAGIC),
        .version = cpu_to_le16(RDMACM_MUX_VERSION),
        .type = cpu_to_le16(type),
        .seq = cpu_to_le32(++m->seq),
        .len = cpu_to_le32(rdmacm_mux_payload_size(type)),
    };

    assert(m->out_off == m->out_len);
    memcpy(m->out, &h, sizeof(h));
    memcpy(m->out + sizeof(h), payload, rdmacm_mux_payload_size(type));
    m->out_len = sizeof(h) + rdmacm_mux_payload_size(type);
    m->out_off = 0;
}

static gboolean virtio_rdma_mad_writable(void *do_not_use, GIOCondition cond,
                                         void *opaque)
{
    VirtIORdmaMad *m = opaque;

    m->watch = 0;
    virtio_rdma_mad_pump(m);
    return G_SOURCE_REMOVE;
}

/* Writes m->out; @returns true once all of it is out. */
static bool virtio_rdma_mad_write(VirtIORdmaMad *m)
{
    while (m->out_off < m->out_len) {
        int n = qemu_chr_fe_write(m->chr, m->out + m->out_off,
                                  m->out_len - m->out_off);
        if (n <= 0) {
            if (!m->watch) {
                m->watch = qemu_chr_fe_add_watch(m->chr, G_IO_OUT | G_IO_HUP,
                                                 virtio_rdma_mad_writable, m);
            }
            return false;
        }
        m->out_off += n;
    }
    return true;
}

/*
 * The next claim message due, if any: a GID the guest no longer has (or
 * whose value changed) is released, one it has is claimed, once per value
 * (a table holds a GID once per type).
 */
static bool virtio_rdma_mad_next_claim(VirtIORdmaMad *m)
{
    struct rdmacm_mux_gid g;
    unsigned i, j;

    for (i = 0; i < VRDMA_GID_TABLE_LEN; i++) {
        bool dup = false;

        for (j = 0; j < i && !dup; j++) {
            dup = m->want[j] && !memcmp(m->gid[j], m->gid[i], 16);
        }
        if (m->claim[i] == VRDMA_CLAIM_HELD &&
            (!m->want[i] || dup || memcmp(m->claimed[i], m->gid[i], 16))) {
            memcpy(g.gid, m->claimed[i], 16);
            m->claim[i] = VRDMA_CLAIM_NONE;
            trace_virtio_rdma_mad_claim(i, false);
            virtio_rdma_mad_put(m, RDMACM_MUX_GID_DEL, &g);
            return true;
        }
        if (m->claim[i] == VRDMA_CLAIM_NONE && m->want[i] && !dup) {
            memcpy(g.gid, m->gid[i], 16);
            memcpy(m->claimed[i], m->gid[i], 16);
            m->claim[i] = VRDMA_CLAIM_SENT;
            trace_virtio_rdma_mad_claim(i, true);
            virtio_rdma_mad_put(m, RDMACM_MUX_GID_ADD, &g);
            m->claim_seq[i] = m->seq;
            return true;
        }
    }
    return false;
}

/* HELLO: where the device is, who it is, what management allows it. */
static void virtio_rdma_mad_put_hello(VirtIORdmaMad *m)
{
    const VrdmaGidAllow *allow = &m->r->allow;
    struct rdmacm_mux_hello h = {
        .port = cpu_to_le32(m->r->ib.port),
        .version = cpu_to_le32(RDMACM_MUX_VERSION),
        .allow_n = cpu_to_le32(MIN(allow->n, RDMACM_MUX_ALLOW_MAX)),
    };
    unsigned i;

    pstrcpy(h.ibdev, sizeof(h.ibdev), m->r->ib.ibdev);
    memcpy(h.owner, m->owner, sizeof(h.owner));
    for (i = 0; i < allow->n && i < RDMACM_MUX_ALLOW_MAX; i++) {
        memcpy(h.allow[i].gid, allow->prefix[i].gid, RDMACM_MUX_GID_LEN);
        h.allow[i].len = allow->prefix[i].len;
    }
    trace_virtio_rdma_mad_hello(m->owner, allow->n);
    m->hello_sent = true;
    virtio_rdma_mad_put(m, RDMACM_MUX_HELLO, &h);
}

/* The next queued MAD, if any. */
static bool virtio_rdma_mad_next_send(VirtIORdmaMad *m)
{
    struct rdmacm_mux_mad mad;

    WITH_QEMU_LOCK_GUARD(&m->lock) {
        if (!m->q_count) {
            return false;
        }
        mad = m->queue[m->q_head];
        m->q_head = (m->q_head + 1) % VRDMA_MAD_QUEUE;
        m->q_count--;
    }
    virtio_rdma_mad_put(m, RDMACM_MUX_MAD_SEND, &mad);
    return true;
}

/* Main loop: writes what is due, in order, until the socket is full. */
static void virtio_rdma_mad_pump(VirtIORdmaMad *m)
{
    bool up;

    if (!m->open || m->watch) {
        return;
    }
    for (;;) {
        if (!virtio_rdma_mad_write(m)) {
            return;
        }
        if (!m->hello_sent) {
            virtio_rdma_mad_put_hello(m);
            continue;
        }
        WITH_QEMU_LOCK_GUARD(&m->lock) {
            up = m->link_up;
        }
        if (!up || (!virtio_rdma_mad_next_claim(m) &&
                    !virtio_rdma_mad_next_send(m))) {
            return;
        }
    }
}

static void virtio_rdma_mad_bh(void *opaque)
{
    virtio_rdma_mad_pump(opaque);
}

/* Host op mad.send (under core_lock, any thread). */
static int virtio_rdma_mad_send(void *opaque, const VrdmaMad *mad)
{
    VirtIORdma *r = opaque;
    VirtIORdmaMad *m = r->mad;
    struct rdmacm_mux_mad *e;

    WITH_QEMU_LOCK_GUARD(&m->lock) {
        if (m->stopped || !m->link_up || m->q_count == VRDMA_MAD_QUEUE) {
            trace_virtio_rdma_mad_lost(m->link_up, m->q_count);
            return -1;
        }
        e = &m->queue[(m->q_head + m->q_count++) % VRDMA_MAD_QUEUE];
        memset(e, 0, sizeof(*e));
        memcpy(e->local_gid, mad->local_gid, 16);
        memcpy(e->remote_gid, mad->remote_gid, 16);
        e->flow_label = cpu_to_le32(mad->flow_label);
        e->pkey_index = cpu_to_le16(mad->pkey_index);
        e->tclass = mad->tclass;
        e->hop_limit = mad->hop_limit;
        e->mad_len = cpu_to_le32(RDMACM_MUX_MAD_LEN);
        memcpy(e->mad, mad->mad, RDMACM_MUX_MAD_LEN);
        qemu_bh_schedule(m->bh);
    }
    return 0;
}

/* ---- reading ------------------------------------------------------------- */

static void virtio_rdma_mad_set_up(VirtIORdmaMad *m, bool up)
{
    WITH_QEMU_LOCK_GUARD(&m->lock) {
        m->link_up = up;
        if (!up) {
            m->q_count = 0; /* datagrams in flight when a link dies */
        }
    }
}

/* The connection ended, or is ended here: everything starts over. */
static void virtio_rdma_mad_reset(VirtIORdmaMad *m)
{
    unsigned i;

    virtio_rdma_mad_set_up(m, false);
    if (m->watch) {
        g_source_remove(m->watch);
        m->watch = 0;
    }
    m->open = m->hello_sent = false;
    m->out_len = m->out_off = m->in_len = 0;
    for (i = 0; i < VRDMA_GID_TABLE_LEN; i++) {
        m->claim[i] = VRDMA_CLAIM_NONE;
    }
}

static void virtio_rdma_mad_bad(VirtIORdmaMad *m, const char *why)
{
    trace_virtio_rdma_mad_bad(why);
    m->closed_bad++;
    virtio_rdma_mad_reset(m);
    qemu_chr_fe_disconnect(m->chr);
}

static void virtio_rdma_mad_hello_ack(VirtIORdmaMad *m,
                                      const struct rdmacm_mux_hello_ack *a)
{
    uint32_t status = le32_to_cpu(a->status);

    if (status == RDMACM_MUX_BAD_VERSION) {
        warn_report("virtio-rdma: rdmacm-mux refused the device: it speaks "
                    "protocol version %u, this QEMU %u (update the older)",
                    le32_to_cpu(a->version), RDMACM_MUX_VERSION);
        virtio_rdma_mad_reset(m);
        qemu_chr_fe_disconnect(m->chr);
        return;
    }
    if (status != RDMACM_MUX_OK) {
        /* The mux closes; reconnect= would meet the same answer. */
        warn_report("virtio-rdma: rdmacm-mux refused the device (status "
                    "%u): it serves %.64s port %u, the device is on %s "
                    "port %u", status, a->ibdev, le32_to_cpu(a->port),
                    m->r->ib.ibdev, m->r->ib.port);
        virtio_rdma_mad_reset(m);
        qemu_chr_fe_disconnect(m->chr);
        return;
    }
    m->connects++;
    m->hello_warned = false;
    trace_virtio_rdma_mad_connected(le32_to_cpu(a->max_gids));
    virtio_rdma_mad_set_up(m, true);
    virtio_rdma_mad_pump(m);
}

/* The core learns whether another device holds GID @i's value. */
static void virtio_rdma_mad_tell_core(VirtIORdmaMad *m, unsigned i, bool ours)
{
    VirtIORdma *r = m->r;

    WITH_QEMU_LOCK_GUARD(&r->core_lock) {
        if (r->core) {
            vrdma_core_gid_claim(r->core, m->claimed[i], ours);
        }
    }
}

static void virtio_rdma_mad_claim_answer(VirtIORdmaMad *m, unsigned i,
                                         uint32_t status)
{
    switch (status) {
    case RDMACM_MUX_OK:
        m->claim[i] = VRDMA_CLAIM_HELD;
        virtio_rdma_mad_tell_core(m, i, true);
        return;
    case RDMACM_MUX_NOT_ALLOWED:
        /* Outside allowed-gids (or none given and the mux wants one): the
         * same answer for as long as this connection lasts. */
        trace_virtio_rdma_mad_claim_refused(i, status, "not allowed");
        m->claim[i] = VRDMA_CLAIM_DENIED;
        virtio_rdma_mad_tell_core(m, i, false);
        return;
    case RDMACM_MUX_CLAIMED:
    case RDMACM_MUX_RESERVED:
        /* Another device's, or its previous owner's for the mux's grace
         * period: asked again, the guest may not send with it meanwhile. */
        trace_virtio_rdma_mad_claim_refused(
            i, status, status == RDMACM_MUX_CLAIMED ? "held by another"
                                                   : "reserved for another");
        virtio_rdma_mad_tell_core(m, i, false);
        break;
    default:
        /* NOT_ON_HOST, LIMIT, or a status of a newer mux: asked again. */
        trace_virtio_rdma_mad_claim_refused(i, status, "for now");
        break;
    }
    m->claim[i] = VRDMA_CLAIM_REFUSED;
    timer_mod(m->retry,
              qemu_clock_get_ms(QEMU_CLOCK_REALTIME) + VRDMA_MAD_RETRY_MS);
}

static void virtio_rdma_mad_gid_ack(VirtIORdmaMad *m,
                                    const struct rdmacm_mux_gid_ack *a)
{
    uint32_t seq = le32_to_cpu(a->req_seq), status = le32_to_cpu(a->status);
    unsigned i;

    for (i = 0; i < VRDMA_GID_TABLE_LEN; i++) {
        if (m->claim[i] == VRDMA_CLAIM_SENT && m->claim_seq[i] == seq) {
            trace_virtio_rdma_mad_claim_ack(i, status);
            virtio_rdma_mad_claim_answer(m, i, status);
        }
    }
    /* A released or changed GID may be due now. */
    virtio_rdma_mad_pump(m);
}

static void virtio_rdma_mad_recv(VirtIORdmaMad *m,
                                 const struct rdmacm_mux_mad *in)
{
    VirtIORdma *r = m->r;
    VrdmaMad mad = {
        .flow_label = le32_to_cpu(in->flow_label) & 0xFFFFF,
        .tclass = in->tclass,
        .hop_limit = in->hop_limit,
        .pkey_index = le16_to_cpu(in->pkey_index),
    };
    bool taken = false;

    if (le32_to_cpu(in->mad_len) != RDMACM_MUX_MAD_LEN) {
        virtio_rdma_mad_bad(m, "mad_len");
        return;
    }
    memcpy(mad.local_gid, in->local_gid, 16);
    memcpy(mad.remote_gid, in->remote_gid, 16);
    memcpy(mad.mad, in->mad, RDMACM_MUX_MAD_LEN);
    WITH_QEMU_LOCK_GUARD(&r->core_lock) {
        if (r->core) {
            taken = vrdma_core_mad_receive(r->core, &mad);
        }
    }
    trace_virtio_rdma_mad_recv(taken);
}

/* One whole message from the mux, its header checked. */
static void virtio_rdma_mad_message(VirtIORdmaMad *m, uint16_t type)
{
    const void *p = m->in + sizeof(struct rdmacm_mux_hdr);

    if (type == RDMACM_MUX_HELLO_ACK) {
        virtio_rdma_mad_hello_ack(m, p);
        return;
    }
    if (!m->link_up) { /* main loop: link_up only changes here */
        virtio_rdma_mad_bad(m, "before HELLO_ACK");
    } else if (type == RDMACM_MUX_GID_ACK) {
        virtio_rdma_mad_gid_ack(m, p);
    } else {
        virtio_rdma_mad_recv(m, p);
    }
}

/* How much of the current message is still to come. */
static int virtio_rdma_mad_can_read(void *opaque)
{
    VirtIORdmaMad *m = opaque;
    const struct rdmacm_mux_hdr *h = (const void *)m->in;

    if (m->in_len < sizeof(*h)) {
        return sizeof(*h) - m->in_len;
    }
    return sizeof(*h) + le32_to_cpu(h->len) - m->in_len;
}

static void virtio_rdma_mad_read(void *opaque, const uint8_t *buf, int size)
{
    VirtIORdmaMad *m = opaque;
    struct rdmacm_mux_hdr h;

    while (size > 0 && m->open) {
        int n = MIN(size, virtio_rdma_mad_can_read(m));

        memcpy(m->in + m->in_len, buf, n);
        m->in_len += n;
        buf += n;
        size -= n;
        if (m->in_len < sizeof(h)) {
            continue;
        }
        memcpy(&h, m->in, sizeof(h));
        if (m->in_len == sizeof(h)) {
            uint16_t type = le16_to_cpu(h.type);

            /* Only what the mux sends, at its type's length. */
            if (le32_to_cpu(h.magic) != RDMACM_MUX_MAGIC ||
                le16_to_cpu(h.version) != RDMACM_MUX_VERSION ||
                (type != RDMACM_MUX_HELLO_ACK && type != RDMACM_MUX_GID_ACK &&
                 type != RDMACM_MUX_MAD_RECV) ||
                le32_to_cpu(h.len) != rdmacm_mux_payload_size(type)) {
                virtio_rdma_mad_bad(m, "header");
                return;
            }
        }
        if (m->in_len == sizeof(h) + le32_to_cpu(h.len)) {
            m->in_len = 0;
            virtio_rdma_mad_message(m, le16_to_cpu(h.type));
        }
    }
}

static void virtio_rdma_mad_event(void *opaque, QEMUChrEvent event)
{
    VirtIORdmaMad *m = opaque;

    switch (event) {
    case CHR_EVENT_OPENED:
        virtio_rdma_mad_reset(m);
        m->open = true;
        trace_virtio_rdma_mad_open(true);
        virtio_rdma_mad_pump(m);
        break;
    case CHR_EVENT_CLOSED:
        trace_virtio_rdma_mad_open(false);
        if (m->hello_sent && !m->link_up && !m->hello_warned) {
            /* A refusal comes with HELLO_ACK; this did not.  Once until
             * the next good connection: reconnect= retries every second. */
            m->hello_warned = true;
            warn_report("virtio-rdma: rdmacm-mux closed the connection "
                        "before answering HELLO: too many clients, this "
                        "QEMU's user not allowed (--allow-uid/--allow-gid), "
                        "or a mux older than protocol version %u",
                        RDMACM_MUX_VERSION);
        }
        virtio_rdma_mad_reset(m);
        break;
    default:
        break;
    }
}

static void virtio_rdma_mad_retry(void *opaque)
{
    VirtIORdmaMad *m = opaque;
    unsigned i;

    for (i = 0; i < VRDMA_GID_TABLE_LEN; i++) {
        if (m->claim[i] == VRDMA_CLAIM_REFUSED) {
            m->claim[i] = VRDMA_CLAIM_NONE;
        }
    }
    virtio_rdma_mad_pump(m);
}

/* ---- the device's side ------------------------------------------------------ */

/*
 * HELLO's owner: "<VM UUID>/<QOM path>", or "<VM UUID>/sha256:<hex>" of the
 * path when the path does not fit or has a byte the protocol does not take.
 */
static void virtio_rdma_mad_set_owner(VirtIORdmaMad *m)
{
    static QemuUUID anonymous; /* without -uuid: this process's (BQL) */
    g_autofree char *path = object_get_canonical_path(OBJECT(m->r));
    char ustr[UUID_STR_LEN];
    bool plain = path && strlen(path) + sizeof(ustr) < sizeof(m->owner);
    const char *c;

    if (!qemu_uuid_set && qemu_uuid_is_null(&anonymous)) {
        qemu_uuid_generate(&anonymous);
    }
    qemu_uuid_unparse(qemu_uuid_set ? &qemu_uuid : &anonymous, ustr);
    for (c = path; plain && *c; c++) {
        plain = *c > ' ' && *c <= '~';
    }
    if (plain) {
        snprintf(m->owner, sizeof(m->owner), "%s/%s", ustr, path);
    } else {
        g_autofree char *sum =
            g_compute_checksum_for_string(G_CHECKSUM_SHA256, path ?: "", -1);

        snprintf(m->owner, sizeof(m->owner), "%s/sha256:%s", ustr, sum);
    }
}

void virtio_rdma_mad_init(VirtIORdma *r, VrdmaHostOps *ops)
{
    VirtIORdmaMad *m;

    if (r->backend != VIRTIO_RDMA_BACKEND_IBVERBS ||
        !qemu_chr_fe_backend_connected(&r->conf.mad_chr)) {
        return;
    }
    m = g_new0(VirtIORdmaMad, 1);
    m->r = r;
    m->chr = &r->conf.mad_chr;
    m->queue = g_new0(struct rdmacm_mux_mad, VRDMA_MAD_QUEUE);
    qemu_mutex_init(&m->lock);
    m->bh = qemu_bh_new(virtio_rdma_mad_bh, m);
    m->retry = timer_new_ms(QEMU_CLOCK_REALTIME, virtio_rdma_mad_retry, m);
    virtio_rdma_mad_set_owner(m);
    r->mad = m;
    ops->mad.send = virtio_rdma_mad_send;
    qemu_chr_fe_set_handlers(m->chr, virtio_rdma_mad_can_read,
                             virtio_rdma_mad_read, virtio_rdma_mad_event,
                             NULL, m, NULL, true);
}

void virtio_rdma_mad_gid_changed(VirtIORdma *r, uint32_t index,
                                 const uint8_t gid[16], bool added)
{
    VirtIORdmaMad *m = r->mad;

    if (!m || index >= VRDMA_GID_TABLE_LEN) {
        return;
    }
    m->want[index] = added;
    memcpy(m->gid[index], gid, 16);
    /* Called under core_lock: the socket is written from the bottom half. */
    qemu_bh_schedule(m->bh);
}

void virtio_rdma_mad_stop(VirtIORdma *r)
{
    VirtIORdmaMad *m = r->mad;

    if (!m) {
        return;
    }
    qemu_chr_fe_set_handlers(m->chr, NULL, NULL, NULL, NULL, NULL, NULL,
                             false);
    WITH_QEMU_LOCK_GUARD(&m->lock) {
        m->stopped = true;
    }
    m->open = false; /* the GID deletes of the core's end go nowhere */
    if (m->watch) {
        g_source_remove(m->watch);
        m->watch = 0;
    }
}

void virtio_rdma_mad_cleanup(VirtIORdma *r)
{
    VirtIORdmaMad *m = r->mad;

    if (!m) {
        return;
    }
    qemu_bh_delete(m->bh);
    timer_free(m->retry);
    qemu_mutex_destroy(&m->lock);
    g_free(m->queue);
    g_free(m);
    r->mad = NULL;
}

VirtioRdmaMadLink *virtio_rdma_mad_info(VirtIORdma *r)
{
    VirtIORdmaMad *m = r->mad;
    VirtioRdmaMadLink *l;
    unsigned i;

    if (!m) {
        return NULL;
    }
    l = g_new0(VirtioRdmaMadLink, 1);
    WITH_QEMU_LOCK_GUARD(&m->lock) {
        l->connected = m->link_up;
        l->queued = m->q_count;
    }
    for (i = 0; i < VRDMA_GID_TABLE_LEN; i++) {
        l->gids_claimed += m->claim[i] == VRDMA_CLAIM_HELD;
        l->gids_refused += m->claim[i] == VRDMA_CLAIM_REFUSED ||
                           m->claim[i] == VRDMA_CLAIM_DENIED;
    }
    l->connects = m->connects;
    l->closed_bad = m->closed_bad;
    return l;
}

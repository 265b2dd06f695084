/*
 * rdmacm-mux: the loop, framing, GID claims and MAD routing (mux.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "mux.h"

#include <endian.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstring>

#include "claim_state.h"

namespace rdmacm_mux {

namespace {

using Hdr = rdmacm_mux_hdr;
constexpr size_t kHdrLen = sizeof(Hdr);
constexpr size_t kMadMsgLen = kHdrLen + sizeof(rdmacm_mux_mad);
/* A few messages per read; what is left over is less than one message. */
constexpr size_t kInBufLen = 4096;
static_assert(kInBufLen >= RDMACM_MUX_MAX_MSG, "one message fits");
/* Replies beyond the MAD bound: a client that lets these pile up does not
 * read its socket at all and is closed. */
constexpr size_t kControlReserve = 32 * kMadMsgLen;
/* The state file is written at most this often (claims change at the
 * clients' GID rate): a crash loses at most this much of it. */
constexpr uint64_t kSaveIntervalNs = 100000000;
/* Bounded work per wakeup: level-triggered epoll comes back for the rest. */
constexpr int kMaxEvents = 32;
constexpr int kAcceptsPerWakeup = 16;
constexpr int kMadsPerWakeup = 64;
/* Re-reading the GID table because a MAD named an unknown index is
 * something the fabric can provoke: at most this often. */
constexpr uint64_t kMissRefreshNs = 100000000;
/* One client's GID lines (claimed, released, refused): its whole table at
 * once, then one a second. */
constexpr uint32_t kGidLogBurst = 32;
constexpr uint64_t kNever = UINT64_MAX;

uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > kNever - b ? kNever : a + b;
}

/* epoll tags: kind in the top byte, client id or watch index below. */
enum Kind : uint64_t { kListener, kMadFd, kEventFd, kWatch, kClient };
uint64_t tag(Kind k, uint64_t v = 0)
{
    return static_cast<uint64_t>(k) << 56 | v;
}

bool client_sends(uint16_t type)
{
    return type == RDMACM_MUX_HELLO || type == RDMACM_MUX_GID_ADD ||
           type == RDMACM_MUX_GID_DEL || type == RDMACM_MUX_MAD_SEND;
}

const char *type_name(uint16_t type)
{
    switch (type) {
    case RDMACM_MUX_HELLO:
        return "HELLO";
    case RDMACM_MUX_HELLO_ACK:
        return "HELLO_ACK";
    case RDMACM_MUX_GID_ADD:
        return "GID_ADD";
    case RDMACM_MUX_GID_DEL:
        return "GID_DEL";
    case RDMACM_MUX_GID_ACK:
        return "GID_ACK";
    case RDMACM_MUX_MAD_SEND:
        return "MAD_SEND";
    case RDMACM_MUX_MAD_RECV:
        return "MAD_RECV";
    }
    return "unknown";
}

constexpr char kHexDigits[] = "0123456789abcdef";

std::string hex32(uint32_t v)
{
    std::string s = "0x";
    for (int shift = 28; shift >= 0; shift -= 4) {
        s += kHexDigits[(v >> shift) & 15];
    }
    return s;
}

bool epoll_add(int epfd, int fd, uint64_t t, std::string *err)
{
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = t;
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev)) {
        *err = std::string("epoll_ctl: ") + std::strerror(errno);
        return false;
    }
    return true;
}

} // namespace

struct Mux::Client {
    uint64_t id;
    int fd;
    Peer peer;
    std::string name;
    bool hello = false;
    bool dead = false;
    bool close_when_flushed = false;
    uint32_t events = 0; /* what epoll watches */
    std::array<uint8_t, kInBufLen> in;
    size_t in_len = 0;
    std::vector<uint8_t> out;
    size_t out_off = 0;
    uint32_t seq = 0;
    std::vector<Gid> gids;
    /* HELLO's: who holds the claims ("": nobody in particular) and what it
     * may claim (empty: no allow-list). */
    std::string owner;
    std::vector<std::pair<Gid, uint8_t>> allow;
    double tokens;
    uint64_t tokens_ns;
    double gid_tokens;
    uint64_t gid_tokens_ns;
    bool throttled = false; /* GID requests over the rate: not read ... */
    uint64_t resume_ns = 0; /* ... until then */
    uint64_t connected_ns;
    uint64_t active_ns;     /* its last whole message */
    bool partial = false;   /* a message begun, not finished ... */
    uint64_t partial_ns = 0; /* ... since then */
    RateLimit gid_log{1000000000, kGidLogBurst};
    uint64_t sent = 0;
    uint64_t delivered = 0;
    uint64_t dropped = 0;
};

Mux::Mux(HostPort &port, Config cfg) : port_(port), cfg_(std::move(cfg)) {}

Mux::~Mux()
{
    /* A clean stop saves what the interval held back; a crash loses it. */
    if (state_dirty_) {
        save_state();
    }
    for (auto &[id, c] : clients_) {
        if (!c->dead) {
            ::close(c->fd);
        }
    }
    if (epfd_ >= 0) {
        ::close(epfd_);
    }
}

uint64_t Mux::wall() const
{
    if (cfg_.wall_ns) {
        return cfg_.wall_ns();
    }
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000u +
           static_cast<uint64_t>(ts.tv_nsec);
}

uint64_t Mux::now() const
{
    if (cfg_.now_ns) {
        return cfg_.now_ns();
    }
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000u +
           static_cast<uint64_t>(ts.tv_nsec);
}

bool Mux::init(std::string *err)
{
    epfd_ = epoll_create1(EPOLL_CLOEXEC);
    if (epfd_ < 0) {
        *err = std::string("epoll_create1: ") + std::strerror(errno);
        return false;
    }
    if (!epoll_add(epfd_, port_.mad_fd(), tag(kMadFd), err)) {
        return false;
    }
    if (port_.event_fd() >= 0 &&
        !epoll_add(epfd_, port_.event_fd(), tag(kEventFd), err)) {
        return false;
    }
    load_state();
    return true;
}

bool Mux::set_listener(int fd, std::string *err)
{
    listen_fd_ = fd;
    return epoll_add(epfd_, fd, tag(kListener), err);
}

bool Mux::watch(int fd, std::function<void()> handler, std::string *err)
{
    watches_.emplace_back(fd, std::move(handler));
    return epoll_add(epfd_, fd, tag(kWatch, watches_.size() - 1), err);
}

uint64_t Mux::add_client(int fd, const Peer &peer)
{
    std::string who = "pid " + std::to_string(peer.pid) + " uid " +
                      std::to_string(peer.uid) + " gid " +
                      std::to_string(peer.gid);
    auto listed = [](const auto &list, auto v) {
        return std::find(list.begin(), list.end(), v) != list.end();
    };
    bool allowed = cfg_.allow_uids.empty() && cfg_.allow_gids.empty();
    allowed = allowed || listed(cfg_.allow_uids, peer.uid) ||
              listed(cfg_.allow_gids, peer.gid);
    for (gid_t g : peer.groups) {
        allowed = allowed || listed(cfg_.allow_gids, g);
    }
    std::string refusal;
    if (!allowed) {
        refusal = "neither its uid nor a group is allowed (--allow-uid, "
                  "--allow-gid)";
    } else if (clients_.size() >= cfg_.max_clients) {
        refusal = "already " + std::to_string(clients_.size()) +
                  " clients (--max-clients)";
    } else if (peer.pid && cfg_.max_per_pid &&
               peer_clients(peer, true) >= cfg_.max_per_pid) {
        /* pid 0: outside our pid namespace, so not told apart by pid. */
        refusal = "its pid has " + std::to_string(cfg_.max_per_pid) +
                  " clients already (--max-per-pid)";
    } else if (cfg_.max_per_uid &&
               peer_clients(peer, false) >= cfg_.max_per_uid) {
        refusal = "its uid has " + std::to_string(cfg_.max_per_uid) +
                  " clients already (--max-per-uid)";
    }
    if (!refusal.empty()) {
        refuse_log_.log(now(), Level::warning,
                        "refusing a client (" + who + "): " + refusal);
        stats_.clients_refused++;
        ::close(fd);
        return 0;
    }
    int fl = fcntl(fd, F_GETFL);
    auto c = std::make_unique<Client>();
    c->id = next_id_++;
    c->fd = fd;
    c->peer = peer;
    c->name = "client " + std::to_string(c->id) + " (" + who + ")";
    uint64_t t = now();
    c->tokens = cfg_.mad_burst;
    c->tokens_ns = t;
    c->gid_tokens = cfg_.gid_burst;
    c->gid_tokens_ns = t;
    c->connected_ns = c->active_ns = t;
    c->events = EPOLLIN;
    epoll_event ev{};
    ev.events = c->events;
    ev.data.u64 = tag(kClient, c->id);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) ||
        epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev)) {
        log(Level::error, c->name + ": cannot watch its socket: " +
                              std::strerror(errno));
        ::close(fd);
        return 0;
    }
    conn_log_.log(t, Level::info, c->name + ": connected");
    stats_.clients_accepted++;
    uint64_t id = c->id;
    clients_.emplace(id, std::move(c));
    return id;
}

bool Mux::poll(int timeout_ms)
{
    epoll_event evs[kMaxEvents];
    uint64_t next = next_deadline();
    if (next != kNever) {
        uint64_t t = now();
        uint64_t ms = next > t ? (next - t + 999999) / 1000000 : 0;
        if (timeout_ms < 0 || ms < static_cast<uint64_t>(timeout_ms)) {
            timeout_ms = static_cast<int>(std::min<uint64_t>(ms, INT_MAX));
        }
    }
    int n = epoll_wait(epfd_, evs, kMaxEvents, timeout_ms);
    if (n < 0 && errno != EINTR) {
        log(Level::error, std::string("epoll_wait: ") + std::strerror(errno));
        port_failed_ = true;
    }
    for (int i = 0; i < n && !port_failed_; i++) {
        uint64_t t = evs[i].data.u64;
        uint64_t v = t & ((uint64_t(1) << 56) - 1);
        switch (static_cast<Kind>(t >> 56)) {
        case kListener:
            on_listener();
            break;
        case kMadFd:
            on_port_mads(evs[i].events);
            break;
        case kEventFd:
            if (port_.drain_events()) {
                gids_valid_ = false;
            }
            break;
        case kWatch:
            watches_[v].second();
            break;
        case kClient: {
            auto it = clients_.find(v);
            if (it != clients_.end() && !it->second->dead) {
                on_client(*it->second, evs[i].events);
            }
            break;
        }
        }
    }
    if (!port_failed_) {
        expire();
    }
    reap();
    if (state_dirty_ && now() >= sat_add(last_save_ns_, kSaveIntervalNs)) {
        save_state();
    }
    return !port_failed_;
}

void Mux::on_listener()
{
    for (int i = 0; i < kAcceptsPerWakeup; i++) {
        int fd = accept4(listen_fd_, nullptr, nullptr,
                         SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno != EAGAIN && errno != EINTR) {
                refuse_log_.log(now(), Level::warning,
                                std::string("accept: ") +
                                    std::strerror(errno));
            }
            return;
        }
        ucred cred{};
        socklen_t len = sizeof(cred);
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len)) {
            log(Level::warning, std::string("SO_PEERCRED: ") +
                                    std::strerror(errno) +
                                    ": refusing the client");
            ::close(fd);
            continue;
        }
        Peer peer{cred.pid, cred.uid, cred.gid, {}};
        gid_t groups[64];
        len = sizeof(groups);
        if (!getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len)) {
            peer.groups.assign(groups, groups + len / sizeof(gid_t));
        }
        add_client(fd, peer);
    }
}

void Mux::on_client(Client &c, uint32_t events)
{
    if (events & EPOLLOUT) {
        flush(c);
    }
    if (c.dead) {
        return;
    }
    if (c.close_when_flushed) {
        /* Its HELLO was refused: only the refusal is still to go out. */
        if (events & (EPOLLHUP | EPOLLERR)) {
            close_client(c, Level::info, "gone before its refusal was sent");
        }
        return;
    }
    if (c.throttled) {
        /* Not read until expire() resumes it; a hang-up would poll
         * forever (it is reported whatever the interest). */
        if (events & (EPOLLHUP | EPOLLERR)) {
            close_client(c, Level::info,
                         "gone while its GID requests waited");
        }
        return;
    }
    if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
        read_client(c);
    }
}

void Mux::read_client(Client &c)
{
    if (c.in_len == c.in.size()) {
        /* Cannot happen: parse() leaves less than one message unless
         * throttled, and then the client is not read. */
        parse(c);
        return;
    }
    ssize_t n = recv(c.fd, c.in.data() + c.in_len, c.in.size() - c.in_len,
                     MSG_DONTWAIT);
    if (n == 0) {
        close_client(c, Level::info, "disconnected");
        return;
    }
    if (n < 0) {
        if (errno != EAGAIN && errno != EINTR) {
            close_client(c, Level::warning,
                         std::string("read: ") + std::strerror(errno));
        }
        return;
    }
    c.in_len += static_cast<size_t>(n);
    parse(c);
}

/* Handles the whole messages in c.in, in order. */
void Mux::parse(Client &c)
{
    size_t off = 0;
    while (!c.dead && !c.close_when_flushed && !c.throttled &&
           c.in_len - off >= kHdrLen) {
        Hdr h;
        std::memcpy(&h, c.in.data() + off, kHdrLen);
        uint32_t magic = le32toh(h.magic);
        uint16_t version = le16toh(h.version);
        uint16_t type = le16toh(h.type);
        uint32_t len = le32toh(h.len);
        /* The header alone decides: a bad length closes at once instead
         * of waiting for a payload that may never come. */
        if (magic != RDMACM_MUX_MAGIC) {
            violation(c, "bad magic " + hex32(magic));
            return;
        }
        if (version != RDMACM_MUX_VERSION && type == RDMACM_MUX_HELLO &&
            !c.hello) {
            /* Told, not just closed: its HELLO may be of another layout,
             * so the header alone decides. */
            on_old_hello(c, version);
            return;
        }
        if (version != RDMACM_MUX_VERSION) {
            violation(c, "protocol version " + std::to_string(version) +
                             ", the mux speaks " +
                             std::to_string(RDMACM_MUX_VERSION));
            return;
        }
        if (!client_sends(type)) {
            violation(c, std::string("message type ") +
                             std::to_string(type) + " (" + type_name(type) +
                             ") is not one a client sends");
            return;
        }
        if (len != rdmacm_mux_payload_size(type)) {
            violation(c, std::string(type_name(type)) + " payload of " +
                             std::to_string(len) + " bytes, not " +
                             std::to_string(rdmacm_mux_payload_size(type)));
            return;
        }
        if (!c.hello && type != RDMACM_MUX_HELLO) {
            violation(c, std::string(type_name(type)) + " before HELLO");
            return;
        }
        if (c.hello && type == RDMACM_MUX_HELLO) {
            violation(c, "a second HELLO");
            return;
        }
        if (c.in_len - off < kHdrLen + len) {
            break;
        }
        if ((type == RDMACM_MUX_GID_ADD || type == RDMACM_MUX_GID_DEL) &&
            !take_gid_token(c)) {
            break;
        }
        handle(c, type, le32toh(h.seq), c.in.data() + off + kHdrLen);
        off += kHdrLen + len;
    }
    if (c.dead) {
        return;
    }
    uint64_t t = now();
    if (off) {
        c.active_ns = t;
    }
    std::memmove(c.in.data(), c.in.data() + off, c.in_len - off);
    c.in_len -= off;
    /* The partial-message clock runs from the first byte of the message
     * still unfinished, and not while the mux itself does not read. */
    if (!c.in_len || c.throttled) {
        c.partial = false;
    } else if (!c.partial || off) {
        c.partial = true;
        c.partial_ns = t;
    }
    update_interest(c);
}

/*
 * Token bucket for GID_ADD/GID_DEL: each may read the host GID table and
 * write log lines.  Over the rate the request is not refused (the client
 * would only ask again) but waits: the client is not read until a token is
 * due.
 */
bool Mux::take_gid_token(Client &c)
{
    if (!cfg_.gid_rate) {
        return true;
    }
    uint64_t t = now();
    double earned =
        static_cast<double>(t - c.gid_tokens_ns) * cfg_.gid_rate / 1e9;
    c.gid_tokens = std::min<double>(cfg_.gid_burst, c.gid_tokens + earned);
    c.gid_tokens_ns = t;
    if (c.gid_tokens >= 1) {
        c.gid_tokens -= 1;
        return true;
    }
    double wait = std::ceil((1 - c.gid_tokens) * 1e9 / cfg_.gid_rate);
    c.throttled = true;
    c.resume_ns = t + std::max<uint64_t>(1, static_cast<uint64_t>(wait));
    stats_.gid_throttled++;
    c.gid_log.log(t, Level::info,
                  c.name + ": GID requests over its rate (--gid-rate): "
                           "not read for " +
                      std::to_string(static_cast<uint64_t>(wait) / 1000000) +
                      " ms");
    return false;
}

void Mux::handle(Client &c, uint16_t type, uint32_t seq, const uint8_t *p)
{
    switch (type) {
    case RDMACM_MUX_HELLO:
        on_hello(c, p);
        break;
    case RDMACM_MUX_GID_ADD:
    case RDMACM_MUX_GID_DEL:
        on_gid(c, type, seq, p);
        break;
    case RDMACM_MUX_MAD_SEND:
        on_mad_send(c, p);
        break;
    }
}

void Mux::on_hello(Client &c, const uint8_t *p)
{
    rdmacm_mux_hello h;
    std::memcpy(&h, p, sizeof(h));
    if (!std::memchr(h.ibdev, 0, sizeof(h.ibdev))) {
        violation(c, "HELLO's ibdev is not NUL-terminated");
        return;
    }
    if (!read_hello_identity(c, h)) {
        return;
    }
    std::string ibdev(h.ibdev);
    uint32_t port = le32toh(h.port);
    uint32_t version = le32toh(h.version);

    rdmacm_mux_hello_ack ack{};
    std::strncpy(ack.ibdev, port_.device().c_str(), sizeof(ack.ibdev) - 1);
    ack.port = htole32(port_.port());
    ack.version = htole32(RDMACM_MUX_VERSION);
    ack.max_gids = htole32(static_cast<uint32_t>(cfg_.max_gids));
    uint32_t status = RDMACM_MUX_OK;
    std::string refusal;
    if (version != RDMACM_MUX_VERSION) {
        status = RDMACM_MUX_BAD_VERSION;
        refusal = "speaks version " + std::to_string(version);
    } else if ((!ibdev.empty() && ibdev != port_.device()) ||
               (port && port != port_.port())) {
        status = RDMACM_MUX_WRONG_PORT;
        refusal = "asked for " +
                  (ibdev.empty() ? "any device" : "'" + escape(ibdev) + "'") +
                  " port " + std::to_string(port);
    }
    ack.status = htole32(status);
    if (status == RDMACM_MUX_OK) {
        c.hello = true;
        conn_log_.log(now(), Level::info,
                      c.name + ": hello from " +
                          (c.owner.empty() ? "no owner"
                                           : "owner " + c.owner) +
                          ", " +
                          (c.allow.empty()
                               ? std::string("no allow-list")
                               : std::to_string(c.allow.size()) +
                                     " allowed prefixes"));
        enqueue(c, RDMACM_MUX_HELLO_ACK, &ack, sizeof(ack), false);
        return;
    }
    conn_log_.log(now(), Level::warning,
                  c.name + ": refused: " + refusal + "; this mux is " +
                      port_.device() + " port " +
                      std::to_string(port_.port()) + ", version " +
                      std::to_string(RDMACM_MUX_VERSION));
    c.close_when_flushed = true;
    enqueue(c, RDMACM_MUX_HELLO_ACK, &ack, sizeof(ack), false);
}

/* A HELLO in another version: BAD_VERSION, in that version's framing. */
void Mux::on_old_hello(Client &c, uint16_t version)
{
    rdmacm_mux_hello_ack ack{};
    std::strncpy(ack.ibdev, port_.device().c_str(), sizeof(ack.ibdev) - 1);
    ack.port = htole32(port_.port());
    ack.version = htole32(RDMACM_MUX_VERSION);
    ack.status = htole32(RDMACM_MUX_BAD_VERSION);
    ack.max_gids = htole32(static_cast<uint32_t>(cfg_.max_gids));
    conn_log_.log(now(), Level::warning,
                  c.name + ": refused: speaks protocol version " +
                      std::to_string(version) + ", this mux " +
                      std::to_string(RDMACM_MUX_VERSION) +
                      " (update QEMU or the mux)");
    c.close_when_flushed = true;
    enqueue(c, RDMACM_MUX_HELLO_ACK, &ack, sizeof(ack), false, version);
}

/* HELLO's owner and allow-list into @c; false: a violation, @c closed. */
bool Mux::read_hello_identity(Client &c, const rdmacm_mux_hello &h)
{
    if (!std::memchr(h.owner, 0, sizeof(h.owner))) {
        violation(c, "HELLO's owner is not NUL-terminated");
        return false;
    }
    std::string owner(h.owner);
    if (!owner.empty() && !valid_owner(owner)) {
        violation(c, "HELLO's owner '" + escape(owner) +
                         "' is not printable ASCII without spaces");
        return false;
    }
    uint32_t n = le32toh(h.allow_n);
    if (n > RDMACM_MUX_ALLOW_MAX) {
        violation(c, "HELLO's allow-list has " + std::to_string(n) +
                         " entries, at most " +
                         std::to_string(RDMACM_MUX_ALLOW_MAX));
        return false;
    }
    std::vector<std::pair<Gid, uint8_t>> allow;
    for (uint32_t i = 0; i < n; i++) {
        const rdmacm_mux_prefix &e = h.allow[i];
        Gid g;
        std::memcpy(g.data(), e.gid, g.size());
        bool tail_zero = e.len <= 128;
        for (unsigned bit = e.len; tail_zero && bit < 128; bit++) {
            tail_zero = !(g[bit / 8] & (0x80 >> (bit % 8)));
        }
        if (!tail_zero || e.pad[0] || e.pad[1] || e.pad[2]) {
            violation(c, "HELLO's allow-list entry " + std::to_string(i) +
                             " (" + gid_text(g) + "/" +
                             std::to_string(e.len) +
                             "): a length over 128, bits set past it, or "
                             "padding not zero");
            return false;
        }
        allow.emplace_back(g, e.len);
    }
    c.owner = std::move(owner);
    c.allow = std::move(allow);
    return true;
}

/*
 * Whether @c may claim @gid that nobody holds: OK, NOT_ALLOWED (outside its
 * allow-list, or none and the mux is not open) or RESERVED (released by
 * another owner less than the grace ago).
 */
uint32_t Mux::may_claim(Client &c, const Gid &gid)
{
    auto in_prefix = [&](const std::pair<Gid, uint8_t> &p) {
        unsigned bytes = p.second / 8, bits = p.second % 8;
        if (std::memcmp(p.first.data(), gid.data(), bytes)) {
            return false;
        }
        uint8_t mask = static_cast<uint8_t>(0xff00 >> bits);
        return !bits || !((p.first[bytes] ^ gid[bytes]) & mask);
    };
    bool allowed = c.allow.empty()
                       ? cfg_.open_claims
                       : std::any_of(c.allow.begin(), c.allow.end(),
                                     in_prefix);
    if (!allowed) {
        stats_.claims_not_allowed++;
        return RDMACM_MUX_NOT_ALLOWED;
    }
    auto r = reserved_.find(gid);
    if (r == reserved_.end()) {
        return RDMACM_MUX_OK;
    }
    if (now() >= r->second.until_ns) {
        reserved_.erase(r);
        state_dirty_ = true;
        return RDMACM_MUX_OK;
    }
    if (c.owner.empty() || r->second.owner != c.owner) {
        stats_.claims_reserved++;
        return RDMACM_MUX_RESERVED;
    }
    return RDMACM_MUX_OK;
}

/* @c lets go of @gid: reserved for its owner for the grace period. */
void Mux::release(Client &c, const Gid &gid)
{
    claims_.erase(gid);
    state_dirty_ = true;
    if (!cfg_.claim_grace_ns || c.owner.empty()) {
        return;
    }
    uint64_t t = now();
    reserved_[gid] = Reservation{c.owner, sat_add(t, cfg_.claim_grace_ns)};
    if (reserved_.size() <= cfg_.max_reservations) {
        return;
    }
    std::erase_if(reserved_,
                  [&](const auto &kv) { return t >= kv.second.until_ns; });
    if (reserved_.size() <= cfg_.max_reservations) {
        return;
    }
    auto first = std::min_element(
        reserved_.begin(), reserved_.end(), [](const auto &a, const auto &b) {
            return a.second.until_ns < b.second.until_ns;
        });
    state_log_.log(t, Level::warning,
                   "reservation of " + gid_text(first->first) + " for " +
                       first->second.owner + " dropped early: " +
                       std::to_string(cfg_.max_reservations) +
                       " reservations (--max-reservations)");
    reserved_.erase(first);
}

void Mux::on_gid(Client &c, uint16_t type, uint32_t seq, const uint8_t *p)
{
    rdmacm_mux_gid req;
    std::memcpy(&req, p, sizeof(req));
    Gid gid;
    std::memcpy(gid.data(), req.gid, gid.size());

    auto owner = claims_.find(gid);
    bool mine = owner != claims_.end() && owner->second == c.id;
    uint32_t status = RDMACM_MUX_OK;
    if (type == RDMACM_MUX_GID_DEL) {
        if (mine) {
            release(c, gid);
            c.gids.erase(std::find(c.gids.begin(), c.gids.end(), gid));
            c.gid_log.log(now(), Level::info,
                          c.name + ": released " + gid_text(gid));
        } else {
            status = RDMACM_MUX_NOT_CLAIMED;
        }
    } else if (mine) {
        /* Claims are a set: claiming again is no change. */
    } else if (status = may_claim(c, gid); status != RDMACM_MUX_OK) {
        /* Outside its list, or another owner's reservation.  Before
         * CLAIMED: a client learns nothing of GIDs it may not have. */
    } else if (owner != claims_.end()) {
        status = RDMACM_MUX_CLAIMED;
    } else if (c.gids.size() >= cfg_.max_gids) {
        status = RDMACM_MUX_LIMIT;
    } else {
        /* Claims are rare and must see the table as it is now. */
        bool on_host = refresh_gids() &&
                       std::any_of(host_gids_.begin(), host_gids_.end(),
                                   [&](const HostGid &h) {
                                       return h.gid == gid;
                                   });
        if (!on_host) {
            status = RDMACM_MUX_NOT_ON_HOST;
        } else {
            /* may_claim() let it through: a reservation left is its own. */
            bool resumed = reserved_.erase(gid);
            stats_.claims_resumed += resumed;
            claims_.emplace(gid, c.id);
            c.gids.push_back(gid);
            state_dirty_ = true;
            c.gid_log.log(now(), Level::info,
                          c.name + (resumed ? ": resumed " : ": claimed ") +
                              gid_text(gid));
        }
    }
    if (status != RDMACM_MUX_OK) {
        c.gid_log.log(now(), Level::info,
                      c.name + ": " + type_name(type) + " " + gid_text(gid) +
                          " refused (status " + std::to_string(status) +
                          ")");
    }
    rdmacm_mux_gid_ack ack{};
    ack.req_seq = htole32(seq);
    ack.status = htole32(status);
    std::memcpy(ack.gid, gid.data(), gid.size());
    enqueue(c, RDMACM_MUX_GID_ACK, &ack, sizeof(ack), false);
}

void Mux::on_mad_send(Client &c, const uint8_t *p)
{
    rdmacm_mux_mad m;
    std::memcpy(&m, p, sizeof(m));
    if (auto d = check_cm_mad(m.mad, le32toh(m.mad_len))) {
        drop_tx(c, *d);
        return;
    }
    MadAddr addr;
    addr.flow_label = le32toh(m.flow_label);
    addr.pkey_index = le16toh(m.pkey_index);
    addr.tclass = m.tclass;
    addr.hop_limit = m.hop_limit;
    addr.grh = true;
    std::memcpy(addr.remote_gid.data(), m.remote_gid, sizeof(m.remote_gid));
    if (addr.flow_label > kFlowLabelMax) {
        drop_tx(c, Drop::flow_label);
        return;
    }
    Gid sgid;
    std::memcpy(sgid.data(), m.local_gid, sizeof(m.local_gid));
    auto owner = claims_.find(sgid);
    if (owner == claims_.end() || owner->second != c.id) {
        drop_tx(c, Drop::sgid_not_claimed);
        return;
    }
    /* The host index is ours to pick, never the client's. */
    auto index = host_index_of(sgid);
    if (!index) {
        drop_tx(c, Drop::sgid_not_on_host);
        return;
    }
    /* The cached index may hold another GID by now (an event not yet
     * read): sending from it would send as that GID's owner. */
    Gid at_index;
    if (!port_.gid_at(*index, &at_index) || at_index != sgid) {
        gids_valid_ = false;
        drop_tx(c, Drop::sgid_stale);
        return;
    }
    addr.gid_index = *index;
    if (addr.pkey_index >= port_.pkey_table_len()) {
        drop_tx(c, Drop::pkey_index);
        return;
    }
    /* Token bucket: mad_rate per second, up to mad_burst saved up. */
    uint64_t t = now();
    double earned = static_cast<double>(t - c.tokens_ns) * cfg_.mad_rate / 1e9;
    c.tokens = std::min<double>(cfg_.mad_burst, c.tokens + earned);
    c.tokens_ns = t;
    if (c.tokens < 1) {
        drop_tx(c, Drop::rate);
        return;
    }
    c.tokens -= 1;
    int ret = port_.send_mad(addr, m.mad, kMadLen);
    if (ret < 0) {
        tx_log_[static_cast<size_t>(Drop::send_failed)].log(
            t, Level::warning,
            c.name + ": the host port refused a MAD to " +
                gid_text(addr.remote_gid) + ": " + std::strerror(-ret));
        stats_.tx_drops[static_cast<size_t>(Drop::send_failed)]++;
        c.dropped++;
        return;
    }
    stats_.mads_sent++;
    c.sent++;
}

void Mux::drop_tx(Client &c, Drop d)
{
    stats_.tx_drops[static_cast<size_t>(d)]++;
    c.dropped++;
    tx_log_[static_cast<size_t>(d)].log(
        now(), Level::warning,
        c.name + ": MAD_SEND dropped: " + drop_text(d) + " (" +
            drop_name(d) + ")");
}

void Mux::drop_rx(Drop d, const std::string &detail)
{
    stats_.rx_drops[static_cast<size_t>(d)]++;
    rx_log_[static_cast<size_t>(d)].log(
        now(), d == Drop::queue_full ? Level::warning : Level::info,
        "MAD from the host dropped: " + std::string(drop_text(d)) + " (" +
            drop_name(d) + ")" + detail);
}

void Mux::on_port_mads(uint32_t events)
{
    for (int i = 0; i < kMadsPerWakeup; i++) {
        ReceivedMad m;
        int ret = port_.recv_mad(&m);
        if (ret == 0) {
            break;
        }
        if (ret < 0) {
            log(Level::error, "reading MADs from " + port_.device() +
                                  " port " + std::to_string(port_.port()) +
                                  ": " + std::strerror(-ret));
            port_failed_ = true;
            return;
        }
        stats_.mads_received++;
        route(m);
    }
    if (events & (EPOLLERR | EPOLLHUP)) {
        log(Level::error, "the MAD device of " + port_.device() +
                              " port " + std::to_string(port_.port()) +
                              " hung up (device removed?)");
        port_failed_ = true;
    }
}

void Mux::route(const ReceivedMad &m)
{
    if (m.status) {
        drop_rx(Drop::recv_status, ": status " + std::to_string(m.status));
        return;
    }
    if (!m.addr.grh) {
        drop_rx(Drop::recv_no_grh, "");
        return;
    }
    if (auto d = check_cm_mad(m.mad.data(), m.len)) {
        drop_rx(*d, " from " + gid_text(m.addr.remote_gid));
        return;
    }
    /* ib_umad reports the local GID index the MAD arrived on: that GID's
     * owner is the receiver, whatever the MAD says inside. */
    const HostGid *local = host_gid_at(m.addr.gid_index);
    if (!local) {
        drop_rx(Drop::recv_unknown_gid,
                ": index " + std::to_string(m.addr.gid_index));
        return;
    }
    /* The cached table may be older than the MAD (an event not yet read):
     * the index must hold that GID now, else it may be the index's previous
     * owner's traffic or the next one's; the CM retransmits. */
    Gid at_index;
    if (!port_.gid_at(m.addr.gid_index, &at_index) || at_index != local->gid) {
        gids_valid_ = false;
        drop_rx(Drop::recv_stale_gid,
                ": index " + std::to_string(m.addr.gid_index) + " was " +
                    gid_text(local->gid));
        return;
    }
    /* The owner is the claim as it stands now. */
    auto owner = claims_.find(local->gid);
    if (owner == claims_.end()) {
        drop_rx(Drop::recv_no_owner, ": " + gid_text(local->gid));
        return;
    }
    Client &c = *clients_.at(owner->second);
    rdmacm_mux_mad out{};
    std::memcpy(out.local_gid, local->gid.data(), sizeof(out.local_gid));
    std::memcpy(out.remote_gid, m.addr.remote_gid.data(),
                sizeof(out.remote_gid));
    out.flow_label = htole32(m.addr.flow_label);
    out.pkey_index = htole16(m.addr.pkey_index);
    out.tclass = m.addr.tclass;
    out.hop_limit = m.addr.hop_limit;
    out.mad_len = htole32(kMadLen);
    std::memcpy(out.mad, m.mad.data(), kMadLen);
    if (!enqueue(c, RDMACM_MUX_MAD_RECV, &out, sizeof(out), true)) {
        c.dropped++;
        drop_rx(Drop::queue_full, ": for " + c.name);
        return;
    }
    stats_.mads_delivered++;
    c.delivered++;
}

bool Mux::enqueue(Client &c, uint16_t type, const void *payload, size_t len,
                  bool is_mad, uint16_t version)
{
    if (c.dead) {
        return false;
    }
    size_t pending = c.out.size() - c.out_off;
    size_t mad_bound = cfg_.queue_mads * kMadMsgLen;
    if (is_mad && pending + kHdrLen + len > mad_bound) {
        return false;
    }
    if (!is_mad && pending + kHdrLen + len > mad_bound + kControlReserve) {
        close_client(c, Level::warning,
                     "does not read its replies: closed with " +
                         std::to_string(pending) + " bytes queued");
        return false;
    }
    Hdr h;
    h.magic = htole32(RDMACM_MUX_MAGIC);
    h.version = htole16(version);
    h.type = htole16(type);
    h.seq = htole32(++c.seq);
    h.len = htole32(static_cast<uint32_t>(len));
    auto bytes = static_cast<const uint8_t *>(payload);
    c.out.insert(c.out.end(), reinterpret_cast<uint8_t *>(&h),
                 reinterpret_cast<uint8_t *>(&h) + kHdrLen);
    c.out.insert(c.out.end(), bytes, bytes + len);
    flush(c);
    return !c.dead;
}

void Mux::flush(Client &c)
{
    while (!c.dead && c.out_off < c.out.size()) {
        ssize_t n = send(c.fd, c.out.data() + c.out_off,
                         c.out.size() - c.out_off,
                         MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno != EAGAIN) {
                close_client(c, Level::info,
                             std::string("write: ") + std::strerror(errno));
                return;
            }
            break;
        }
        c.out_off += static_cast<size_t>(n);
    }
    if (c.out_off == c.out.size()) {
        c.out.clear();
        c.out_off = 0;
        if (c.close_when_flushed) {
            close_client(c, Level::info, "closed after its refusal");
            return;
        }
    } else if (c.out_off >= c.out.size() / 2) {
        c.out.erase(c.out.begin(),
                    c.out.begin() + static_cast<ptrdiff_t>(c.out_off));
        c.out_off = 0;
    }
    update_interest(c);
}

void Mux::update_interest(Client &c)
{
    /* After a refused HELLO nothing it says matters any more. */
    uint32_t want =
        c.close_when_flushed || c.throttled ? 0u : uint32_t(EPOLLIN);
    if (c.out_off < c.out.size()) {
        want |= uint32_t(EPOLLOUT);
    }
    if (c.dead || want == c.events) {
        return;
    }
    epoll_event ev{};
    ev.events = want;
    ev.data.u64 = tag(kClient, c.id);
    if (epoll_ctl(epfd_, EPOLL_CTL_MOD, c.fd, &ev)) {
        close_client(c, Level::error,
                     std::string("epoll_ctl: ") + std::strerror(errno));
        return;
    }
    c.events = want;
}

void Mux::violation(Client &c, const std::string &what)
{
    stats_.clients_violated++;
    close_client(c, Level::warning, "protocol violation: " + what);
}

void Mux::close_client(Client &c, Level level, const std::string &why)
{
    if (c.dead) {
        return;
    }
    for (const Gid &g : c.gids) {
        release(c, g);
    }
    conn_log_.log(now(), level,
                  c.name + ": " + why + "; " +
                      std::to_string(c.gids.size()) + " GIDs released, " +
                      std::to_string(c.sent) + " MADs sent, " +
                      std::to_string(c.delivered) + " delivered, " +
                      std::to_string(c.dropped) + " dropped");
    c.gids.clear();
    epoll_ctl(epfd_, EPOLL_CTL_DEL, c.fd, nullptr);
    ::close(c.fd);
    c.dead = true;
}

size_t Mux::peer_clients(const Peer &peer, bool by_pid) const
{
    return static_cast<size_t>(std::count_if(
        clients_.begin(), clients_.end(), [&](const auto &kv) {
            const Client &c = *kv.second;
            return !c.dead && (by_pid ? c.peer.pid == peer.pid
                                      : c.peer.uid == peer.uid);
        }));
}

/* When @c is to be closed for a timeout (kNever: not), and why. */
uint64_t Mux::close_at(const Client &c, const char **why) const
{
    if (!c.hello) {
        /* Also a refused client that does not read its refusal. */
        *why = "no HELLO in time (--hello-timeout)";
        return cfg_.hello_timeout_ns ? sat_add(c.connected_ns,
                                               cfg_.hello_timeout_ns)
                                     : kNever;
    }
    if (c.throttled) {
        return kNever;
    }
    if (c.partial) {
        *why = "left a message unfinished (--partial-timeout)";
        return cfg_.partial_timeout_ns ? sat_add(c.partial_ns,
                                                 cfg_.partial_timeout_ns)
                                       : kNever;
    }
    if (c.gids.empty() && cfg_.idle_timeout_ns) {
        *why = "idle, holding no GID (--idle-timeout)";
        return sat_add(c.active_ns, cfg_.idle_timeout_ns);
    }
    return kNever;
}

/* The next time expire() has something to do.  O(clients) per wakeup. */
uint64_t Mux::next_deadline() const
{
    uint64_t next = kNever;
    for (const auto &[id, c] : clients_) {
        if (c->dead) {
            continue;
        }
        const char *why;
        next = std::min(next, close_at(*c, &why));
        if (c->throttled) {
            next = std::min(next, c->resume_ns);
        }
    }
    if (state_dirty_) {
        next = std::min(next, sat_add(last_save_ns_, kSaveIntervalNs));
    }
    return next;
}

/* Resumes throttled clients whose wait is over, closes the timed out. */
void Mux::expire()
{
    uint64_t t = now();
    for (auto &[id, cp] : clients_) {
        Client &c = *cp;
        if (!c.dead && c.throttled && t >= c.resume_ns) {
            c.throttled = false;
            parse(c);
        }
        const char *why = "";
        if (!c.dead && t >= close_at(c, &why)) {
            stats_.clients_timed_out++;
            close_client(c, Level::info, std::string("closed: ") + why);
        }
    }
}

void Mux::reap()
{
    std::erase_if(clients_, [](const auto &kv) { return kv.second->dead; });
}

std::string Mux::state_path() const
{
    return cfg_.state_dir + "/claims-" + port_.device() + "-" +
           std::to_string(port_.port());
}

/* Claims and reservations of the previous process, as reservations. */
void Mux::load_state()
{
    if (cfg_.state_dir.empty() || !cfg_.claim_grace_ns) {
        return;
    }
    std::string path = state_path(), text, err;
    bool missing;
    SavedClaims saved;
    if (!read_claims_file(path, &text, &missing, &err) ||
        !parse_claims(text, &saved, &err)) {
        if (!missing) {
            log(Level::warning, "ignoring the state file " + path + ": " +
                                    err + "; no claim is reserved");
            state_dirty_ = true; /* replaced by a good one */
        }
        return;
    }
    uint64_t t = now(), w = wall();
    size_t held = 0, kept = 0;
    for (const auto &[gid, sc] : saved) {
        uint64_t left = cfg_.claim_grace_ns;
        if (sc.held) {
            /* Its owner's connection ended with the process, just now. */
            held++;
        } else {
            uint64_t until = sc.until_s * 1000000000ull; /* parse_claims: fits */
            if (until <= w) {
                continue;
            }
            /* A wall clock set back cannot stretch it past one grace. */
            left = std::min(left, until - w);
        }
        if (reserved_.size() >= cfg_.max_reservations) {
            log(Level::warning, "state file " + path + ": more than " +
                                    std::to_string(cfg_.max_reservations) +
                                    " reservations (--max-reservations); "
                                    "the rest are dropped");
            break;
        }
        reserved_[gid] = Reservation{sc.owner, sat_add(t, left)};
        kept++;
    }
    log(Level::info, "state file " + path + ": " + std::to_string(kept) +
                         " GIDs reserved for their owners (" +
                         std::to_string(held) + " were claimed)");
    /* Rewritten with times: a second restart does not grant a new grace. */
    state_dirty_ = true;
}

void Mux::save_state()
{
    last_save_ns_ = now();
    state_dirty_ = false;
    if (cfg_.state_dir.empty() || !cfg_.claim_grace_ns) {
        return;
    }
    uint64_t t = last_save_ns_, w = wall();
    SavedClaims out;
    for (const auto &[gid, id] : claims_) {
        const Client &c = *clients_.at(id);
        if (!c.owner.empty()) {
            out[gid] = SavedClaim{c.owner, true, 0};
        }
    }
    for (const auto &[gid, r] : reserved_) {
        if (r.until_ns > t) {
            /* Whole seconds, rounded up: never shorter than it is. */
            uint64_t until = sat_add(w, r.until_ns - t);
            out[gid] = SavedClaim{r.owner, false,
                                  until / 1000000000u +
                                      (until % 1000000000u != 0)};
        }
    }
    std::string err;
    if (!write_claims_file(state_path(), format_claims(out), &err)) {
        stats_.state_write_failures++;
        state_dirty_ = true; /* again at the next turn */
        state_log_.log(t, Level::error,
                       "cannot save claims (a restart would forget "
                       "them): " + err);
    }
}

bool Mux::refresh_gids()
{
    gids_read_ns_ = now();
    std::vector<HostGid> table;
    if (!port_.gid_table(&table)) {
        gids_valid_ = false;
        return false;
    }
    host_gids_ = std::move(table);
    gids_valid_ = true;
    return true;
}

bool Mux::may_refresh_on_miss()
{
    return now() - gids_read_ns_ >= kMissRefreshNs;
}

const HostGid *Mux::host_gid_at(uint32_t index)
{
    auto find = [&]() -> const HostGid * {
        for (const HostGid &h : host_gids_) {
            if (h.index == index) {
                return &h;
            }
        }
        return nullptr;
    };
    if (!gids_valid_) {
        refresh_gids();
    }
    const HostGid *h = find();
    if (!h && may_refresh_on_miss() && refresh_gids()) {
        h = find();
    }
    return h;
}

std::optional<uint32_t> Mux::host_index_of(const Gid &gid)
{
    /* RoCE v2 first: a v1 entry for the same GID is the other encap. */
    auto find = [&]() -> std::optional<uint32_t> {
        const HostGid *best = nullptr;
        for (const HostGid &h : host_gids_) {
            if (h.gid == gid &&
                (!best || (h.type == GidType::roce_v2 &&
                           best->type != GidType::roce_v2))) {
                best = &h;
            }
        }
        return best ? std::optional<uint32_t>(best->index) : std::nullopt;
    };
    if (!gids_valid_) {
        refresh_gids();
    }
    auto i = find();
    if (!i && may_refresh_on_miss() && refresh_gids()) {
        i = find();
    }
    return i;
}

void Mux::log_stats() const
{
    std::string s = "clients: " + std::to_string(clients_.size()) +
                    " connected, " +
                    std::to_string(stats_.clients_accepted) + " accepted, " +
                    std::to_string(stats_.clients_refused) + " refused, " +
                    std::to_string(stats_.clients_violated) +
                    " closed for protocol violations, " +
                    std::to_string(stats_.clients_timed_out) +
                    " timed out; GID requests throttled " +
                    std::to_string(stats_.gid_throttled) +
                    " times; GIDs claimed: " +
                    std::to_string(claims_.size()) + ", reserved: " +
                    std::to_string(reserved_.size()) +
                    "; claims refused: " +
                    std::to_string(stats_.claims_not_allowed) +
                    " not allowed, " +
                    std::to_string(stats_.claims_reserved) +
                    " reserved for another owner; " +
                    std::to_string(stats_.claims_resumed) +
                    " resumed by their owner; state file writes failed: " +
                    std::to_string(stats_.state_write_failures) + "; MADs: " +
                    std::to_string(stats_.mads_sent) + " sent, " +
                    std::to_string(stats_.mads_received) + " received, " +
                    std::to_string(stats_.mads_delivered) + " delivered";
    for (size_t i = 0; i < kDropCount; i++) {
        if (stats_.tx_drops[i]) {
            s += "; send dropped " + std::string(drop_name(Drop(i))) + ": " +
                 std::to_string(stats_.tx_drops[i]);
        }
        if (stats_.rx_drops[i]) {
            s += "; receive dropped " + std::string(drop_name(Drop(i))) +
                 ": " + std::to_string(stats_.rx_drops[i]);
        }
    }
    if (uint64_t n = log_lines_dropped()) {
        s += "; log lines dropped (stderr full): " + std::to_string(n);
    }
    log(Level::info, s);
}

} // namespace rdmacm_mux

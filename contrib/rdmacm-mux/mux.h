/*
 * rdmacm-mux: the daemon's one loop.  Clients (QEMU devices) connect over a
 * UNIX stream socket and speak include/hw/rdma/rdmacm-mux-proto.h; the mux
 * owns the host port's CM MAD agent (HostPort) and passes CM MADs between
 * the two, routing each MAD from the host to the client that claimed the
 * GID it arrived on.
 *
 * Single-threaded: one epoll set (listening socket, the port's MAD and
 * event fds, clients, and whatever the caller watches: the signalfd).
 * Everything is bounded: clients (in all, per pid, per uid), GIDs per
 * client, each client's output queue (MADs beyond it are dropped: the CM
 * retransmits), MAD_SENDs per second per client (beyond: dropped), GID
 * requests per second per client (beyond: the client is not read until it
 * may ask again), how long a client may take to say HELLO or finish a
 * message or sit idle holding nothing, work per wakeup, log lines a client
 * can provoke.  A client that breaks the framing or a timeout is closed;
 * nobody else notices.
 *
 * Claims are authorised: a client claims only GIDs of the allow-list it
 * sent with HELLO (management's, through QEMU), and a claim released --
 * GID_DEL, the client gone, the mux restarted -- stays reserved for its
 * owner (HELLO's owner) for the grace period; the state file carries claims
 * and reservations across a restart (claim_state.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef RDMACM_MUX_MUX_H
#define RDMACM_MUX_MUX_H

#include <sys/types.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cm_mad.h"
#include "host_port.h"
#include "hw/rdma/rdmacm-mux-proto.h"
#include "log.h"

namespace rdmacm_mux {

struct Config {
    size_t max_clients = 64;
    /* Connected clients one peer (SO_PEERCRED) may have; 0: max_clients. */
    size_t max_per_pid = 8;
    size_t max_per_uid = 0;
    size_t max_gids = 16;       /* per client */
    size_t queue_mads = 64;     /* per client: MAD_RECVs waiting to be sent */
    uint32_t mad_rate = 100;    /* MAD_SENDs per second per client ... */
    uint32_t mad_burst = 32;    /* ... after a burst of this many */
    uint32_t gid_rate = 20;     /* GID_ADD/GID_DEL per second per client ... */
    uint32_t gid_burst = 32;    /* ... after a burst of this many */
    /* A client is closed that has not said HELLO this long after it
     * connected, that leaves a message unfinished this long, or that holds
     * no GID and has said nothing this long.  0: no limit. */
    uint64_t hello_timeout_ns = 10000000000ull;
    uint64_t partial_timeout_ns = 10000000000ull;
    uint64_t idle_timeout_ns = 600000000000ull;
    /* Empty: anyone who can open the socket.  Else a uid or gid listed. */
    std::vector<uid_t> allow_uids;
    std::vector<gid_t> allow_gids;
    /* Claims: a client may claim only GIDs of the allow-list it sent with
     * HELLO; one that sent none, none at all unless open_claims. */
    bool open_claims = false;
    /* A released claim stays reserved for its owner this long (0: not at
     * all); at most max_reservations at once (full: the one ending first
     * goes). */
    uint64_t claim_grace_ns = 600000000000ull;
    size_t max_reservations = 4096;
    /* Where claims and reservations outlive the process (claim_state.h);
     * empty: nowhere. */
    std::string state_dir;
    /* CLOCK_MONOTONIC in ns when empty; tests set their own. */
    std::function<uint64_t()> now_ns;
    /* CLOCK_REALTIME in ns when empty (the state file's times, which must
     * mean the same to the next process); tests set their own. */
    std::function<uint64_t()> wall_ns;
};

/* Who is on the other end of a client socket (SO_PEERCRED/SO_PEERGROUPS). */
struct Peer {
    pid_t pid = 0;
    uid_t uid = 0;
    gid_t gid = 0;
    std::vector<gid_t> groups;
};

struct Stats {
    uint64_t clients_accepted = 0;
    uint64_t clients_refused = 0;   /* full, or not on the allow-list */
    uint64_t clients_violated = 0;  /* closed for breaking the protocol */
    uint64_t clients_timed_out = 0; /* closed by a timeout */
    uint64_t gid_throttled = 0;     /* times a client's GID requests waited */
    uint64_t claims_not_allowed = 0; /* GID_ADD outside the allow-list */
    uint64_t claims_reserved = 0;   /* GID_ADD of another owner's GID */
    uint64_t claims_resumed = 0;    /* an owner took its reservation back */
    uint64_t state_write_failures = 0;
    uint64_t mads_sent = 0;         /* MAD_SEND -> host port */
    uint64_t mads_received = 0;     /* read from the host port */
    uint64_t mads_delivered = 0;    /* host port -> MAD_RECV */
    std::array<uint64_t, kDropCount> tx_drops{}; /* MAD_SEND refused */
    std::array<uint64_t, kDropCount> rx_drops{}; /* host MAD not delivered */
};

class Mux {
public:
    Mux(HostPort &port, Config cfg);
    ~Mux();
    Mux(const Mux &) = delete;
    Mux &operator=(const Mux &) = delete;

    /*
     * Creates the epoll set, watches the port and reads the state file
     * (a bad one is logged and ignored).  @returns false + @err.
     */
    bool init(std::string *err);
    /* Accepts clients from listening socket @fd (the caller keeps it). */
    bool set_listener(int fd, std::string *err);
    /* Calls @handler when @fd polls readable (the caller keeps @fd). */
    bool watch(int fd, std::function<void()> handler, std::string *err);

    /*
     * Takes connected socket @fd from @peer.  @returns the client's id, or
     * 0 when refused (too many clients, not allowed; @fd closed then).
     */
    uint64_t add_client(int fd, const Peer &peer);

    /*
     * Waits up to @timeout_ms (-1: forever) for events and handles them;
     * returns earlier when a client's timeout or throttle ends.
     * @returns false once the host port has failed: the daemon must exit.
     */
    bool poll(int timeout_ms);

    size_t client_count() const { return clients_.size(); }
    size_t reservation_count() const { return reserved_.size(); }
    const Stats &stats() const { return stats_; }
    /* Logs the counters (SIGUSR1). */
    void log_stats() const;

private:
    struct Client;

    uint64_t now() const;
    void on_listener();
    void on_client(Client &c, uint32_t events);
    void on_port_mads(uint32_t events);
    void read_client(Client &c);
    void parse(Client &c);
    bool take_gid_token(Client &c);
    uint64_t close_at(const Client &c, const char **why) const;
    uint64_t next_deadline() const;
    void expire();
    size_t peer_clients(const Peer &peer, bool by_pid) const;
    void handle(Client &c, uint16_t type, uint32_t seq, const uint8_t *p);
    void on_hello(Client &c, const uint8_t *p);
    void on_old_hello(Client &c, uint16_t version);
    bool read_hello_identity(Client &c, const rdmacm_mux_hello &h);
    void on_gid(Client &c, uint16_t type, uint32_t seq, const uint8_t *p);
    uint32_t may_claim(Client &c, const Gid &gid);
    void release(Client &c, const Gid &gid);
    void on_mad_send(Client &c, const uint8_t *p);
    void route(const ReceivedMad &m);
    void drop_tx(Client &c, Drop d);
    void drop_rx(Drop d, const std::string &detail);

    bool enqueue(Client &c, uint16_t type, const void *payload, size_t len,
                 bool is_mad, uint16_t version = RDMACM_MUX_VERSION);
    void flush(Client &c);
    void update_interest(Client &c);
    void violation(Client &c, const std::string &what);
    void close_client(Client &c, Level level, const std::string &why);
    void reap();

    uint64_t wall() const;
    std::string state_path() const;
    void load_state();
    void save_state();

    bool refresh_gids();
    bool may_refresh_on_miss();
    const HostGid *host_gid_at(uint32_t index);
    std::optional<uint32_t> host_index_of(const Gid &gid);

    HostPort &port_;
    Config cfg_;
    int epfd_ = -1;
    int listen_fd_ = -1;
    std::vector<std::pair<int, std::function<void()>>> watches_;
    std::map<uint64_t, std::unique_ptr<Client>> clients_;
    uint64_t next_id_ = 1;
    std::map<Gid, uint64_t> claims_; /* GID -> owning client id */
    struct Reservation {
        std::string owner;
        uint64_t until_ns; /* now()'s clock */
    };
    std::map<Gid, Reservation> reserved_; /* released, not yet free */
    bool state_dirty_ = false; /* claims_/reserved_ changed since saved */
    uint64_t last_save_ns_ = 0;
    RateLimit state_log_;
    std::vector<HostGid> host_gids_;
    bool gids_valid_ = false;
    uint64_t gids_read_ns_ = 0;
    bool port_failed_ = false;
    Stats stats_;
    std::array<RateLimit, kDropCount> tx_log_;
    std::array<RateLimit, kDropCount> rx_log_;
    RateLimit refuse_log_;
    /* Connects, HELLOs and closes: any allowed peer can make them. */
    RateLimit conn_log_{100000000, 64};
};

} // namespace rdmacm_mux

#endif /* RDMACM_MUX_MUX_H */

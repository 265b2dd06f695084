/*
 * rdmacm-mux: command line, the listening socket, signals; then Mux::poll
 * until SIGINT/SIGTERM or the host port fails.  docs/tools/rdmacm-mux.rst.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <getopt.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>

#include "log.h"
#include "mux.h"
#include "umad_port.h"
#include "unix_socket.h"

using namespace rdmacm_mux;

namespace {

const char kUsage[] =
    "usage: rdmacm-mux --ibdev DEV [options]\n"
    "Owns the CM MAD agent of one host RDMA port and passes CM MADs\n"
    "between it and the virtio-rdma devices (backend=ibverbs) that connect\n"
    "to its socket.\n"
    "\n"
    "  -d, --ibdev DEV        host RDMA device (required)\n"
    "  -p, --ibport N         its port (default 1)\n"
    "  -s, --socket PATH      UNIX socket (default\n"
    "                         /run/rdmacm-mux-DEV-N.sock), mode 0660\n"
    "  -g, --group NAME       the socket's group (default: the mux's)\n"
    "      --allow-uid UID    accept clients with this uid (repeatable)\n"
    "      --allow-gid GID    ... or this group (repeatable); with neither,\n"
    "                         whoever can open the socket\n"
    "      --max-clients N    connected clients (default 64)\n"
    "      --max-per-pid N    ... from one process (default 8; 0: no limit)\n"
    "      --max-per-uid N    ... from one user (default 0: no limit)\n"
    "      --max-gids N       GIDs one client may claim (default 16)\n"
    "      --queue N          MADs queued per client (default 64)\n"
    "      --rate N           MADs a client may send per second (default 100)\n"
    "      --burst N          ... after a burst of N (default 32)\n"
    "      --gid-rate N       GID requests a client may make per second\n"
    "                         (default 20) ...\n"
    "      --gid-burst N      ... after a burst of N (default 32)\n"
    "      --hello-timeout S  close a client without HELLO after S seconds\n"
    "                         (default 10; 0: never)\n"
    "      --partial-timeout S  ... that leaves a message unfinished for S\n"
    "                         seconds (default 10; 0: never)\n"
    "      --idle-timeout S   ... that holds no GID and is silent for S\n"
    "                         seconds (default 600; 0: never)\n"
    "      --open-claims      a client whose HELLO has no allow-list may\n"
    "                         claim any free GID (default: none at all)\n"
    "      --claim-grace S    a released GID stays reserved for its owner\n"
    "                         for S seconds (default 600; 0: not at all)\n"
    "      --max-reservations N  at most N at once (default 4096)\n"
    "      --state-dir DIR    where claims outlive the mux (default\n"
    "                         /run/rdmacm-mux; made 0700 if missing)\n"
    "  -v, --verbose          log debug lines too\n"
    "  -h, --help             this text\n"
    "\n"
    "SIGUSR1 logs the counters; SIGINT/SIGTERM stop.\n";

enum { kOptAllowUid = 256, kOptAllowGid, kOptMaxClients, kOptMaxGids,
       kOptQueue, kOptRate, kOptBurst, kOptMaxPerPid, kOptMaxPerUid,
       kOptGidRate, kOptGidBurst, kOptHelloTimeout, kOptPartialTimeout,
       kOptIdleTimeout, kOptOpenClaims, kOptClaimGrace, kOptMaxReservations,
       kOptStateDir };

const option kOptions[] = {
    {"ibdev", required_argument, nullptr, 'd'},
    {"ibport", required_argument, nullptr, 'p'},
    {"socket", required_argument, nullptr, 's'},
    {"group", required_argument, nullptr, 'g'},
    {"allow-uid", required_argument, nullptr, kOptAllowUid},
    {"allow-gid", required_argument, nullptr, kOptAllowGid},
    {"max-clients", required_argument, nullptr, kOptMaxClients},
    {"max-gids", required_argument, nullptr, kOptMaxGids},
    {"queue", required_argument, nullptr, kOptQueue},
    {"rate", required_argument, nullptr, kOptRate},
    {"burst", required_argument, nullptr, kOptBurst},
    {"max-per-pid", required_argument, nullptr, kOptMaxPerPid},
    {"max-per-uid", required_argument, nullptr, kOptMaxPerUid},
    {"gid-rate", required_argument, nullptr, kOptGidRate},
    {"gid-burst", required_argument, nullptr, kOptGidBurst},
    {"hello-timeout", required_argument, nullptr, kOptHelloTimeout},
    {"partial-timeout", required_argument, nullptr, kOptPartialTimeout},
    {"idle-timeout", required_argument, nullptr, kOptIdleTimeout},
    {"open-claims", no_argument, nullptr, kOptOpenClaims},
    {"claim-grace", required_argument, nullptr, kOptClaimGrace},
    {"max-reservations", required_argument, nullptr, kOptMaxReservations},
    {"state-dir", required_argument, nullptr, kOptStateDir},
    {"verbose", no_argument, nullptr, 'v'},
    {"help", no_argument, nullptr, 'h'},
    {nullptr, 0, nullptr, 0},
};

/* A number in [@min, @max], or exit with a message naming @opt. */
unsigned long number(const char *opt, const char *arg, unsigned long min,
                     unsigned long max)
{
    char *end;
    errno = 0;
    unsigned long v = std::strtoul(arg, &end, 10);
    if (errno || end == arg || *end || arg[0] == '-' || v < min || v > max) {
        log(Level::error, std::string("--") + opt + " " + arg +
                              ": not a number from " + std::to_string(min) +
                              " to " + std::to_string(max));
        std::exit(2);
    }
    return v;
}

/* Whole seconds (up to @max; 0: off) in ns. */
uint64_t seconds(const char *opt, const char *arg, unsigned long max = 86400)
{
    return number(opt, arg, 0, max) * 1000000000ull;
}

/*
 * The state directory: made (0700) if missing, else it must be a directory
 * of ours that nobody else can write -- the mux replaces its file there by
 * rename.  @returns false with @err.
 */
bool state_dir_ok(const std::string &dir, std::string *err)
{
    if (dir.empty() || dir[0] != '/') {
        *err = "--state-dir " + dir + ": not an absolute path";
        return false;
    }
    if (mkdir(dir.c_str(), 0700) && errno != EEXIST) {
        *err = "--state-dir " + dir + ": " + std::strerror(errno);
        return false;
    }
    struct stat st;
    if (lstat(dir.c_str(), &st)) {
        *err = "--state-dir " + dir + ": " + std::strerror(errno);
        return false;
    }
    if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
        (st.st_mode & (S_IWGRP | S_IWOTH))) {
        *err = "--state-dir " + dir + ": must be a directory (not a "
               "symlink) of the mux's user that only it can write";
        return false;
    }
    return true;
}

} // namespace

int main(int argc, char **argv)
{
    std::string ibdev, sock_path, group;
    uint32_t ibport = 1;
    Config cfg;
    int c;
    while ((c = getopt_long(argc, argv, "d:p:s:g:vh", kOptions, nullptr)) !=
           -1) {
        switch (c) {
        case 'd':
            ibdev = optarg;
            break;
        case 'p':
            ibport = static_cast<uint32_t>(number("ibport", optarg, 1, 255));
            break;
        case 's':
            sock_path = optarg;
            break;
        case 'g':
            group = optarg;
            break;
        case kOptAllowUid:
            cfg.allow_uids.push_back(static_cast<uid_t>(
                number("allow-uid", optarg, 0, UINT_MAX - 1)));
            break;
        case kOptAllowGid:
            cfg.allow_gids.push_back(static_cast<gid_t>(
                number("allow-gid", optarg, 0, UINT_MAX - 1)));
            break;
        case kOptMaxClients:
            cfg.max_clients = number("max-clients", optarg, 1, 4096);
            break;
        case kOptMaxGids:
            cfg.max_gids = number("max-gids", optarg, 1, 1024);
            break;
        case kOptQueue:
            cfg.queue_mads = number("queue", optarg, 1, 4096);
            break;
        case kOptRate:
            cfg.mad_rate =
                static_cast<uint32_t>(number("rate", optarg, 1, 1000000));
            break;
        case kOptBurst:
            cfg.mad_burst =
                static_cast<uint32_t>(number("burst", optarg, 1, 1000000));
            break;
        case kOptMaxPerPid:
            cfg.max_per_pid = number("max-per-pid", optarg, 0, 4096);
            break;
        case kOptMaxPerUid:
            cfg.max_per_uid = number("max-per-uid", optarg, 0, 4096);
            break;
        case kOptGidRate:
            cfg.gid_rate =
                static_cast<uint32_t>(number("gid-rate", optarg, 1, 1000000));
            break;
        case kOptGidBurst:
            cfg.gid_burst = static_cast<uint32_t>(
                number("gid-burst", optarg, 1, 1000000));
            break;
        case kOptHelloTimeout:
            cfg.hello_timeout_ns = seconds("hello-timeout", optarg);
            break;
        case kOptPartialTimeout:
            cfg.partial_timeout_ns = seconds("partial-timeout", optarg);
            break;
        case kOptIdleTimeout:
            cfg.idle_timeout_ns = seconds("idle-timeout", optarg);
            break;
        case kOptOpenClaims:
            cfg.open_claims = true;
            break;
        case kOptClaimGrace:
            cfg.claim_grace_ns = seconds("claim-grace", optarg, 7 * 86400);
            break;
        case kOptMaxReservations:
            cfg.max_reservations = number("max-reservations", optarg, 1, 65536);
            break;
        case kOptStateDir:
            cfg.state_dir = optarg;
            break;
        case 'v':
            set_log_level(Level::debug);
            break;
        case 'h':
            std::fputs(kUsage, stdout);
            return 0;
        default:
            std::fputs(kUsage, stderr);
            return 2;
        }
    }
    if (optind != argc || ibdev.empty()) {
        std::fputs(kUsage, stderr);
        return 2;
    }
    if (sock_path.empty()) {
        sock_path = "/run/rdmacm-mux-" + ibdev + "-" + std::to_string(ibport) +
                    ".sock";
    }
    if (cfg.state_dir.empty()) {
        cfg.state_dir = "/run/rdmacm-mux";
    }

    /* Signals arrive as reads of a signalfd, in the loop. */
    signal(SIGPIPE, SIG_IGN);
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGHUP);
    sigaddset(&mask, SIGUSR1);
    int sfd = -1;
    if (sigprocmask(SIG_BLOCK, &mask, nullptr) ||
        (sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC)) < 0) {
        log(Level::error, std::string("signalfd: ") + std::strerror(errno));
        return 1;
    }

    std::string err;
    if (cfg.claim_grace_ns && !state_dir_ok(cfg.state_dir, &err)) {
        log(Level::error, err);
        return 1;
    }
    if (!socket_path_free(sock_path, &err)) {
        log(Level::error, err);
        return 1;
    }
    std::unique_ptr<UmadPort> port = UmadPort::open(ibdev, ibport, &err);
    if (!port) {
        log(Level::error, err);
        return 1;
    }
    Listener listener;
    if (!listen_at(sock_path, group, &listener, &err)) {
        log(Level::error, err);
        return 1;
    }
    int lfd = listener.fd;

    bool stop = false;
    int status = 0;
    {
        Mux mux(*port, cfg);
        auto on_signal = [&] {
            signalfd_siginfo si;
            while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
                if (si.ssi_signo == SIGUSR1) {
                    mux.log_stats();
                } else if (si.ssi_signo != SIGHUP) {
                    int signo = static_cast<int>(si.ssi_signo);
                    log(Level::info,
                        std::string("stopping on ") + strsignal(signo));
                    stop = true;
                }
            }
        };
        if (!mux.init(&err) || !mux.set_listener(lfd, &err) ||
            !mux.watch(sfd, on_signal, &err)) {
            log(Level::error, err);
            status = 1;
        } else {
            log(Level::info, "serving " + ibdev + " port " +
                                 std::to_string(ibport) + " on " + sock_path);
            while (!stop && mux.poll(-1)) {
            }
            if (!stop) {
                status = 1;
            }
            mux.log_stats();
        }
    }
    /* Remove the socket only if it is still the one we bound. */
    struct stat now;
    if (lstat(sock_path.c_str(), &now) == 0 && now.st_ino == listener.ino &&
        now.st_dev == listener.dev) {
        unlink(sock_path.c_str());
    }
    close(lfd);
    close(sfd);
    return status;
}

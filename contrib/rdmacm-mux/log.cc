/*
 * rdmacm-mux: log lines (log.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "log.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace rdmacm_mux {

namespace {

const char *level_name(Level level)
{
    switch (level) {
    case Level::error:
        return "error";
    case Level::warning:
        return "warning";
    case Level::info:
        return "info";
    case Level::debug:
        return "debug";
    }
    return "?";
}

uint64_t dropped_lines = 0; /* since the last line that went out */
uint64_t total_dropped = 0;
bool torn = false;          /* the last line went out in part */

/*
 * One write to stderr that never waits: the loop must not stall behind a
 * journal or a pipe that does not keep up.  A socket (the journal, under
 * systemd) takes MSG_DONTWAIT; anything else gets O_NONBLOCK for this one
 * write only, as its file status flags are shared with whoever else holds
 * the file (the shell's terminal).  @returns what write(2) does.
 */
ssize_t write_nowait(const std::string &s)
{
    ssize_t n = send(STDERR_FILENO, s.data(), s.size(),
                     MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n >= 0 || errno != ENOTSOCK) {
        return n;
    }
    int fl = fcntl(STDERR_FILENO, F_GETFL);
    if (fl < 0) {
        return -1;
    }
    if (!(fl & O_NONBLOCK)) {
        fcntl(STDERR_FILENO, F_SETFL, fl | O_NONBLOCK);
    }
    n = write(STDERR_FILENO, s.data(), s.size());
    int saved = errno;
    if (!(fl & O_NONBLOCK)) {
        fcntl(STDERR_FILENO, F_SETFL, fl);
    }
    errno = saved;
    return n;
}

void write_stderr(Level level, std::string_view text)
{
    std::string line;
    if (torn) {
        line = "\n"; /* end the cut line */
    }
    if (dropped_lines) {
        line += "rdmacm-mux: warning: " + std::to_string(dropped_lines) +
                (dropped_lines == 1 ? " log line" : " log lines") +
                " dropped: stderr was full\n";
    }
    line += std::string("rdmacm-mux: ") + level_name(level) + ": " +
            std::string(text) + "\n";
    ssize_t n = write_nowait(line);
    if (n <= 0) {
        /* Nothing went out (EAGAIN): the notice says so next time. */
        dropped_lines++;
        total_dropped++;
        return;
    }
    dropped_lines = 0;
    torn = static_cast<size_t>(n) < line.size();
    if (torn) {
        dropped_lines++;
        total_dropped++;
    }
}

LogSink &sink()
{
    static LogSink s = write_stderr;
    return s;
}

Level max_level = Level::info;

} // namespace

void set_log_sink(LogSink s)
{
    sink() = s ? std::move(s) : LogSink(write_stderr);
}

void set_log_level(Level max)
{
    max_level = max;
}

void log(Level level, std::string_view text)
{
    if (level <= max_level) {
        sink()(level, text);
    }
}

uint64_t log_lines_dropped()
{
    return total_dropped;
}

std::string escape(std::string_view s)
{
    static constexpr char hex[] = "0123456789abcdef";
    std::string out;
    out.reserve(s.size());
    for (char ch : s) {
        auto b = static_cast<unsigned char>(ch);
        if (b >= 0x20 && b < 0x7f && b != '\\') {
            out += ch;
        } else {
            out += "\\x";
            out += hex[b >> 4];
            out += hex[b & 15];
        }
    }
    return out;
}

void RateLimit::log(uint64_t now_ns, Level level, const std::string &text)
{
    if (!started_) {
        started_ = true;
        refill_ns_ = now_ns;
    } else if (now_ns - refill_ns_ >= interval_ns_) {
        uint64_t earned = (now_ns - refill_ns_) / interval_ns_;
        if (earned >= burst_ - tokens_) {
            tokens_ = burst_;
            refill_ns_ = now_ns;
        } else {
            tokens_ += static_cast<uint32_t>(earned);
            refill_ns_ += earned * interval_ns_;
        }
    }
    if (!tokens_) {
        held_++;
        return;
    }
    tokens_--;
    if (held_) {
        rdmacm_mux::log(level, text + " (and " + std::to_string(held_) +
                                   " more like it held back)");
    } else {
        rdmacm_mux::log(level, text);
    }
    held_ = 0;
}

} // namespace rdmacm_mux

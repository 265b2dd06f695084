/*
 * rdmacm-mux: log lines (log.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "log.h"

#include <cstdio>

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

void write_stderr(Level level, std::string_view text)
{
    std::string line = std::string("rdmacm-mux: ") + level_name(level) +
                       ": " + std::string(text) + "\n";
    std::fwrite(line.data(), 1, line.size(), stderr);
    std::fflush(stderr);
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

void RateLimit::log(uint64_t now_ns, Level level, const std::string &text)
{
    if (logged_ && now_ns - last_ns_ < interval_ns_) {
        held_++;
        return;
    }
    if (held_) {
        rdmacm_mux::log(level, text + " (and " + std::to_string(held_) +
                                   " more like it held back)");
    } else {
        rdmacm_mux::log(level, text);
    }
    logged_ = true;
    last_ns_ = now_ns;
    held_ = 0;
}

} // namespace rdmacm_mux

/*
 * rdmacm-mux: log lines to stderr (the journal, under systemd), and a
 * limiter for the lines a peer can provoke at will.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef RDMACM_MUX_LOG_H
#define RDMACM_MUX_LOG_H

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace rdmacm_mux {

enum class Level { error, warning, info, debug };

/* Where log lines go; the default writes "rdmacm-mux: <level>: <text>\n". */
using LogSink = std::function<void(Level, std::string_view)>;
void set_log_sink(LogSink sink);
/* Lines above @max (default info) are not written. */
void set_log_level(Level max);

void log(Level level, std::string_view text);

/* Lines the default sink dropped because stderr would have blocked. */
uint64_t log_lines_dropped();

/* @s with every byte outside printable ASCII, and '\\', as \xNN: a
 * client's string fit for a log line. */
std::string escape(std::string_view s);

/*
 * At most @burst lines at once for one cause, then one per @interval_ns
 * (a token bucket of lines); the next line that gets through says how many
 * were held back in between.
 */
class RateLimit {
public:
    explicit RateLimit(uint64_t interval_ns = 1000000000, uint32_t burst = 1) :
        interval_ns_(interval_ns), burst_(burst ? burst : 1),
        tokens_(burst_) {}
    void log(uint64_t now_ns, Level level, const std::string &text);

private:
    uint64_t interval_ns_;
    uint32_t burst_;
    uint32_t tokens_;
    uint64_t refill_ns_ = 0; /* when tokens_ was last topped up */
    bool started_ = false;
    uint64_t held_ = 0;
};

} // namespace rdmacm_mux

#endif /* RDMACM_MUX_LOG_H */

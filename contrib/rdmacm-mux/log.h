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

/*
 * At most one line per @interval_ns for one cause; the next line that gets
 * through says how many were held back in between.
 */
class RateLimit {
public:
    explicit RateLimit(uint64_t interval_ns = 1000000000) :
        interval_ns_(interval_ns) {}
    void log(uint64_t now_ns, Level level, const std::string &text);

private:
    uint64_t interval_ns_;
    uint64_t last_ns_ = 0;
    bool logged_ = false;
    uint64_t held_ = 0;
};

} // namespace rdmacm_mux

#endif /* RDMACM_MUX_LOG_H */

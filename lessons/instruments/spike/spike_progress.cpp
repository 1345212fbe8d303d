#include "lessons/instruments/spike/spike_progress.hpp"

#include <cmath>
#include <cstdio>

namespace {

double seconds(std::chrono::steady_clock::duration d) {
    return std::chrono::duration<double>(d).count();
}

std::string number(double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%.15g", value);
    return text;
}

} // namespace

std::string status_mix(const std::map<int, long>& by_status) {
    std::string mix;
    auto add = [&](int status, long rows) {
        mix += (mix.empty() ? "" : ", ") + std::to_string(status) + ": " + std::to_string(rows);
    };
    for (const auto& [status, rows] : by_status)
        if (status >= 0) add(status, rows);
    for (auto it = by_status.rbegin(); it != by_status.rend(); ++it)
        if (it->first < 0) add(it->first, it->second);
    return mix.empty() ? "none yet" : mix;
}

std::string progress_line(std::chrono::steady_clock::duration elapsed,
                          std::chrono::steady_clock::duration planned, const SpikeCounts& counts,
                          const std::optional<ProbeSample>& probe) {
    char head[96];
    if (elapsed < planned)
        std::snprintf(head, sizeof head, "%.0fs of %.0fs, ETA %.0fs", seconds(elapsed),
                      seconds(planned), std::ceil(seconds(planned - elapsed)));
    else // attempts still in flight may take up to --timeout each
        std::snprintf(head, sizeof head,
                      "%.0fs, no new attempt after %.0fs, waiting for the last answers",
                      seconds(elapsed), seconds(planned));
    std::string line = std::string(head) + " | in flight " + std::to_string(counts.in_flight) +
                       " | " + std::to_string(counts.rows) + " rows (" +
                       status_mix(counts.by_status) + ")";
    if (probe)
        line += " | server: inflight " + number(probe->inflight) + ", connections " +
                number(probe->connections);
    if (probe && probe->pool_pending >= 0) line += ", pool pending " + number(probe->pool_pending);
    return line;
}

// The words a running spike prints about itself.
#pragma once

#include "lessons/instruments/spike/probe.hpp"
#include "lessons/instruments/spike/spike_log.hpp"

#include <chrono>
#include <map>
#include <optional>
#include <string>

// "200: 5000, 503: 12, -1: 3": HTTP statuses in ascending order, then the sentinels -1, -2 ...
std::string status_mix(const std::map<int, long>& by_status);

// One line while the spike runs, e.g.
//   "35s of 110s, ETA 75s | in flight 6998 | 10234 rows (200: 10000, -1: 234) | server: inflight
//   200, connections 7000, pool pending 190"
// After ramp + hold it says "111s, no new attempt after 110s, waiting for the last answers"
// instead of the ETA. `probe` adds the server part (pool pending only when the server reports
// it).
std::string progress_line(std::chrono::steady_clock::duration elapsed,
                          std::chrono::steady_clock::duration planned, const SpikeCounts& counts,
                          const std::optional<ProbeSample>& probe);

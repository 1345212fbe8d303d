#include "spike_report.hpp"

std::vector<SpikeRow> read_spike_csv(std::istream& in) {
    // TODO(ex4) task 1: check the header, then read `ts,status,latency_ms` line by line; throw
    // SpikeCsvError("line N: ...") for anything else.
    (void)in;
    return {};
}

SpikeReport summarize(const std::vector<SpikeRow>& rows, double warmup_ms) {
    SpikeReport report;
    // TODO(ex4) task 2: count the attempts that started at or after the warmup, by status, and
    // the successes among them (2xx; a sentinel is never a success).
    // TODO(ex4) task 3: the window, from the warmup to the latest end (ts + latency) of those
    // attempts, and the goodput: successes per second of it.
    // TODO(ex4) task 4: p50 and p95 of the successes' latencies, nearest-rank.
    (void)rows;
    (void)warmup_ms;
    return report;
}

std::string status_name(int status) {
    // TODO(ex4) task 5: "200" for a status, a name for a sentinel.
    (void)status;
    return "";
}

// A finished spike read back from its two CSVs, for the tests that check a spike's shape: rows by
// status, latencies, and the most the probe saw.
#pragma once

#include <map>
#include <string>
#include <vector>

struct SpikeShape {
    std::map<int, long> by_status;                // rows per status or sentinel
    std::map<int, std::vector<double>> latencies; // ms per status, sorted
    long rows = 0;
    double seconds = 0; // ramp + hold
    double max_inflight = -1, max_connections = -1, max_pool_pending = -1;
    double max_sent_late_ms = -1; // an open loop's: the longest a sent request waited to go out
    long probe_samples = 0;

    long count(int status) const;
    double median_ms(int status) const; // -1 when there is none
    std::string describe() const;       // the story of the spike, for STEP
};

// Reads a spike's CSV (ts,status,latency_ms, or an open loop's with sent_ms) and its probe's CSV
// (ts,inflight,connections,pool_pending) of a spike whose ramp + hold was `seconds`. Throws
// std::runtime_error when a file is not such a CSV.
SpikeShape read_spike_shape(const std::string& csv, const std::string& probe_csv, double seconds);

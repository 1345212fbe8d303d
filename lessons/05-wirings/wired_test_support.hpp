// Helpers for the tests of lessons 05 and 06 that run the real server on a real PostgreSQL:
// its management port, its --print-config, and a short spike against it with its CSVs read back.
#pragma once

#include "test_support.hpp"

#include <map>
#include <string>
#include <vector>

// The management port a server started with --management-port 0 announced in its log
// ("management on 127.0.0.1:P"). Throws std::runtime_error when it did not.
int management_port_of(const ServerProcess& server);

// `binary --print-config args...` as key -> value. Throws std::runtime_error when it fails.
std::map<std::string, std::string> print_config(const std::string& binary,
                                                const std::vector<std::string>& args);

// GET `path` on the management port: status and body (status 0 when there was no answer).
struct Answer {
    int status = 0;
    std::string body;
};
Answer management_get(int port, const std::string& path);

struct SpikeShape {
    std::map<int, long> by_status;                // rows per status or sentinel
    std::map<int, std::vector<double>> latencies; // ms per status, sorted
    long rows = 0;
    double seconds = 0; // ramp + hold
    double max_inflight = -1, max_connections = -1, max_pool_pending = -1;
    long probe_samples = 0;

    long count(int status) const;
    double median_ms(int status) const; // -1 when there is none
    std::string describe() const;       // the story of the spike, for STEP
};

struct SpikePlan {
    int workers = 1000;
    double ramp_s = 1;
    double hold_s = 6;
    double timeout_s = 30;
    double backoff_s = 2;
};

// Runs the `spike` program against the server's GET /work, with its probe on the management
// port, and reads both CSVs back (kept in the test-logs directory under `name`).
SpikeShape run_spike(const ServerProcess& server, const std::string& name, const SpikePlan& plan);

// Reads a spike's CSV and its probe's CSV (ramp + hold = `seconds`), as run_spike does; the demo's
// test reads its runs with it. Throws std::runtime_error when a file is not such a CSV.
SpikeShape read_spike_shape(const std::string& csv, const std::string& probe_csv, double seconds);

// The probe: what the server says about itself, once a second, beside the spike's own rows.
//
// A plain thread (not a fiber: it must keep its clock however busy the carriers are) asks the
// server's management /metrics for its Prometheus text once a second and writes one CSV row
// per sample, `ts,inflight,connections,pool_pending`:
//   ts            when the sample was taken, in ms since the spike began (about 0, 1000, 2000 ...)
//   inflight      http_server_requests_inflight: requests inside the app
//   connections   connector_connections_current: open connections, queued ones included
//   pool_pending  pool_connections_pending: requests waiting for a database connection
// -1 where a sample failed: no answer within a second (server down or hung), an answer other
// than 200, or the metric missing from it (a server without a pool has no pool_pending; only
// a missing inflight or connections counts the sample as failed). Each sample opens a fresh
// connection, so a restarted server is simply probed again.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

struct ProbeSample {
    double ts_ms = 0;
    double inflight = -1; // -1: failed
    double connections = -1;
    double pool_pending = -1;
};

class Probe {
public:
    using Clock = std::chrono::steady_clock;

    // Creates `path` (or throws std::runtime_error), writes the header and starts sampling `url`
    // at `start`, then once a second. `url` must be valid (see check_spike_options).
    Probe(const std::string& url, const std::string& path, Clock::time_point start);
    ~Probe();
    Probe(const Probe&) = delete;
    Probe& operator=(const Probe&) = delete;

    // Takes no more samples and closes the file (it is flushed after every row).
    void stop();

    long samples() const;
    long failed() const; // samples with at least one -1
    std::optional<ProbeSample> last() const;
    const std::string& path() const { return path_; }

private:
    void run();
    ProbeSample sample(Clock::time_point at) const;

    std::string host_, path_, metrics_path_;
    int port_ = 0;
    Clock::time_point start_;
    std::FILE* file_ = nullptr;

    mutable std::mutex mutex_;
    std::condition_variable wake_;
    bool stopping_ = false;
    long samples_ = 0;
    long failed_ = 0;
    std::optional<ProbeSample> last_;
    std::thread thread_;
};

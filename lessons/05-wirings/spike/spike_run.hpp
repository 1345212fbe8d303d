// A spike: a closed loop of workers against one URL, every attempt a row in a CSV.
//
//   0 ............ ramp ..................... ramp + hold ........ (at most --timeout)
//   worker i starts at ramp * i / workers;    no attempt starts     attempts in flight
//   then every worker asks, again and again   after this line       finish and get rows
//
// A worker is a fiber with its own kept-alive connection. It attempts; after an answer other
// than 200 (or a sentinel) it waits the backoff; it repeats until ramp + hold. Closed loop: a
// worker never has more than one attempt outstanding, so the server's speed sets the pace, the
// way a crowd of users who wait for their page would. Nothing is random: the same flags give
// the same schedule every run.
#pragma once

#include "carrier.hpp"
#include "probe.hpp"
#include "spike_attempt.hpp"
#include "spike_log.hpp"
#include "spike_options.hpp"

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

// When worker `worker` of `workers` starts, after the spike began: ramp * worker / workers.
std::chrono::microseconds worker_offset(int worker, int workers, std::chrono::milliseconds ramp);

class Spike {
public:
    using Clock = std::chrono::steady_clock;

    // Opens the CSV (and the probe's, with a probe URL) and starts the spike right away.
    // Throws std::runtime_error when a file cannot be written. `options` must have passed
    // check_spike_options.
    explicit Spike(const SpikeOptions& options);
    // Waits for every worker, which takes at most --timeout after the hold even when interrupted.
    ~Spike();
    Spike(const Spike&) = delete;
    Spike& operator=(const Spike&) = delete;

    // Waits up to `timeout` for the spike to end by itself. True once every worker has finished;
    // the CSVs are then complete and closed. Throws std::runtime_error if a write failed.
    bool wait_for(std::chrono::milliseconds timeout);

    // Stops early: every attempt in flight gets a -4 row now, no new attempt starts, and the
    // CSVs are closed. Returns how many attempts were in flight. The workers still in an attempt
    // run on until it ends (their rows are already written), so a program that wants to exit at
    // once should do so without destroying this object.
    int interrupt();

    SpikeCounts counts() const { return log_.counts(); }
    std::optional<ProbeSample> last_probe() const;
    long probe_samples() const;
    long probe_failures() const;
    Clock::duration elapsed() const { return Clock::now() - start_; }
    // ramp + hold: when the last attempt may start.
    Clock::duration planned() const { return end_ - start_; }

private:
    void work(int worker);
    void worker_done();
    void close_files();

    SpikeOptions options_;
    SpikeTarget target_;
    Clock::time_point start_;
    Clock::time_point end_;
    SpikeLog log_;
    std::unique_ptr<Probe> probe_;

    std::mutex done_mutex_; // held only to count and notify, also by fibers
    std::condition_variable all_done_;
    int workers_left_;
    bool files_closed_ = false;

    // Last: the carriers stop (and their fibers, which use everything above, end) first.
    std::vector<std::unique_ptr<Carrier>> carriers_;
};

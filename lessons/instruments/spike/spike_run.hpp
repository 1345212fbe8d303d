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
//
// With a rate (--rate, needs --ramp 0) the spike is an OPEN loop instead: requests arrive on a
// fixed schedule, the way users who do not wait for each other would, however slow the server.
//
//   0 ........................................ hold ........ (at most --timeout)
//   request i is intended at i / rate s,       no request    requests in flight
//   computed from i, never from a clock        after this    finish and get rows
//
// The workers are the connections that carry the requests, and so the most requests outstanding
// at once: each takes the next request of the schedule, waits for its intended start, sends it,
// and takes the next. A request that finds every worker busy is sent as soon as one is free,
// late, and its latency still counts from its intended start: the wait is part of what a user
// arriving then would have seen (measuring from the send would hide it: coordinated omission).
// Every deadline counts from the intended start too, so no request waits for a worker longer
// than --timeout; one found past it, or with less than 10 ms of it left (spike_run.cpp), is not
// sent (a -5 row). A closed loop whose server slows
// sends fewer requests; an open loop sends every scheduled one (or writes why not).
#pragma once

#include "lessons/02-fibers/carrier.hpp"
#include "lessons/instruments/spike/probe.hpp"
#include "lessons/instruments/spike/spike_attempt.hpp"
#include "lessons/instruments/spike/spike_log.hpp"
#include "lessons/instruments/spike/spike_options.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

// When worker `worker` of `workers` starts, after the spike began: ramp * worker / workers.
std::chrono::microseconds worker_offset(int worker, int workers, std::chrono::milliseconds ramp);

// When an open loop's request `request` is intended, after the spike began: request / rate s,
// rounded down to the nanosecond. Computed from the request's number alone, so however late
// one request goes out, the next one's time does not move.
std::chrono::nanoseconds intended_offset(long long request, int rate);

// How many requests an open loop at `rate` schedules in `hold`: every one intended before it.
long long scheduled_requests(int rate, std::chrono::milliseconds hold);

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
    // An open loop's requests: every one intended before the end of --hold (0 in a closed loop).
    long long scheduled() const { return scheduled_; }
    // ramp + hold: when the last attempt may start (an open loop's last is intended before it).
    Clock::duration planned() const { return end_ - start_; }

private:
    void work(int worker);
    void keep_schedule(int worker); // an open loop's worker
    // Makes one attempt intended at `intended`, begun at `sent`, and writes its row; false if
    // the spike was interrupted (then nothing was sent).
    bool attempt_with_row(int worker, std::unique_ptr<HttpClientConnection>& connection,
                          Clock::time_point intended, Clock::time_point sent, int& status);
    void worker_done();
    void close_files();

    SpikeOptions options_;
    SpikeTarget target_;
    Clock::time_point start_;
    Clock::time_point end_;
    SpikeLog log_;
    std::unique_ptr<Probe> probe_;
    // An open loop's schedule: how many requests, and the next one a free worker takes.
    long long scheduled_ = 0;
    std::atomic<long long> next_request_{0};

    std::mutex done_mutex_; // held only to count and notify, also by fibers
    std::condition_variable all_done_;
    int workers_left_;
    bool files_closed_ = false;

    // Last: the carriers stop (and their fibers, which use everything above, end) first.
    std::vector<std::unique_ptr<Carrier>> carriers_;
};

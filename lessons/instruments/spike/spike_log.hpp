// The spike's ledger: exactly one CSV row per attempt, written by one writer.
//
// Workers (fibers, on carrier threads) call begin() when an attempt starts and finish() when it
// ends. finish() only queues the row; a writer thread appends queued rows to the CSV and
// flushes every quarter second, so rows never interleave and a crash of the spike itself loses
// at most the last quarter second.
//
// Exactly one row per attempt: begin() registers the attempt as in flight; finish() turns it
// into a row; interrupt() turns every attempt still in flight into a -4 row at once (the spike
// stops without waiting for them) and refuses new attempts.
//
// The CSV: a header, then `ts,status,latency_ms` per attempt, in the order attempts ended.
//   ts          when the attempt STARTED, in ms since the spike began, so a figure of latency
//               over time puts each request where it was sent
//   status      the HTTP status, or a sentinel (see spike_attempt.hpp)
//   latency_ms  from the start to the answer (or to the failure), with fractions
// An open loop's CSV (spike_run.hpp) has a fourth column, `ts,status,latency_ms,sent_ms`:
//   ts          when the attempt was INTENDED to start: its place in the schedule
//   latency_ms  from that intended start, so a request that waited for a free worker counts
//               its wait (the answer came at ts + latency_ms)
//   sent_ms     when a worker actually began it, in ms since the spike began (-1: never sent);
//               latency from the send is latency_ms - (sent_ms - ts)
// A closed loop intends each attempt when it begins it, so there the two starts are one.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

struct SpikeCounts {
    long rows = 0;
    int in_flight = 0;
    std::map<int, long> by_status; // status (or sentinel) -> rows
};

class SpikeLog {
public:
    using Clock = std::chrono::steady_clock;

    // Creates `path` (or throws std::runtime_error saying why not) and writes the header: an
    // open loop's has sent_ms. Times are measured from `start`.
    SpikeLog(const std::string& path, int workers, Clock::time_point start, bool open_loop);
    ~SpikeLog();
    SpikeLog(const SpikeLog&) = delete;
    SpikeLog& operator=(const SpikeLog&) = delete;

    // Worker `worker` begins at `sent` an attempt intended for `intended` (a closed loop's are
    // the same). False once the spike is interrupted: then the worker must not attempt.
    bool begin(int worker, Clock::time_point intended, Clock::time_point sent);
    // An open loop's request intended for `intended` is not sent; `at` is when that was decided.
    // Writes its -5 row. False once the spike is interrupted (then no row).
    bool not_sent(Clock::time_point intended, Clock::time_point at);
    // Worker `worker`'s attempt ended at `at` with `status`.
    void finish(int worker, int status, Clock::time_point at);
    // Records every attempt in flight as -4 and refuses new ones; returns how many.
    int interrupt(Clock::time_point at);

    // Writes every queued row, stops the writer and closes the file. Throws std::runtime_error
    // if any write failed (a full disk), since the CSV is then incomplete.
    void close();

    SpikeCounts counts() const;
    const std::string& path() const { return path_; }

private:
    struct Row {
        double ts_ms;
        int status;
        double latency_ms;
        double sent_ms; // -1: never sent
    };
    struct Started {
        Clock::time_point intended, sent;
    };
    void record(int worker, int status, Clock::time_point at); // with mutex_ held
    void write_rows();                                         // the writer thread

    std::string path_;
    Clock::time_point start_;
    bool open_loop_;
    std::FILE* file_ = nullptr;

    // A std::mutex although fibers take it: it guards a push_back and never a wait, so a
    // carrier holds it for nanoseconds; a fiber mutex would buy nothing here.
    mutable std::mutex mutex_;
    std::condition_variable wake_writer_;
    std::vector<std::optional<Started>> started_; // per worker: the attempt in flight
    std::vector<Row> queued_;
    SpikeCounts counts_;
    bool interrupted_ = false;
    bool closing_ = false;
    std::string write_error_;
    std::thread writer_;
};

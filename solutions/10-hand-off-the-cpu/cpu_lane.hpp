// Exercise 10: hand CPU-bound work to OS threads without blocking the carrier.
//
// A computation has no fiber-aware wait in it: on a carrier it holds the carrier for as long as
// it runs, and every other fiber there (a cheap GET /hello, a connection with its next request)
// waits behind it. Lesson 08's fix is to compute on a few OS threads, as many as cores, while
// the fiber that asked parks: its carrier goes on serving. A CpuLane is that hand-off.
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>

// The includes the private members need.
#include <boost/fiber/future.hpp>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

// ---- do not change: the graded tests use these declarations ----

// Thrown by CpuLane::compute when the lane is full (task 2).
class CpuBusy : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class CpuLane {
public:
    // Starts `threads` OS threads (at least 1) that compute. At most `max_waiting` tasks wait
    // for a free thread; more are refused (task 2).
    CpuLane(int threads, int max_waiting);
    // Lets the threads finish every task already handed over, then joins them.
    ~CpuLane();
    CpuLane(const CpuLane&) = delete;
    CpuLane& operator=(const CpuLane&) = delete;

    // Task 1. Runs `work` on one of the lane's threads and returns its result, or rethrows its
    // exception. Meanwhile the calling fiber is parked (a plain thread blocks), so its carrier
    // runs other fibers. Any thread or fiber may call it, many at once.
    // Task 2. Throws CpuBusy at once, without running `work`, when `max_waiting` tasks already
    // wait for a thread.
    std::uint64_t compute(std::function<std::uint64_t()> work);

    // Task 2. Tasks handed over that no thread has started yet.
    int waiting() const;

    // ---- end of do not change ----
private:
    void serve(); // one lane thread: takes tasks until the lane stops

    const int max_waiting_;
    // A std::mutex although fibers take it in compute(): it guards a push_back, never a wait,
    // so a carrier holds it for nanoseconds. The lane threads wait on the condition variable.
    mutable std::mutex mutex_;
    std::condition_variable work_arrived_;
    // Each task with a fiber-aware promise: a lane thread runs it and fulfils the future the
    // caller parks on, across threads.
    std::deque<boost::fibers::packaged_task<std::uint64_t()>> queue_;
    bool stopping_ = false;
    std::vector<std::thread> threads_;
};

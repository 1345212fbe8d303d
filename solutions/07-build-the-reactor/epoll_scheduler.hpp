// Exercise 07: a Boost.Fiber scheduling algorithm that waits in the kernel.
//
// A carrier thread runs fibers until none is ready; then Boost.Fiber asks its scheduling
// algorithm to suspend_until() the next timer (a fiber's sleep or timeout), or "forever" when
// there is none. Boost's own round_robin waits on a condition variable there, which only time
// and notify() can end. An EpollScheduler waits in epoll_wait() instead, so a socket a fiber
// waits for can end the wait too, on the very thread that runs the fiber, with no poller thread.
#pragma once

#include <boost/fiber/algo/algorithm.hpp>
#include <boost/fiber/context.hpp>
#include <boost/fiber/scheduler.hpp>
#include <chrono>

// ---- do not change: the graded tests use these declarations ----

using Deadline = std::chrono::steady_clock::time_point;

class EpollScheduler final : public boost::fibers::algo::algorithm {
public:
    EpollScheduler();
    ~EpollScheduler() override;
    EpollScheduler(const EpollScheduler&) = delete;
    EpollScheduler& operator=(const EpollScheduler&) = delete;

    // The scheduler of the calling carrier thread; nullptr on a thread that has none.
    static EpollScheduler* current();

    // Task 2. Parks the calling fiber (never the thread) until `fd` is readable or `deadline`
    // passes (Deadline::max(): no deadline). True when it became readable, false on timeout.
    // The fd stays the caller's: it may wait on it again, or close it, right after the call.
    bool wait_readable(int fd, Deadline deadline);

    // boost::fibers::algo::algorithm. The ready queue (awakened, pick_next, has_ready_fibers)
    // is given; suspend_until and notify are task 1; task 3 (the stretch) changes pick_next.
    void awakened(boost::fibers::context* fiber) noexcept override;
    boost::fibers::context* pick_next() noexcept override;
    bool has_ready_fibers() const noexcept override;
    void suspend_until(std::chrono::steady_clock::time_point const& until) noexcept override;
    void notify() noexcept override;

    // ---- end of do not change ----
private:
    // Yours to change.
    boost::fibers::scheduler::ready_queue_type ready_;
    int epoll_fd_ = -1;
    int wake_fd_ = -1; // an eventfd other threads write to; epoll watches it like a socket
    std::chrono::steady_clock::time_point last_look_{};

    // Readies the fibers whose fds epoll reports within timeout_ms (-1: no limit, 0: just look).
    void wake_ready_fds(int timeout_ms) noexcept;
};

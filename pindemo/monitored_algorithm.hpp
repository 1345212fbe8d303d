// A scheduling algorithm that wraps a carrier's own (round_robin, lesson 03's Reactor, ...) and
// times every fiber's turn on the carrier, for the pinning detector.
//
// Boost.Fiber asks the algorithm for the next fiber to run at every switch (pick_next), and
// tells it whenever a fiber becomes ready (awakened). So between two pick_next calls exactly one
// fiber holds the carrier, and that span is the fiber's turn. This class forwards every call to
// the wrapped algorithm, and on the way:
//  * at each pick_next: notes which fiber now holds the carrier and since when;
//  * when a turn of at least `long_turn` ends: reads the carrier thread's own times (how long it
//    ran, waited for a CPU; turn_share.hpp), counts the fibers that were ready to run once the
//    carrier was free again, and hands the turn to the watchdog (CarrierMonitor). Those reads
//    are three system calls, made only for long turns, which are rare.
//
// "Ready to run" needs care: fibers whose sleep ended, whose socket became ready or that another
// thread woke during the long turn are not in the ready queue yet; Boost's dispatcher moves them
// there right after the turn, before the next fiber runs. So the count is taken when the next
// fiber is picked, or, when nothing is ready at all, after one extra look that does not wait.
// Boost's own dispatcher fiber takes turns too; they are the scheduler's, not a fiber's.
#pragma once

#include "carrier_monitor.hpp"

#include <boost/fiber/algo/algorithm.hpp>
#include <boost/fiber/context.hpp>
#include <chrono>
#include <memory>

class MonitoredAlgorithm final : public boost::fibers::algo::algorithm {
public:
    // Construct on the carrier thread: it attaches the stack sampler to this thread.
    MonitoredAlgorithm(std::unique_ptr<boost::fibers::algo::algorithm> inner,
                       std::shared_ptr<CarrierMonitor> monitor, std::chrono::nanoseconds long_turn);
    ~MonitoredAlgorithm() override;

    void awakened(boost::fibers::context* ctx) noexcept override;
    boost::fibers::context* pick_next() noexcept override;
    bool has_ready_fibers() const noexcept override { return inner_->has_ready_fibers(); }
    void suspend_until(std::chrono::steady_clock::time_point const& until) noexcept override;
    void notify() noexcept override { inner_->notify(); }

private:
    void finish_long_turn(int ready) noexcept;

    std::unique_ptr<boost::fibers::algo::algorithm> inner_;
    std::shared_ptr<CarrierMonitor> monitor_;
    const std::int64_t long_turn_ns_;
    int schedstat_fd_ = -1; // this carrier thread's /proc/thread-self/schedstat

    // Everything below is touched by the carrier thread only.
    int ready_ = 0; // fibers in the ready queue, the dispatcher not counted
    bool fiber_holds_carrier_ = false;
    const boost::fibers::context* holder_ = nullptr;
    std::int64_t turn_start_ns_ = 0;
    // A long turn that has ended, waiting for its count of ready fibers.
    bool counting_ = false;
    bool looked_once_ = false;     // the extra look for work, when nothing was ready
    bool holder_requeued_ = false; // the fiber of the long turn yielded: it is not a waiter
    LongTurn ended_;
};

// A scheduling algorithm that wraps a carrier's own (round_robin, lesson 03's Reactor, ...) and
// times every fiber's turn on the carrier, for the pinning detector.
//
// Boost.Fiber asks the algorithm for the next fiber at every switch (pick_next) and tells it
// whenever a fiber becomes ready (awakened). So between two pick_next calls exactly one fiber
// holds the carrier: that span is the fiber's turn. This class forwards every call and, on the
// way, notes the turn's start (wall clock and the thread's own CPU clock); a turn longer than
// `long_turn` that ends with other fibers ready goes to the watchdog (CarrierMonitor).
//
// "Ready" needs one look further than the ready queue: a fiber whose sleep ended or whose socket
// became ready during the long turn is moved there by Boost's dispatcher, or by the reactor when
// it polls, just after the turn. So the count is taken when the next fiber is picked, or, when
// nothing was ready, after one more look for work that does not wait.
#pragma once

#include "lessons/instruments/pinning/carrier_monitor.hpp"

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
    void end_long_turn() noexcept; // reports the turn in `ended_` if anyone was ready

    std::unique_ptr<boost::fibers::algo::algorithm> inner_;
    std::shared_ptr<CarrierMonitor> monitor_;
    const std::int64_t long_turn_ns_;

    int ready_ = 0; // fibers in the ready queue, the dispatcher not counted
    const boost::fibers::context* holder_ = nullptr; // nullptr: the scheduler's own turn
    std::int64_t turn_start_ns_ = 0;
    std::int64_t turn_cpu_ns_ = 0;
    bool counting_ = false; // a long turn has ended; its ready fibers are being counted
    bool looked_ = false;   // ... and the extra look for work was made
    bool requeued_ = false; // ... and its own fiber yielded: it is not a waiter
    LongTurn ended_;
};

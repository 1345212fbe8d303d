// A carrier: one OS thread that runs many fibers.
//
// Fibers are user-mode threads (Boost.Fiber): each has its own small stack, and they take turns
// on their carrier. A fiber gives the carrier up only at a fiber-aware wait: a
// boost::this_fiber::sleep_for, a boost::fibers mutex or channel, or (from lesson 03 on) our
// socket waits. Anything else that waits, std::this_thread::sleep_for, a blocking recv(), a
// std::mutex, waits with the whole carrier: every other fiber on it stops too. That is pinning.
//
// spawn() may be called from any thread; the task starts as a new fiber on this carrier.
// Fibers never move to another carrier.
#pragma once

#include <boost/fiber/algo/algorithm.hpp>
#include <boost/fiber/buffered_channel.hpp>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <thread>

class Carrier {
public:
    // Runs on the carrier thread before its first fiber: installs the scheduling algorithm with
    // use_carrier_algorithm (below). Empty means Boost.Fiber's default, round_robin. Lesson 03
    // passes its epoll reactor.
    using SchedulerSetup = std::function<void()>;

    // Stack size for each fiber. 8 MiB is what an OS thread gets: lesson 02 hands whole
    // connections to cpp-httplib, whose std::regex parsing of a crafted Range header recurses
    // through up to ~4 MiB. Untouched stack pages cost no memory.
    static constexpr std::size_t library_stack_size = 8u << 20;

    explicit Carrier(std::string name, SchedulerSetup setup = {},
                     std::size_t stack_size = library_stack_size);
    ~Carrier();
    Carrier(const Carrier&) = delete;
    Carrier& operator=(const Carrier&) = delete;

    // Thread-safe. The task runs as a new fiber on this carrier. An exception escaping it is
    // reported on stderr and ends only that fiber. Throws std::logic_error after stop().
    void spawn(std::function<void()> task);

    // Accepts no more tasks, waits until every fiber spawned here has finished, joins the thread.
    void stop();

    const std::string& name() const { return name_; }

private:
    void run(const SchedulerSetup& setup);

    std::string name_;
    std::size_t stack_size_;
    // Tasks cross from other threads through this channel; its capacity (a power of two) only
    // bounds how far a burst of spawns can run ahead: a full inbox makes spawn() wait.
    boost::fibers::buffered_channel<std::function<void()>> inbox_{1024};
    std::thread thread_;
};

// True when the caller runs on a fiber rather than directly on a thread.
bool on_fiber();

// Makes `algorithm` the calling carrier thread's fiber scheduler, the way
// boost::fibers::use_scheduling_algorithm does, except that a scheduler observer (below) may wrap
// it first.
void install_carrier_algorithm(std::unique_ptr<boost::fibers::algo::algorithm> algorithm);
template <typename Algorithm, typename... Args> void use_carrier_algorithm(Args&&... args) {
    install_carrier_algorithm(std::make_unique<Algorithm>(std::forward<Args>(args)...));
}

// Process-wide hooks that see every carrier's algorithm before it is installed, and may wrap it
// in one that forwards every call. The pinning detector (lessons/instruments/pinning/) adds one to
// time each fiber's turn on its carrier, the tracer (lessons/instruments/trace/) one to record it;
// both may be on at once, each wrapping what the one added before it returned. They apply to
// carriers started after they are added.
using SchedulerObserver = std::unique_ptr<boost::fibers::algo::algorithm> (*)(
    std::unique_ptr<boost::fibers::algo::algorithm> algorithm);
void observe_carrier_schedulers(SchedulerObserver observer);
void stop_observing_carrier_schedulers(SchedulerObserver observer);

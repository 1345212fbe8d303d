// A fiber-aware meeting point: each caller parks until `size` callers have arrived, then all
// go on together. It makes requests overlap for certain: a request that waits
// here is parked while the others run, as it would be during a database call, but for exactly as
// long as it takes the others to arrive, however slow the machine is.
//
// Thread-safe: fibers on any carrier and plain threads may meet (Boost.Fiber's primitives work
// across threads). Groups form in arrival order; the first caller of a group fixes its size.
#pragma once

#include <boost/fiber/condition_variable.hpp>
#include <boost/fiber/mutex.hpp>
#include <chrono>
#include <cstdint>

class Meeting {
public:
    // Parks until `size` callers (this one included) have arrived, or `timeout` passes. Returns
    // false on timeout; the group then stays open for whoever comes next.
    bool wait(int size, std::chrono::milliseconds timeout);

private:
    boost::fibers::mutex mutex_;
    boost::fibers::condition_variable complete_;
    std::uint64_t group_ = 0; // counts completed groups; a waiter watches it change
    int arrived_ = 0;
    int size_ = 0;
};

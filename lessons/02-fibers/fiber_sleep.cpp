#include "lessons/02-fibers/fiber_sleep.hpp"

#include "lessons/02-fibers/fiber_stack.hpp"

#include <boost/fiber/operations.hpp>

namespace {
void sleep_fiber(std::chrono::milliseconds duration) {
    boost::this_fiber::sleep_for(duration);
}

// Giving stack pages back costs a system call, a TLB flush on the cores the process ran on, and
// a page fault later: about 70 µs of CPU on a 2-core VM (issue 39). Worth it before long waits
// only.
constexpr auto long_sleep = std::chrono::milliseconds(100);

void sleep_fiber_lean(std::chrono::milliseconds duration) {
    // The pages deeper calls touched before (cpp-httplib's std::regex router) go back to the
    // kernel.
    if (duration >= long_sleep) release_stack_below_here();
    boost::this_fiber::sleep_for(duration);
}
} // namespace

const BenchmarkWait fiber_sleep{"boost::this_fiber::sleep_for", sleep_fiber};
const BenchmarkWait lean_fiber_sleep{"boost::this_fiber::sleep_for", sleep_fiber_lean};

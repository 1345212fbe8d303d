#include "lessons/02-fibers/fiber_sleep.hpp"

#include "lessons/02-fibers/fiber_stack.hpp"

#include <boost/fiber/operations.hpp>

namespace {
void sleep_fiber(std::chrono::milliseconds duration) {
    // A sleeping fiber needs only the frames it has now: the pages deeper calls touched before
    // (cpp-httplib's std::regex router) go back to the kernel, one system call per sleep.
    release_stack_below_here();
    boost::this_fiber::sleep_for(duration);
}
} // namespace

const BenchmarkWait fiber_sleep{"boost::this_fiber::sleep_for", sleep_fiber};

#include "lessons/02-fibers/fiber_sleep.hpp"

#include <boost/fiber/operations.hpp>

namespace {
void sleep_fiber(std::chrono::milliseconds duration) {
    boost::this_fiber::sleep_for(duration);
}
} // namespace

const BenchmarkWait fiber_sleep{"boost::this_fiber::sleep_for", sleep_fiber};

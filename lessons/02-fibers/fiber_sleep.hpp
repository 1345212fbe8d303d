// The fiber-aware wait for /benchmark: boost::this_fiber::sleep_for parks the calling fiber and
// lets its carrier run the others; the carrier's scheduler wakes it when the time is up.
#pragma once

#include "lessons/01-one-thread/benchmark_routes.hpp"

extern const BenchmarkWait fiber_sleep;

// The fiber-aware wait for /benchmark: boost::this_fiber::sleep_for parks the calling fiber and
// lets its carrier run the others; the carrier's scheduler wakes it when the time is up.
#pragma once

#include "lessons/01-one-thread/benchmark_routes.hpp"

extern const BenchmarkWait fiber_sleep;

// The same wait for servers that hold thousands of sleeping requests (lesson 03 on): before a long
// sleep the fiber gives back the stack pages it no longer uses (release_stack_below_here).
extern const BenchmarkWait lean_fiber_sleep;

// Pitfall 3: CPU-bound work on a fiber.
//
//   GET /cpu?ms=20   computes for 20 ms of CPU time (a hash chain), then answers
//                    {"cpu_ms":20,"result":"...","computed_on":"<thread>"}
//
// A fiber gives its carrier up only at a fiber-aware wait, and a computation has none: while it
// computes, every other fiber on that carrier (a cheap GET /hello, a keep-alive wait that has
// its next request) waits for the whole computation. Platform threads do not have this
// problem, because the kernel time-slices them. Fibers are no help for the throughput either:
// the cores bound it.
//
// The fix: hand the computation to a few OS threads (as many as cores) and park the fiber until
// one of them has done it. The carrier goes on running other fibers meanwhile.
//
// Bounded at both ends, because nothing stops a computation once it runs (README, "Cancelling
// CPU work"): a request asks for at most max_cpu_time, and at most `queue` requests wait for
// the CPU threads; one more is answered 503 at once, by lesson 06's gate (REJECT), which lets in
// as many requests as there are threads plus the queue.
#pragma once

#include "lessons/05-wirings/platform_executor.hpp"

#include <chrono>
#include <cstdint>
#include <httplib.h>

// The most CPU time one GET /cpu may ask for (?ms=); more is answered 400. A second is 50
// times the checkpoint's 20 ms and enough to show a held carrier; with the queue it bounds
// everything the CPU threads can be left holding: (threads + queue) seconds of CPU, even when
// every client has hung up.
constexpr std::chrono::milliseconds max_cpu_time{1000};

// Computes until the calling thread has spent `cpu_time` on a CPU (CLOCK_THREAD_CPUTIME_ID), so
// "20 ms of work" means the same on a quiet machine and on a busy one. Returns the hash chain's
// end, which the answer shows so that the compiler cannot drop the work.
std::uint64_t compute_for(std::chrono::milliseconds cpu_time);

// Where GET /cpu computes.
//   on_handler    right where the handler runs: a platform thread under --profile platform,
//                 the carrier itself under --profile vt (the anti-pattern).
//   on_cpu_threads  on `cpu_threads`; the handler's fiber parks on a boost::fibers::future.
//                 At most `queue` requests (>= 0) wait for a free CPU thread; past that, 503.
// `cpu_threads` must be given (and outlive the server) for on_cpu_threads.
enum class CpuPlacement { on_handler, on_cpu_threads };

void add_cpu_route(httplib::Server& server, CpuPlacement placement,
                   PlatformExecutor* cpu_threads = nullptr, int queue = 0);

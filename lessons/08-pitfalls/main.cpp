// Lesson 08: three traps of moving code from threads to fibers, each behind a --bad-... flag.
//
//   GET /request-id?id=7&together=10   request-scoped data: thread_local is per carrier
//   GET /locked?ms=100                 a std::mutex held across a fiber wait: a deadlock
//   GET /cpu?ms=20, GET /hello         CPU-bound work holds its carrier; /hello waits behind it
//                                      (ms up to max_cpu_time; past --cpu-queue waiting, a 503)
//
// A stall alarm reports any carrier that stops switching fibers for 2 s.
#include "lessons/01-one-thread/benchmark_routes.hpp"
#include "lessons/02-fibers/fiber_sleep.hpp"
#include "lessons/03-connector/connector_flags.hpp"
#include "lessons/05-wirings/platform_executor.hpp"
#include "lessons/05-wirings/wiring.hpp"
#include "lessons/08-pitfalls/cpu_work.hpp"
#include "lessons/08-pitfalls/locked_update.hpp"
#include "lessons/08-pitfalls/request_context.hpp"
#include "lessons/08-pitfalls/stall_alarm.hpp"
#include "lessons/common/process.hpp"
#include "lessons/instruments/pinning/pinning_flags.hpp"
#include "lessons/instruments/trace/trace_flags.hpp"

#include <algorithm>
#include <memory>
#include <thread>

int main(int argc, char** argv) {
    block_shutdown_signals();
    ConnectorOptions connector_options;
    std::string profile = "vt";
    int threads_max = 200;
    int cpu_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    // With max_cpu_time (a second) per request, the last of 8 waiting for 2 CPU threads has at
    // most 5 s of CPU ahead of it on each thread (4 queued per thread, plus the one computing).
    int cpu_queue = 8;
    bool bad_thread_local = false, fiber_specific = false, bad_std_mutex = false,
         bad_cpu_on_carrier = false;
    Flags flags("lesson08", "Three pitfalls of fibers, each with an ANTI-PATTERN flag and its "
                            "fix: GET /request-id, /locked, /cpu (and /hello beside it).");
    add_connector_flags(flags, connector_options);
    flags
        .add("profile", profile, {"vt", "platform"},
             "vt: handlers on the connection fibers; platform: on --threads-max OS threads")
        .add("threads-max", threads_max, 1, 10'000,
             "OS threads running handlers under --profile platform")
        .add("bad-thread-local", bad_thread_local,
             "ANTI-PATTERN: /request-id keeps the request's id in a thread_local, which every "
             "fiber on a carrier shares; requests read back each other's ids")
        .add("fiber-specific", fiber_specific,
             "/request-id keeps the id in a boost::fibers::fiber_specific_ptr instead of "
             "passing it explicitly (both are correct)")
        .add("bad-std-mutex", bad_std_mutex,
             "ANTI-PATTERN: /locked holds a std::mutex across its fiber-aware wait; two "
             "requests on one carrier deadlock it (the stall alarm reports it)")
        .add("bad-cpu-on-carrier", bad_cpu_on_carrier,
             "ANTI-PATTERN: under --profile vt, /cpu computes on the carrier, and every other "
             "fiber there (a /hello) waits until it is done")
        .add("cpu-threads", cpu_threads, 1, 1024,
             "under --profile vt, /cpu computes on this many OS threads while its fiber parks")
        // Each waiting request holds a connection: a queue longer than the connector's 8,192
        // could never fill, so 10,000 is past any use.
        .add("cpu-queue", cpu_queue, 0, 10'000,
             "under --profile vt, how many /cpu requests may wait for a CPU thread; one more is "
             "answered 503 at once (0: whenever every CPU thread is computing)");
    PinningFlags pinning(flags); // --detect-pinning (lesson 02)
    TraceFlags trace(flags);     // --trace FILE (lesson 02)
    flags.parse(argc, argv);
    if (bad_thread_local && fiber_specific)
        fail("lesson08", "--bad-thread-local and --fiber-specific exclude each other (try --help)",
             2);

    const bool vt = profile == "vt";
    HttpApp app;
    add_benchmark_routes(app, fiber_sleep, on_fiber); // GET /hello (and /benchmark)
    Meeting meeting;
    add_request_id_route(app,
                         bad_thread_local ? ContextStore::thread_local_bad
                         : fiber_specific ? ContextStore::fiber_specific
                                          : ContextStore::explicit_argument,
                         meeting);
    add_locked_route(app, bad_std_mutex ? LockKind::std_mutex_bad : LockKind::fiber_mutex);
    // Platform threads compute /cpu themselves (the kernel time-slices them); fibers hand it off.
    std::unique_ptr<PlatformExecutor> cpu_pool;
    if (vt && !bad_cpu_on_carrier) cpu_pool = std::make_unique<PlatformExecutor>(cpu_threads);
    add_cpu_route(app, cpu_pool ? CpuPlacement::on_cpu_threads : CpuPlacement::on_handler,
                  cpu_pool.get(), cpu_queue);

    RequestMetrics metrics; // the wirings count requests in flight; nobody reads them here
    std::unique_ptr<PlatformExecutor> platform;
    if (!vt) platform = std::make_unique<PlatformExecutor>(threads_max);
    StallAlarm stall_alarm; // outlives the connector, whose carriers it watches
    Connector connector(app, connector_options,
                        stall_alarm.watch(vt ? on_connection_fiber(metrics)
                                             : on_platform_threads(*platform, metrics)));
    run_until_shutdown(connector, "lesson08");
}

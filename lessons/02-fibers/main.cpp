// Lesson 02: fibers. Each connection runs on its own fiber, all on one carrier thread, and the
// handler sleeps with boost::this_fiber::sleep_for: ten concurrent requests take one second.
#include "lessons/01-one-thread/benchmark_routes.hpp"
#include "lessons/01-one-thread/serve.hpp"
#include "lessons/02-fibers/carrier.hpp"
#include "lessons/02-fibers/fiber_sleep.hpp"
#include "lessons/02-fibers/fiber_task_queue.hpp"
#include "lessons/common/flags.hpp"
#include "lessons/common/process.hpp"
#include "lessons/instruments/pinning/pinning_flags.hpp"
#include "lessons/instruments/trace/trace_flags.hpp"

int main(int argc, char** argv) {
    block_shutdown_signals();
    int port = 8080;
    bool bad_blocking_sleep = false;
    bool keep_alive = false;
    Flags flags("lesson02", "Each connection is a fiber on one carrier thread; GET /benchmark "
                            "sleeps one second with boost::this_fiber::sleep_for.");
    flags.add("port", port, 0, 65535, "TCP port on 127.0.0.1; 0 picks a free one")
        .add("bad-blocking-sleep", bad_blocking_sleep,
             "ANTI-PATTERN: sleep with std::this_thread::sleep_for inside the fiber; it pins "
             "the carrier and the ten requests take ten seconds again")
        .add("keep-alive", keep_alive,
             "ANTI-PATTERN: let cpp-httplib wait for the next request on a kept-alive "
             "connection; its wait is a blocking poll that pins the carrier");
    TraceFlags trace(flags);     // --trace FILE (lessons/instruments/trace/)
    PinningFlags pinning(flags); // --detect-pinning (lessons/instruments/pinning/)
    flags.parse(argc, argv);

    httplib::Server server;
    // Every accepted connection becomes a fiber on the carrier thread "carrier-0".
    server.new_task_queue = [] { return new FiberTaskQueue("carrier-0"); };
    if (!keep_alive) server.set_keep_alive_max_count(1); // as in lesson 01: Connection: close
    add_benchmark_routes(server, bad_blocking_sleep ? thread_sleep : fiber_sleep, on_fiber);
    serve_until_shutdown(server, "lesson02", port);
}

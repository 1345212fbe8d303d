// Lesson 04: a database behind the endpoint. GET /work borrows one of 10 pooled PostgreSQL
// connections, runs SELECT pg_sleep(0.05), and gives it back; at most 10 queries run at once,
// so the pool serves at most 10 / 0.05 s = 200 requests a second, however many arrive.
#include "lessons/01-one-thread/benchmark_routes.hpp"
#include "lessons/02-fibers/fiber_sleep.hpp"
#include "lessons/03-connector/connector.hpp"
#include "lessons/03-connector/connector_flags.hpp"
#include "lessons/04-pool/pool_flags.hpp"
#include "lessons/04-pool/work_service.hpp"
#include "lessons/common/process.hpp"
#include "lessons/instruments/pinning/pinning_flags.hpp"
#include "lessons/instruments/trace/trace_flags.hpp"

int main(int argc, char** argv) {
    block_shutdown_signals();
    ConnectorOptions options;
    PoolOptions pool_options;
    Flags flags("lesson04", "The lesson 03 server plus GET /work: one SELECT pg_sleep(0.05) on a "
                            "connection from a pool of --pool-size PostgreSQL connections.");
    add_connector_flags(flags, options);
    add_pool_flags(flags, pool_options);
    PinningFlags pinning(flags); // --detect-pinning (lesson 02)
    TraceFlags trace(flags);     // --trace FILE (lesson 02)
    flags.parse(argc, argv);

    auto pool = open_pool_or_exit(pool_options, "lesson04");
    WorkService work(*pool);
    HttpApp app;
    add_benchmark_routes(app, fiber_sleep, on_fiber);
    add_work_route(app, work);
    Connector connector(app, options);
    run_until_shutdown(connector, "lesson04");
}

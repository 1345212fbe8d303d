// Lesson 03: fiber-aware socket I/O. The connector accepts connections itself and serves each on
// a fiber whose every wait (for the request, for the client to read the response, for the next
// request on a kept-alive connection) parks the fiber instead of the carrier thread.
#include "lessons/01-one-thread/benchmark_routes.hpp"
#include "lessons/02-fibers/carrier.hpp"
#include "lessons/02-fibers/fiber_sleep.hpp"
#include "lessons/03-connector/connector.hpp"
#include "lessons/03-connector/connector_flags.hpp"
#include "lessons/03-connector/http_app.hpp"
#include "lessons/common/process.hpp"
#include "lessons/instruments/pinning/pinning_flags.hpp"
#include "lessons/instruments/trace/trace_flags.hpp"

int main(int argc, char** argv) {
    block_shutdown_signals();
    std::chrono::milliseconds sleep = std::chrono::seconds(1);
    ConnectorOptions options;
    Flags flags("lesson03", "Fibers on carrier threads own the sockets; cpp-httplib only parses "
                            "and routes. GET /benchmark sleeps one second on its fiber.");
    // Lesson 07 runs this server as its downstream "inventory" service, answering in 100 ms.
    flags.add("benchmark-sleep", sleep, std::chrono::milliseconds(0), std::chrono::hours(1),
              "how long GET /benchmark sleeps on its fiber");
    add_connector_flags(flags, options);
    PinningFlags pinning(flags); // --detect-pinning (lesson 02)
    TraceFlags trace(flags);     // --trace FILE (lesson 02)
    flags.parse(argc, argv);

    HttpApp app; // routes as in lessons 01 and 02: cpp-httplib's router, our sockets
    add_benchmark_routes(app, lean_fiber_sleep, on_fiber, sleep);
    Connector connector(app, options);
    run_until_shutdown(connector, "lesson03");
}

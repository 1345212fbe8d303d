// Lesson 07: when fibers win. GET /orders/{id} is an indexed lookup through the pool plus a
// ~100 ms call to a downstream inventory service (lesson03 --benchmark-sleep 100ms), in lesson
// 05's wirings: --profile platform (--threads-max threads, each blocked through the call) or
// --profile vt (each request parks on its connection's fiber). Part 2's GET /orders/{id}/summary
// makes two quick round trips on one borrowed connection, and no downstream call.
#include "lessons/05-wirings/work_server.hpp"
#include "lessons/07-when-fibers-win/inventory_client.hpp"
#include "lessons/07-when-fibers-win/orders_route.hpp"
#include "lessons/common/process.hpp"
#include "lessons/instruments/pinning/pinning_flags.hpp"
#include "lessons/instruments/trace/trace_flags.hpp"

#include <stdexcept>

int main(int argc, char** argv) {
    block_shutdown_signals();
    ServerOptions options;
    options.endpoint = "GET /orders/{id}, GET /orders/{id}/summary";
    options.query = orders_query;
    // The lookup holds a connection for well under a millisecond: 20 connections serve far more
    // than the downstream lets through, so the pool never binds here (lessons 04-06 bound it).
    options.pool.size = 20;
    std::string inventory_url = "http://127.0.0.1:8090/benchmark";
    // The inventory answers in ~100 ms; one that takes 5 s is down, and the answer is 502.
    std::chrono::milliseconds inventory_timeout{5000};
    Flags flags("lesson07", "GET /orders/{id}: an indexed lookup through the pool, then a call to "
                            "the inventory service at --inventory-url, in the wiring --profile "
                            "names; /health and /metrics on --management-port.");
    add_server_flags(flags, options, {platform_profile, vt_profile});
    flags
        .add("inventory-url", inventory_url,
             "the downstream service every order asks (http://IPv4:PORT/path, kept connections)")
        .add("inventory-timeout", inventory_timeout, std::chrono::milliseconds(1),
             std::chrono::hours(1),
             "an inventory answer that takes longer fails the order with 502");
    PinningFlags pinning(flags); // --detect-pinning (lesson 02)
    TraceFlags trace(flags);     // --trace FILE (lesson 02)
    flags.parse(argc, argv);

    std::unique_ptr<InventoryClient> inventory;
    try {
        inventory = std::make_unique<InventoryClient>(inventory_url, inventory_timeout);
    } catch (const std::invalid_argument& e) {
        fail("lesson07", std::string("--inventory-url: ") + e.what() + " (try --help)", 2);
    }
    WorkServer server(options, "lesson07",
                      // Without "http://": scripts take the first URL in the log for this
                      // server's own.
                      {{"inventory", inventory_url.substr(std::string("http://").size())},
                       {"inventory_timeout", format_duration(inventory_timeout)},
                       // The scaling checkpoint gives pgbench the same two round trips.
                       {"summary_query_1", orders_query},
                       {"summary_query_2", recent_orders_query}});
    add_orders_route(server.app(), server.pool(), *inventory);
    add_summary_route(server.app(), server.pool());
    server.run();
}

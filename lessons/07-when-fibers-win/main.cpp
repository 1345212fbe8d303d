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
    // What the calls may buffer (inventory_client.hpp says why these sizes).
    const ResponseCaps caps;
    int inventory_max_body = static_cast<int>(caps.max_body_bytes);
    int inventory_memory_budget = static_cast<int>(caps.memory_budget_bytes);
    Flags flags("lesson07", "GET /orders/{id}: an indexed lookup through the pool, then a call to "
                            "the inventory service at --inventory-url, in the wiring --profile "
                            "names; /health and /metrics on --management-port.");
    add_server_flags(flags, options, {platform_profile, vt_profile});
    flags
        .add("inventory-url", inventory_url,
             "the downstream service every order asks (http://IPv4:PORT/path, kept connections)")
        .add("inventory-timeout", inventory_timeout, std::chrono::milliseconds(1),
             std::chrono::hours(1),
             "an inventory answer that takes longer fails the order with 502")
        // Up to the HTTP client's own limit (1 MiB); a budget from one answer's head to 1 GiB.
        .add("inventory-max-body", inventory_max_body, 0, static_cast<int>(max_response_body_bytes),
             "bytes of an inventory answer's body at most (lesson 03's /benchmark sends 109); a "
             "larger one fails the order with 502 as soon as its head says so")
        .add("inventory-memory-budget", inventory_memory_budget,
             static_cast<int>(caps.max_head_bytes), 1 << 30,
             "bytes of inventory answers all orders may hold at once; an order whose answer "
             "would pass it fails with 502 at once");
    PinningFlags pinning(flags); // --detect-pinning (lesson 02)
    TraceFlags trace(flags);     // --trace FILE (lesson 02)
    flags.parse(argc, argv);
    const std::size_t one_answer =
        caps.max_head_bytes + static_cast<std::size_t>(inventory_max_body);
    if (static_cast<std::size_t>(inventory_memory_budget) < one_answer)
        fail("lesson07",
             "--inventory-memory-budget " + std::to_string(inventory_memory_budget) +
                 " is less than one inventory answer may hold (a " +
                 std::to_string(caps.max_head_bytes) + "-byte head and --inventory-max-body " +
                 std::to_string(inventory_max_body) + "): every order would fail (try --help)",
             2);

    std::unique_ptr<InventoryClient> inventory;
    try {
        ResponseCaps chosen = caps;
        chosen.max_body_bytes = static_cast<std::size_t>(inventory_max_body);
        chosen.memory_budget_bytes = static_cast<std::size_t>(inventory_memory_budget);
        inventory = std::make_unique<InventoryClient>(inventory_url, inventory_timeout,
                                                      IdleLimits{}, chosen);
    } catch (const std::invalid_argument& e) {
        fail("lesson07", std::string("--inventory-url: ") + e.what() + " (try --help)", 2);
    }
    WorkServer server(options, "lesson07",
                      // Without "http://": scripts take the first URL in the log for this
                      // server's own.
                      {{"inventory", inventory_url.substr(std::string("http://").size())},
                       {"inventory_timeout", format_duration(inventory_timeout)},
                       {"inventory_max_body", std::to_string(inventory_max_body)},
                       {"inventory_memory_budget", std::to_string(inventory_memory_budget)},
                       // The scaling checkpoint gives pgbench the same two round trips.
                       {"summary_query_1", orders_query},
                       {"summary_query_2", recent_orders_query}});
    server.management().add_metrics([&inventory = *inventory](MetricsText& out) {
        out.gauge("inventory_buffered_bytes",
                  "Bytes of inventory answers the calls in progress hold (at most "
                  "--inventory-memory-budget).",
                  static_cast<double>(inventory.buffered_bytes()));
        out.counter("inventory_over_budget_total",
                    "Orders answered 502 because their inventory answer would have passed "
                    "--inventory-memory-budget.",
                    static_cast<double>(inventory.over_budget()));
    });
    add_orders_route(server.app(), server.pool(), *inventory);
    add_summary_route(server.app(), server.pool());
    server.run();
}

// Lesson 05 checkpoint: lesson05 on a real PostgreSQL. The two wirings run the same application
// with the same settings; a short spike shows where each one keeps its queue:
//   platform: at most threads-max requests inside the app, the rest queued out of sight, no errors
//   vt:       everything inside the app, the queue moved onto the pool, 500s at the pool timeout
// The spikes are scaled down (1,000 workers, a 3 s pool timeout) and the bounds are generous:
// they check the shape, which physics fixes, not figures a busy machine can shift.
#include "lessons/04-pool/pg_test_support.hpp"
#include "lessons/05-wirings/wired_test_support.hpp"

#include <catch2/catch.hpp>

#include <memory>
#include <set>
#include <thread>

namespace {

const std::string lesson05 = BIN_DIR "/lesson05";

// 200 answers a second at most (10 connections / 0.05 s), so 3 s of waiting covers a pool
// queue of about 600. 1,000 workers overflow it under vt; platform's 200 threads never come
// close (190 waiters: about one second).
const std::vector<std::string> scaled = {"--pool-timeout", "3s", "--management-port", "0"};

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
    args.insert(args.end(), more.begin(), more.end());
    return args;
}

} // namespace

TEST_CASE("both profiles run with the same settings but the executor", "[lesson05][checkpoint]") {
    const auto platform = print_config(lesson05, {"--profile", "platform"});
    const auto vt = print_config(lesson05, {"--profile", "vt"});
    STEP("lesson05 --print-config: " << platform.size() << " settings");
    for (const char* key : {"endpoint", "query", "pool_size", "pool_timeout", "max_connections",
                            "accept_count", "keep_alive_timeout", "read_timeout"})
        CHECK(platform.count(key) == 1);
    CHECK(platform.at("pool_size") == "10");
    CHECK(platform.at("pool_timeout") == "30s");
    CHECK(platform.at("max_connections") == "8192");
    CHECK(platform.at("accept_count") == "100");
    std::set<std::string> differ;
    for (const auto& [key, value] : platform) {
        INFO(key << ": platform '" << value << "', vt '" << (vt.count(key) ? vt.at(key) : "?")
                 << "'");
        REQUIRE(vt.count(key) == 1);
        if (vt.at(key) != value) differ.insert(key);
    }
    CHECK(vt.size() == platform.size());
    CHECK(differ == std::set<std::string>{"profile", "executor"});
    CHECK(platform.at("executor") == "platform threads: 200, first-come queue");
    CHECK(vt.at("executor") == "connection fibers (--threads-max 200 has no effect)");
}

TEST_CASE("an unknown profile is one line and exit status 2", "[lesson05]") {
    std::string output;
    const int status = run_program({lesson05, "--profile", "vt-gated"}, output);
    STEP("lesson05 --profile vt-gated exited " << status << ": " << output);
    CHECK(status == 2);
    CHECK(output == "lesson05: --profile: 'vt-gated' is not one of platform|vt (try --help)\n");
    // It once printed 70000 and listened on 4464.
    CHECK(run_program({lesson05, "--management-port", "70000"}, output) == 2);
    CHECK(output == "lesson05: --management-port: '70000' is not in 0..65535 (try --help)\n");
}

TEST_CASE("/health says UP with the database, then 503 DOWN once it stops", "[lesson05]") {
    PrivateCluster database("lesson05-health");
    ServerProcess server(lesson05, with(scaled, {"--db", database.conninfo()}), "lesson05-health");
    const int management = management_port_of(server);
    STEP("lesson05 on port " << server.port() << ", management " << management);
    Answer health = http_get(management, "/health");
    CHECK(health.status == 200);
    CHECK(health.body == "{\"status\":\"UP\",\"app\":\"UP\",\"database\":\"UP\"}\n");
    database.stop();
    STEP("PostgreSQL stopped");
    health = http_get(management, "/health");
    CHECK(health.status == 503);
    CHECK(health.body.rfind("{\"status\":\"DOWN\",\"app\":\"UP\",\"database\":\"DOWN\",", 0) == 0);
}

TEST_CASE("/metrics has what the probe and the demo read, in both profiles", "[lesson05]") {
    for (const std::string profile : {"platform", "vt"}) {
        ServerProcess server(lesson05,
                             with(scaled, {"--db", test_conninfo(), "--profile", profile}),
                             "lesson05-metrics-" + profile);
        const Answer metrics = http_get(management_port_of(server), "/metrics");
        STEP(profile << ": /metrics answered " << metrics.status);
        REQUIRE(metrics.status == 200);
        for (const std::string name :
             {"http_server_requests_inflight", "http_server_requests_total",
              "connector_connections_current", "connector_connections_max",
              "pool_connections_active", "pool_connections_idle", "pool_connections_pending",
              "pool_connections_max", "pool_checkout_timeouts_total"}) {
            INFO(name);
            CHECK(metrics.body.find("# HELP " + name + " ") != std::string::npos);
            CHECK(metrics.body.find("# TYPE " + name + " ") != std::string::npos);
        }
        CHECK(metrics.body.find("\npool_connections_max 10\n") != std::string::npos);
        const bool has_executor =
            metrics.body.find("\nexecutor_threads_max 200\n") != std::string::npos;
        CHECK(has_executor == (profile == "platform"));
    }
}

TEST_CASE("platform spike: threads-max requests in flight, the rest queued, no errors",
          "[lesson05][checkpoint]") {
    ServerProcess server(lesson05, with(scaled, {"--db", test_conninfo(), "--profile", "platform"}),
                         "lesson05-spike-platform");
    const SpikeShape shape = run_spike(server, "lesson05-spike-platform", SpikePlan{});
    STEP("1000 workers against platform: " << shape.describe());
    CHECK(shape.count(200) > 0);
    CHECK(shape.count(200) == shape.rows); // no 500, no 503, no client timeout
    // 1,000 workers on 200 threads: the threads are all busy at every sample after the ramp,
    // and never more than 200 run a handler.
    CHECK(shape.max_inflight <= 200);
    CHECK(shape.max_inflight >= 180);
    // ... while every worker's connection is open: the queue no metric of the app shows.
    CHECK(shape.max_connections >= 900);
    CHECK(shape.max_pool_pending <= 190);
}

TEST_CASE("vt spike: everything in flight, the pool's queue overflows its timeout: 500s",
          "[lesson05][checkpoint]") {
    ServerProcess server(lesson05, with(scaled, {"--db", test_conninfo(), "--profile", "vt"}),
                         "lesson05-spike-vt");
    const SpikeShape shape = run_spike(server, "lesson05-spike-vt", SpikePlan{});
    STEP("1000 workers against vt: " << shape.describe());
    CHECK(shape.count(200) > 0);
    CHECK(shape.count(500) > 0);
    CHECK(shape.count(200) + shape.count(500) == shape.rows);
    // The 500s are pool timeouts: at the 3 s line (plus the time to answer, which a busy
    // machine stretches), not before, and not at another timeout (the spike's is 30 s).
    CHECK(shape.median_ms(500) >= 3000);
    CHECK(shape.median_ms(500) <= 6000);
    // --threads-max is inert: far more than 200 requests are inside the app ...
    CHECK(shape.max_inflight >= 500);
    // ... and they queue for the pool, far beyond its 10 connections.
    CHECK(shape.max_pool_pending >= 400);
    // Goodput barely changes: still about 200 a second (bound: a quarter of that).
    CHECK(shape.count(200) / shape.seconds >= 50);
}

TEST_CASE("a client trickling into the management port cannot hold up a stop", "[lesson05]") {
    ServerProcess server(lesson05, with(scaled, {"--db", test_conninfo()}), "lesson05-stop");
    const int management = management_port_of(server);
    TricklingClient trickler(management, get_request("/metrics"), std::chrono::milliseconds(1500));
    STEP("a client sends GET /metrics to port " << management << ", one byte every 1.5 s");
    std::this_thread::sleep_for(std::chrono::milliseconds(500)); // its first bytes are in
    // The connectors' grace periods are 5 s and 3 s; 20 s is slack for a busy machine. A
    // SIGKILL after it reads 137.
    const auto start = std::chrono::steady_clock::now();
    const int status = server.stop(std::chrono::seconds(20));
    STEP("SIGTERM: exited " << status << " after " << seconds_since(start) << " s");
    CHECK(status == 0);
}

TEST_CASE("/metrics counts the requests the connector refused, by status and reason",
          "[lesson05]") {
    ServerProcess server(lesson05,
                         with(scaled, {"--db", test_conninfo(), "--read-timeout", "300ms"}),
                         "lesson05-refusals");
    const int management = management_port_of(server);
    const auto send_all = [&](int count, const std::string& request) {
        std::vector<std::unique_ptr<RawConnection>> clients;
        for (int i = 0; i < count; ++i) {
            clients.push_back(std::make_unique<RawConnection>(server.port()));
            REQUIRE(clients.back()->send(request));
        }
        for (auto& client : clients)
            REQUIRE(status_of(client->receive_response(std::chrono::seconds(10))) != 0);
    };
    send_all(5, "HELLO\r\n\r\n");                 // 400
    send_all(3, "GET /work HTTP/1.1\r\nHost: x"); // 408 after the read timeout
    send_all(2, "GET /work HTTP/1.1\r\nContent-Length: 4\r\n\r\nbody"); // 413
    STEP("answered 5 malformed requests, 3 that never finished and 2 with a body");
    const Answer metrics = http_get(management, "/metrics");
    REQUIRE(metrics.status == 200);
    INFO(metrics.body);
    for (const std::string sample :
         {"connector_refusals_total{status=\"400\",reason=\"malformed\"} 5",
          "connector_refusals_total{status=\"408\",reason=\"read_timeout\"} 3",
          "connector_refusals_total{status=\"413\",reason=\"body\"} 2"}) {
        INFO(sample);
        CHECK(metrics.body.find("\n" + sample + "\n") != std::string::npos);
    }
}

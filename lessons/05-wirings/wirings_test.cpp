// Unit tests of lesson 05's parts, in this process, without a database: the two executors and
// their in-flight accounting, the response counter, the Prometheus text, the management port.
// Handlers are held on a latch that the test opens, so every "at most 4 at once" is a fact the
// test waits for, not a guess about timing.
#include "lessons/05-wirings/management_server.hpp"
#include "lessons/05-wirings/metrics_text.hpp"
#include "lessons/05-wirings/platform_executor.hpp"
#include "lessons/05-wirings/request_metrics.hpp"
#include "lessons/05-wirings/wiring.hpp"
#include "lessons/common/fiber_latch.hpp"
#include "lessons/common/test_support.hpp"

#include <boost/fiber/operations.hpp>
#include <catch2/catch.hpp>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <sys/socket.h>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;

// A connector whose /hold handler waits on `release`, with the lesson's metrics, wired either
// way. /where says where the handler ran.
struct WiredServer {
    HttpApp app;
    RequestMetrics metrics;
    Latch release;
    std::atomic<int> huge_requests{0};
    std::unique_ptr<PlatformExecutor> threads;
    std::unique_ptr<Connector> connector;

    explicit WiredServer(Wiring wiring, int threads_max = 4, ConnectorOptions options = {}) {
        app.Get("/hold", [this](const httplib::Request&, httplib::Response& res) {
            release.wait();
            res.set_content("released\n", "text/plain");
        });
        app.Get("/where", [](const httplib::Request&, httplib::Response& res) {
            res.set_content(on_fiber() ? "fiber\n" : "thread\n", "text/plain");
        });
        // More than the socket buffers between server and a client with a small receive buffer
        // hold (the server's send buffer grows to 4 MiB): a client that reads none of it makes
        // the server's send wait, and the write timeout end the connection.
        app.Get("/huge", [this](const httplib::Request&, httplib::Response& res) {
            ++huge_requests;
            res.set_content(std::string(16u << 20, 'x'), "text/plain");
        });
        count_responses(app, metrics);
        options.port = 0;
        Connector::Executor executor;
        if (wiring == Wiring::platform) {
            threads = std::make_unique<PlatformExecutor>(threads_max);
            executor = on_platform_threads(*threads, metrics);
        } else {
            executor = on_connection_fiber(metrics);
        }
        connector = std::make_unique<Connector>(app, options, executor);
        connector->start();
    }
    ~WiredServer() {
        release.open(); // a failed test must not leave handlers waiting
        connector->stop();
    }
    int port() const { return connector->port(); }
};

// Sends GET /hold on `count` connections of their own.
std::vector<std::unique_ptr<RawConnection>> hold_requests(int port, int count) {
    std::vector<std::unique_ptr<RawConnection>> clients;
    for (int i = 0; i < count; ++i) {
        clients.push_back(std::make_unique<RawConnection>(port));
        REQUIRE(clients.back()->send(get_request("/hold")));
    }
    return clients;
}

} // namespace

TEST_CASE("under platform at most threads-max requests are in flight: the rest queue, "
          "their connections open",
          "[lesson05][wiring]") {
    WiredServer server(Wiring::platform, 4);
    auto clients = hold_requests(server.port(), 10);
    STEP("10 requests sent to /hold, which waits for the test; 4 platform threads");
    REQUIRE(eventually([&] { return server.threads->queued() == 6; }));
    STEP("6 requests wait in the executor's queue");
    CHECK(server.metrics.inflight() == 4);
    CHECK(server.threads->busy() == 4);
    CHECK(server.connector->open_connections() == 10);
    server.release.open();
    STEP("released");
    for (auto& client : clients)
        CHECK(body_of(client->receive_response(10s)) == "released\n");
    // A response is counted once it has left, which may be just after the client has read it.
    CHECK(eventually([&] { return server.metrics.inflight() == 0; }));
    CHECK(server.metrics.responses(200) == 10);
    CHECK(server.threads->queued() == 0);
}

TEST_CASE("under vt every request whose head arrived is in flight at once", "[lesson05][wiring]") {
    WiredServer server(Wiring::vt);
    auto clients = hold_requests(server.port(), 10);
    STEP("10 requests sent to /hold, which waits for the test");
    REQUIRE(eventually([&] { return server.metrics.inflight() == 10; }));
    CHECK(server.connector->open_connections() == 10);
    server.release.open();
    for (auto& client : clients)
        CHECK(body_of(client->receive_response(10s)) == "released\n");
    CHECK(eventually([&] { return server.metrics.inflight() == 0; }));
    CHECK(server.metrics.responses(200) == 10);
}

TEST_CASE("platform handlers run on OS threads, vt handlers on the connection's fiber",
          "[lesson05][wiring]") {
    for (const Wiring wiring : {Wiring::platform, Wiring::vt}) {
        WiredServer server(wiring);
        RawConnection client(server.port());
        REQUIRE(client.send(get_request("/where")));
        CHECK(body_of(client.receive_response(5s)) ==
              (wiring == Wiring::platform ? "thread\n" : "fiber\n"));
    }
}

TEST_CASE("every response the app writes is counted by status, 404s included",
          "[lesson05][wiring]") {
    WiredServer server(Wiring::vt);
    RawConnection client(server.port());
    for (const char* path : {"/where", "/where", "/nowhere"}) {
        REQUIRE(client.send(get_request(path)));
        client.receive_response(5s);
    }
    // Counted once sent, which may be just after the client has read the last one.
    REQUIRE(eventually([&] { return server.metrics.inflight() == 0; }));
    CHECK(server.metrics.responses(200) == 2);
    CHECK(server.metrics.responses(404) == 1);
    CHECK(server.metrics.responses(500) == 0);
}

TEST_CASE("a response that never reaches its client is not counted as written",
          "[lesson05][wiring]") {
    for (const Wiring wiring : {Wiring::platform, Wiring::vt}) {
        ConnectorOptions options;
        // Short: the client below never reads, so every send waits this long, then gives up.
        options.write_timeout = 300ms;
        WiredServer server(wiring, 4, options);
        const char* name = wiring == Wiring::platform ? "platform" : "vt";
        RawConnection silent(server.port());
        // A small buffer that stops growing: loopback's may grow to 32 MiB (net.ipv4.tcp_rmem).
        const int small = 16 * 1024;
        ::setsockopt(silent.fd(), SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
        REQUIRE(silent.send(get_request("/huge")));
        STEP(name << ": GET /huge (16 MiB) sent by a client that reads none of it; write "
                     "timeout 0.3 s");
        REQUIRE(eventually([&] {
            return server.huge_requests == 1 && server.connector->open_connections() == 0;
        }));
        STEP("its handler ran; the server gave up on the response and closed the connection");
        CHECK(server.metrics.responses(200) == 0);
        RawConnection reader(server.port());
        REQUIRE(reader.send(get_request("/where")));
        CHECK(status_of(reader.receive_response(5s)) == 200);
        STEP("a response the client read is counted");
        // Counted just after the send that delivered it, so perhaps after the client read it.
        CHECK(eventually([&] { return server.metrics.responses(200) == 1; }));
        CHECK(eventually([&] { return server.metrics.inflight() == 0; }));
    }
}

TEST_CASE("the platform executor serves its queue first come, first served",
          "[lesson05][executor]") {
    PlatformExecutor executor(1);
    Latch release;
    std::mutex mutex;
    std::vector<int> order;
    std::vector<std::thread> callers;
    callers.emplace_back([&] { executor.run([&] { return release.wait(), true; }); });
    REQUIRE(eventually([&] { return executor.busy() == 1; }));
    STEP("the only thread is held; five callers queue one after another");
    for (int i = 1; i <= 5; ++i) {
        callers.emplace_back([&, i] {
            executor.run([&, i] {
                std::lock_guard<std::mutex> lock(mutex);
                order.push_back(i);
                return true;
            });
        });
        REQUIRE(eventually([&] { return executor.queued() == i; }));
    }
    release.open();
    for (auto& caller : callers)
        caller.join();
    CHECK(order == std::vector<int>{1, 2, 3, 4, 5});
}

TEST_CASE("a task's exception reaches the caller waiting for it", "[lesson05][executor]") {
    PlatformExecutor executor(2);
    CHECK_THROWS_WITH(executor.run([]() -> bool { throw std::runtime_error("boom"); }), "boom");
    CHECK(executor.run([] { return true; }));
}

TEST_CASE("metrics text has HELP and TYPE for every family, and metric_value reads it",
          "[lesson05][metrics]") {
    MetricsText text;
    text.gauge("connector_connections_current", "Open connections.", 2000)
        .family("http_server_requests_total", MetricsText::Type::counter,
                "Responses by status.\nSecond line \\ here.")
        .sample(1234567, {{"status", "200"}})
        .sample(5, {{"status", "5\"03"}})
        .counter("pool_checkout_timeouts_total", "Gave up.", 7);
    const std::string expected =
        "# HELP connector_connections_current Open connections.\n"
        "# TYPE connector_connections_current gauge\n"
        "connector_connections_current 2000\n"
        "# HELP http_server_requests_total Responses by status.\\nSecond line \\\\ here.\n"
        "# TYPE http_server_requests_total counter\n"
        "http_server_requests_total{status=\"200\"} 1234567\n"
        "http_server_requests_total{status=\"5\\\"03\"} 5\n"
        "# HELP pool_checkout_timeouts_total Gave up.\n"
        "# TYPE pool_checkout_timeouts_total counter\n"
        "pool_checkout_timeouts_total 7\n";
    CHECK(text.text() == expected);
    CHECK(metric_value(text.text(), "connector_connections_current") == 2000);
    CHECK(metric_value(text.text(), "http_server_requests_total") == 1234572);
    CHECK_FALSE(metric_value(text.text(), "http_server_requests").has_value());
}

TEST_CASE("metric values are read from Prometheus text", "[lesson05][metrics]") {
    const std::string text = "# HELP http_server_requests_inflight Requests inside the app.\n"
                             "# TYPE http_server_requests_inflight gauge\n"
                             "http_server_requests_inflight 200\n"
                             "http_server_requests_inflight_max 999\n"
                             "connector_connections_current{state=\"queued\"} 6800\n"
                             "connector_connections_current{state=\"in}app\",x=\"\\\"\"} 200\n"
                             "pool_connections_pending 1.5e3\n";
    CHECK(metric_value(text, "http_server_requests_inflight") == 200);
    CHECK(metric_value(text, "connector_connections_current") == 7000); // summed over labels
    CHECK(metric_value(text, "pool_connections_pending") == 1500);
    CHECK_FALSE(metric_value(text, "http_server_requests").has_value()); // a prefix is no match
    CHECK_FALSE(metric_value(text, "gate_rejections_total").has_value());
    CHECK_FALSE(metric_value("", "connector_connections_current").has_value());
}

TEST_CASE("the request metrics are one gauge and one counter per status seen",
          "[lesson05][metrics]") {
    RequestMetrics metrics;
    metrics.count_response(200);
    metrics.count_response(200);
    metrics.count_response(503);
    metrics.count_response(42); // not an HTTP status: counted as "other"
    const RequestMetrics::InFlight one(metrics), two(metrics);
    MetricsText text;
    metrics.collect(text);
    const std::string exposition = text.text();
    INFO(exposition);
    CHECK(metric_value(exposition, "http_server_requests_inflight") == 2);
    CHECK(exposition.find("http_server_requests_total{status=\"200\"} 2\n") != std::string::npos);
    CHECK(exposition.find("http_server_requests_total{status=\"503\"} 1\n") != std::string::npos);
    CHECK(exposition.find("http_server_requests_total{status=\"other\"} 1\n") != std::string::npos);
    CHECK(exposition.find("status=\"500\"") == std::string::npos);
}

TEST_CASE("the management port serves /metrics from its collectors and /health with the "
          "database's state",
          "[lesson05][management]") {
    bool database_up = true;
    ManagementServer management("127.0.0.1", 0, [&](std::string& why) {
        why = "no answer from the server";
        return database_up;
    });
    management.add_metrics([](MetricsText& out) { out.gauge("first_metric", "One.", 1); });
    management.add_metrics([](MetricsText& out) { out.gauge("second_metric", "Two.", 2); });
    management.start();
    STEP("management on port " << management.port());
    httplib::Client client("127.0.0.1", management.port());
    auto metrics = client.Get("/metrics");
    REQUIRE(metrics);
    CHECK(metrics->status == 200);
    CHECK(metrics->get_header_value("Content-Type").rfind("text/plain; version=0.0.4", 0) == 0);
    CHECK(metrics->body.rfind("# HELP first_metric One.\n", 0) == 0); // collectors in order
    CHECK(metric_value(metrics->body, "management_connections_current") == 1); // this one
    CHECK(metric_value(metrics->body, "first_metric") == 1);
    CHECK(metric_value(metrics->body, "second_metric") == 2);

    auto health = client.Get("/health");
    REQUIRE(health);
    CHECK(health->status == 200);
    CHECK(health->body == "{\"status\":\"UP\",\"app\":\"UP\",\"database\":\"UP\"}\n");
    database_up = false;
    health = client.Get("/health");
    REQUIRE(health);
    CHECK(health->status == 503);
    CHECK(health->body == "{\"status\":\"DOWN\",\"app\":\"UP\",\"database\":\"DOWN\","
                          "\"database_error\":\"no answer from the server\"}\n");
}

TEST_CASE("/health stays JSON whatever words the database check gives as its reason",
          "[lesson05][management]") {
    const std::string why = "server said \"no\" \\ twice\nand hung up";
    ManagementServer management("127.0.0.1", 0, [&](std::string& reason) {
        reason = why;
        return false;
    });
    management.start();
    STEP("management on port " << management.port()
                               << ", its database check failing with: " << why);
    const Answer health = http_get(management.port(), "/health");
    STEP("GET /health answered " << health.status << ": " << health.body);
    CHECK(health.status == 503);
    const auto answer = nlohmann::json::parse(health.body);
    CHECK(answer.at("status") == "DOWN");
    CHECK(answer.at("database_error") == why);
}

TEST_CASE("a taken management port is one clear error", "[lesson05][management]") {
    ManagementServer first("127.0.0.1", 0, nullptr);
    first.start();
    ManagementServer second("127.0.0.1", first.port(), nullptr);
    CHECK_THROWS_WITH(second.start(),
                      Catch::Contains("cannot listen on 127.0.0.1:" + std::to_string(first.port()) +
                                      " for management: Address already in use"));
}

TEST_CASE("clients that trickle a request byte by byte cannot keep /metrics from answering",
          "[lesson05][management]") {
    ManagementServer management("127.0.0.1", 0, nullptr);
    management.start();
    // A byte every 1.5 s: a timeout on each read (2 s) never fires; one on the whole request does.
    TricklingClient first(management.port(), get_request("/metrics"), 1500ms);
    TricklingClient second(management.port(), get_request("/metrics"), 1500ms);
    STEP("two clients send GET /metrics to port " << management.port() << ", one byte every 1.5 s");
    for (int i = 1; i <= 3; ++i) {
        const Answer metrics = http_get(management.port(), "/metrics");
        STEP("GET /metrics " << i << " answered " << metrics.status << " (0: not within 10 s)");
        REQUIRE(metrics.status == 200);
    }
    // The whole request must arrive within the management read timeout (2 s); 20 s is slack for
    // a machine busy with other work.
    CHECK(eventually([&] { return first.cut_off() && second.cut_off(); }, 20s));
    STEP("the trickling clients were answered: " << first.answer().substr(0, 30));
    CHECK(status_of(first.answer()) == 408);
    CHECK(status_of(second.answer()) == 408);
}

TEST_CASE("a scraper gets /metrics through chatty clients that hold every management connection",
          "[lesson05][management]") {
    // Issue 38: clients each sending GET /metrics every second or so filled the port's 1,024
    // connections, and a scraper on a new connection waited behind them for good. At the cap,
    // the connection idle longest between its requests now gives way to the newcomer.
    constexpr int cap = 1024; // management_server.cpp
    ManagementServer management("127.0.0.1", 0, nullptr);
    management.start();
    // One thread opens the clients one by one and asks each again once its last answer is
    // 500 ms old: well inside the port's 2 s keep-alive timeout, so that none is closed for
    // idling (nor, at 100 requests each, for its request count) while the scraper waits.
    using Clock = std::chrono::steady_clock;
    std::vector<std::unique_ptr<RawConnection>> chatty;
    std::vector<Clock::time_point> asked;
    std::atomic<int> connected{0};
    std::atomic<bool> stop{false};
    auto ask = [&](std::size_t i) {
        asked[i] = Clock::now();
        return chatty[i]->send(get_request("/metrics")) &&
               status_of(chatty[i]->receive_response(10s)) == 200;
    };
    std::thread chatter([&] {
        chatty.reserve(cap);
        asked.reserve(cap);
        std::vector<bool> open;
        while (!stop) {
            if (chatty.size() < cap) {
                chatty.push_back(std::make_unique<RawConnection>(management.port()));
                asked.push_back(Clock::now());
                open.push_back(ask(chatty.size() - 1));
                connected += open.back();
            }
            for (std::size_t i = 0; i < chatty.size() && !stop; ++i)
                if (open[i] && Clock::now() - asked[i] >= 500ms) open[i] = ask(i);
        }
    });
    const bool all_in = eventually([&] { return connected == cap; }, 60s);
    STEP(connected << " kept-alive clients answered, each asking again every 500 ms: the cap");
    RawConnection scraper(management.port());
    const bool sent = scraper.send(get_request("/metrics"));
    const std::string response = scraper.receive_response(10s);
    stop = true;
    chatter.join();
    STEP("the scraper got: " << response.substr(0, response.find('\r')));
    REQUIRE(all_in);
    CHECK(sent);
    CHECK(status_of(response) == 200);
    const std::string body = body_of(response);
    CHECK(metric_value(body, "management_idle_evictions_total").value_or(0) >= 1);
    CHECK(metric_value(body, "management_connections_current").value_or(cap + 1) <= cap);
}

TEST_CASE("the management port refuses a request body before reading it",
          "[lesson05][management]") {
    ManagementServer management("127.0.0.1", 0, nullptr);
    management.start();
    for (const std::string framing : {"Content-Length: 4294967296", "Transfer-Encoding: chunked"}) {
        RawConnection client(management.port());
        REQUIRE(client.send("POST /metrics HTTP/1.1\r\nHost: x\r\n" + framing + "\r\n\r\n"));
        STEP("sent POST /metrics with " << framing << ", and no body yet");
        const std::string response = client.receive_response(10s);
        STEP("answered: " << response.substr(0, response.find('\r')));
        CHECK(status_of(response) == 413);
        CHECK(client.closed_by_peer(5s));
    }
}

TEST_CASE("concurrent /health requests share one database check", "[lesson05][management]") {
    // Each check holds a database connection and takes time: twenty monitors asking at once must
    // not open twenty connections, nor time out against each other and report DOWN.
    int running = 0, most_at_once = 0, checks = 0;
    ManagementServer management("127.0.0.1", 0, [&](std::string&) {
        ++checks; // the management carrier runs every check: no lock needed
        most_at_once = std::max(most_at_once, ++running);
        boost::this_fiber::sleep_for(300ms);
        --running;
        return true;
    });
    management.start();
    const auto answers = concurrent_get(management.port(), "/health", 20);
    STEP("20 concurrent GET /health: " << checks << " checks, at most " << most_at_once
                                       << " at once");
    for (const auto& answer : answers)
        CHECK(answer.status == 200);
    CHECK(most_at_once == 1);
    CHECK(checks < 20);
}

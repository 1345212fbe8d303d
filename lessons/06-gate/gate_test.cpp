// Unit tests of the gate and its error mapping, in this process, without a database. Callers
// that must wait are plain threads or fibers the test starts; the test waits for the gate's
// own counters (gate.waiting() == 3) rather than sleeping and hoping.
#include "lessons/02-fibers/carrier.hpp"
#include "lessons/03-connector/connector.hpp"
#include "lessons/05-wirings/metrics_text.hpp"
#include "lessons/06-gate/concurrency_gate.hpp"
#include "lessons/06-gate/gate_flags.hpp"
#include "lessons/06-gate/rejection_mapping.hpp"
#include "lessons/common/test_support.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;

GateOptions armed(int limit, GatePolicy policy) {
    GateOptions options;
    options.limit = limit;
    options.policy = policy;
    options.armed = true;
    return options;
}

} // namespace

TEST_CASE("only the vt-gated profile arms the gate", "[lesson06][gate]") {
    CHECK_FALSE(gate_armed_by("platform"));
    CHECK_FALSE(gate_armed_by("vt"));
    CHECK(gate_armed_by("vt-gated"));
}

TEST_CASE("REJECT: a full gate fails at once, naming the limit and the operation",
          "[lesson06][gate]") {
    ConcurrencyGate gate(armed(2, GatePolicy::reject));
    std::optional<ConcurrencyGate::Permit> first(gate.enter());
    std::optional<ConcurrencyGate::Permit> second(gate.enter());
    STEP("two permits of two taken");
    CHECK(gate.in_use() == 2);
    CHECK_THROWS_MATCHES(
        gate.enter(), ConcurrencyLimitReached,
        Catch::Message("Concurrency limit reached: 2 - not allowed to enter WorkService::do_work"));
    CHECK(gate.rejections() == 1);
    CHECK(gate.in_use() == 2);
    first.reset();
    STEP("one permit returned");
    CHECK(gate.in_use() == 1);
    CHECK_NOTHROW(gate.enter());
    CHECK(gate.rejections() == 1);
}

TEST_CASE("REJECT with limit 0 admits nobody, and BLOCK with limit 0 is refused",
          "[lesson06][gate]") {
    ConcurrencyGate gate(armed(0, GatePolicy::reject));
    CHECK_THROWS_AS(gate.enter(), ConcurrencyLimitReached);
    CHECK(check_gate_options(armed(0, GatePolicy::block)) ==
          "--gate-limit 0 with --gate-policy block would park every request forever");
    CHECK(check_gate_options(armed(-1, GatePolicy::reject)) == "--gate-limit must be 0 or more");
    CHECK_THROWS_AS(ConcurrencyGate(armed(0, GatePolicy::block)), std::invalid_argument);
}

TEST_CASE("BLOCK: a full gate parks its callers, then lets them in first come, first served",
          "[lesson06][gate]") {
    ConcurrencyGate gate(armed(1, GatePolicy::block));
    std::optional<ConcurrencyGate::Permit> held(gate.enter());
    std::mutex mutex;
    std::vector<int> order;
    std::vector<std::thread> callers;
    for (int i = 1; i <= 3; ++i) {
        callers.emplace_back([&, i] {
            const ConcurrencyGate::Permit permit = gate.enter();
            std::lock_guard<std::mutex> lock(mutex);
            order.push_back(i);
        });
        REQUIRE(eventually([&] { return gate.waiting() == i; }));
    }
    STEP("the permit is held; three callers wait at the gate, in order");
    {
        std::lock_guard<std::mutex> lock(mutex);
        CHECK(order.empty()); // nobody got past: there is no timeout to give up at either
    }
    CHECK(gate.rejections() == 0);
    held.reset();
    STEP("permit returned");
    for (auto& caller : callers)
        caller.join();
    CHECK(order == std::vector<int>{1, 2, 3});
    CHECK(gate.waiting() == 0);
    CHECK(gate.in_use() == 0);
}

TEST_CASE("BLOCK parks a fiber, not its carrier", "[lesson06][gate]") {
    ConcurrencyGate gate(armed(1, GatePolicy::block));
    std::optional<ConcurrencyGate::Permit> held(gate.enter());
    std::atomic<bool> entered{false}, other_fiber_ran{false};
    {
        Carrier carrier("gate-test");
        carrier.spawn([&] {
            const ConcurrencyGate::Permit permit = gate.enter();
            entered = true;
        });
        REQUIRE(eventually([&] { return gate.waiting() == 1; }));
        carrier.spawn([&] { other_fiber_ran = true; });
        STEP("one fiber waits at the gate; another fiber on the same carrier");
        CHECK(eventually([&] { return other_fiber_ran.load(); }));
        CHECK_FALSE(entered);
        held.reset();
        CHECK(eventually([&] { return entered.load(); }));
    } // the carrier stops once its fibers have ended
}

TEST_CASE("a disarmed gate lets everything through and counts nothing", "[lesson06][gate]") {
    GateOptions options = armed(1, GatePolicy::reject);
    options.armed = false;
    ConcurrencyGate gate(options);
    std::vector<ConcurrencyGate::Permit> permits;
    for (int i = 0; i < 5; ++i)
        permits.push_back(gate.enter());
    CHECK(gate.in_use() == 0);
    CHECK(gate.rejections() == 0);
    CHECK(gate.describe() == "disarmed (pass-through)");
}

TEST_CASE("the gate's metrics are Prometheus text metric_value reads", "[lesson06][gate]") {
    ConcurrencyGate gate(armed(3, GatePolicy::reject));
    const ConcurrencyGate::Permit a = gate.enter(), b = gate.enter(), c = gate.enter();
    CHECK_THROWS(gate.enter());
    MetricsText text;
    gate.collect(text);
    INFO(text.text());
    CHECK(text.text().find("# TYPE gate_rejections_total counter\n") != std::string::npos);
    CHECK(metric_value(text.text(), "gate_armed") == 1);
    CHECK(metric_value(text.text(), "gate_limit") == 3);
    CHECK(metric_value(text.text(), "gate_permits_in_use") == 3);
    CHECK(metric_value(text.text(), "gate_rejections_total") == 1);
    CHECK(gate.describe() == "armed: limit 3, policy reject");
}

namespace {

// A connector whose GET /guarded passes a gate that admits nobody; GET /broken throws a
// plain error. Mapped or not, as the test says.
struct GatedServer {
    HttpApp app;
    ConcurrencyGate gate{armed(0, GatePolicy::reject)};
    std::unique_ptr<Connector> connector;

    explicit GatedServer(bool mapped) {
        app.Get("/guarded", [this](const httplib::Request&, httplib::Response& res) {
            const ConcurrencyGate::Permit permit = gate.enter();
            res.set_content("inside\n", "text/plain");
        });
        app.Get("/broken", [](const httplib::Request&, httplib::Response&) {
            throw std::runtime_error("something else broke");
        });
        if (mapped) map_rejections_to_503(app);
        ConnectorOptions options;
        options.port = 0;
        connector = std::make_unique<Connector>(app, options);
        connector->start();
    }
    std::string get_request(const std::string& path) {
        RawConnection client(connector->port());
        client.send("GET " + path + " HTTP/1.1\r\nHost: test\r\n\r\n");
        return client.receive_response(5s);
    }
};

} // namespace

TEST_CASE("the error mapping answers a rejection 503 with its message, anything else a bare 500",
          "[lesson06][mapping]") {
    GatedServer server(true);
    const std::string rejected = server.get_request("/guarded");
    STEP("GET /guarded: " << rejected);
    CHECK(status_of(rejected) == 503);
    CHECK(body_of(rejected) ==
          "Concurrency limit reached: 0 - not allowed to enter WorkService::do_work\n");
    const std::string broken = server.get_request("/broken");
    STEP("GET /broken: " << broken);
    CHECK(status_of(broken) == 500);
    CHECK(broken.find("something else broke") == std::string::npos); // a bare 500, as unmapped
}

TEST_CASE("without the mapping the rejection surfaces as a 500 with no body",
          "[lesson06][mapping]") {
    GatedServer server(false);
    const std::string rejected = server.get_request("/guarded");
    STEP("GET /guarded: " << rejected);
    CHECK(status_of(rejected) == 500);
    CHECK(body_of(rejected).empty());
    // HttpApp's default keeps the message off the wire: cpp-httplib's would put it in a header.
    CHECK(rejected.find("Concurrency limit reached") == std::string::npos);
}

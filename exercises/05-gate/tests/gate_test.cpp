// Graded tests of exercise 05. The gate is driven from fibers on carriers (lesson 02's Carrier)
// and, for the 503 mapping, through lesson 03's connector over real HTTP on loopback. Handlers
// are held inside on a Latch the test opens, so "two requests are inside" is a fact, not timing.
//
// Why the bounds are safe: the rejections must come back in well under 100 ms (they take
// microseconds; a gate that waits before refusing takes the whole wait); a carrier held by a
// blocking wait shows a ticker gap of the whole wait (300 ms), a free one a few ms.
#include "concurrency_gate.hpp"
#include "exercises/common/exercise_support.hpp"
#include "lessons/03-connector/connector.hpp"
#include "lessons/common/test_support.hpp"
#include "rejection_mapping.hpp"

#include <boost/fiber/operations.hpp>
#include <catch2/catch.hpp>

#include <atomic>
#include <mutex>
#include <string>
#include <vector>

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr double free_carrier_gap_ms = 150;

// "c0 c1 c2": the order in which callers got in, for a story.
std::string joined(const std::vector<std::string>& names) {
    std::string all;
    for (const auto& name : names)
        all += (all.empty() ? "" : " ") + name;
    return all;
}

// Lesson 03's connector with the exercise's mapping, and routes behind a gate:
//   GET /work  enters the gate, then waits (parked) until the test opens `release`
//   GET /full  throws ConcurrencyLimitReached itself, as a full gate would (no gate needed)
//   GET /boom  throws an ordinary error, not a rejection
struct GatedServer {
    ConcurrencyGate& gate;
    Latch release;
    std::atomic<int> ended{0}; // GET /work handlers that returned or threw
    HttpApp app;
    std::unique_ptr<Connector> connector;

    explicit GatedServer(ConcurrencyGate& gate_in) : gate(gate_in) {
        map_rejections_to_503(app);
        app.Get("/work", [this](const httplib::Request&, httplib::Response& res) {
            struct Ended {
                std::atomic<int>& count;
                ~Ended() { ++count; }
            } counted{ended};
            ConcurrencyGate::Permit permit = gate.enter();
            release.wait(5000ms);
            res.set_content("done\n", "text/plain");
        });
        app.Get("/full", [](const httplib::Request&, httplib::Response&) {
            throw ConcurrencyLimitReached("Concurrency limit reached: 7 - not allowed to enter");
        });
        app.Get("/boom", [](const httplib::Request&, httplib::Response&) {
            throw std::runtime_error("database is down");
        });
        ConnectorOptions options;
        options.port = 0;
        options.carriers = 2;
        connector = std::make_unique<Connector>(app, options);
        connector->start();
    }
    ~GatedServer() {
        release.open();
        connector->stop();
    }
    int port() const { return connector->port(); }

    // Waits until `n` GET /work are inside the gate, or one has ended already (a gate that let
    // it through without a permit, or threw): then there is no point in waiting on.
    bool inside(int n) {
        eventually([&] { return gate.in_use() == n || ended > 0; });
        return gate.in_use() == n;
    }
};

} // namespace

TEST_CASE("under its limit the gate lets callers in at once and counts them",
          "[ex5][task_1][points=1]") {
    ConcurrencyGate gate(2, GatePolicy::reject);
    {
        ConcurrencyGate::Permit first = gate.enter();
        ConcurrencyGate::Permit second = gate.enter();
        STEP("a gate with limit 2 let two callers in; in_use() says " << gate.in_use());
        CHECK(gate.in_use() == 2);
        ConcurrencyGate::Permit moved = std::move(first);
        STEP("a moved permit still counts once");
        CHECK(gate.in_use() == 2);
    }
    STEP("both permits destroyed; in_use() says " << gate.in_use());
    CHECK(gate.in_use() == 0);
    CHECK(gate.rejections() == 0);
}

TEST_CASE("at its limit a REJECT gate refuses at once and counts the rejections",
          "[ex5][task_1][points=2]") {
    ConcurrencyGate gate(2, GatePolicy::reject);
    ConcurrencyGate::Permit first = gate.enter();
    ConcurrencyGate::Permit second = gate.enter();
    std::string message;
    int refused = 0;
    const auto began = Clock::now();
    for (int i = 0; i < 100; ++i) {
        try {
            gate.enter();
        } catch (const ConcurrencyLimitReached& e) {
            ++refused;
            message = e.what();
        }
    }
    const double took_ms = ms_since(began);
    STEP("two callers inside a gate of limit 2; 100 more tried to enter: "
         << refused << " refused in " << took_ms << " ms with '" << message << "'");
    CHECK(refused == 100);
    CHECK(took_ms < 1000); // at once: a refusal that waited even 10 ms would take 1,000 ms
    CHECK_THAT(message, Catch::Contains("Concurrency limit reached: 2"));
    CHECK(gate.rejections() == 100);
    CHECK(gate.in_use() == 2);
    STEP("one permit returned: the next caller gets in");
    { ConcurrencyGate::Permit gone = std::move(first); }
    CHECK_NOTHROW(gate.enter());
}

TEST_CASE("a permit is given back when the guarded call throws", "[ex5][task_1][points=1]") {
    ConcurrencyGate gate(1, GatePolicy::reject);
    try {
        ConcurrencyGate::Permit permit = gate.enter();
        throw std::runtime_error("the handler failed");
    } catch (const std::runtime_error&) {
    }
    STEP("a call inside the gate threw; in_use() says " << gate.in_use());
    CHECK(gate.in_use() == 0);
    CHECK_NOTHROW(gate.enter());
}

TEST_CASE("fibers on two carriers never hold more permits than the limit",
          "[ex5][task_1][points=2]") {
    ConcurrencyGate gate(3, GatePolicy::reject);
    std::atomic<int> inside{0}, most{0}, admitted{0}, refused{0};
    std::vector<std::future<void>> fibers;
    TestCarrier first("carrier-1"), second("carrier-2");
    for (int i = 0; i < 8; ++i) {
        fibers.push_back((i % 2 ? first : second).start([&] {
            for (int round = 0; round < 200; ++round) {
                try {
                    ConcurrencyGate::Permit permit = gate.enter();
                    const int now = ++inside;
                    int seen = most;
                    while (now > seen && !most.compare_exchange_weak(seen, now)) {
                    }
                    ++admitted;
                    boost::this_fiber::yield(); // stay inside while others try
                    --inside;
                } catch (const ConcurrencyLimitReached&) {
                    ++refused;
                }
            }
        }));
    }
    for (std::size_t i = 0; i < fibers.size(); ++i)
        REQUIRE((i % 2 ? first : second).finished(fibers[i]));
    STEP("8 fibers tried 200 times each: " << admitted << " admitted, " << refused
                                           << " refused, at most " << most << " inside at once");
    CHECK(admitted + refused == 1600);
    CHECK(admitted > 0);
    CHECK(most <= 3);
    CHECK(gate.in_use() == 0);
    CHECK(gate.rejections() == static_cast<std::uint64_t>(refused.load()));
}

TEST_CASE("at its limit a BLOCK gate parks the caller until a permit is returned",
          "[ex5][task_2][points=2]") {
    ConcurrencyGate gate(1, GatePolicy::block);
    double waited_ms = 0;
    int waiting_seen = -1;
    TestCarrier carrier;
    Ticker ticker(carrier);
    auto holder = carrier.start([&] {
        ConcurrencyGate::Permit permit = gate.enter();
        boost::this_fiber::sleep_for(300ms);
    });
    auto latecomer = carrier.start([&] {
        const auto began = Clock::now();
        ConcurrencyGate::Permit permit = gate.enter();
        waited_ms = ms_since(began);
    });
    STEP("fiber A entered a BLOCK gate of limit 1 and holds the permit 300 ms; fiber B, on the "
         "same carrier, called enter() and must park until A is done");
    if (eventually([&] { return gate.waiting() == 1; }, 250ms)) waiting_seen = 1;
    REQUIRE(carrier.finished(holder));
    REQUIRE(carrier.finished(latecomer));
    const TickerReport report = ticker.stop();
    STEP("fiber A held the only permit for 300 ms; fiber B, on the same carrier, got in after "
         << waited_ms << " ms; waiting() showed 1 meanwhile: " << (waiting_seen == 1 ? "yes" : "no")
         << "; longest ticker gap " << report.longest_gap_ms << " ms");
    CHECK(waited_ms >= 250);
    CHECK(waiting_seen == 1);
    CHECK(report.longest_gap_ms < free_carrier_gap_ms);
    CHECK(gate.rejections() == 0);
    CHECK(gate.waiting() == 0);
    CHECK(gate.in_use() == 0);
}

TEST_CASE("under BLOCK nobody is refused and each caller waits for everyone ahead of it",
          "[ex5][task_2][points=1]") {
    ConcurrencyGate gate(1, GatePolicy::block);
    std::mutex mutex; // held for a push_back only
    std::vector<std::string> order;
    std::vector<double> waited_ms(5);
    std::vector<std::future<void>> fibers;
    TestCarrier carrier;
    for (int i = 0; i < 5; ++i) {
        fibers.push_back(carrier.start([&, i] {
            boost::this_fiber::sleep_for(std::chrono::milliseconds(10 * i)); // arrive in order
            const auto began = Clock::now();
            ConcurrencyGate::Permit permit = gate.enter();
            waited_ms[static_cast<std::size_t>(i)] = ms_since(began);
            {
                std::lock_guard<std::mutex> lock(mutex);
                order.push_back("c" + std::to_string(i));
            }
            boost::this_fiber::sleep_for(100ms); // the work
        }));
    }
    STEP("5 fibers on one carrier call enter() on a BLOCK gate of limit 1, 10 ms apart");
    for (auto& fiber : fibers)
        REQUIRE(carrier.finished(fiber));
    const std::string served = joined(order);
    STEP("5 callers, 10 ms apart, 100 ms of work each behind a BLOCK gate of limit 1: served in "
         "the order '"
         << served << "'; the last waited " << waited_ms.back() << " ms");
    CHECK(served == "c0 c1 c2 c3 c4");
    CHECK(gate.rejections() == 0);
    CHECK(waited_ms.back() >= 300); // the queue moved to the gate: 4 x 100 ms - 40 ms of arrival

    // A caller who gives its permit back and asks again at once is behind the one who waits.
    // On one carrier the order is fixed: B was woken, but has not run when A asks again.
    std::vector<std::string> again;
    Latch a_inside;
    auto a = carrier.start([&] {
        {
            ConcurrencyGate::Permit permit = gate.enter();
            a_inside.open();
            // Until B waits for the permit (2 s at most: waiting() may not count it yet).
            for (int ms = 0; ms < 2000 && gate.waiting() < 1; ++ms)
                boost::this_fiber::sleep_for(1ms);
        }
        ConcurrencyGate::Permit permit = gate.enter(); // no yield in between
        again.push_back("A-again");
    });
    auto b = carrier.start([&] {
        if (!a_inside.wait()) return;
        ConcurrencyGate::Permit permit = gate.enter();
        again.push_back("B");
        boost::this_fiber::sleep_for(20ms);
    });
    REQUIRE(carrier.finished(a));
    REQUIRE(carrier.finished(b));
    STEP("then A held the permit while B waited; A gave it back and at once asked again: served "
         "in the order '"
         << joined(again) << "'");
    CHECK(joined(again) == "B A-again");
}

TEST_CASE("behind a BLOCK gate the excess request waits and then gets 200",
          "[ex5][task_2][points=1]") {
    ConcurrencyGate gate(1, GatePolicy::block);
    GatedServer server(gate);
    RawConnection first(server.port()), second(server.port());
    REQUIRE(first.send(get_request("/work")));
    STEP("one GET /work sent to a BLOCK gate of limit 1; in_use() must count it");
    REQUIRE(server.inside(1));
    REQUIRE(second.send(get_request("/work")));
    const bool queued = eventually([&] { return gate.waiting() == 1; });
    STEP("one GET /work inside a BLOCK gate of limit 1, a second one waiting: " << (queued ? "yes"
                                                                                           : "no"));
    CHECK(queued);
    server.release.open();
    const std::string a = first.receive_response(5000ms), b = second.receive_response(5000ms);
    STEP("released: the answers are " << status_of(a) << " and " << status_of(b));
    CHECK(status_of(a) == 200);
    CHECK(status_of(b) == 200);
}

TEST_CASE("a rejection is answered 503 with its message and any other exception a bare 500",
          "[ex5][task_3][points=2]") {
    ConcurrencyGate gate(1, GatePolicy::reject);
    GatedServer server(gate);
    RawConnection client(server.port());
    REQUIRE(client.send(get_request("/full")));
    const std::string response = client.receive_response(5000ms);
    STEP("GET /full threw ConcurrencyLimitReached; the answer: "
         << response.substr(0, response.find('\r')) << " '" << body_of(response) << "'");
    CHECK(status_of(response) == 503);
    CHECK(body_of(response) == "Concurrency limit reached: 7 - not allowed to enter\n");
    CHECK_THAT(response, Catch::Contains("Content-Type: text/plain"));
    // The same handler sees every exception: what is not a rejection must still be answered as
    // every server here answers it (a handler that leaves it alone sends a 200).
    RawConnection other(server.port());
    REQUIRE(other.send(get_request("/boom")));
    const std::string broken = other.receive_response(5000ms);
    STEP("GET /boom threw std::runtime_error(\"database is down\"); the answer: "
         << broken.substr(0, broken.find("\r\n\r\n")) << " '" << body_of(broken) << "'");
    CHECK(status_of(broken) == 500);
    CHECK(body_of(broken).empty());
    CHECK(broken.find("database is down") == std::string::npos); // no header carries it
}

TEST_CASE("with a REJECT gate in front the excess request gets a fast 503",
          "[ex5][task_3][points=2]") {
    ConcurrencyGate gate(2, GatePolicy::reject);
    GatedServer server(gate);
    RawConnection first(server.port()), second(server.port()), third(server.port());
    REQUIRE(first.send(get_request("/work")));
    REQUIRE(second.send(get_request("/work")));
    STEP("two GET /work sent to a REJECT gate of limit 2; in_use() must count both");
    REQUIRE(server.inside(2));
    STEP("two GET /work are inside a REJECT gate of limit 2, held there");
    const auto began = Clock::now();
    REQUIRE(third.send(get_request("/work")));
    const std::string rejected = third.receive_response(5000ms);
    const double took_ms = ms_since(began);
    STEP("a third GET /work was answered after "
         << took_ms << " ms: " << rejected.substr(0, rejected.find('\r')));
    CHECK(status_of(rejected) == 503);
    CHECK_THAT(body_of(rejected), Catch::StartsWith("Concurrency limit reached: 2"));
    CHECK(took_ms < 1000);
    server.release.open();
    const std::string a = first.receive_response(5000ms), b = second.receive_response(5000ms);
    STEP("the two inside were let go: " << status_of(a) << " and " << status_of(b));
    CHECK(status_of(a) == 200);
    CHECK(status_of(b) == 200);
}

// Task 4 (stretch): BLOCK with a limit on the wait. The holder stays inside until the test opens
// its latch, so a caller that finishes first cannot have waited for it: an order, not a timing.
TEST_CASE("a BLOCK gate with a max wait refuses the caller who waited that long",
          "[ex5][task_4][points=2]") {
    ConcurrencyGate gate(1, GatePolicy::block, 100ms);
    Latch release;
    std::string message = "(none: enter() returned)";
    double waited_ms = -1;
    TestCarrier carrier;
    Ticker ticker(carrier);
    auto holder = carrier.start([&] {
        ConcurrencyGate::Permit permit = gate.enter();
        release.wait(5000ms);
    });
    auto latecomer = carrier.start([&] {
        boost::this_fiber::sleep_for(10ms); // after the holder
        const auto began = Clock::now();
        try {
            ConcurrencyGate::Permit permit = gate.enter();
        } catch (const ConcurrencyLimitReached& e) {
            message = e.what();
        }
        waited_ms = ms_since(began);
    });
    STEP("fiber A holds the only permit of a BLOCK gate with a max wait of 100 ms, until the test "
         "lets it go; fiber B, on the same carrier, calls enter() and must give up first");
    REQUIRE(carrier.finished(latecomer, 3000ms));
    const int waiting_after = gate.waiting();
    release.open();
    REQUIRE(carrier.finished(holder));
    const TickerReport report = ticker.stop();
    STEP("B's enter() ended after " << waited_ms << " ms with '" << message
                                    << "'; then waiting() said " << waiting_after
                                    << "; longest ticker gap " << report.longest_gap_ms << " ms");
    CHECK(message == "Concurrency limit reached: 1 - waited 100 ms");
    CHECK(waited_ms >= 99);
    CHECK(waiting_after == 0);
    CHECK(gate.rejections() == 1);
    CHECK(report.longest_gap_ms < free_carrier_gap_ms);
    CHECK(gate.in_use() == 0);
}

TEST_CASE("a place returned after a caller gave up goes to the next caller, not to the one gone",
          "[ex5][task_4][points=2]") {
    ConcurrencyGate gate(1, GatePolicy::block, 100ms);
    Latch release;
    bool gave_up = false;
    TestCarrier carrier;
    auto holder = carrier.start([&] {
        ConcurrencyGate::Permit permit = gate.enter();
        release.wait(5000ms);
    });
    auto quitter = carrier.start([&] {
        boost::this_fiber::sleep_for(10ms);
        try {
            ConcurrencyGate::Permit permit = gate.enter();
        } catch (const ConcurrencyLimitReached&) {
            gave_up = true;
        }
    });
    STEP("fiber A holds the only permit of a BLOCK gate with a max wait of 100 ms; fiber B asks, "
         "and must give up");
    REQUIRE(carrier.finished(quitter, 3000ms));
    REQUIRE(gave_up);
    release.open();
    REQUIRE(carrier.finished(holder));
    STEP("then A gave its permit back: in_use() says " << gate.in_use() << ", waiting() says "
                                                       << gate.waiting());
    CHECK(gate.in_use() == 0);
    CHECK(gate.waiting() == 0);
    bool admitted = false;
    REQUIRE(carrier.run(
        [&] {
            try {
                ConcurrencyGate::Permit permit = gate.enter();
                admitted = true;
            } catch (const ConcurrencyLimitReached&) {
            }
        },
        3000ms));
    STEP("a newcomer then called enter(): " << (admitted ? "admitted" : "refused"));
    CHECK(admitted);
}

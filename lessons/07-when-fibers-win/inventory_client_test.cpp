// The inventory client's kept connections (issue 26, case 6): bounded per carrier, closed when
// idle too long, and dropped once the server has closed them, so that no burst leaves sockets
// behind in CLOSE-WAIT. The inventory is a fake on loopback (lesson 03's
// lessons/instruments/client/fake_downstream.hpp) that holds each answer of a burst until the whole
// burst has arrived: "N connections are open at once" is a fact the test waits for, not a guess
// about timing.
#include "lessons/02-fibers/carrier.hpp"
#include "lessons/03-connector/reactor.hpp"
#include "lessons/07-when-fibers-win/inventory_client.hpp"
#include "lessons/common/test_support.hpp"
#include "lessons/instruments/client/fake_downstream.hpp"

#include <boost/fiber/operations.hpp>
#include <catch2/catch.hpp>

#include <atomic>
#include <future>
#include <thread>
#include <unistd.h>

namespace {

using namespace std::chrono_literals;

constexpr int burst = 20;

// 200 "ok" to every request; the first `burst` requests are held until all of them arrived.
// Closes a connection idle for `idle_close`.
FakeDownstream::Script burst_then_answers(std::atomic<int>& arrived,
                                          std::chrono::milliseconds idle_close) {
    return [&arrived, idle_close](FakeDownstream::Peer& peer) {
        if (!peer.read_request()) return;
        ++arrived;
        eventually([&] { return arrived >= burst; }); // on a miss the test fails on its counts
        if (peer.send("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
            answer_until_idle(peer, idle_close);
    };
}

// Runs `calls` calls at once as fibers of `carrier`, waits for all; returns how many got 200.
int call_at_once(Carrier& carrier, InventoryClient& inventory, int calls) {
    std::vector<std::future<bool>> results;
    for (int i = 0; i < calls; ++i) {
        auto done = std::make_shared<std::promise<bool>>();
        results.push_back(done->get_future());
        carrier.spawn([&inventory, done] {
            HttpResponse response;
            std::string why;
            done->set_value(inventory.get(response, why) && response.status == 200);
        });
    }
    int ok = 0;
    for (auto& result : results) {
        REQUIRE(result.wait_for(30s) == std::future_status::ready);
        ok += result.get();
    }
    return ok;
}

// This process's sockets to the fake inventory (the client's ends), in `state`.
int client_sockets(const FakeDownstream& fake, const std::string& state) {
    return sockets_of(::getpid(), fake.port(), state);
}

} // namespace

TEST_CASE("a burst of calls leaves at most max_per_carrier connections kept",
          "[lesson07][inventory]") {
    std::atomic<int> arrived{0};
    FakeDownstream fake(burst_then_answers(arrived, 60s));
    Carrier carrier("inventory-client", [] { use_carrier_algorithm<Reactor>(); });
    IdleLimits limits;
    limits.max_per_carrier = 8;
    InventoryClient inventory(fake.url("/benchmark"), 20s, limits);
    STEP(burst << " calls at once on one carrier: " << burst << " connections");
    REQUIRE(call_at_once(carrier, inventory, burst) == burst);
    const int kept = client_sockets(fake, "01");
    STEP("kept afterwards: " << kept << " connections (ESTABLISHED)");
    CHECK(kept == 8);
}

TEST_CASE("kept connections the server closed are dropped at the next call, not left in "
          "CLOSE-WAIT",
          "[lesson07][inventory]") {
    std::atomic<int> arrived{0};
    // The server closes a connection idle for 300 ms, long before the client would (60 s).
    FakeDownstream fake(burst_then_answers(arrived, 300ms));
    Carrier carrier("inventory-client", [] { use_carrier_algorithm<Reactor>(); });
    IdleLimits limits;
    limits.timeout = 60s;
    InventoryClient inventory(fake.url("/benchmark"), 20s, limits);
    REQUIRE(call_at_once(carrier, inventory, burst) == burst);
    STEP(burst << " calls at once, then one call every 100 ms: the newest connection stays in "
                  "use, the server closes the others");
    REQUIRE(eventually(
        [&] {
            REQUIRE(call_at_once(carrier, inventory, 1) == 1);
            std::this_thread::sleep_for(100ms);
            return fake.ended() >= burst - 1;
        },
        20s));
    int close_wait = 0;
    const bool dropped = eventually(
        [&] {
            REQUIRE(call_at_once(carrier, inventory, 1) == 1);
            close_wait = client_sockets(fake, "08");
            return close_wait <= 1;
        },
        10s);
    STEP("the server closed " << fake.ended() << "; after the next calls " << close_wait
                              << " of the client's sockets were in CLOSE-WAIT");
    CHECK(dropped);
}

TEST_CASE("a connection idle past the timeout is closed by the client, before the server would",
          "[lesson07][inventory]") {
    std::atomic<int> arrived{0};
    FakeDownstream fake(burst_then_answers(arrived, 60s));
    Carrier carrier("inventory-client", [] { use_carrier_algorithm<Reactor>(); });
    IdleLimits limits;
    limits.timeout = 300ms;
    InventoryClient inventory(fake.url("/benchmark"), 20s, limits);
    REQUIRE(call_at_once(carrier, inventory, burst) == burst);
    STEP(burst << " calls at once, all kept; 400 ms later, one more call");
    // Every connection was kept before call_at_once returned: 400 ms later each has idled past
    // the 300 ms timeout, however slowly the machine ran meanwhile.
    std::this_thread::sleep_for(400ms);
    REQUIRE(call_at_once(carrier, inventory, 1) == 1);
    const int open = client_sockets(fake, "01") + client_sockets(fake, "08");
    STEP("the client holds " << open << " connections");
    CHECK(open <= 1);
    // The server sees the client's close: a connection it did not have to time out.
    CHECK(eventually([&] { return fake.ended() >= burst - 1; }));
}

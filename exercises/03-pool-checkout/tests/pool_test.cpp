// Graded tests of exercise 03. Borrowers are fibers on carriers (lesson 02's Carrier) and plain
// threads; a ticker fiber checks that a waiting borrower leaves its carrier free.
//
// Why the bounds are safe: waits here are 100-300 ms; a carrier held by a blocking wait shows a
// ticker gap of the whole wait, a free one a few ms (tens under heavy load). We allow 150 ms.
#include "exercises/common/exercise_support.hpp"
#include "lessons/common/test_support.hpp"
#include "pool.hpp"

#include <boost/fiber/operations.hpp>
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <thread>

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr double free_carrier_gap_ms = 150;

// The order in which borrowers got their resource, recorded from fibers on one carrier.
struct Order {
    std::mutex mutex; // held for a push_back only, never across a wait
    std::vector<std::string> names;
    void add(const std::string& name) {
        std::lock_guard<std::mutex> lock(mutex);
        names.push_back(name);
    }
    std::string text() {
        std::lock_guard<std::mutex> lock(mutex);
        std::string all;
        for (const auto& name : names)
            all += (all.empty() ? "" : " ") + name;
        return all;
    }
};

} // namespace

TEST_CASE("free resources are lent at once and come back when their leases end",
          "[ex3][task_1][points=2]") {
    Pool pool(2, 1000ms);
    const auto began = Clock::now();
    Pool::Lease a = pool.borrow();
    Pool::Lease b = pool.borrow();
    STEP("a pool of 2 lent resources " << a.id() << " and " << b.id() << " in " << ms_since(began)
                                       << " ms");
    CHECK(std::set<int>{a.id(), b.id()} == std::set<int>{0, 1});
    CHECK(ms_since(began) < 500); // at once, not after the pool's 1,000 ms timeout

    const int returned = a.id();
    a.release();
    Pool::Lease c = pool.borrow();
    STEP("resource " << returned << " was returned; the next borrower got " << c.id());
    CHECK(c.id() == returned);

    STEP("a lease moved to another variable gives its resource back once, not twice");
    { Pool::Lease moved = std::move(b); }
    c.release();
    Pool::Lease d = pool.borrow();
    Pool::Lease e = pool.borrow();
    CHECK(std::set<int>{d.id(), e.id()} == std::set<int>{0, 1});
}

TEST_CASE("a borrower waits for a returned resource without holding its carrier",
          "[ex3][task_2][points=2]") {
    Pool pool(1, 5000ms);
    double waited_ms = 0;
    int got = -1;
    TestCarrier carrier;
    Ticker ticker(carrier);
    auto holder = carrier.start([&] {
        Pool::Lease lease = pool.borrow();
        boost::this_fiber::sleep_for(300ms);
    });
    auto borrower = carrier.start([&] {
        const auto began = Clock::now();
        Pool::Lease lease = pool.borrow();
        waited_ms = ms_since(began);
        got = lease.id();
    });
    REQUIRE(carrier.finished(holder));
    REQUIRE(carrier.finished(borrower));
    const TickerReport report = ticker.stop();
    STEP("fiber A held the only resource for 300 ms; fiber B on the same carrier got resource "
         << got << " after " << waited_ms << " ms; longest ticker gap " << report.longest_gap_ms
         << " ms");
    CHECK(got == 0);
    CHECK(waited_ms >= 250);
    CHECK(report.longest_gap_ms < free_carrier_gap_ms);
}

TEST_CASE("a borrower gives up at the checkout timeout with a message that says why",
          "[ex3][task_2][points=2]") {
    Pool pool(1, 200ms);
    Pool::Lease held = pool.borrow(); // by the test thread, for the whole test
    std::string message = "no exception";
    double waited_ms = 0;
    TestCarrier carrier;
    REQUIRE(carrier.run([&] {
        const auto began = Clock::now();
        try {
            pool.borrow();
        } catch (const PoolTimeout& e) {
            message = e.what();
        }
        waited_ms = ms_since(began);
    }));
    STEP("the only resource is held; borrow() with a 200 ms checkout timeout ended after "
         << waited_ms << " ms with: " << message);
    CHECK(waited_ms >= 195);
    CHECK(waited_ms < 2000);
    CHECK_THAT(message, Catch::Contains("timed out after 200ms"));
    CHECK_THAT(message, Catch::Contains("total=1, active=1, idle=0, waiting=0"));
}

TEST_CASE("a plain thread waits for a resource that a fiber returns", "[ex3][task_2][points=1]") {
    Pool pool(1, 5000ms);
    Latch taken;
    TestCarrier carrier;
    auto holder = carrier.start([&] {
        Pool::Lease lease = pool.borrow();
        taken.open();
        boost::this_fiber::sleep_for(200ms);
    });
    REQUIRE(taken.wait());
    const auto began = Clock::now();
    Pool::Lease lease = pool.borrow(); // the test's own thread
    const double waited_ms = ms_since(began);
    REQUIRE(carrier.finished(holder));
    STEP("a fiber held the resource for 200 ms; the test thread got it after " << waited_ms
                                                                               << " ms");
    CHECK(lease.id() == 0);
    CHECK(waited_ms >= 150);
}

TEST_CASE("eight fibers on two carriers share three resources and never hold the same one",
          "[ex3][task_2][points=2]") {
    Pool pool(3, 5000ms);
    std::atomic<bool> in_use[3] = {};
    std::atomic<int> conflicts{0}, borrowed{0};
    std::vector<std::future<void>> fibers;
    TestCarrier first("carrier-1"), second("carrier-2");
    for (int i = 0; i < 8; ++i) {
        TestCarrier& carrier = i % 2 ? first : second;
        fibers.push_back(carrier.start([&] {
            for (int round = 0; round < 100; ++round) {
                Pool::Lease lease = pool.borrow();
                if (lease.id() < 0 || lease.id() > 2 || in_use[lease.id()].exchange(true)) {
                    ++conflicts;
                    continue;
                }
                ++borrowed;
                boost::this_fiber::yield(); // let others try while we hold it
                in_use[lease.id()] = false;
            }
        }));
    }
    for (std::size_t i = 0; i < fibers.size(); ++i)
        REQUIRE((i % 2 ? first : second).finished(fibers[i]));
    STEP("8 fibers borrowed 100 times each: " << borrowed << " clean leases, " << conflicts
                                              << " times a resource was lent twice at once");
    CHECK(conflicts == 0);
    CHECK(borrowed == 800);
}

TEST_CASE("waiters get returned resources in the order they arrived", "[ex3][task_3][points=2]") {
    Pool pool(1, 5000ms);
    Order order;
    std::vector<std::future<void>> fibers;
    TestCarrier carrier;
    auto holder = carrier.start([&] {
        Pool::Lease lease = pool.borrow();
        boost::this_fiber::sleep_for(150ms); // while the five waiters arrive
    });
    for (int i = 0; i < 5; ++i) {
        fibers.push_back(carrier.start([&, i] {
            boost::this_fiber::sleep_for(std::chrono::milliseconds(20 * (i + 1)));
            Pool::Lease lease = pool.borrow();
            order.add("w" + std::to_string(i));
            boost::this_fiber::sleep_for(5ms);
        }));
    }
    REQUIRE(carrier.finished(holder));
    for (auto& fiber : fibers)
        REQUIRE(carrier.finished(fiber));
    STEP("waiters w0..w4 arrived 20 ms apart while the only resource was held; they got it in "
         "the order: "
         << order.text());
    CHECK(order.text() == "w0 w1 w2 w3 w4");
}

TEST_CASE("a borrower that returns its resource cannot take it back ahead of a waiter",
          "[ex3][task_3][points=2]") {
    Pool pool(1, 5000ms);
    Order order;
    Latch a_has_it;
    TestCarrier carrier;
    auto a = carrier.start([&] {
        Pool::Lease lease = pool.borrow();
        a_has_it.open();
        boost::this_fiber::sleep_for(100ms); // B is waiting by now
        lease.release();
        // No yield in between: B was woken, but has not run yet. A barging pool lets A in.
        Pool::Lease again = pool.borrow();
        order.add("A-again");
    });
    auto b = carrier.start([&] {
        if (!a_has_it.wait()) return; // (no REQUIRE here: Catch2 checks only on the test thread)
        Pool::Lease lease = pool.borrow();
        order.add("B");
        boost::this_fiber::sleep_for(20ms);
    });
    REQUIRE(carrier.finished(a));
    REQUIRE(carrier.finished(b));
    STEP("A held the resource while B waited; A released it and at once asked for it again; "
         "the resource went to: "
         << order.text());
    CHECK(order.text() == "B A-again");
}

TEST_CASE("a waiter that timed out leaves the queue and a later waiter still gets the resource",
          "[ex3][task_3][points=1]") {
    Pool pool(1, 5000ms);
    std::string quitter = "got it", patient = "nothing";
    Pool::Lease held = pool.borrow(); // by the test thread
    TestCarrier carrier;
    auto first = carrier.start([&] {
        try {
            pool.borrow(100ms);
        } catch (const PoolTimeout&) {
            quitter = "timed out";
        }
    });
    auto second = carrier.start([&] {
        boost::this_fiber::sleep_for(20ms); // queued behind the first
        Pool::Lease lease = pool.borrow(3000ms);
        patient = "got resource " + std::to_string(lease.id());
    });
    REQUIRE(carrier.finished(first));
    held.release(); // after the first waiter gave up
    REQUIRE(carrier.finished(second));
    STEP("waiter 1 (100 ms timeout): " << quitter
                                       << "; then the resource came back; waiter 2: " << patient);
    CHECK(quitter == "timed out");
    CHECK(patient == "got resource 0");
}

TEST_CASE("stats count what is lent and idle and who waits", "[ex3][task_4][points=2]") {
    Pool pool(2, 5000ms);
    auto check = [&](int active, int idle, int waiting) {
        const PoolStats s = pool.stats();
        INFO("stats: size=" << s.size << " active=" << s.active << " idle=" << s.idle
                            << " waiting=" << s.waiting);
        CHECK(s.size == 2);
        CHECK(s.active == active);
        CHECK(s.idle == idle);
        CHECK(s.waiting == waiting);
    };
    STEP("a new pool of 2");
    check(0, 2, 0);
    Pool::Lease a = pool.borrow();
    STEP("one lent");
    check(1, 1, 0);
    Pool::Lease b = pool.borrow();
    STEP("both lent");
    check(2, 0, 0);
    TestCarrier carrier;
    auto impatient = carrier.start([&] {
        try {
            pool.borrow(150ms);
        } catch (const PoolTimeout&) {
        }
    });
    auto patient = carrier.start([&] { Pool::Lease lease = pool.borrow(5000ms); });
    REQUIRE(eventually([&] { return pool.stats().waiting == 2; }, 100ms));
    STEP("two borrowers wait");
    check(2, 0, 2);
    REQUIRE(carrier.finished(impatient));
    STEP("one of them timed out");
    check(2, 0, 1);
    a.release();
    REQUIRE(carrier.finished(patient));
    STEP("a was returned to the waiter, who has since returned it");
    check(1, 1, 0);
    b.release();
    STEP("everything returned");
    check(0, 2, 0);
}

namespace {

// Task 5: a greedy fiber borrows, holds 5 ms and asks again at once, 20 times; a patient one on
// the same carrier starts waiting during the first hold. Returns how many turns the greedy one
// had had when the patient one got in (-1: it never did). On one carrier the order is fixed: a
// release wakes the patient fiber, but the greedy one runs on until its next hold.
int turns_before_the_patient_one(Pool::Handover handover) {
    Pool pool(1, 5000ms, handover);
    std::atomic<int> greedy_turns{0};
    int turns_seen = -1;
    Latch greedy_has_it;
    TestCarrier carrier;
    auto greedy = carrier.start([&] {
        for (int i = 0; i < 20; ++i) {
            Pool::Lease lease = pool.borrow();
            if (i == 0) greedy_has_it.open();
            boost::this_fiber::sleep_for(5ms);
            ++greedy_turns;
        } // the lease ends, and the next turn asks again before anyone else runs
    });
    auto patient = carrier.start([&] {
        if (!greedy_has_it.wait()) return;
        Pool::Lease lease = pool.borrow();
        turns_seen = greedy_turns;
    });
    REQUIRE(carrier.finished(greedy));
    REQUIRE(carrier.finished(patient));
    return turns_seen;
}

} // namespace

TEST_CASE("a barging pool lets a greedy borrower overtake a waiter, turn after turn",
          "[ex3][task_5][points=2]") {
    STEP("a greedy fiber borrows, holds 5 ms and asks again at once, 20 times; a patient fiber "
         "waits from the first hold on: first with fifo hand-over, then barging");
    const int fifo = turns_before_the_patient_one(Pool::Handover::fifo);
    const int barging = turns_before_the_patient_one(Pool::Handover::barging);
    STEP("the patient fiber got in after " << fifo << " greedy turn(s) with fifo, after " << barging
                                           << " with barging");
    CHECK(fifo == 1);
    CHECK(barging == 20);
}

TEST_CASE("a barging pool still wakes a waiter when nobody barges", "[ex3][task_5][points=1]") {
    Pool pool(1, 5000ms, Pool::Handover::barging);
    double waited_ms = -1;
    Latch a_has_it;
    TestCarrier carrier; // after what its fibers use: it goes first
    Ticker ticker(carrier);
    auto a = carrier.start([&] {
        Pool::Lease lease = pool.borrow();
        a_has_it.open();
        boost::this_fiber::sleep_for(200ms);
    });
    auto b = carrier.start([&] {
        if (!a_has_it.wait()) return;
        const auto began = Clock::now();
        Pool::Lease lease = pool.borrow();
        waited_ms = ms_since(began);
    });
    STEP("A holds the only resource of a barging pool for 200 ms; B waits for it");
    REQUIRE(carrier.finished(a));
    REQUIRE(carrier.finished(b));
    const TickerReport report = ticker.stop();
    const PoolStats stats = pool.stats();
    STEP("B got it after " << waited_ms << " ms; then active=" << stats.active
                           << " idle=" << stats.idle << " waiting=" << stats.waiting
                           << "; longest ticker gap " << report.longest_gap_ms << " ms");
    CHECK(waited_ms >= 150);
    CHECK(stats.active == 0);
    CHECK(stats.idle == 1);
    CHECK(stats.waiting == 0);
    CHECK(report.longest_gap_ms < free_carrier_gap_ms);
}

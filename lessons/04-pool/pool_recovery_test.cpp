// A PostgreSQL restart under load, on a private server this test stops and starts: requests
// fail fast with a clear error while it is down, and the pool recovers by itself when it is back.
#include "lessons/04-pool/pg_pool.hpp"
#include "lessons/04-pool/pg_test_support.hpp"
#include "lessons/common/test_support.hpp"

#include <boost/fiber/operations.hpp>
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

struct Outcome {
    double at = 0;      // when the request ended, seconds since the load began
    double seconds = 0; // how long it took
    std::string error;  // "" for success
};

} // namespace

TEST_CASE("a server restart mid-load: requests fail fast while it is down, then the pool "
          "recovers by itself",
          "[lesson04][pool]") {
    PrivateCluster cluster("restart");
    STEP("private server: " << cluster.conninfo());
    PoolOptions options;
    options.conninfo = cluster.conninfo();
    options.size = 4;
    options.checkout_timeout = 10s;
    PgPool pool(options);
    pool.open();

    const auto begin = Clock::now();
    std::mutex outcomes_mutex;
    std::vector<Outcome> outcomes;
    std::atomic<bool> running{true};
    {
        // 12 borrowers for 4 connections (8 fibers on 2 carriers, 4 threads), each in a loop.
        Borrowers borrowers(2);
        // However this block ends (a failed REQUIRE, a restart that failed), the borrowers stop
        // looping first: else ~Borrowers would wait for them forever and the test would hang.
        struct StopBorrowing {
            std::atomic<bool>& running;
            ~StopBorrowing() { running = false; }
        } stop_borrowing{running};
        for (int i = 0; i < 12; ++i) {
            borrowers.anywhere(i, [&] {
                while (running) {
                    const auto start = Clock::now();
                    Outcome outcome;
                    try {
                        PgPool::Lease lease = pool.borrow();
                        lease->query("SELECT pg_sleep(0.02)", 5s);
                    } catch (const std::exception& e) {
                        outcome.error = e.what();
                    }
                    outcome.at = seconds_since(begin);
                    outcome.seconds = seconds_since(start);
                    {
                        std::lock_guard<std::mutex> lock(outcomes_mutex);
                        outcomes.push_back(outcome);
                    }
                    // Parks a fiber, blocks a thread: either way no busy loop during the outage.
                    if (!outcome.error.empty()) boost::this_fiber::sleep_for(10ms);
                }
            });
        }
        std::this_thread::sleep_for(1s);
        const double stopping_at = seconds_since(begin);
        cluster.stop();
        const double stopped_at = seconds_since(begin);
        std::this_thread::sleep_for(1s);
        cluster.start();
        const double restarted_at = seconds_since(begin);
        STEP("load began at 0 s; server stopping at "
             << stopping_at << " s, stopped at " << stopped_at << " s, back at " << restarted_at
             << " s");
        double recovered_at = -1;
        eventually(
            [&] {
                std::lock_guard<std::mutex> lock(outcomes_mutex);
                for (const Outcome& o : outcomes)
                    if (o.error.empty() && o.at > restarted_at) recovered_at = o.at;
                return recovered_at > 0;
            },
            20s);
        STEP("first success after the restart at " << recovered_at << " s");
        REQUIRE(recovered_at > 0);
        std::this_thread::sleep_for(1500ms);
        running = false;
        REQUIRE(borrowers.wait(60s));
        CHECK(borrowers.errors().empty());

        int before = 0, during_failed = 0, after_ok = 0, after_failed = 0;
        double slowest = 0;
        std::map<std::string, int> errors;
        for (const Outcome& o : outcomes) {
            slowest = std::max(slowest, o.seconds);
            if (!o.error.empty()) ++errors[o.error];
            if (o.at < stopping_at) {
                before += o.error.empty() ? 1 : 0;
                CHECK(o.error.empty()); // the server was up
            } else if (o.at < recovered_at + 0.5) {
                during_failed += o.error.empty() ? 0 : 1;
            } else {
                (o.error.empty() ? after_ok : after_failed) += 1;
            }
        }
        std::string error_summary;
        for (const auto& [message, count] : errors)
            error_summary += "\n  " + std::to_string(count) + "x " + message;
        STEP(before << " successes before the stop; " << during_failed << " failures around the "
                    << "outage; after recovery " << after_ok << " successes and " << after_failed
                    << " failures; slowest request " << slowest << " s; errors:" << error_summary);
        CHECK(before > 0);
        CHECK(during_failed > 0);
        // Back within 10 s of the restart, by itself, and then no more failures.
        CHECK(recovered_at - restarted_at < 10.0);
        CHECK(after_ok > 0);
        CHECK(after_failed == 0);
        // Fail fast: nobody waited out the 10 s checkout timeout or hung on a dead socket. The
        // stop itself takes about a second, which a request caught in it may wait.
        CHECK(slowest < 5.0);
        // Every failure says what happened: the server went away or cannot be reached.
        for (const auto& [message, count] : errors) {
            INFO("error: " << message);
            CHECK((message.rfind("cannot connect to PostgreSQL: ", 0) == 0 ||
                   message.rfind("PostgreSQL: FATAL: terminating connection", 0) == 0 ||
                   // libpq's own words when the socket closed before the server's FATAL arrived
                   message.rfind("PostgreSQL: server closed the connection unexpectedly", 0) == 0 ||
                   message.rfind("lost the connection to PostgreSQL", 0) == 0));
        }
    }
}

// PgPool against a real PostgreSQL: the bound, the order of waiters, timeouts, wake-ups, and
// connections the server kills. Borrowers run as fibers on carriers and as plain OS threads,
// often both at once, because lesson 05 uses the pool from both.
#include "lessons/02-fibers/carrier.hpp"
#include "lessons/03-connector/reactor.hpp"
#include "lessons/04-pool/pg_pool.hpp"
#include "lessons/04-pool/pg_test_support.hpp"
#include "lessons/common/test_support.hpp"

#include <boost/fiber/operations.hpp>
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <netinet/in.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

PoolOptions pool_options(int size, std::chrono::milliseconds checkout_timeout = 10s) {
    PoolOptions options;
    options.conninfo = test_conninfo();
    options.size = size;
    options.checkout_timeout = checkout_timeout;
    return options;
}

// A name no other session on the server has (sessions of an earlier test may still be ending),
// to tag one pool's sessions with: the server can then count exactly that pool's connections.
std::string unique_application() {
    static int pools = 0;
    return "pg_pool_test_" + std::to_string(::getpid()) + "_" + std::to_string(++pools);
}

// The sessions tagged `application`, as the server sees them.
int server_sessions(PgConnection& admin, const std::string& application) {
    const std::string sql =
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = '" + application + "'";
    return std::stoi(admin.query(sql, 5s).value(0, 0));
}

} // namespace

TEST_CASE("the pool never holds more than its size, borrowed from fibers and threads at once",
          "[lesson04][pool]") {
    const int size = 10;
    const std::string application = unique_application();
    PoolOptions options = pool_options(size);
    options.conninfo += " application_name=" + application;
    PgPool pool(options);
    PgConnection admin(test_conninfo(), 5s);
    std::atomic<int> inside{0};
    std::atomic<int> most_inside{0};
    std::atomic<int> queries{0};
    std::atomic<bool> running{true};
    std::atomic<int> most_sessions{0};
    std::atomic<int> most_total{0};

    // Meanwhile, the server counts our sessions and the pool reports its total.
    std::thread watcher([&] {
        PgConnection watcher_connection(test_conninfo(), 5s);
        while (running) {
            const int sessions = server_sessions(watcher_connection, application);
            most_sessions = std::max(most_sessions.load(), sessions);
            most_total = std::max(most_total.load(), pool.stats().total);
            std::this_thread::sleep_for(5ms);
        }
    });
    {
        // 150 borrowers: 100 fibers on 2 carriers and 50 plain threads, 3 queries each.
        Borrowers borrowers(2);
        for (int i = 0; i < 150; ++i) {
            borrowers.anywhere(i, [&] {
                for (int round = 0; round < 3; ++round) {
                    PgPool::Lease lease = pool.borrow();
                    const int now = ++inside;
                    int seen = most_inside.load();
                    while (now > seen && !most_inside.compare_exchange_weak(seen, now)) {
                    }
                    lease->query("SELECT pg_sleep(0.01)", 5s);
                    --inside;
                    ++queries;
                }
            });
        }
        STEP("150 borrowers (100 fibers on 2 carriers, 50 threads) x 3 queries started");
        REQUIRE(borrowers.wait(120s));
        CHECK(borrowers.errors().empty());
    }
    running = false;
    watcher.join();
    STEP(queries << " queries; at most " << most_inside << " leases at once, the pool's total "
                 << "at most " << most_total << ", the server saw at most " << most_sessions
                 << " sessions");
    CHECK(queries == 450);
    CHECK(most_inside <= size);
    CHECK(most_total <= size);
    CHECK(most_sessions <= size);
    // 150 borrowers for 10 connections: they were all in use at some point.
    CHECK(most_inside == size);
    CHECK(pool.stats().total == size);
    CHECK(server_sessions(admin, application) == size);
    CHECK(pool.stats().timeouts == 0);
}

TEST_CASE("waiters get connections first come, first served, on fibers and threads alike",
          "[lesson04][pool]") {
    PgPool pool(pool_options(1));
    std::vector<int> order;
    std::mutex order_mutex;
    {
        PgPool::Lease held = pool.borrow();
        Borrowers borrowers(2);
        for (int i = 0; i < 9; ++i) {
            borrowers.anywhere(i, [&, i] {
                PgPool::Lease lease = pool.borrow();
                lease->query("SELECT 1", 5s);
                std::lock_guard<std::mutex> lock(order_mutex);
                order.push_back(i);
            });
            // The next borrower starts only once this one is queued.
            REQUIRE(eventually([&] { return pool.stats().pending == i + 1; }));
        }
        STEP("9 waiters queued one after the other (fibers on carriers 0 and 1, then a thread, "
             "repeated); the connection is released");
        held.release();
        REQUIRE(borrowers.wait(60s));
        CHECK(borrowers.errors().empty());
    }
    CHECK(order == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8});
}

TEST_CASE("a returned connection goes to the oldest waiter, or to a newcomer when barging",
          "[lesson04][pool]") {
    // Everything on one carrier, so the order is deterministic: a fiber woken by a returned
    // connection cannot run until the returning fiber parks.
    const bool barging = GENERATE(false, true);
    PoolOptions options = pool_options(1);
    options.barging = barging;
    PgPool pool(options);
    std::vector<std::string> order;
    Borrowers borrowers(1);
    std::atomic<bool> waiter_queued{false};
    borrowers.on_carrier(0, [&] {
        PgPool::Lease first = pool.borrow();
        borrowers.on_carrier(0, [&] {
            waiter_queued = true;
            PgPool::Lease lease = pool.borrow(); // parks: the only connection is lent
            order.push_back("waiter");
        });
        while (pool.stats().pending == 0)
            boost::this_fiber::yield();
        first.release(); // the waiter is woken, but this fiber keeps the carrier ...
        PgPool::Lease again = pool.borrow(); // ... and asks again right away
        order.push_back("newcomer");
    });
    REQUIRE(borrowers.wait(60s));
    STEP((barging ? "barging" : "FIFO") << ": one fiber holds the connection, a second waits, "
                                        << "the first returns it and borrows again at once");
    CHECK(borrowers.errors().empty());
    if (barging) {
        CHECK(order == std::vector<std::string>{"newcomer", "waiter"});
    } else {
        CHECK(order == std::vector<std::string>{"waiter", "newcomer"});
    }
}

TEST_CASE("a borrower that waits too long fails with HikariCP's message", "[lesson04][pool]") {
    PgPool pool(pool_options(2, 300ms));
    PgPool::Lease a = pool.borrow();
    PgPool::Lease b = pool.borrow();
    Borrowers borrowers(1);
    std::string message;
    double waited = 0;
    std::atomic<bool> gave_up{false};
    // A second waiter with a long timeout, queued first, shows up as waiting=1.
    borrowers.on_thread([&] { pool.borrow(20s); });
    REQUIRE(eventually([&] { return pool.stats().pending == 1; }));
    borrowers.on_carrier(0, [&] {
        const auto start = Clock::now();
        try {
            pool.borrow(); // the default: the pool's checkout timeout, 300 ms here
        } catch (const PoolTimeout& e) {
            message = e.what();
        }
        waited = seconds_since(start);
        gave_up = true;
    });
    REQUIRE(eventually([&] { return gave_up.load(); }));
    STEP("both connections lent, one waiter queued; a fiber waited " << waited << " s");
    CHECK(message == "Connection is not available, request timed out after 300ms (total=2, "
                     "active=2, idle=0, waiting=1)");
    // Not before its timeout; and, with the carrier free, not long after (5 s: a busy machine).
    CHECK(waited >= 0.29);
    CHECK(waited < 5.0);
    CHECK(pool.stats().timeouts == 1);
    a.release(); // the long waiter gets it
    REQUIRE(borrowers.wait(30s));
    CHECK(borrowers.errors().empty());
    CHECK(pool.stats().pending == 0);
}

// A port that takes connections (the kernel completes the handshake from its backlog) and never
// says a word: a database server that hangs. Closed when the test ends.
class SilentPort {
public:
    SilentPort() {
        fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t length = sizeof address;
        if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
            ::listen(fd_, 16) != 0 ||
            ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) != 0)
            throw std::runtime_error("cannot listen on 127.0.0.1");
        port_ = ntohs(address.sin_port);
    }
    ~SilentPort() { ::close(fd_); }
    SilentPort(const SilentPort&) = delete;
    SilentPort& operator=(const SilentPort&) = delete;
    int port() const { return port_; }

private:
    int fd_ = -1;
    int port_ = 0;
};

TEST_CASE("borrow() waits no longer than the checkout timeout in all, even while a connect hangs",
          "[lesson04][pool]") {
    SilentPort silent;
    PoolOptions options;
    options.conninfo = "host=127.0.0.1 port=" + std::to_string(silent.port()) +
                       " dbname=nobody user=nobody sslmode=disable";
    options.size = 1;
    options.checkout_timeout = 500ms;
    options.connect_timeout = 20s;
    PgPool pool(options);
    STEP("a pool of 1 whose server takes the connection and never answers; checkout timeout "
         "0.5 s, connect timeout 20 s");
    std::string error;
    const auto start = Clock::now();
    try {
        pool.borrow();
    } catch (const std::exception& e) {
        error = e.what();
    }
    const double waited = seconds_since(start);
    STEP("borrow() gave up after " << waited << " s: " << error);
    CHECK_FALSE(error.empty());
    CHECK(waited >= 0.49);
    // Far below the 20 s connect timeout it must not wait for; 5 s is what a busy machine meets.
    CHECK(waited < 5.0);
    CHECK(pool.stats().active == 0); // the place came back, empty
}

TEST_CASE("a returned connection wakes a parked waiter at once, across threads",
          "[lesson04][pool]") {
    const bool holder_on_thread = GENERATE(true, false);
    PgPool pool(pool_options(1, 30s));
    Borrowers borrowers(1);
    std::atomic<bool> holding{false}, saw_waiter{false};
    std::atomic<double> waited{-1};
    auto hold = [&] {
        PgPool::Lease lease = pool.borrow();
        holding = true;
        // Kept until the waiter is parked for it (10 s at most), however late the waiter
        // started: returning it must then wake that waiter. Parks a fiber, sleeps a thread.
        const auto give_up = Clock::now() + 10s;
        while (pool.stats().pending == 0 && Clock::now() < give_up)
            boost::this_fiber::sleep_for(2ms);
        saw_waiter = pool.stats().pending == 1;
    };
    auto wait = [&] {
        const auto start = Clock::now();
        PgPool::Lease lease = pool.borrow();
        waited = seconds_since(start);
    };
    if (holder_on_thread) {
        borrowers.on_thread(hold);
    } else {
        borrowers.on_carrier(0, hold);
    }
    REQUIRE(eventually([&] { return holding.load(); }));
    if (holder_on_thread) {
        borrowers.on_carrier(0, wait);
    } else {
        borrowers.on_thread(wait);
    }
    REQUIRE(borrowers.wait(60s));
    STEP("holder on " << (holder_on_thread ? "a thread" : "a fiber") << ", waiter on "
                      << (holder_on_thread ? "a fiber" : "a thread") << ": the waiter got the "
                      << "connection after " << waited << " s of a 30 s timeout");
    CHECK(borrowers.errors().empty());
    // The connection came back while the waiter was parked; a missed wake-up would show as the
    // 30 s timeout, and 5 s is far from both that and a prompt wake-up.
    CHECK(saw_waiter);
    CHECK(waited < 5.0);
}

TEST_CASE("a fiber waiting for the pool leaves its carrier to the other fibers",
          "[lesson04][pool]") {
    PgPool pool(pool_options(1));
    PgPool::Lease held = pool.borrow();
    Borrowers borrowers(1);
    std::atomic<bool> got_it{false};
    std::atomic<int> ticks{0};
    borrowers.on_carrier(0, [&] {
        PgPool::Lease lease = pool.borrow();
        got_it = true;
    });
    borrowers.on_carrier(0, [&] {
        while (!got_it) {
            ++ticks;
            boost::this_fiber::sleep_for(5ms);
        }
    });
    REQUIRE(eventually([&] { return ticks >= 20; }));
    STEP("one fiber waits for the pool; its neighbour on the same carrier ticked " << ticks
                                                                                   << " times");
    CHECK(pool.stats().pending == 1);
    held.release();
    REQUIRE(borrowers.wait(30s));
    CHECK(got_it);
}

TEST_CASE("a connection the server terminated while idle is replaced before it is lent",
          "[lesson04][pool]") {
    PgPool pool(pool_options(1));
    PgConnection admin(test_conninfo(), 5s);
    int first_pid = 0;
    {
        PgPool::Lease lease = pool.borrow();
        first_pid = lease->backend_pid();
    }
    // pg_terminate_backend(pid, timeout) returns once the session has ended.
    REQUIRE(admin.query("SELECT pg_terminate_backend(" + std::to_string(first_pid) + ", 5000)", 5s)
                .value(0, 0) == "t");
    STEP("session " << first_pid << " terminated by pg_terminate_backend while idle in the pool");
    PgPool::Lease lease = pool.borrow();
    const std::string pid = lease->query("SELECT pg_backend_pid()", 5s).value(0, 0);
    STEP("the next borrower runs on session " << pid);
    CHECK(pid != std::to_string(first_pid));
    CHECK(pool.stats().total == 1);
}

TEST_CASE("a query on a session terminated mid-flight fails at once, and the next borrower gets "
          "a fresh connection",
          "[lesson04][pool]") {
    PgPool pool(pool_options(1));
    PgConnection admin(test_conninfo(), 5s);
    Borrowers borrowers(1);
    std::atomic<int> pid{0};
    std::string error, sqlstate;
    double failed_after = 0;
    borrowers.on_carrier(0, [&] {
        PgPool::Lease lease = pool.borrow();
        pid = lease->backend_pid();
        const auto start = Clock::now();
        try {
            lease->query("SELECT pg_sleep(30)", 60s);
        } catch (const PgError& e) {
            error = e.what();
            sqlstate = e.sqlstate();
        }
        failed_after = seconds_since(start);
    });
    REQUIRE(eventually([&] {
        return pid != 0 && admin.query("SELECT count(*) FROM pg_stat_activity WHERE pid = " +
                                           std::to_string(pid) + " AND state = 'active'",
                                       5s)
                                   .value(0, 0) == "1";
    }));
    admin.query("SELECT pg_terminate_backend(" + std::to_string(pid) + ")", 5s);
    REQUIRE(borrowers.wait(30s));
    STEP("session " << pid << " terminated during pg_sleep(30); the query failed after "
                    << failed_after << " s: " << error);
    CHECK(sqlstate == "57P01");
    CHECK(error == "PostgreSQL: FATAL: terminating connection due to administrator command");
    CHECK(failed_after < 10.0);
    PgPool::Lease lease = pool.borrow();
    CHECK(lease->query("SELECT pg_backend_pid()", 5s).value(0, 0) != std::to_string(pid));
}

TEST_CASE("the counters show active, idle, pending and timed-out borrowers", "[lesson04][pool]") {
    PgPool pool(pool_options(2, 200ms));
    auto counters = [&] {
        const PoolStats s = pool.stats();
        return std::vector<long>{s.size, s.total,   s.active,
                                 s.idle, s.pending, static_cast<long>(s.timeouts)};
    };
    STEP("counters are {size, total, active, idle, pending, timeouts}");
    CHECK(counters() == std::vector<long>{2, 0, 0, 0, 0, 0}); // nothing opened yet
    pool.open();
    CHECK(counters() == std::vector<long>{2, 2, 0, 2, 0, 0});
    PgPool::Lease a = pool.borrow();
    CHECK(counters() == std::vector<long>{2, 2, 1, 1, 0, 0});
    PgPool::Lease b = pool.borrow();
    CHECK(counters() == std::vector<long>{2, 2, 2, 0, 0, 0});
    Borrowers borrowers(1);
    borrowers.on_thread([&] { pool.borrow(); }); // waits 200 ms, then gives up
    REQUIRE(eventually([&] { return pool.stats().pending == 1; }));
    CHECK(counters() == std::vector<long>{2, 2, 2, 0, 1, 0});
    REQUIRE(borrowers.wait(30s));
    CHECK(borrowers.errors() ==
          std::vector<std::string>{"Connection is not available, request timed out after 200ms "
                                   "(total=2, active=2, idle=0, waiting=0)"});
    CHECK(counters() == std::vector<long>{2, 2, 2, 0, 0, 1});
    a.release();
    b.release();
    CHECK(counters() == std::vector<long>{2, 2, 0, 2, 0, 1});
}

// PgConnection against a real PostgreSQL: connecting and querying through libpq's asynchronous
// API, from a fiber on a carrier and from a plain thread, and the errors a user gets.
#include "lessons/02-fibers/carrier.hpp"
#include "lessons/03-connector/reactor.hpp"
#include "lessons/04-pool/pg_connection.hpp"
#include "lessons/04-pool/pg_test_support.hpp"
#include "lessons/common/test_support.hpp"

#include <boost/fiber/operations.hpp>
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <atomic>
#include <future>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

Carrier::SchedulerSetup reactor() {
    return [] { boost::fibers::use_scheduling_algorithm<Reactor>(); };
}

// A listening socket nobody accepts from: the kernel completes TCP handshakes into the backlog,
// and then nothing ever answers. A stand-in for a server that hangs.
struct SilentServer {
    int fd = -1;
    int port = 0;
    SilentServer() {
        fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
        REQUIRE(::listen(fd, 16) == 0);
        socklen_t length = sizeof address;
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
        port = ntohs(address.sin_port);
    }
    ~SilentServer() { ::close(fd); }
};

} // namespace

TEST_CASE("a query runs from a plain thread and from a fiber on a carrier", "[lesson04][pg]") {
    const std::string conninfo = test_conninfo();
    STEP("server: " << conninfo);
    PgConnection on_thread(conninfo, 5s);
    CHECK(on_thread.query("SELECT 6 * 7", 5s).value(0, 0) == "42");

    Carrier carrier("test-carrier", reactor());
    std::promise<std::string> answer;
    carrier.spawn([&] {
        try {
            PgConnection on_fiber(conninfo, 5s);
            answer.set_value(on_fiber.query("SELECT 'from a fiber'", 5s).value(0, 0));
        } catch (const std::exception& e) {
            answer.set_value(std::string("error: ") + e.what());
        }
    });
    auto result = answer.get_future();
    REQUIRE(result.wait_for(20s) == std::future_status::ready);
    CHECK(result.get() == "from a fiber");
}

TEST_CASE("connecting and querying park the fiber: its carrier keeps running the others",
          "[lesson04][pg]") {
    const std::string conninfo = test_conninfo();
    Carrier carrier("test-carrier", reactor());
    std::atomic<bool> querying{true};
    std::atomic<int> ticks{0};
    std::promise<std::string> finished;
    carrier.spawn([&] {
        try {
            PgConnection connection(conninfo, 5s);
            connection.query("SELECT pg_sleep(0.5)", 5s);
            finished.set_value("ok");
        } catch (const std::exception& e) {
            finished.set_value(e.what());
        }
        querying = false;
    });
    carrier.spawn([&] { // the same carrier: it runs only while the other fiber is parked
        while (querying) {
            ++ticks;
            boost::this_fiber::sleep_for(10ms);
        }
    });
    auto result = finished.get_future();
    REQUIRE(result.wait_for(20s) == std::future_status::ready);
    CHECK(result.get() == "ok");
    STEP("while one fiber connected and slept 0.5 s in PostgreSQL, its neighbour ticked "
         << ticks << " times (every 10 ms)");
    // A blocking libpq call would have held the carrier for the whole 0.5 s: one tick at most.
    // 5 of the ~50 possible still passes when a busy machine wakes each tick 90 ms late.
    CHECK(ticks >= 5);
}

TEST_CASE("an SQL error fails the statement but leaves the connection usable", "[lesson04][pg]") {
    PgConnection connection(test_conninfo(), 5s);
    try {
        connection.query("SELECT 1 / 0", 5s);
        FAIL("division by zero did not throw");
    } catch (const PgError& e) {
        STEP("error: " << e.what());
        CHECK(e.sqlstate() == "22012");
        CHECK_FALSE(e.connection_lost());
        CHECK(std::string(e.what()) == "PostgreSQL: ERROR: division by zero");
    }
    CHECK(connection.alive());
    CHECK(connection.query("SELECT 1", 5s).value(0, 0) == "1");
}

TEST_CASE("a refused connection fails at once with one line saying why", "[lesson04][pg]") {
    SilentServer reserved; // a port that is surely free once we close it
    const int port = reserved.port;
    ::close(reserved.fd);
    reserved.fd = -1;
    const auto start = Clock::now();
    try {
        PgConnection connection("host=127.0.0.1 port=" + std::to_string(port), 5s);
        FAIL("connected to a closed port");
    } catch (const PgError& e) {
        const std::string message = e.what();
        STEP("after " << seconds_since(start) << " s: " << message);
        CHECK(message == "cannot connect to PostgreSQL: connection to server at \"127.0.0.1\", "
                         "port " +
                             std::to_string(port) +
                             " failed: Connection refused Is the "
                             "server running on that host and accepting TCP/IP connections?");
        CHECK(e.connection_lost());
    }
    // Refused at once; a client that waited for an answer would give up at the 5 s timeout.
    CHECK(seconds_since(start) < 4.0);
}

TEST_CASE("a host name that needs a DNS lookup is refused before libpq blocks on it",
          "[lesson04][pg]") {
    // libpq resolves names inside PQconnectPoll with a blocking getaddrinfo(): a slow resolver
    // would hold the carrier, every fiber on it waiting (10 s, when a reviewer tried one).
    for (const std::string conninfo :
         {"host=pgtest.example port=5432", "host=127.0.0.1,db.example", "host=localhost"}) {
        try {
            PgConnection connection(conninfo, 5s);
            FAIL("connected to " << conninfo);
        } catch (const PgError& e) {
            const std::string message = e.what();
            STEP(conninfo << ": " << message);
            CHECK(message.rfind("cannot connect to PostgreSQL: host '", 0) == 0);
            CHECK(message.find("' is a name, not an address:") != std::string::npos);
        }
    }
    for (const std::string fine :
         {"host=127.0.0.1 port=1", "host=::1 port=1", "host=/nonexistent port=1",
          "hostaddr=127.0.0.1 port=1", "host=db.example hostaddr=127.0.0.1 port=1"}) {
        try {
            PgConnection connection(fine, 5s);
        } catch (const PgError& e) {
            STEP(fine << ": " << e.what());
            CHECK(std::string(e.what()).find("is a name, not an address") == std::string::npos);
        }
    }
}

TEST_CASE("a server that never answers the handshake times out the connect", "[lesson04][pg]") {
    SilentServer silent;
    const auto start = Clock::now();
    try {
        PgConnection connection("host=127.0.0.1 port=" + std::to_string(silent.port), 300ms);
        FAIL("connected to a silent server");
    } catch (const PgError& e) {
        STEP("after " << seconds_since(start) << " s: " << e.what());
        CHECK(std::string(e.what()) == "cannot connect to PostgreSQL: no answer within 300ms");
    }
    CHECK(seconds_since(start) >= 0.29);
    CHECK(seconds_since(start) < 5.0);
}

TEST_CASE("a query the server does not answer in time is abandoned with its connection",
          "[lesson04][pg]") {
    PgConnection connection(test_conninfo(), 5s);
    const auto start = Clock::now();
    try {
        connection.query("SELECT pg_sleep(10)", 300ms);
        FAIL("a 10 s sleep finished within 300 ms");
    } catch (const PgError& e) {
        STEP("after " << seconds_since(start) << " s: " << e.what());
        CHECK(std::string(e.what()) ==
              "PostgreSQL did not answer within 300ms; the connection was dropped");
        CHECK(e.connection_lost());
    }
    CHECK(seconds_since(start) < 5.0);
    CHECK_FALSE(connection.alive());
}

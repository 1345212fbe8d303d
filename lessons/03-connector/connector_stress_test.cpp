// A stress test of the connector's timeouts: slowloris clients trickle a request head past the
// read timeout while other clients keep both carriers busy. Each trickled byte may reach the
// server in the very scheduler pass in which that connection's read timeout expires: the race
// the reactor must survive (reactor_test.cpp has it in miniature). The verdict is what a user
// sees, never a timing figure: every well-formed request answered, every slowloris cut off, the
// server still serving.
#include "lessons/02-fibers/carrier.hpp"
#include "lessons/03-connector/connector.hpp"
#include "lessons/03-connector/reactor.hpp"
#include "lessons/common/test_support.hpp"
#include "lessons/instruments/client/http_client.hpp"

#include <boost/fiber/operations.hpp>
#include <catch2/catch.hpp>

#include <atomic>
#include <mutex>
#include <sys/socket.h>

namespace {

using namespace std::chrono_literals;

// Sizes. Against the code before the fix, a single round of these 200 slow clients crashed the
// server or wedged its carriers in 10 runs out of 10; five rounds leave a wide margin, and the
// whole run stays a few seconds long even on a busy machine.
constexpr int slow_clients = 200;
constexpr int rounds = 5;              // each slow client starts this many requests in turn
constexpr int busy_clients = 8;        // ... while these send real requests back to back
constexpr auto read_timeout = 50ms;    // how long the server waits for a head to arrive
constexpr auto trickle_every = 5ms;    // a slow client sends one byte of its head this often
constexpr auto spin_per_request = 1ms; // how long a busy request holds its carrier

std::string request_start() {
    return "GET /hello HTTP/1.1\r\nHost: test\r\nX-Slow: ";
}

struct Tally {
    std::atomic<int> answered{0};   // well-formed requests answered 200
    std::atomic<int> unanswered{0}; // ... and not
    std::atomic<int> cut_off{0};    // slow requests the server ended (408, then close)
    std::atomic<int> never_cut{0};  // ... that it let trickle on for seconds
    std::atomic<int> slow_left{slow_clients};
    std::atomic<bool> stop_busy{false};
    std::mutex mutex;
    std::string first_failure;
    void failed(const std::string& what) {
        std::lock_guard<std::mutex> lock(mutex);
        if (first_failure.empty()) first_failure = what;
    }
};

// One slow request: the head, a byte at a time, never finished. True when the server ended it.
bool trickle_until_cut_off(int port, Tally& tally) {
    std::string error;
    const int fd = FiberSocket::try_connect("127.0.0.1", port, deadline_after(20s), error);
    if (fd < 0) {
        tally.failed("a slow client could not connect: " + error);
        return false;
    }
    FiberSocket socket(fd);
    const std::string start = request_start();
    if (!socket.send_all(start.data(), start.size(), deadline_after(10s))) return true;
    // 400 times the read timeout: only a server that lost track of this connection lets it
    // trickle that long, however busy the machine.
    const Deadline give_up = deadline_after(20s);
    while (std::chrono::steady_clock::now() < give_up) {
        boost::this_fiber::sleep_for(trickle_every);
        char answer[256];
        const ssize_t n = ::recv(socket.fd(), answer, sizeof answer, MSG_DONTWAIT);
        if (n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) return true; // 408, or closed
        if (!socket.send_all("a", 1, deadline_after(10s))) return true;       // closed
    }
    return false;
}

// Real requests, back to back on a kept-alive connection, until told to stop.
void send_real_requests(int port, Tally& tally) {
    std::unique_ptr<HttpClientConnection> connection;
    while (!tally.stop_busy) {
        HttpClientFailure failure;
        if (!connection)
            connection =
                HttpClientConnection::open("127.0.0.1", port, deadline_after(10s), failure);
        HttpResponse response;
        // 20 s: thousands of times what a request takes here, even with the machine busy.
        if (connection && connection->try_get("/spin", deadline_after(20s), response, failure) &&
            response.status == 200) {
            ++tally.answered;
            if (!response.keep_alive) connection.reset();
            continue;
        }
        ++tally.unanswered;
        tally.failed("a real request failed: " +
                     (connection ? failure.what : "connect: " + failure.what));
        connection.reset();
    }
}

} // namespace

TEST_CASE("slowloris clients timing out on busy carriers leave the server serving",
          "[lesson03][connector][stress]") {
    HttpApp app;
    app.Get("/hello", [](const httplib::Request&, httplib::Response& res) {
        res.set_content("hello\n", "text/plain");
    });
    // Holds the carrier, as CPU-bound work does: timers expire and sockets turn ready meanwhile.
    app.Get("/spin", [](const httplib::Request&, httplib::Response& res) {
        const auto until = std::chrono::steady_clock::now() + spin_per_request;
        while (std::chrono::steady_clock::now() < until) {
        }
        res.set_content("spun\n", "text/plain");
    });
    ConnectorOptions options;
    options.port = 0;
    options.carriers = 2;
    options.read_timeout = read_timeout;
    options.accept_count = 1024; // every slow client of a round connects at once
    Connector connector(app, options);
    connector.start();
    const int port = connector.port();

    Tally tally;
    {
        Carrier clients("clients", [] { use_carrier_algorithm<Reactor>(); });
        for (int i = 0; i < busy_clients; ++i)
            clients.spawn([&] { send_real_requests(port, tally); });
        for (int i = 0; i < slow_clients; ++i)
            clients.spawn([&] {
                for (int round = 0; round < rounds; ++round)
                    ++(trickle_until_cut_off(port, tally) ? tally.cut_off : tally.never_cut);
                if (--tally.slow_left == 0) tally.stop_busy = true;
            });
        clients.stop(); // every client fiber ends within its own deadlines
    }
    STEP(slow_clients << " slow clients x " << rounds << " requests trickled past a "
                      << read_timeout.count() << " ms read timeout while " << busy_clients
                      << " clients sent " << tally.answered + tally.unanswered << " real requests");
    INFO("first failure: " << (tally.first_failure.empty() ? "none" : tally.first_failure));
    CHECK(tally.unanswered == 0);
    CHECK(tally.answered > 0);
    CHECK(tally.cut_off == slow_clients * rounds);
    CHECK(tally.never_cut == 0);
    STEP("then one more request on a new connection");
    RawConnection after(port);
    REQUIRE(after.send(get_request("/hello")));
    CHECK(body_of(after.receive_response(10s)) == "hello\n");
    after.close();
    CHECK(eventually([&] { return connector.open_connections() == 0; }));
}

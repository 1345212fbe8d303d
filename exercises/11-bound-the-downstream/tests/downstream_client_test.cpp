// Graded tests of exercise 11. Fibers on test carriers (each with lesson 03's reactor) call a
// small HTTP server that this file starts on loopback: a plain thread with blocking sockets
// under poll(), which counts the connections it accepted and the requests it read, and answers
// each request by its path:
//   /ok     200 "ok", the connection kept alive
//   /close  200 "ok" with "Connection: close", then closes
//   /hold   200 "ok" once the test calls release(): "these calls are in flight" is a fact
//   /never  no answer, ever, on that connection
// drop_next(n) makes it close the next n connections it reads a request on, without answering:
// a kept connection that breaks as it is used. close_idle() makes it close every connection that
// waits for a request: a kept connection that dies while it sits idle in the client.
#include "downstream_client.hpp"
#include "exercises/common/exercise_support.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <arpa/inet.h>
#include <atomic>
#include <map>
#include <mutex>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr double free_carrier_gap_ms = 150;

class TestServer {
public:
    TestServer() {
        listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t size = sizeof address;
        REQUIRE(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), size) == 0);
        REQUIRE(::listen(listen_fd_, 128) == 0);
        ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&address), &size);
        url_ = "http://127.0.0.1:" + std::to_string(ntohs(address.sin_port));
        thread_ = std::thread([this] { serve(); });
    }
    ~TestServer() {
        stop_ = true;
        thread_.join();
        for (auto& [fd, connection] : connections_)
            ::close(fd);
        ::close(listen_fd_);
    }

    const std::string& url() const { return url_; }
    int accepted() const { return accepted_; }
    int requests() const { return requests_; }
    int open_now() const { return open_now_; }
    int most_open() const { return most_open_; }
    // Requests that came on a connection after the server closed it: a client that hands out a
    // dead idle connection (a retry on a fresh one then hides it from the caller).
    int on_closed() const { return on_closed_; }
    void release() { release_ = true; }
    void drop_next(int n) { drop_ += n; }
    // Returns once the server thread has closed them (how many it closed).
    int close_idle() {
        const int before = idle_closed_;
        close_idle_ = true;
        eventually([&] { return !close_idle_; }, 5000ms);
        return idle_closed_ - before;
    }

private:
    struct Connection {
        std::string buffer;
        bool held = false, silent = false;
        bool closed = false; // by close_idle(): its FIN is sent, but it still reads, to count
    };

    void serve() {
        while (!stop_) {
            std::vector<pollfd> fds{{listen_fd_, POLLIN, 0}};
            for (auto& [fd, connection] : connections_)
                fds.push_back({fd, POLLIN, 0});
            ::poll(fds.data(), fds.size(), 5); // 5 ms: how late a release() or stop is seen
            if (fds[0].revents & POLLIN) {
                const int fd = ::accept(listen_fd_, nullptr, nullptr);
                if (fd >= 0) {
                    connections_[fd] = {};
                    ++accepted_;
                }
            }
            for (std::size_t i = 1; i < fds.size(); ++i)
                if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) read_from(fds[i].fd);
            if (release_)
                for (auto& [fd, connection] : connections_)
                    if (connection.held) {
                        connection.held = false;
                        answer(fd, false);
                    }
            if (close_idle_ && fins_.empty()) {
                std::vector<int> idle;
                for (auto& [fd, connection] : connections_)
                    if (connection.buffer.empty() && !connection.held && !connection.silent &&
                        !connection.closed)
                        idle.push_back(fd);
                for (const int fd : idle) {
                    ::shutdown(fd, SHUT_WR); // the client sees a close; a request still shows
                    connections_[fd].closed = true;
                }
                idle_closed_ += static_cast<int>(idle.size());
                fins_ = idle;
            }
            // close_idle() returns once the client's side has acknowledged each FIN (ours left
            // FIN_WAIT1): from then on the client can tell the connection is closed.
            if (close_idle_ && std::all_of(fins_.begin(), fins_.end(), [&](int fd) {
                    return connections_.count(fd) == 0 || fin_acked(fd);
                })) {
                fins_.clear();
                close_idle_ = false;
            }
            count_open();
        }
    }

    void read_from(int fd) {
        Connection& connection = connections_[fd];
        char data[4096];
        const ssize_t got = ::recv(fd, data, sizeof data, 0);
        if (got <= 0) return close_connection(fd);
        connection.buffer.append(data, static_cast<std::size_t>(got));
        if (connection.closed) {
            ++on_closed_;
            return close_connection(fd);
        }
        std::size_t end;
        while (!connection.silent &&
               (end = connection.buffer.find("\r\n\r\n")) != std::string::npos) {
            const std::string head = connection.buffer.substr(0, end);
            connection.buffer.erase(0, end + 4);
            ++requests_;
            const std::size_t begin = head.find(' ') + 1;
            const std::string path = head.substr(begin, head.find(' ', begin) - begin);
            if (drop_ > 0) {
                --drop_;
                return close_connection(fd);
            }
            if (path == "/never")
                connection.silent = true;
            else if (path == "/hold" && !release_)
                connection.held = true;
            else if (path == "/close")
                return answer(fd, true);
            else
                answer(fd, false);
        }
    }

    void answer(int fd, bool then_close) {
        const std::string response = std::string("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n") +
                                     (then_close ? "Connection: close\r\n" : "") + "\r\nok";
        ::send(fd, response.data(), response.size(), MSG_NOSIGNAL);
        if (then_close) close_connection(fd);
    }

    void close_connection(int fd) {
        ::close(fd);
        connections_.erase(fd);
        count_open();
    }

    static bool fin_acked(int fd) {
        tcp_info info{};
        socklen_t size = sizeof info;
        return ::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &size) != 0 ||
               info.tcpi_state != TCP_FIN_WAIT1;
    }
    void count_open() {
        open_now_ = static_cast<int>(connections_.size());
        most_open_ = std::max(most_open_.load(), open_now_.load());
    }

    int listen_fd_ = -1;
    std::string url_;
    std::map<int, Connection> connections_; // the server thread's only
    std::atomic<bool> stop_{false}, release_{false}, close_idle_{false};
    std::atomic<int> accepted_{0}, requests_{0}, open_now_{0}, most_open_{0}, drop_{0};
    std::atomic<int> idle_closed_{0}, on_closed_{0};
    std::vector<int> fins_; // closed by close_idle(), their FIN not yet acknowledged
    std::thread thread_;
};

Carrier::SchedulerSetup reactor() {
    return [] { use_carrier_algorithm<Reactor>(); };
}

// True when the fiber behind `done` has returned.
bool returned(const std::future<void>& done) {
    return done.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

// One call's outcome, for the story.
struct Call {
    bool ok = false;
    int status = 0;
    std::string why = "(not called)";
    double ms = 0;
};

Call call(DownstreamClient& client, const std::string& path,
          std::chrono::milliseconds timeout = 2000ms) {
    Call result;
    HttpResponse response;
    result.why.clear();
    const auto began = Clock::now();
    result.ok = client.get(path, timeout, response, result.why);
    result.ms = ms_since(began);
    result.status = response.status;
    return result;
}

std::ostream& operator<<(std::ostream& out, const Call& c) {
    if (c.ok) return out << "status " << c.status << " after " << c.ms << " ms";
    return out << "false after " << c.ms << " ms, why '" << c.why << "'";
}

// `n` calls in a row on `carrier`, one fiber; the last one's outcome.
Call calls_in_a_row(TestCarrier& carrier, DownstreamClient& client, const std::string& path,
                    int n) {
    Call last;
    REQUIRE(carrier.run([&] {
        for (int i = 0; i < n; ++i)
            last = call(client, path);
    }));
    return last;
}

} // namespace

// ---------------------------------------------------------------- task 1

TEST_CASE("ten calls in a row on one carrier share one kept connection",
          "[ex11][task_1][points=2]") {
    TestServer server;
    TestCarrier carrier("carrier", reactor());
    DownstreamClient client(server.url(), 4);
    const Call last = calls_in_a_row(carrier, client, "/ok", 10);
    STEP("one fiber called get(\"/ok\") 10 times; the last: "
         << last << "; the server accepted " << server.accepted() << " connections for "
         << server.requests() << " requests");
    CHECK(last.ok);
    CHECK(server.requests() == 10);
    CHECK(server.accepted() == 1);
}

TEST_CASE("a connection opened on one carrier is never used on another",
          "[ex11][task_1][points=2]") {
    TestServer server;
    TestCarrier first("first-carrier", reactor()), second("second-carrier", reactor());
    DownstreamClient client(server.url(), 4);
    Call a = calls_in_a_row(first, client, "/ok", 1);
    Call b = calls_in_a_row(second, client, "/ok", 1);
    STEP("a call on the first carrier: " << a << "; then one on the second: " << b
                                         << "; the server accepted " << server.accepted());
    CHECK(a.ok);
    CHECK(b.ok);
    CHECK(server.accepted() == 2);
    a = calls_in_a_row(first, client, "/ok", 3);
    b = calls_in_a_row(second, client, "/ok", 3);
    STEP("three more on each carrier, the last: " << a << " and " << b << "; the server accepted "
                                                  << server.accepted() << " connections for "
                                                  << server.requests() << " requests");
    CHECK(a.ok);
    CHECK(b.ok);
    CHECK(server.requests() == 8);
    CHECK(server.accepted() == 2);
}

TEST_CASE("an answer with Connection: close is not kept, the next call opens a fresh one",
          "[ex11][task_1][points=1]") {
    TestServer server;
    TestCarrier carrier("carrier", reactor());
    DownstreamClient client(server.url(), 4);
    const Call closed = calls_in_a_row(carrier, client, "/close", 1);
    const Call next = calls_in_a_row(carrier, client, "/ok", 1);
    STEP("get(\"/close\"): " << closed << "; then get(\"/ok\"): " << next
                             << "; the server accepted " << server.accepted() << " for "
                             << server.requests() << " requests");
    CHECK(closed.ok);
    CHECK(next.ok);
    CHECK(server.requests() == 2);
    CHECK(server.accepted() == 2);
}

// ---------------------------------------------------------------- task 2

TEST_CASE("a kept connection that breaks as it is used is retried once on a fresh one",
          "[ex11][task_2][points=2]") {
    TestServer server;
    TestCarrier carrier("carrier", reactor());
    DownstreamClient client(server.url(), 4);
    const Call first = calls_in_a_row(carrier, client, "/ok", 1);
    STEP("get(\"/ok\"): " << first
                          << "; the server will close the next connection it reads a "
                             "request on, without an answer");
    server.drop_next(1);
    const Call retried = calls_in_a_row(carrier, client, "/ok", 1);
    STEP("get(\"/ok\") again: " << retried << "; the server accepted " << server.accepted()
                                << " connections for " << server.requests() << " requests");
    CHECK(first.ok);
    CHECK(retried.ok);
    CHECK(server.requests() == 3);
    CHECK(server.accepted() == 2);
}

TEST_CASE("a server that keeps failing gets two tries, then a one-line error with the URL",
          "[ex11][task_2][points=1]") {
    TestServer server;
    TestCarrier carrier("carrier", reactor());
    DownstreamClient client(server.url(), 4);
    const Call first = calls_in_a_row(carrier, client, "/ok", 1);
    server.drop_next(100);
    const Call failed = calls_in_a_row(carrier, client, "/ok", 1);
    STEP("get(\"/ok\"): " << first << "; the server now closes every connection at its request; "
                          << "get(\"/ok\") again: " << failed << "; the server read "
                          << server.requests() - 1 << " requests for it");
    CHECK(first.ok);
    CHECK_FALSE(failed.ok);
    CHECK(server.requests() == 3);
    CHECK(failed.why.rfind(server.url() + "/ok", 0) == 0);
    CHECK(failed.why.find('\n') == std::string::npos);
}

TEST_CASE("a server that never answers is a clean error at the deadline, not retried, not kept",
          "[ex11][task_2][points=2]") {
    TestServer server;
    TestCarrier carrier("carrier", reactor());
    DownstreamClient client(server.url(), 1);
    const Call first = calls_in_a_row(carrier, client, "/ok", 1);
    Call silent;
    REQUIRE(carrier.run([&] { silent = call(client, "/never", 300ms); }));
    const int requests_then = server.requests();
    const Call after = calls_in_a_row(carrier, client, "/ok", 1);
    STEP("get(\"/ok\"): " << first << "; get(\"/never\", 300 ms): " << silent
                          << "; then get(\"/ok\"): " << after << "; the server read "
                          << requests_then << " requests by then, accepted " << server.accepted()
                          << " connections");
    CHECK(first.ok);
    CHECK_FALSE(silent.ok);
    // 250: the deadline is 300 ms, so an earlier false did not wait for it.
    CHECK(silent.ms >= 250);
    CHECK(silent.why.rfind(server.url() + "/never", 0) == 0);
    CHECK(requests_then == 2);
    CHECK(after.ok);
    CHECK(server.accepted() == 2);
}

// ---------------------------------------------------------------- task 3

TEST_CASE("six fibers on one carrier with room for two use two connections and all succeed",
          "[ex11][task_3][points=2]") {
    TestServer server;
    TestCarrier carrier("carrier", reactor());
    DownstreamClient client(server.url(), 2);
    std::vector<Call> calls(6);
    std::vector<std::future<void>> done;
    for (Call& c : calls)
        done.push_back(carrier.start([&] { c = call(client, "/hold", 5000ms); }));
    // The two that got a connection are held by the server; the others must be waiting. (A
    // call that already returned will not get there: stop looking.)
    const bool two_inside = eventually(
        [&] { return server.requests() >= 2 || std::any_of(done.begin(), done.end(), returned); },
        2000ms);
    std::this_thread::sleep_for(200ms); // time for a third connection to show, if one comes
    int open_here = -2;
    REQUIRE(carrier.run([&] { open_here = client.open_here(); }, 2000ms));
    const int open_while_held = server.open_now();
    server.release();
    bool all_done = true;
    for (auto& d : done)
        all_done = carrier.finished(d, 5000ms) && all_done;
    const auto succeeded =
        std::count_if(calls.begin(), calls.end(), [](const Call& c) { return c.ok; });
    STEP("6 fibers called get(\"/hold\") at once with per_carrier 2; "
         << (two_inside ? "two requests reached the server" : "fewer than two reached the server")
         << "; 200 ms later the server had " << open_while_held
         << " connections open and open_here() said " << open_here << "; after release "
         << succeeded << " of 6 succeeded (the first: " << calls[0] << "); the server accepted "
         << server.accepted() << ", at most " << server.most_open() << " open at once");
    REQUIRE(all_done);
    CHECK(two_inside);
    CHECK(open_while_held == 2);
    CHECK(open_here == 2);
    CHECK(succeeded == 6);
    CHECK(server.most_open() <= 2);
    CHECK(server.accepted() == 2);
}

TEST_CASE("fibers waiting for a connection park: the carrier keeps running other fibers",
          "[ex11][task_3][points=1]") {
    TestServer server;
    TestCarrier carrier("carrier", reactor());
    DownstreamClient client(server.url(), 1);
    std::vector<Call> calls(3);
    std::vector<std::future<void>> done;
    Ticker ticker(carrier);
    for (Call& c : calls)
        done.push_back(carrier.start([&] { c = call(client, "/hold", 5000ms); }));
    std::this_thread::sleep_for(400ms); // two fibers wait for the one connection meanwhile
    const TickerReport report = ticker.stop();
    const int requests_held = server.requests();
    server.release();
    bool all_done = true;
    for (auto& d : done)
        all_done = carrier.finished(d, 5000ms) && all_done;
    STEP("3 fibers called get(\"/hold\") at once with per_carrier 1, held 400 ms: the server read "
         << requests_held << " requests meanwhile; a ticker fiber on the carrier woke "
         << report.ticks << " times, longest gap " << report.longest_gap_ms
         << " ms; after release the last: " << calls[2]);
    REQUIRE(all_done);
    CHECK(requests_held == 1);
    CHECK(report.longest_gap_ms < free_carrier_gap_ms);
    CHECK(calls[2].ok);
}

TEST_CASE("a fiber that finds no connection free by its deadline gets a clean error",
          "[ex11][task_3][points=1]") {
    TestServer server;
    TestCarrier carrier("carrier", reactor());
    DownstreamClient client(server.url(), 1);
    Call holder, late;
    auto held = carrier.start([&] { holder = call(client, "/hold", 5000ms); });
    const bool inside =
        eventually([&] { return server.requests() >= 1 || returned(held); }, 2000ms);
    REQUIRE(carrier.run([&] { late = call(client, "/ok", 300ms); }, 3000ms));
    server.release();
    const bool holder_done = carrier.finished(held, 5000ms);
    STEP("per_carrier 1: a fiber's get(\"/hold\") "
         << (inside ? "reached" : "did not reach")
         << " the server and was held; another fiber's get(\"/ok\", 300 ms): " << late
         << "; after release the holder: " << holder);
    REQUIRE(holder_done);
    CHECK(inside);
    CHECK_FALSE(late.ok);
    CHECK(late.ms >= 250);
    CHECK(late.why.rfind(server.url() + "/ok", 0) == 0);
    CHECK(holder.ok);
    CHECK(server.accepted() == 1);
}

TEST_CASE("a connection that fails or closes gives its place back", "[ex11][task_3][points=2]") {
    TestServer server;
    TestCarrier carrier("carrier", reactor());
    DownstreamClient client(server.url(), 1);
    std::vector<Call> calls;
    REQUIRE(carrier.run([&] {
        calls.push_back(call(client, "/close"));
        calls.push_back(call(client, "/never", 200ms));
        server.drop_next(1); // a fresh connection: not retried
        calls.push_back(call(client, "/ok"));
        calls.push_back(call(client, "/ok"));
        calls.push_back(call(client, "/ok", 1000ms));
    }));
    int open_here = -2;
    const auto ask_open_here = [&] {
        return carrier.run([&] { open_here = client.open_here(); }, 2000ms);
    };
    REQUIRE(ask_open_here());
    STEP("per_carrier 1, one fiber: get(\"/close\") "
         << calls[0] << "; get(\"/never\", 200 ms) " << calls[1]
         << "; a get(\"/ok\") the server drops " << calls[2] << "; get(\"/ok\") " << calls[3]
         << "; get(\"/ok\") " << calls[4] << "; open_here() " << open_here);
    CHECK(calls[0].ok);
    CHECK_FALSE(calls[1].ok);
    CHECK_FALSE(calls[2].ok);
    CHECK(calls[3].ok);
    CHECK(calls[4].ok);
    CHECK(open_here == 1);

    // The kept connection dies while it sits idle. The client learns it when the server's FIN
    // has arrived (on loopback, at once; under load, a little later): so wait for open_here()
    // to say so, with a limit, rather than guess how long that takes.
    const int closed = server.close_idle();
    const int accepted_before = server.accepted();
    const bool dropped = eventually([&] { return ask_open_here() && open_here == 0; }, 2000ms);
    Call after;
    REQUIRE(carrier.run([&] { after = call(client, "/ok", 1000ms); }));
    STEP("then the server closed the "
         << closed << " idle kept connection; open_here() " << (dropped ? "said 0" : "still said ")
         << (dropped ? "" : std::to_string(open_here)) << " within 2 s; get(\"/ok\") " << after
         << "; the server accepted " << server.accepted() - accepted_before << " more");
    CHECK(closed == 1);
    CHECK(dropped);                                  // a closed connection is not open
    CHECK(after.ok);                                 // its place was given back
    CHECK(server.accepted() - accepted_before == 1); // on a fresh connection

    // Once more, with no open_here() first: get() itself must not hand out the closed one (its
    // retry on a fresh connection would hide that from the caller, not from the server).
    const int closed_again = server.close_idle();
    Call again;
    REQUIRE(carrier.run([&] { again = call(client, "/ok", 1000ms); }));
    STEP("then the server closed the "
         << closed_again << " idle kept connection again, and at "
         << "once get(\"/ok\") " << again << "; the server got " << server.on_closed()
         << " requests on connections it had closed (each one a dead connection get() handed out)");
    CHECK(closed_again == 1);
    CHECK(again.ok);
    CHECK(server.on_closed() == 0);
}

// ---------------------------------------------------------------- task 4 (stretch)

TEST_CASE("plain threads share one more carrier's bound, waiting without a carrier",
          "[ex11][task_4][points=2]") {
    TestServer server;
    DownstreamClient client(server.url(), 2);
    std::vector<Call> calls(5);
    std::vector<std::thread> threads;
    std::atomic<int> returned_calls{0};
    for (Call& c : calls)
        threads.emplace_back([&] {
            c = call(client, "/hold", 5000ms);
            ++returned_calls;
        });
    const bool two_inside =
        eventually([&] { return server.requests() >= 2 || returned_calls > 0; }, 2000ms);
    std::this_thread::sleep_for(200ms);
    const int open_while_held = server.open_now();
    const int open_here = client.open_here();
    server.release();
    for (std::thread& t : threads)
        t.join(); // every call has a 5 s deadline
    const auto succeeded =
        std::count_if(calls.begin(), calls.end(), [](const Call& c) { return c.ok; });
    STEP("5 plain threads called get(\"/hold\") at once with per_carrier 2: "
         << (two_inside ? "two reached the server" : "fewer than two reached the server") << ", "
         << open_while_held << " connections open 200 ms later, open_here() on the test thread "
         << open_here << "; after release " << succeeded
         << " of 5 succeeded (the first: " << calls[0] << "); accepted " << server.accepted());
    CHECK(two_inside);
    CHECK(open_while_held == 2);
    CHECK(open_here == 2);
    CHECK(succeeded == 5);
    CHECK(server.accepted() == 2);
}

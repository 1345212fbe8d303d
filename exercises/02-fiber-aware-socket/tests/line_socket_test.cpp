// Graded tests of exercise 02. The code under test runs on fibers of a carrier whose scheduler is
// lesson 03's Reactor (epoll inside the scheduler), on one end of a socket pair; the test's own
// thread plays the peer on the other end, with plain blocking calls.
//
// Why the bounds are safe: a carrier held by a blocking wait shows as a ticker gap of the whole
// wait (300 ms or more); a free one as a few ms, tens under heavy load. We allow 150 ms.
#include "exercises/common/exercise_support.hpp"
#include "lessons/common/process.hpp"
#include "lessons/common/test_support.hpp"
#include "line_socket.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <system_error>
#include <thread>
#include <unistd.h>

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr double free_carrier_gap_ms = 150;

Carrier::SchedulerSetup reactor() {
    return [] { use_carrier_algorithm<Reactor>(); };
}

// A connected pair of stream sockets: `mine` (non-blocking) for the code under test, `peer`
// (blocking) for the test thread.
struct SocketPair {
    int mine = -1;
    int peer = -1;
    SocketPair() {
        int fds[2];
        REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
        mine = fds[0];
        peer = fds[1];
        REQUIRE(::fcntl(mine, F_SETFL, ::fcntl(mine, F_GETFL) | O_NONBLOCK) == 0);
    }
    ~SocketPair() {
        if (mine >= 0) ::close(mine);
        close_peer();
    }
    void close_peer() {
        if (peer >= 0) ::close(peer);
        peer = -1;
    }
    void send(const std::string& bytes) const {
        REQUIRE(::send(peer, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
                static_cast<ssize_t>(bytes.size()));
    }
    // What arrives at the peer within `limit`, up to `want` bytes.
    std::string receive(std::size_t want, std::chrono::milliseconds limit = 2000ms) const {
        std::string got;
        const auto deadline = Clock::now() + limit;
        char buffer[65536];
        while (got.size() < want && Clock::now() < deadline) {
            pollfd p{peer, POLLIN, 0};
            if (::poll(&p, 1, 10) <= 0) continue;
            const ssize_t n = ::recv(peer, buffer, std::min(sizeof buffer, want - got.size()), 0);
            if (n <= 0) break;
            got.append(buffer, static_cast<std::size_t>(n));
        }
        return got;
    }
};

double thread_cpu_ms() {
    return std::chrono::duration<double, std::milli>(thread_cpu_time()).count();
}

std::string pattern(std::size_t size) {
    std::string bytes(size, '\0');
    for (std::size_t i = 0; i < size; ++i)
        bytes[i] = static_cast<char>('a' + (i * 7 + i / 4096) % 26);
    return bytes;
}

} // namespace

TEST_CASE("read_some returns the bytes that are already there", "[ex2][task_1][points=1]") {
    SocketPair pair;
    pair.send("hello");
    ssize_t n = 0;
    char buffer[64] = {};
    TestCarrier carrier("carrier", reactor());
    REQUIRE(
        carrier.run([&] { n = read_some(pair.mine, buffer, sizeof buffer, deadline_after(1s)); }));
    STEP("the peer sent 'hello'; read_some returned " << n << " (errno " << std::strerror(errno)
                                                      << ")");
    REQUIRE(n == 5);
    CHECK(std::string(buffer, 5) == "hello");
}

TEST_CASE("read_some parks the fiber until data arrives and the carrier keeps running",
          "[ex2][task_1][points=2]") {
    SocketPair pair;
    ssize_t n = 0;
    double waited_ms = 0;
    char buffer[64] = {};
    TestCarrier carrier("carrier", reactor());
    Ticker ticker(carrier);
    auto reader = carrier.start([&] {
        const auto began = Clock::now();
        n = read_some(pair.mine, buffer, sizeof buffer, deadline_after(5s));
        waited_ms = ms_since(began);
    });
    std::this_thread::sleep_for(300ms);
    pair.send("late");
    REQUIRE(carrier.finished(reader));
    const TickerReport report = ticker.stop();
    STEP("the peer sent 'late' after 300 ms; read_some returned "
         << n << " after " << waited_ms << " ms; longest ticker gap " << report.longest_gap_ms
         << " ms");
    CHECK(n == 4);
    CHECK(waited_ms >= 290);
    CHECK(report.longest_gap_ms < free_carrier_gap_ms);
}

TEST_CASE("read_some gives up at its deadline with ETIMEDOUT", "[ex2][task_1][points=1]") {
    SocketPair pair;
    ssize_t n = 0;
    int error = 0;
    double waited_ms = 0;
    TestCarrier carrier("carrier", reactor());
    Ticker ticker(carrier);
    REQUIRE(carrier.run([&] {
        char byte;
        const auto began = Clock::now();
        n = read_some(pair.mine, &byte, 1, deadline_after(300ms));
        error = errno;
        waited_ms = ms_since(began);
    }));
    const TickerReport report = ticker.stop();
    STEP("nothing sent; read_some with a 300 ms deadline returned "
         << n << " (" << std::strerror(error) << ") after " << waited_ms
         << " ms; longest ticker gap " << report.longest_gap_ms << " ms");
    CHECK(n == -1);
    CHECK(error == ETIMEDOUT);
    CHECK(waited_ms >= 295);
    CHECK(waited_ms < 2000);
    CHECK(report.longest_gap_ms < free_carrier_gap_ms);
}

TEST_CASE("read_some returns 0 once the peer has closed", "[ex2][task_1][points=1]") {
    SocketPair pair;
    pair.send("x");
    pair.close_peer();
    ssize_t first = -1, second = -1;
    TestCarrier carrier("carrier", reactor());
    REQUIRE(carrier.run([&] {
        char buffer[8];
        first = read_some(pair.mine, buffer, sizeof buffer, deadline_after(1s));
        second = read_some(pair.mine, buffer, sizeof buffer, deadline_after(1s));
    }));
    STEP("the peer sent 'x' and closed; read_some returned " << first << ", then " << second);
    CHECK(first == 1);
    CHECK(second == 0);
}

TEST_CASE("waiting for data costs no CPU", "[ex2][task_1][points=1]") {
    SocketPair pair;
    double cpu_ms = -1;
    int error = 0;
    TestCarrier carrier("carrier", reactor());
    REQUIRE(carrier.run([&] {
        char byte;
        const double before = thread_cpu_ms();
        if (read_some(pair.mine, &byte, 1, deadline_after(500ms)) < 0) error = errno;
        cpu_ms = thread_cpu_ms() - before;
    }));
    STEP("read_some waited 500 ms for bytes that never came; the carrier thread used "
         << cpu_ms << " ms of CPU meanwhile (a loop that retries recv() burns all 500)");
    CHECK(error == ETIMEDOUT);
    CHECK(cpu_ms >= 0);
    CHECK(cpu_ms < 50);
}

TEST_CASE("write_all delivers every byte to a slow reader without holding the carrier",
          "[ex2][task_2][points=2]") {
    SocketPair pair;
    const std::string data = pattern(2 << 20); // 2 MiB: ten times what the socket buffers hold
    bool ok = false;
    TestCarrier carrier("carrier", reactor());
    Ticker ticker(carrier);
    auto writer = carrier.start(
        [&] { ok = write_all(pair.mine, data.data(), data.size(), deadline_after(10s)); });
    std::string received;
    const auto began = Clock::now();
    while (received.size() < data.size() && ms_since(began) < 10000) {
        const std::string chunk =
            pair.receive(std::min<std::size_t>(64 << 10, data.size() - received.size()), 200ms);
        if (chunk.empty() && writer.wait_for(0s) == std::future_status::ready) break; // gave up
        received += chunk;
        std::this_thread::sleep_for(10ms); // a slow reader: about 0.3 s for all of it
    }
    REQUIRE(carrier.finished(writer));
    const TickerReport report = ticker.stop();
    STEP("write_all sent 2 MiB to a peer reading 64 KiB every 10 ms; it returned "
         << ok << "; the peer got " << received.size() << " bytes in " << ms_since(began)
         << " ms; longest ticker gap " << report.longest_gap_ms << " ms");
    CHECK(ok);
    CHECK(received.size() == data.size());
    const bool same_bytes = received == data; // (not CHECK(received == data): 2 MiB to print)
    CHECK(same_bytes);
    CHECK(report.longest_gap_ms < free_carrier_gap_ms);
}

TEST_CASE("write_all gives up at its deadline when the peer reads nothing",
          "[ex2][task_2][points=1]") {
    SocketPair pair;
    const std::string data = pattern(8 << 20);
    bool ok = true;
    int error = 0;
    double waited_ms = 0;
    TestCarrier carrier("carrier", reactor());
    REQUIRE(carrier.run([&] {
        const auto began = Clock::now();
        ok = write_all(pair.mine, data.data(), data.size(), deadline_after(300ms));
        error = errno;
        waited_ms = ms_since(began);
    }));
    STEP("write_all of 8 MiB to a peer that reads nothing, 300 ms deadline: returned "
         << ok << " (" << std::strerror(error) << ") after " << waited_ms << " ms");
    CHECK_FALSE(ok);
    CHECK(error == ETIMEDOUT);
    CHECK(waited_ms >= 295);
    CHECK(waited_ms < 2000);
}

TEST_CASE("write_all to a peer that is gone fails with EPIPE and the process lives on",
          "[ex2][task_2][points=1]") {
    SocketPair pair;
    pair.close_peer();
    bool ok = true;
    int error = 0;
    TestCarrier carrier("carrier", reactor());
    REQUIRE(carrier.run([&] {
        const std::string data(1024, 'x');
        ok = write_all(pair.mine, data.data(), data.size(), deadline_after(1s));
        error = errno;
    }));
    STEP("the peer closed; write_all returned " << ok << " (" << std::strerror(error) << ")");
    CHECK_FALSE(ok);
    CHECK(error == EPIPE);
}

TEST_CASE("read_line returns lines one by one from bytes that arrive in pieces",
          "[ex2][task_3][points=2]") {
    SocketPair pair;
    std::vector<std::string> lines;
    TestCarrier carrier("carrier", reactor());
    Ticker ticker(carrier);
    auto reader = carrier.start([&] {
        LineReader reader(pair.mine);
        for (int i = 0; i < 4; ++i) {
            auto line = reader.read_line(deadline_after(5s));
            lines.push_back(line ? *line : "<closed>");
        }
    });
    for (const char* piece : {"hel", "lo\nwor", "ld\n\nlast\n"}) {
        std::this_thread::sleep_for(100ms);
        pair.send(piece);
    }
    REQUIRE(carrier.finished(reader));
    const TickerReport report = ticker.stop();
    STEP("the peer sent 'hel', 'lo\\nwor', 'ld\\n\\nlast\\n', 100 ms apart; read_line returned "
         << lines.size() << " lines; longest ticker gap " << report.longest_gap_ms << " ms");
    CHECK(lines == std::vector<std::string>{"hello", "world", "", "last"});
    CHECK(report.longest_gap_ms < free_carrier_gap_ms);
}

TEST_CASE("read_line returns nothing once the peer closes and drops an unfinished last line",
          "[ex2][task_3][points=1]") {
    SocketPair pair;
    pair.send("one\ntw");
    pair.close_peer();
    std::optional<std::string> first, second;
    TestCarrier carrier("carrier", reactor());
    REQUIRE(carrier.run([&] {
        LineReader reader(pair.mine);
        first = reader.read_line(deadline_after(1s));
        second = reader.read_line(deadline_after(1s));
    }));
    STEP("the peer sent 'one\\ntw' and closed; read_line returned '"
         << first.value_or("<nothing>") << "', then '" << second.value_or("<nothing>") << "'");
    CHECK(first.value_or("<nothing>") == "one");
    CHECK_FALSE(second.has_value());
}

TEST_CASE("read_line refuses a line longer than its limit", "[ex2][task_3][points=1]") {
    SocketPair pair;
    pair.send(std::string(LineReader::max_line + 1000, 'x'));
    std::string outcome = "returned";
    TestCarrier carrier("carrier", reactor());
    REQUIRE(carrier.run([&] {
        LineReader reader(pair.mine);
        try {
            reader.read_line(deadline_after(1s));
        } catch (const LineTooLong&) {
            outcome = "LineTooLong";
        } catch (const std::exception& e) {
            outcome = std::string("another exception: ") + e.what();
        }
    }));
    STEP("the peer sent " << LineReader::max_line + 1000 << " bytes without a newline; read_line "
                          << outcome);
    CHECK(outcome == "LineTooLong");
}

TEST_CASE("read_line throws ETIMEDOUT when no whole line arrives in time",
          "[ex2][task_3][points=1]") {
    SocketPair pair;
    pair.send("no newline yet");
    std::string outcome = "returned";
    double waited_ms = 0;
    TestCarrier carrier("carrier", reactor());
    REQUIRE(carrier.run([&] {
        LineReader reader(pair.mine);
        const auto began = Clock::now();
        try {
            reader.read_line(deadline_after(300ms));
        } catch (const std::system_error& e) {
            outcome = e.code() == std::errc::timed_out ? "ETIMEDOUT" : e.what();
        } catch (const std::exception& e) {
            outcome = std::string("another exception: ") + e.what();
        }
        waited_ms = ms_since(began);
    }));
    STEP("half a line and a 300 ms deadline: read_line ended with " << outcome << " after "
                                                                    << waited_ms << " ms");
    CHECK(outcome == "ETIMEDOUT");
    CHECK(waited_ms >= 295);
}

TEST_CASE("serve_echo_client answers each line and stops at bye", "[ex2][task_4][points=1]") {
    SocketPair pair;
    int answered = -1;
    TestCarrier carrier("carrier", reactor());
    auto server = carrier.start([&] { answered = serve_echo_client(pair.mine, 2000ms); });
    pair.send("hi\nthere\n");
    const std::string answers = pair.receive(std::string("echo: hi\necho: there\n").size());
    pair.send("bye\n");
    REQUIRE(carrier.finished(server));
    STEP("sent 'hi', 'there', 'bye'; got '" << answers << "'; it answered " << answered);
    CHECK(answers == "echo: hi\necho: there\n");
    CHECK(answered == 2);
}

TEST_CASE("one carrier serves a hundred clients at once", "[ex2][task_4][points=2]") {
    constexpr int clients = 100;
    std::vector<std::unique_ptr<SocketPair>> pairs;
    std::vector<std::future<void>> servers;
    std::vector<int> answered(clients, -1);
    TestCarrier carrier("carrier", reactor());
    for (int i = 0; i < clients; ++i) {
        pairs.push_back(std::make_unique<SocketPair>());
        const int fd = pairs.back()->mine;
        servers.push_back(carrier.start([fd, &answered, i] {
            answered[static_cast<std::size_t>(i)] = serve_echo_client(fd, 3000ms);
        }));
    }
    STEP("100 clients connected, each served by a fiber on one carrier");
    // Every client speaks before any reads: a server that serves one client at a time answers
    // the first and then waits for its next line, while 99 wait for their first answer.
    for (int i = 0; i < clients; ++i)
        pairs[static_cast<std::size_t>(i)]->send("hello " + std::to_string(i) + "\n");
    int right = 0;
    const auto began = Clock::now();
    const auto deadline = began + 3000ms; // for all answers together (they take a few ms)
    // Until "bye" a working server fiber never ends. Once they all have (a stub that throws),
    // what they wrote is in the sockets already: one more look, and after a missing answer no
    // waiting for the others.
    const auto all_ended = [&] {
        return std::all_of(servers.begin(), servers.end(), [](const std::future<void>& server) {
            return server.wait_for(0ms) == std::future_status::ready;
        });
    };
    bool gave_up = false;
    for (int i = 0; i < clients && !gave_up; ++i) {
        const std::string expected = "echo: hello " + std::to_string(i) + "\n";
        std::string got;
        for (bool last_look = false; got.size() < expected.size() && !last_look;) {
            last_look = all_ended() || Clock::now() >= deadline;
            got += pairs[static_cast<std::size_t>(i)]->receive(expected.size() - got.size(), 100ms);
        }
        if (got == expected)
            ++right;
        else
            gave_up = true;
    }
    STEP(right << " of 100 clients got their answer (counted in order, up to the first missing "
                  "one), after "
               << ms_since(began) << " ms");
    CHECK(right == clients);
    for (auto& pair : pairs)
        pair->send("bye\n");
    for (auto& server : servers)
        REQUIRE(carrier.finished(server, 5000ms));
    CHECK(std::count(answered.begin(), answered.end(), 1) == clients);
}

TEST_CASE("a silent client is dropped after the idle timeout while the carrier runs on",
          "[ex2][task_4][points=1]") {
    SocketPair pair;
    int answered = -1;
    double took_ms = 0;
    TestCarrier carrier("carrier", reactor());
    Ticker ticker(carrier);
    REQUIRE(carrier.run([&] {
        const auto began = Clock::now();
        answered = serve_echo_client(pair.mine, 300ms);
        took_ms = ms_since(began);
    }));
    const TickerReport report = ticker.stop();
    STEP("a client that says nothing; idle timeout 300 ms; serve_echo_client returned "
         << answered << " after " << took_ms << " ms; longest ticker gap " << report.longest_gap_ms
         << " ms");
    CHECK(answered == 0);
    CHECK(took_ms >= 295);
    CHECK(took_ms < 2000);
    CHECK(report.longest_gap_ms < free_carrier_gap_ms);
}

// Tests of the spike driver: real spikes, in this process, against local servers that misbehave
// on purpose (slow, resetting, refusing, never accepting, crashing), and the `spike` program for
// what only a process shows (flags, Ctrl+C, the summary). Durations are a second or two; every
// time bound is generous, and says why.
#include "lessons/common/test_support.hpp"
#include "lessons/instruments/spike/probe.hpp"
#include "lessons/instruments/spike/spike_progress.hpp"
#include "lessons/instruments/spike/spike_run.hpp"

#include <catch2/catch.hpp>
#include <dlfcn.h>
#include <httplib.h>
#include <pthread.h>

#include <algorithm>
#include <arpa/inet.h>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <netinet/in.h>
#include <poll.h>
#include <set>
#include <sstream>
#include <stdexcept>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// --- Servers that misbehave ------------------------------------------------------------------

// A socket bound to 127.0.0.1 on a free port (listening when `backlog` >= 0).
int bound_socket(int backlog, int& port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        (backlog >= 0 && ::listen(fd, backlog) != 0) ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0)
        throw std::runtime_error(std::string("bind/listen: ") + std::strerror(errno));
    port = ntohs(address.sin_port);
    return fd;
}

// A raw HTTP server on a free port, one thread per connection, that answers every request
// head the way `Mode` says. It counts what it saw, so a test can compare with the CSV.
class MisbehavingServer {
public:
    enum class Mode {
        answer,       // `status` after `delay`, keeping the connection alive
        answer_close, // the same, then "Connection: close" and close
        reset,        // read the request, then reset the connection (RST) without answering
    };

    explicit MisbehavingServer(Mode mode, int status = 200, std::chrono::milliseconds delay = 0ms)
        : mode_(mode), status_(status), delay_(delay) {
        listen_fd_ = bound_socket(128, port_);
        acceptor_ = std::thread([this] { accept_loop(); });
    }

    ~MisbehavingServer() {
        stopping_ = true;
        if (acceptor_.joinable()) acceptor_.join();
        std::vector<std::thread> handlers;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            handlers.swap(handlers_);
        }
        for (auto& handler : handlers)
            handler.join();
    }

    int port() const { return port_; }
    int requests() const { return requests_; }
    int connections() const { return connections_; }

    // What a killed server looks like from outside: the listener goes (connects are refused)
    // and every open connection ends without an answer.
    void crash() {
        crashed_ = true;
        acceptor_.join(); // it closes the listener
        std::lock_guard<std::mutex> lock(mutex_);
        for (int fd : open_)
            ::shutdown(fd, SHUT_RDWR);
    }

private:
    bool ended() const { return stopping_ || crashed_; }

    // Waits for `fd` to turn readable in short slices, so that a stop is noticed quickly.
    bool readable(int fd) {
        pollfd ready{fd, POLLIN, 0};
        while (!ended())
            if (::poll(&ready, 1, 10) > 0) return true;
        return false;
    }

    void accept_loop() {
        while (!ended()) {
            if (!readable(listen_fd_)) break;
            const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
            if (fd < 0) continue;
            std::lock_guard<std::mutex> lock(mutex_);
            ++connections_;
            open_.insert(fd);
            handlers_.emplace_back([this, fd] { serve(fd); });
        }
        ::close(listen_fd_);
    }

    void serve(int fd) {
        std::string buffer;
        char chunk[4096];
        bool open = true;
        while (open && readable(fd)) {
            const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
            if (n <= 0) break;
            buffer.append(chunk, static_cast<std::size_t>(n));
            std::size_t end;
            while (open && (end = buffer.find("\r\n\r\n")) != std::string::npos) {
                buffer.erase(0, end + 4);
                ++requests_;
                open = respond(fd);
            }
        }
        std::lock_guard<std::mutex> lock(mutex_);
        open_.erase(fd);
        ::close(fd);
    }

    // Answers one request; false when the connection must end.
    bool respond(int fd) {
        if (mode_ == Mode::reset) {
            const linger abort{1, 0}; // close() then sends RST instead of FIN
            ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &abort, sizeof abort);
            return false;
        }
        for (auto until = Clock::now() + delay_; Clock::now() < until && !ended();)
            std::this_thread::sleep_for(5ms);
        if (ended()) return false;
        const bool close = mode_ == Mode::answer_close;
        const std::string response = "HTTP/1.1 " + std::to_string(status_) +
                                     " Test\r\nContent-Length: 3\r\n" +
                                     (close ? "Connection: close\r\n" : "") + "\r\nok\n";
        return ::send(fd, response.data(), response.size(), MSG_NOSIGNAL) > 0 && !close;
    }

    Mode mode_;
    int status_;
    std::chrono::milliseconds delay_;
    int listen_fd_ = -1;
    int port_ = 0;
    std::atomic<bool> stopping_{false};
    std::atomic<bool> crashed_{false};
    std::atomic<int> requests_{0};
    std::atomic<int> connections_{0};
    std::mutex mutex_;
    std::set<int> open_;
    std::vector<std::thread> handlers_;
    std::thread acceptor_;
};

// A port where nothing listens: connects are refused at once. The socket stays bound so no
// one else takes the port during the test.
struct RefusingPort {
    int port = 0; // before fd: bound_socket sets it
    int fd;
    RefusingPort() : fd(bound_socket(-1, port)) {}
    ~RefusingPort() { ::close(fd); }
};

// A listening socket that never accepts, with its accept queue full: the kernel drops new SYNs,
// so a connect to it hangs, as at a server past its backlog. listen(fd, 0) leaves room for one
// connection; we connect until one stays pending.
struct FullBacklog {
    int port = 0; // before listen_fd: bound_socket sets it
    int listen_fd;
    std::vector<int> fillers;

    FullBacklog() : listen_fd(bound_socket(0, port)) {
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_port = htons(static_cast<uint16_t>(port));
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        for (int i = 0; i < 16; ++i) {
            const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
            fillers.push_back(fd);
            ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
            pollfd done{fd, POLLOUT, 0};
            // Loopback completes a handshake in microseconds; 1 s without it means dropped.
            if (::poll(&done, 1, 1000) == 0) return;
        }
        throw std::runtime_error("could not fill the accept queue");
    }
    ~FullBacklog() {
        for (int fd : fillers)
            ::close(fd);
        ::close(listen_fd);
    }
};

// --- Running a spike and reading its CSV ------------------------------------------------------

struct Row {
    double ts_ms;
    int status;
    double latency_ms;
    double sent_ms; // an open loop's; a closed loop's attempts were sent at ts_ms
};

std::vector<std::string> lines_of(const std::string& path) {
    std::ifstream in(path);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);)
        lines.push_back(line);
    return lines;
}

// The rows of a spike CSV, closed loop or open, sorted by ts (the file has them in the order
// attempts ended).
std::vector<Row> read_rows(const std::string& path) {
    const auto lines = lines_of(path);
    const bool open_loop = !lines.empty() && lines[0] == "ts,status,latency_ms,sent_ms";
    if (lines.empty() || (lines[0] != "ts,status,latency_ms" && !open_loop))
        throw std::runtime_error(path + " has no header");
    std::vector<Row> rows;
    for (std::size_t i = 1; i < lines.size(); ++i) {
        Row row{};
        char extra = 0;
        const int fields = std::sscanf(lines[i].c_str(), "%lf,%d,%lf,%lf%c", &row.ts_ms,
                                       &row.status, &row.latency_ms, &row.sent_ms, &extra);
        if (fields != (open_loop ? 4 : 3))
            throw std::runtime_error(path + ": malformed row '" + lines[i] + "'");
        if (!open_loop) row.sent_ms = row.ts_ms;
        rows.push_back(row);
    }
    std::sort(rows.begin(), rows.end(),
              [](const Row& a, const Row& b) { return a.ts_ms < b.ts_ms; });
    return rows;
}

long count_status(const std::vector<Row>& rows, int status) {
    return std::count_if(rows.begin(), rows.end(),
                         [&](const Row& row) { return row.status == status; });
}

std::string csv_path(const std::string& name) {
    return test_log_dir() + "/spike_test." + name + ".csv";
}

// Options for a short spike: durations in ms, no backoff unless asked.
SpikeOptions short_spike(const std::string& name, int port, int workers,
                         std::chrono::milliseconds ramp, std::chrono::milliseconds hold) {
    SpikeOptions options;
    options.url = "http://127.0.0.1:" + std::to_string(port) + "/work";
    options.workers = workers;
    options.ramp = ramp;
    options.hold = hold;
    options.timeout = 5s;
    options.connect_timeout = 5s;
    options.backoff = 0ms;
    options.out = csv_path(name);
    return options;
}

// Runs a spike to its end; returns its rows. A spike ends by itself within ramp + hold +
// timeout; a minute more means it hangs, and the test says so instead of hanging too.
std::vector<Row> run(const SpikeOptions& options, SpikeCounts* counts = nullptr) {
    REQUIRE(check_spike_options(options).empty());
    Spike spike(options);
    const auto limit = Clock::now() + options.ramp + options.hold + options.timeout + 60s;
    while (!spike.wait_for(100ms))
        if (Clock::now() > limit) FAIL("the spike did not end by itself");
    if (counts) *counts = spike.counts();
    return read_rows(options.out);
}

std::string program() {
    return std::string(BIN_DIR) + "/spike";
}

// Faults injected where the spike's client reads: this program defines recv(), which the linker
// prefers to libc's. When armed, the next recv() on a spike carrier thread throws an exception
// no attempt expects (memory ran out, a bug), or blocks its carrier thread for a while (a spike
// starved of CPU); every other call goes to the real one.
std::atomic<bool> recv_throws{false};
std::atomic<int> recv_stalls_ms{0};

} // namespace

extern "C" ssize_t recv(int fd, void* data, size_t size, int flags) {
    static const auto next =
        reinterpret_cast<ssize_t (*)(int, void*, size_t, int)>(::dlsym(RTLD_NEXT, "recv"));
    char name[16] = {};
    ::pthread_getname_np(::pthread_self(), name, sizeof name);
    if (std::strncmp(name, "spike-", 6) == 0) {
        if (recv_throws.exchange(false))
            throw std::runtime_error("an exception inside an attempt (injected into recv)");
        if (const int stall = recv_stalls_ms.exchange(0))
            std::this_thread::sleep_for(std::chrono::milliseconds(stall)); // pins the carrier
    }
    return next(fd, data, size, flags);
}

// --- Schedule and bookkeeping ------------------------------------------------------------------

TEST_CASE("worker offsets spread the workers evenly over the ramp, the same every time",
          "[spike]") {
    CHECK(worker_offset(0, 4, 2000ms) == 0ms);
    CHECK(worker_offset(1, 4, 2000ms) == 500ms);
    CHECK(worker_offset(3, 4, 2000ms) == 1500ms);
    CHECK(worker_offset(6999, 7000, 20000ms) == std::chrono::microseconds(19997142));
    CHECK(worker_offset(5, 10, 0ms) == 0ms);
}

TEST_CASE("every worker's first attempt starts at its offset, in every run", "[spike]") {
    // Each answer takes longer than ramp + hold, so every worker makes exactly one attempt and
    // its row's ts is when that worker started.
    MisbehavingServer server(MisbehavingServer::Mode::answer, 200, 2200ms);
    for (int run_number = 1; run_number <= 2; ++run_number) {
        STEP("run " << run_number << ": 5 workers, ramp 2 s, hold 0.1 s, answers after 2.2 s");
        const auto rows = run(short_spike("offsets", server.port(), 5, 2000ms, 100ms));
        REQUIRE(rows.size() == 5);
        for (std::size_t i = 0; i < rows.size(); ++i) {
            STEP("worker " << i << " started at " << rows[i].ts_ms << " ms");
            CHECK(rows[i].status == 200);
            // Wake-ups are never early, and each worker starts in its own 400 ms slot, before
            // the next worker's offset: a late start under load keeps the order, a wrong
            // offset (all at once, or spread wider than the ramp) breaks it.
            CHECK(rows[i].ts_ms >= 400.0 * static_cast<double>(i) - 1);
            CHECK(rows[i].ts_ms < 400.0 * static_cast<double>(i + 1));
        }
    }
}

TEST_CASE("every attempt gets exactly one row, and a kept-alive connection serves them all",
          "[spike]") {
    MisbehavingServer server(MisbehavingServer::Mode::answer, 200, 10ms);
    STEP("3 workers, ramp 0.3 s, hold 1 s, against a server answering 200 after 10 ms");
    SpikeCounts counts;
    const auto options = short_spike("one-row-each", server.port(), 3, 300ms, 1000ms);
    const auto rows = run(options, &counts);
    STEP(rows.size() << " rows; the server saw " << server.requests() << " requests on "
                     << server.connections() << " connections");
    CHECK(rows.size() == static_cast<std::size_t>(server.requests()));
    CHECK(counts.rows == static_cast<long>(rows.size()));
    CHECK(counts.in_flight == 0);
    CHECK(count_status(rows, 200) == static_cast<long>(rows.size()));
    // 10 ms answers, no backoff: a worker asks dozens of times a second; 10 in all is enough to
    // show the three connections each served many, even on a machine that stalls often.
    CHECK(rows.size() > 10);
    CHECK(server.connections() == 3);
    CHECK(lines_of(options.out).size() == rows.size() + 1); // the header, then the rows
}

TEST_CASE("a worker reconnects when the server closes the connection", "[spike]") {
    MisbehavingServer server(MisbehavingServer::Mode::answer_close, 200);
    STEP("1 worker, hold 0.5 s, every answer says Connection: close");
    const auto rows = run(short_spike("reconnect", server.port(), 1, 0ms, 500ms));
    STEP(rows.size() << " rows on " << server.connections() << " connections");
    CHECK(count_status(rows, 200) == static_cast<long>(rows.size()));
    CHECK(rows.size() >= 3); // hundreds on a quiet machine; 3 already need two reconnects
    CHECK(server.connections() == static_cast<int>(rows.size()));
}

// --- The open loop -----------------------------------------------------------------------------

TEST_CASE("an open loop's request i is intended at i / rate, computed from i, so nothing drifts",
          "[spike][open]") {
    CHECK(intended_offset(0, 3) == 0ns);
    CHECK(intended_offset(1, 3) == 333333333ns);
    CHECK(intended_offset(2, 3) == 666666666ns);
    CHECK(intended_offset(3, 3) == 1s);
    // Adding a rounded 1/3 s 3,000 times would be 1 us early by now; computed, it is exact.
    CHECK(intended_offset(3000, 3) == 1000s);
    CHECK(intended_offset(3001, 3) == 1000s + 333333333ns);
    // The largest schedule the flags allow, 100,000/s for 24 h, without overflow.
    CHECK(intended_offset(8'639'999'999LL, 100000) == 86399s + 999990000ns);
    // Every request intended before the hold's end, and none after.
    CHECK(scheduled_requests(20, 1000ms) == 20);
    CHECK(scheduled_requests(3, 1000ms) == 3);
    CHECK(scheduled_requests(3, 1001ms) == 4); // the 4th at 1000 ms, before 1001
    CHECK(scheduled_requests(1, 1ms) == 1);
    CHECK(scheduled_requests(100000, 24h) == 8'640'000'000LL);
}

TEST_CASE("against a slow server an open loop still sends every scheduled request, late when "
          "its workers are busy, and counts each one's latency from its intended start",
          "[spike][open]") {
    // Every answer takes at least 200 ms: the server sleeps that long, and a busy machine only
    // makes it longer. So the verdicts below are lower bounds that load cannot break.
    MisbehavingServer server(MisbehavingServer::Mode::answer, 200, 200ms);
    auto options = short_spike("open", server.port(), 2, 0ms, 1000ms);
    options.rate = 20;
    STEP("open loop: 20 requests/s for 1 s on at most 2 connections; answers after 0.2 s");
    const auto rows = run(options);
    STEP(rows.size() << " rows; the server saw " << server.requests() << " requests on "
                     << server.connections() << " connections");
    REQUIRE(rows.size() == 20); // every scheduled request, however slow the server
    CHECK(count_status(rows, 200) == 20);
    CHECK(server.requests() == 20);
    CHECK(server.connections() == 2); // the bound: never more connections than workers
    CHECK(lines_of(options.out).front() == "ts,status,latency_ms,sent_ms");
    const Row* latest = &rows.front();
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const Row& row = rows[i];
        const double from_send = row.latency_ms - (row.sent_ms - row.ts_ms);
        STEP("request " << i << ": intended " << row.ts_ms << " ms, sent " << row.sent_ms
                        << " ms, latency " << row.latency_ms << " ms from the intended start, "
                        << from_send << " ms from the send");
        CHECK(row.ts_ms == 50.0 * static_cast<double>(i)); // the schedule, to the microsecond
        CHECK(row.sent_ms >= row.ts_ms);                   // never early ...
        CHECK(row.latency_ms >= from_send);                // ... so the wait counts
        CHECK(from_send >= 200);
        if (row.sent_ms > latest->sent_ms) latest = &row;
    }
    // Two connections, 200 ms an answer: one of them carries 10 of the 20 requests, and its
    // 10th cannot go out before 9 x 200 = 1800 ms, though every request was intended before
    // 1000 ms. That wait is in its latency, not hidden by measuring from the send.
    STEP("the last sent: intended " << latest->ts_ms << " ms, sent " << latest->sent_ms << " ms");
    CHECK(latest->sent_ms >= 1800 - 1);
    CHECK(latest->latency_ms - (latest->sent_ms - latest->ts_ms) < latest->latency_ms - 800);

    // The same server, workers and hold as a closed loop: each worker waits for its answer
    // before asking again, so the slow server sets the pace: attempts start at 0, 200, 400, 600
    // and 800 ms at the earliest, at most 5 per worker, never the 20 that were due.
    STEP("closed loop: 2 workers for 1 s against the same server");
    auto closed = short_spike("open-vs-closed", server.port(), 2, 0ms, 1000ms);
    const auto closed_rows = run(closed);
    STEP(closed_rows.size() << " rows");
    CHECK(closed_rows.size() <= 10);
}

TEST_CASE("an open loop that falls behind its schedule by --timeout does not send those requests "
          "but writes a -5 row for each",
          "[spike][open]") {
    MisbehavingServer server(MisbehavingServer::Mode::answer, 200);
    auto options = short_spike("open-behind", server.port(), 2, 0ms, 1000ms);
    options.rate = 20;
    options.timeout = 200ms;
    options.carriers = 1;
    STEP("open loop: 20 requests/s for 1 s, timeout 0.2 s, one carrier; the first read blocks "
         "the carrier for 0.6 s");
    // The requests intended before the stall's end minus 200 ms are past their timeout when a
    // worker gets to them: at least request 1 or 2 (due at 50 and 100 ms), whenever the stall
    // begins, since a worker never takes a request more than one ahead of its schedule.
    recv_stalls_ms = 600;
    const auto rows = run(options);
    CHECK(recv_stalls_ms == 0); // it fired
    long sent = 0;
    for (const Row& row : rows) {
        if (row.status != -5) {
            sent += row.sent_ms >= 0;
            continue;
        }
        STEP("not sent: intended " << row.ts_ms << " ms, given up after " << row.latency_ms
                                   << " ms");
        CHECK(row.sent_ms == -1);
        CHECK(row.latency_ms >= 200);
    }
    STEP(rows.size() << " rows, " << count_status(rows, -5) << " not sent; the server saw "
                     << server.requests());
    CHECK(rows.size() == 20);
    CHECK(count_status(rows, -5) >= 1);
    CHECK(sent == server.requests()); // what was not sent never reached the server
}

// (No colon in a name: Catch 2.13 wraps a long name after one, forever, when it cannot fit.)
TEST_CASE("an open loop never begins a request with less than 10 ms of its --timeout left, and "
          "writes such a request as -5, not sent, never as a -3 connect timeout",
          "[spike][open]") {
    // The first read blocks the carrier for 0.3 s, longer than the 0.1 s timeout: the worker
    // then skips what is past its deadline and reaches a request with a sliver of time left;
    // and one worker cannot keep 100,000 requests a second, so it stays at that edge. Begun
    // with a sliver, a connect that took 0.03 ms was recorded as -3 (the issue: 13,307 rows of
    // 300,000 in `spike --rate 100000 --workers 1 --ramp 0 --hold 3 --timeout 1s`).
    MisbehavingServer server(MisbehavingServer::Mode::answer, 200);
    auto options = short_spike("open-sliver", server.port(), 1, 0ms, 300ms);
    options.rate = 100'000;
    options.timeout = 100ms;
    options.carriers = 1;
    STEP("open loop: 100,000 requests/s for 0.3 s, one worker, timeout 0.1 s; the first read "
         "blocks the carrier for 0.3 s");
    recv_stalls_ms = 300;
    const auto rows = run(options);
    CHECK(recv_stalls_ms == 0); // it fired
    long begun = 0, too_late = 0;
    for (const Row& row : rows) {
        if (row.sent_ms < 0) continue;
        ++begun;
        // The CSV has microseconds: 0.002 ms of rounding.
        const double left_ms = row.ts_ms + 100 - row.sent_ms;
        if (left_ms >= 10 - 0.002) continue;
        if (++too_late <= 5)
            STEP("begun with " << left_ms << " ms left: intended " << row.ts_ms << " ms, sent "
                               << row.sent_ms << " ms, status " << row.status);
    }
    STEP(rows.size() << " rows: " << begun << " begun, " << count_status(rows, -5) << " not sent, "
                     << count_status(rows, -3) << " connect timeouts");
    CHECK(rows.size() == 30'000);
    CHECK(count_status(rows, -5) >= 1); // the loop did fall behind by its timeout
    CHECK(too_late == 0);
}

// --- Every sentinel -----------------------------------------------------------------------------

TEST_CASE("a response slower than --timeout is recorded as -1 at the timeout", "[spike]") {
    MisbehavingServer server(MisbehavingServer::Mode::answer, 200, 10000ms);
    auto options = short_spike("slow", server.port(), 2, 0ms, 800ms);
    options.timeout = 500ms;
    STEP("2 workers, hold 0.8 s, timeout 0.5 s, answers after 10 s");
    const auto rows = run(options);
    REQUIRE(!rows.empty());
    CHECK(count_status(rows, -1) == static_cast<long>(rows.size()));
    CHECK(rows.size() == static_cast<std::size_t>(server.requests()));
    for (const Row& row : rows) {
        STEP("a row: ts " << row.ts_ms << ", latency " << row.latency_ms);
        CHECK(row.latency_ms >= 500);
        CHECK(row.latency_ms < 5000); // half the 10 s a spike without its timeout would wait
    }
}

TEST_CASE("a connection reset mid-request is recorded as -2", "[spike]") {
    MisbehavingServer server(MisbehavingServer::Mode::reset);
    STEP("2 workers, hold 0.5 s; the server reads each request and resets the connection");
    auto options = short_spike("reset", server.port(), 2, 0ms, 500ms);
    options.backoff = 100ms;
    const auto rows = run(options);
    REQUIRE(!rows.empty());
    CHECK(count_status(rows, -2) == static_cast<long>(rows.size()));
    CHECK(rows.size() == static_cast<std::size_t>(server.requests()));
}

TEST_CASE("a refused connect is recorded as -2", "[spike]") {
    RefusingPort nothing;
    STEP("1 worker, hold 0.5 s, backoff 0.1 s, against port " << nothing.port
                                                              << " where nothing listens");
    auto options = short_spike("refused", nothing.port, 1, 0ms, 500ms);
    options.backoff = 100ms;
    const auto rows = run(options);
    REQUIRE(!rows.empty());
    CHECK(count_status(rows, -2) == static_cast<long>(rows.size()));
    CHECK(rows.front().latency_ms < 2500); // refused at once, not after the 5 s timeout
}

TEST_CASE("a connect that hangs is recorded as -3, even when --timeout passes too", "[spike]") {
    FullBacklog hanging;
    SECTION("the connect timeout is the shorter one") {
        auto options = short_spike("hang", hanging.port, 2, 0ms, 300ms);
        options.connect_timeout = 300ms;
        options.timeout = 10s;
        STEP("2 workers against a full accept queue, connect timeout 0.3 s, timeout 10 s");
        const auto rows = run(options);
        REQUIRE(rows.size() == 2);
        for (const Row& row : rows) {
            STEP("a row: status " << row.status << ", latency " << row.latency_ms);
            CHECK(row.status == -3);
            CHECK(row.latency_ms >= 300);
            CHECK(row.latency_ms < 5000); // half the 10 s timeout a missed connect timeout waits
        }
    }
    SECTION("the overall timeout is the shorter one: still -3, the connect is checked first") {
        auto options = short_spike("hang-timeout", hanging.port, 2, 0ms, 300ms);
        options.connect_timeout = 10s;
        options.timeout = 400ms;
        STEP("2 workers against a full accept queue, connect timeout 10 s, timeout 0.4 s");
        const auto rows = run(options);
        REQUIRE(rows.size() == 2);
        for (const Row& row : rows) {
            STEP("a row: status " << row.status << ", latency " << row.latency_ms);
            CHECK(row.status == -3);
            CHECK(row.latency_ms >= 400);
            CHECK(row.latency_ms < 5000); // half the 10 s connect timeout it would wait instead
        }
    }
}

TEST_CASE("after an answer other than 200 a worker waits the backoff but after 200 it does not",
          "[spike]") {
    SECTION("503: one attempt per backoff") {
        MisbehavingServer server(MisbehavingServer::Mode::answer, 503);
        auto options = short_spike("backoff", server.port(), 1, 0ms, 1300ms);
        options.backoff = 400ms;
        STEP("1 worker, hold 1.3 s, backoff 0.4 s, every answer 503");
        const auto rows = run(options);
        STEP(rows.size() << " rows");
        REQUIRE(rows.size() >= 2);
        CHECK(rows.size() <= 4); // at 0, 0.4, 0.8, 1.2 s at most
        CHECK(count_status(rows, 503) == static_cast<long>(rows.size()));
        for (std::size_t i = 1; i < rows.size(); ++i) {
            STEP("attempt " << i << " started " << rows[i].ts_ms - rows[i - 1].ts_ms
                            << " ms after the previous one");
            CHECK(rows[i].ts_ms - rows[i - 1].ts_ms >= 400);
        }
    }
    SECTION("200: the next attempt at once") {
        MisbehavingServer server(MisbehavingServer::Mode::answer, 200);
        auto options = short_spike("no-backoff", server.port(), 1, 0ms, 1300ms);
        options.backoff = 400ms;
        STEP("1 worker, hold 1.3 s, backoff 0.4 s, every answer 200");
        const auto rows = run(options);
        STEP(rows.size() << " rows");
        // Loopback answers take well under a millisecond: hundreds of rows. Waiting the backoff
        // after a 200 would allow 4 at most.
        CHECK(rows.size() > 8);
    }
}

TEST_CASE("a server crash mid-spike shows as -2 rows, not as a hole", "[spike]") {
    MisbehavingServer server(MisbehavingServer::Mode::answer, 200, 300ms);
    auto options = short_spike("crash", server.port(), 4, 0ms, 2000ms);
    options.backoff = 200ms;
    STEP("4 workers, hold 2 s, answers after 0.3 s; the server crashes after 1 s");
    Spike spike(options);
    std::this_thread::sleep_for(1000ms);
    server.crash();
    const int seen = server.requests();
    while (!spike.wait_for(100ms)) {
    }
    const SpikeCounts counts = spike.counts();
    const auto rows = read_rows(options.out);
    const long ok = count_status(rows, 200), failed = count_status(rows, -2);
    STEP("the server saw " << seen << " requests; rows: " << ok << " x 200, " << failed << " x -2, "
                           << rows.size() << " in all");
    CHECK(counts.in_flight == 0);
    CHECK(counts.rows == static_cast<long>(rows.size()));
    CHECK(ok + failed == static_cast<long>(rows.size())); // nothing but answers and -2
    // The requests the server saw but never answered were in flight at the crash: they are
    // -2 rows, and so are the refused reconnects after them.
    CHECK(seen - ok >= 1);
    CHECK(failed > seen - ok);
    CHECK(rows.back().status == -2);
}

TEST_CASE("an interrupted spike records the attempts in flight as -4", "[spike]") {
    MisbehavingServer server(MisbehavingServer::Mode::answer, 200, 10000ms);
    auto options = short_spike("interrupt", server.port(), 3, 0ms, 30000ms);
    options.timeout = 3s; // bounds how long the destructor waits for the abandoned attempts
    Spike spike(options);
    std::this_thread::sleep_for(500ms);
    STEP("3 workers waiting for 10 s answers; interrupted after 0.5 s");
    CHECK(spike.interrupt() == 3);
    const auto rows = read_rows(options.out);
    REQUIRE(rows.size() == 3);
    for (const Row& row : rows) {
        CHECK(row.status == -4);
        // They started a moment after the spike, 0.5 s before; a busy machine may start them
        // late, but a -4 row that lost its attempt's start time would say 0.
        CHECK(row.latency_ms >= 100);
    }
    CHECK(spike.counts().in_flight == 0);
}

TEST_CASE("an exception inside an attempt still leaves exactly one row, and nothing in flight",
          "[spike]") {
    MisbehavingServer server(MisbehavingServer::Mode::answer, 200, 10ms);
    STEP("1 worker, hold 0.3 s; its first attempt's read throws an exception");
    recv_throws = true;
    SpikeCounts counts;
    const auto rows = run(short_spike("exception", server.port(), 1, 0ms, 300ms), &counts);
    CHECK_FALSE(recv_throws.load()); // it fired
    STEP("the spike ended with " << rows.size() << " rows, " << counts.in_flight << " in flight");
    // The exception ends that worker (its carrier reports it), but only after its attempt has
    // its row: -2, like any other failure to get an answer.
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].status == -2);
    CHECK(counts.rows == 1);
    CHECK(counts.in_flight == 0);
}

// --- The probe ---------------------------------------------------------------------------------

TEST_CASE("the probe samples /metrics once a second and writes -1 for what it cannot read",
          "[probe]") {
    std::atomic<int> mode{0}; // 0: all metrics, 1: inflight missing, 2: answers 500
    httplib::Server metrics;
    metrics.Get("/metrics", [&](const httplib::Request&, httplib::Response& res) {
        if (mode == 2) {
            res.status = 500;
            return;
        }
        std::string text = "# TYPE connector_connections_current gauge\n"
                           "connector_connections_current 34\n";
        if (mode == 0) text += "http_server_requests_inflight 12\npool_connections_pending 56\n";
        res.set_content(text, "text/plain; version=0.0.4");
    });
    const int port = metrics.bind_to_any_port("127.0.0.1");
    std::thread serving([&] { metrics.listen_after_bind(); });

    const std::string path = csv_path("probe");
    Probe probe("http://127.0.0.1:" + std::to_string(port) + "/metrics", path, Clock::now());
    // Waits for `n` more samples: a sample a second, so 10 s per sample is beyond any doubt.
    auto samples_later = [&](long n) {
        const long target = probe.samples() + n;
        const auto limit = Clock::now() + std::chrono::seconds(10 * n);
        while (probe.samples() < target && Clock::now() < limit)
            std::this_thread::sleep_for(10ms);
        REQUIRE(probe.samples() >= target);
        return *probe.last();
    };
    // Each phase waits two samples: the first may have been taken before the switch.
    STEP("all metrics served");
    ProbeSample sample = samples_later(2);
    CHECK(sample.inflight == 12);
    CHECK(sample.connections == 34);
    CHECK(sample.pool_pending == 56);
    STEP("inflight and pool_pending missing");
    mode = 1;
    sample = samples_later(2);
    CHECK(sample.inflight == -1);
    CHECK(sample.connections == 34);
    CHECK(sample.pool_pending == -1);
    STEP("/metrics answers 500");
    mode = 2;
    sample = samples_later(2);
    CHECK(sample.inflight == -1);
    CHECK(sample.connections == -1);
    STEP("the server is gone");
    metrics.stop();
    serving.join();
    sample = samples_later(2);
    CHECK(sample.inflight == -1);
    CHECK(sample.connections == -1);
    probe.stop();

    const auto lines = lines_of(path);
    STEP("the CSV has " << lines.size() << " lines; the probe took " << probe.samples()
                        << " samples");
    REQUIRE(lines.size() == static_cast<std::size_t>(probe.samples()) + 1);
    CHECK(lines[0] == "ts,inflight,connections,pool_pending");
    CHECK(lines[1].substr(lines[1].find(',')) == ",12,34,56");
    CHECK(lines.back().substr(lines.back().find(',')) == ",-1,-1,-1");
    long previous_second = -1;
    for (std::size_t i = 1; i < lines.size(); ++i) {
        const double ts = std::stod(lines[i]);
        STEP("sample at " << ts << " ms: " << lines[i]);
        // Samples start on whole seconds, never early, and a late one skips the ticks it missed:
        // however busy the machine, no two samples fall in the same second.
        const auto second = static_cast<long>(ts / 1000);
        CHECK(second > previous_second);
        previous_second = second;
    }
}

// --- Progress ----------------------------------------------------------------------------------

TEST_CASE(
    "the progress line shows time, ETA, in flight and the status mix, and past ramp + hold it "
    "says it waits for the last answers, not '111s of 110s'",
    "[spike]") {
    SpikeCounts counts;
    counts.rows = 10;
    counts.in_flight = 7;
    counts.by_status = {{-1, 1}, {-3, 2}, {200, 5}, {503, 2}};
    CHECK(status_mix(counts.by_status) == "200: 5, 503: 2, -1: 1, -3: 2");
    CHECK(progress_line(35s, 110s, counts, std::nullopt) ==
          "35s of 110s, ETA 75s | in flight 7 | 10 rows (200: 5, 503: 2, -1: 1, -3: 2)");
    ProbeSample probe;
    probe.inflight = 200;
    probe.connections = 7000;
    CHECK(progress_line(111s, 110s, counts, probe) ==
          "111s, no new attempt after 110s, waiting for the last answers | in flight 7 | 10 rows "
          "(200: 5, 503: 2, -1: 1, -3: 2) | server: inflight 200, connections 7000");
    probe.pool_pending = 6790;
    CHECK(progress_line(111s, 110s, counts, probe) ==
          "111s, no new attempt after 110s, waiting for the last answers | in flight 7 | 10 rows "
          "(200: 5, 503: 2, -1: 1, -3: 2) | server: inflight 200, connections 7000, pool pending "
          "6790");
}

// --- The program ---------------------------------------------------------------------------------

TEST_CASE("spike runs its course, prints a summary and exits 0", "[spike]") {
    MisbehavingServer server(MisbehavingServer::Mode::answer, 200, 50ms);
    const std::string out = csv_path("program");
    std::string output;
    const int status =
        run_program({program(), "--url", "http://127.0.0.1:" + std::to_string(server.port()) + "/x",
                     "--workers", "3", "--ramp", "0.2", "--hold", "1", "--timeout", "5",
                     "--backoff", "0", "--out", out},
                    output);
    STEP("spike said: " << output);
    CHECK(status == 0);
    const auto rows = read_rows(out);
    CHECK(output.find("spike: done in ") != std::string::npos);
    CHECK(output.find(std::to_string(rows.size()) + " rows in " + out +
                      " (200: " + std::to_string(rows.size()) + ")") != std::string::npos);
    CHECK(rows.size() == static_cast<std::size_t>(server.requests()));

    STEP("the same with --rate 10 --ramp 0 --hold 0.3: an open loop of 3 requests");
    const int open_status = run_program(
        {program(), "--url", "http://127.0.0.1:" + std::to_string(server.port()) + "/x", "--rate",
         "10", "--workers", "3", "--ramp", "0", "--hold", "0.3", "--out", out},
        output);
    STEP("spike said: " << output);
    CHECK(open_status == 0);
    CHECK(output.find("open loop at 10/s, 3 requests scheduled; 3 rows in " + out + " (200: 3)") !=
          std::string::npos);
    CHECK(lines_of(out).front() == "ts,status,latency_ms,sent_ms");
}

// The "[default: PATH]" that `spike --help` gives for `flag`, or "".
std::string default_of(const std::string& help, const std::string& flag) {
    const auto line = help.find("  " + flag + " ");
    if (line == std::string::npos) return "";
    const auto start = help.find("[default: ", line);
    if (start == std::string::npos || start > help.find('\n', line)) return "";
    const auto from = start + std::string("[default: ").size();
    return help.substr(from, help.find(']', from) - from);
}

TEST_CASE("run by hand without --out, spike writes its CSVs where --help says, not into the "
          "current directory",
          "[spike]") {
    std::string help;
    REQUIRE(run_program({program(), "--help"}, help) == 0);
    const std::string out = default_of(help, "--out VALUE");
    const std::string probe_out = default_of(help, "--probe-out VALUE");
    STEP("spike --help gives --out [default: " << out << "] and --probe-out [default: " << probe_out
                                               << "]");
    REQUIRE(!out.empty());
    REQUIRE(!probe_out.empty());
    CHECK(out[0] == '/'); // a place that does not depend on where the reader stands
    CHECK(probe_out[0] == '/');
    ::unlink(out.c_str());
    ::unlink(probe_out.c_str());

    // Run it from an empty directory, as a reader at the repository's root would from there.
    const std::string here = test_log_dir() + "/spike_test.cwd";
    std::filesystem::remove_all(here);
    std::filesystem::create_directories(here);
    MisbehavingServer server(MisbehavingServer::Mode::answer, 200, 10ms);
    const std::string url = "http://127.0.0.1:" + std::to_string(server.port());
    std::string output;
    const int status = run_program({"/usr/bin/env", "-C", here, program(), "--url", url + "/x",
                                    "--workers", "2", "--ramp", "0", "--hold", "1.2", "--backoff",
                                    "0", "--probe-url", url + "/metrics"},
                                   output);
    STEP("spike run from " << here << " exited " << status << ", said: " << output);
    CHECK(status == 0);
    CHECK(std::filesystem::is_empty(here));
    CHECK(output.find(" rows in " + out + " ") != std::string::npos);
    CHECK(output.find(" probe samples in " + probe_out + " ") != std::string::npos);
    CHECK(!read_rows(out).empty());
    std::ifstream probe(probe_out);
    std::string header;
    std::getline(probe, header);
    CHECK(header == "ts,inflight,connections,pool_pending");
}

TEST_CASE("Ctrl+C stops spike at once with exit status 130 and the attempts in flight as -4",
          "[spike]") {
    MisbehavingServer server(MisbehavingServer::Mode::answer, 200, 30000ms);
    const std::string out = csv_path("ctrl-c");
    std::string output;
    const auto started = Clock::now();
    // `timeout` sends SIGINT after 1.5 s, as Ctrl+C would, and passes spike's status on.
    const int status = run_program(
        {"/usr/bin/timeout", "--preserve-status", "-s", "INT", "1.5", program(), "--url",
         "http://127.0.0.1:" + std::to_string(server.port()) + "/x", "--workers", "3", "--ramp",
         "0", "--hold", "60", "--timeout", "60", "--out", out},
        output);
    const double took = seconds_since(started);
    STEP("spike said: " << output << " after " << took << " s");
    CHECK(status == 130);
    CHECK(took < 10); // not the 60 s the attempts could have taken
    CHECK(output.find("interrupted after") != std::string::npos);
    const auto rows = read_rows(out);
    REQUIRE(rows.size() == 3);
    CHECK(count_status(rows, -4) == 3);
}

TEST_CASE("a bad flag is one line and exit status 2", "[spike]") {
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
        {{"--wokers", "3"}, "unknown flag '--wokers'"},
        {{"--workers", "0"}, "--workers: '0' is not in 1..2147483647"},
        {{"--ramp", "soon"}, "--ramp: 'soon' is not a duration"},
        {{"--hold", "0"}, "--hold: '0' is not in 1ms..24h"},
        {{"--timeout", "0"}, "--timeout: '0' is not in 1ms..24h"},
        {{"--url", "ftp://127.0.0.1/x"}, "--url: 'ftp://127.0.0.1/x' does not start with http://"},
        {{"--url", "http://example.com/x"}, "'example.com' is not an IPv4 address"},
        {{"--probe-out", "p.csv"}, "--probe-out needs --probe-url"},
        {{"--rate", "100001"}, "--rate: '100001' is not in 0..100000"},
        {{"--rate", "-1"}, "--rate: '-1' is not in 0..100000"},
        {{"--rate", "50"}, "--rate: an open loop starts at its full rate; give --ramp 0 too"},
        {{"--workers", "2000000000"}, "--workers 2000000000 needs about 2000000064 open files"},
        {{"--out", "/nonexistent/dir/spike.csv", "--workers", "1"},
         "cannot write /nonexistent/dir/spike.csv: No such file or directory"},
    };
    for (const auto& [args, message] : cases) {
        std::vector<std::string> argv{program()};
        argv.insert(argv.end(), args.begin(), args.end());
        std::string output;
        const int status = run_program(argv, output);
        STEP("spike " << args[0] << " ...: exit " << status << ", said: " << output);
        CHECK(status == (message.rfind("cannot write", 0) == 0 ? 1 : 2));
        CHECK(output.find(message) != std::string::npos);
        CHECK(std::count(output.begin(), output.end(), '\n') == 1);
    }
}

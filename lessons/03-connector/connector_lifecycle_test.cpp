// The connector's lifecycle under faults: a stop() that gives up, an executor that throws, a
// socket that cannot join the reactor, accept() failing for want of memory, a connection
// accepted just as stop() begins. Whatever happens, every connection's slot, registry entry and
// descriptor is given back, and nothing a fiber uses is destroyed before the fiber ends.
//
// Faults the kernel will not produce on demand (ENOBUFS from accept, ENOMEM from epoll_ctl) are
// injected at the system-call boundary: this test program defines accept4() and epoll_ctl()
// itself, which the linker prefers to libc's, and passes every call on to the real one unless a
// test has armed a fault. The connector's code has no test seam.
#include "lessons/03-connector/connector.hpp"
#include "lessons/common/fiber_latch.hpp"
#include "lessons/common/test_support.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <dirent.h>
#include <dlfcn.h>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// The faults a test arms. Touched by the carriers (inside accept4/epoll_ctl) and the test.
struct Faults {
    std::mutex mutex;
    std::condition_variable changed;
    int accept_failures = 0; // the next this many accept4 calls fail with accept_error
    int accept_error = 0;
    std::vector<Clock::time_point> failed_accepts; // when each injected failure happened
    bool hold_accepted = false; // the next accepted connection waits in accept4 until released
    bool holding = false;
    int epoll_add_failures = 0; // the next this many EPOLL_CTL_ADD of a socket fail (ENOMEM)
};
Faults faults;

template <typename Function> Function real(const char* name) {
    return reinterpret_cast<Function>(::dlsym(RTLD_NEXT, name));
}

// Says whether the next accept4 call in carrier 0 is a failure to inject (with its errno).
int injected_accept_error() {
    std::lock_guard<std::mutex> lock(faults.mutex);
    if (faults.accept_failures == 0) return 0;
    --faults.accept_failures;
    faults.failed_accepts.push_back(Clock::now());
    faults.changed.notify_all();
    return faults.accept_error;
}

// Holds carrier 0 (a deliberate pin) with an accepted connection in hand, until the test lets go.
void hold_if_asked() {
    std::unique_lock<std::mutex> lock(faults.mutex);
    if (!faults.hold_accepted) return;
    faults.holding = true;
    faults.changed.notify_all();
    faults.changed.wait_for(lock, 10s, [] { return !faults.hold_accepted; });
    faults.holding = false;
}

void release_hold() {
    std::lock_guard<std::mutex> lock(faults.mutex);
    faults.hold_accepted = false;
    faults.changed.notify_all();
}

} // namespace

extern "C" int accept4(int fd, sockaddr* address, socklen_t* length, int flags) {
    static const auto next = real<int (*)(int, sockaddr*, socklen_t*, int)>("accept4");
    if (const int error = injected_accept_error()) {
        errno = error;
        return -1;
    }
    const int accepted = next(fd, address, length, flags);
    if (accepted >= 0) hold_if_asked();
    return accepted;
}

extern "C" int epoll_ctl(int epoll_fd, int op, int fd, epoll_event* event) {
    static const auto next = real<int (*)(int, int, int, epoll_event*)>("epoll_ctl");
    struct stat status {};
    // Sockets only: a carrier that starts late registers its eventfd, which must not fail.
    if (op == EPOLL_CTL_ADD && ::fstat(fd, &status) == 0 && S_ISSOCK(status.st_mode)) {
        std::lock_guard<std::mutex> lock(faults.mutex);
        if (faults.epoll_add_failures > 0) {
            --faults.epoll_add_failures;
            errno = ENOMEM;
            return -1;
        }
    }
    return next(epoll_fd, op, fd, event);
}

namespace {

// Descriptors this process has open (the directory stream's own is counted every time).
int open_descriptors() {
    DIR* directory = ::opendir("/proc/self/fd");
    if (directory == nullptr) throw std::runtime_error("cannot read /proc/self/fd");
    int count = 0;
    while (::readdir(directory) != nullptr)
        ++count;
    ::closedir(directory);
    return count - 2; // "." and ".."
}

// What this process writes to stderr while it lives (the carriers' and the connector's reports).
class CapturedStderr {
public:
    CapturedStderr() : file_(std::tmpfile()), saved_(::dup(STDERR_FILENO)) {
        std::fflush(stderr);
        ::dup2(::fileno(file_), STDERR_FILENO);
    }
    ~CapturedStderr() {
        std::fflush(stderr);
        ::dup2(saved_, STDERR_FILENO);
        ::close(saved_);
        std::fclose(file_);
    }
    CapturedStderr(const CapturedStderr&) = delete;
    CapturedStderr& operator=(const CapturedStderr&) = delete;

    std::string text() const {
        std::fflush(stderr);
        std::string text;
        char buffer[4096];
        for (off_t at = 0;;) {
            const ssize_t n = ::pread(::fileno(file_), buffer, sizeof buffer, at);
            if (n <= 0) return text;
            text.append(buffer, static_cast<std::size_t>(n));
            at += n;
        }
    }

private:
    std::FILE* file_;
    int saved_;
};

std::size_t occurrences(const std::string& text, const std::string& what) {
    std::size_t count = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
        ++count;
    return count;
}

ConnectorOptions test_options() {
    ConnectorOptions options;
    options.port = 0;
    options.carriers = 2;
    return options;
}

void add_hello(HttpApp& app) {
    app.Get("/hello", [](const httplib::Request&, httplib::Response& res) {
        res.set_content("hello\n", "text/plain");
    });
}

std::string hello_from(int port) {
    RawConnection client(port);
    if (!client.send(get_request("/hello"))) return "(send failed)";
    return body_of(client.receive_response(10s));
}

} // namespace

TEST_CASE("a Connector destroyed after a failed stop() waits for the request still running",
          "[lesson03][connector][lifecycle]") {
    HttpApp app;
    Latch release;
    std::atomic<bool> entered{false};
    app.Get("/hold", [&](const httplib::Request&, httplib::Response& res) {
        entered = true;
        release.wait();
        res.set_content("released\n", "text/plain");
    });
    ConnectorOptions options = test_options();
    // Short on purpose: the handler is held until the test lets go, so stop() gives up whatever
    // the machine's load.
    options.stop_grace = 100ms;
    auto connector = std::make_unique<Connector>(app, options);
    connector->start();
    RawConnection client(connector->port());
    REQUIRE(client.send(get_request("/hold")));
    REQUIRE(eventually([&] { return entered.load(); }));
    STEP("GET /hold is in its handler, held by the test");
    REQUIRE_FALSE(connector->stop());
    STEP("stop() gave up after stop_grace (100 ms) with the handler still running");

    std::atomic<bool> destroyed{false};
    std::thread destroyer([&] {
        connector.reset();
        destroyed = true;
    });
    // Not a verdict on time: it gives a destructor that would free what the handler's fiber
    // still uses the time to do so, before the handler goes on.
    std::this_thread::sleep_for(200ms);
    STEP("the Connector is being destroyed on another thread; 200 ms later the handler is let go");
    CHECK_FALSE(destroyed.load()); // it must wait: the handler's fiber uses the Connector
    release.open();
    destroyer.join();
    STEP("the destructor returned after the handler finished");
    CHECK(body_of(client.receive_response(10s)) == "released\n");
    CHECK(client.closed_by_peer(10s));
}

TEST_CASE("an executor that throws gives the connection back: its slot, its registry entry and "
          "its descriptor",
          "[lesson03][connector][lifecycle]") {
    CapturedStderr stderr_text;
    const int descriptors_before = open_descriptors();
    HttpApp app;
    add_hello(app);
    std::atomic<bool> refuse{true};
    const Connector::Executor executor = [&](const std::function<bool()>& serve) {
        if (refuse) throw std::runtime_error("the executor refused the request");
        return serve();
    };
    ConnectorOptions options = test_options();
    options.max_connections = 2;
    // Generous: with every connection closed, stop() returns at once; only a lost slot waits.
    options.stop_grace = 2s;
    {
        Connector connector(app, options, executor);
        connector.start();
        STEP("max_connections 2; the executor throws on every request");
        for (int i = 1; i <= 5; ++i) {
            RawConnection client(connector.port());
            REQUIRE(client.send(get_request("/hello")));
            REQUIRE(client.closed_by_peer(10s));
            STEP("request " << i << ": the executor threw, the connection was closed");
            REQUIRE(eventually([&] { return connector.open_connections() == 0; }));
        }
        STEP("after 5 such requests open_connections() is back to 0");
        refuse = false;
        std::vector<std::unique_ptr<RawConnection>> clients;
        for (int i = 0; i < options.max_connections; ++i) {
            clients.push_back(std::make_unique<RawConnection>(connector.port()));
            REQUIRE(clients.back()->send(get_request("/hello")));
        }
        for (auto& client : clients)
            CHECK(body_of(client->receive_response(10s)) == "hello\n");
        STEP("the executor serves again: max_connections (2) new connections at once answered");
        CHECK(connector.open_connections() == 2);
        clients.clear();
        CHECK(connector.stop());
        STEP("stop() drained");
    }
    CHECK(open_descriptors() == descriptors_before);
    CHECK(occurrences(stderr_text.text(), "the executor refused the request") == 5);
}

TEST_CASE("a connection whose socket cannot join the reactor is closed and gives its slot back",
          "[lesson03][connector][lifecycle]") {
    const int descriptors_before = open_descriptors();
    HttpApp app;
    add_hello(app);
    ConnectorOptions options = test_options();
    options.max_connections = 1;
    options.stop_grace = 2s;
    {
        Connector connector(app, options);
        connector.start();
        REQUIRE(hello_from(connector.port()) == "hello\n");
        STEP("max_connections 1; one request served (the acceptor is registered)");
        {
            std::lock_guard<std::mutex> lock(faults.mutex);
            faults.epoll_add_failures = 1;
        }
        RawConnection client(connector.port());
        STEP("a client connects; its socket's epoll_ctl(ADD) fails with ENOMEM");
        CHECK(client.closed_by_peer(10s));
        REQUIRE(eventually([&] { return connector.open_connections() == 0; }));
        CHECK(hello_from(connector.port()) == "hello\n");
        STEP("the next client is served in the only slot");
        CHECK(connector.stop());
    }
    CHECK(open_descriptors() == descriptors_before);
}

TEST_CASE("accept failing for want of memory makes the acceptor back off and say so once",
          "[lesson03][connector][lifecycle]") {
    CapturedStderr stderr_text;
    HttpApp app;
    add_hello(app);
    Connector connector(app, test_options());
    connector.start();
    for (const int error : {ENOBUFS, ENOMEM}) {
        {
            std::lock_guard<std::mutex> lock(faults.mutex);
            faults.accept_failures = 4;
            faults.accept_error = error;
            faults.failed_accepts.clear();
        }
        STEP("the next 4 accept() calls fail with " << std::strerror(error));
        // The first failure comes when a client is waiting; the answer only after the fourth.
        CHECK(hello_from(connector.port()) == "hello\n");
        std::lock_guard<std::mutex> lock(faults.mutex);
        REQUIRE(faults.failed_accepts.size() == 4);
        for (std::size_t i = 1; i < faults.failed_accepts.size(); ++i) {
            const auto gap = std::chrono::duration_cast<std::chrono::milliseconds>(
                faults.failed_accepts[i] - faults.failed_accepts[i - 1]);
            STEP("failure " << i + 1 << " came " << gap.count() << " ms after the one before");
            // A lower bound only (a busy machine makes gaps longer, never shorter): the acceptor
            // waits 100 ms between attempts; a busy loop retries within microseconds.
            CHECK(gap >= 50ms);
        }
    }
    const std::string said = stderr_text.text();
    STEP("stderr: " << said);
    CHECK(occurrences(said, std::strerror(ENOBUFS)) == 1);
    CHECK(occurrences(said, std::strerror(ENOMEM)) == 1);
    CHECK(occurrences(said, "retrying every 100 ms") == 2);
}

TEST_CASE("a connection accepted just as stop() begins is closed, not leaked, and the acceptor "
          "ends cleanly",
          "[lesson03][connector][lifecycle]") {
    CapturedStderr stderr_text;
    const int descriptors_before = open_descriptors();
    HttpApp app;
    add_hello(app);
    ConnectorOptions options = test_options();
    options.carriers = 1; // every connection goes to the acceptor's own carrier
    options.stop_grace = 10s;
    {
        Connector connector(app, options);
        connector.start();
        REQUIRE(hello_from(connector.port()) == "hello\n");
        {
            std::lock_guard<std::mutex> lock(faults.mutex);
            faults.hold_accepted = true;
        }
        RawConnection client(connector.port());
        {
            std::unique_lock<std::mutex> lock(faults.mutex);
            REQUIRE(faults.changed.wait_for(lock, 10s, [] { return faults.holding; }));
        }
        STEP("a connection is accepted; the acceptor is held right after accept() returned it");
        std::atomic<bool> stopped{false};
        std::thread stopper([&] { stopped = connector.stop(); });
        // Not a verdict on time: enough for stop() to run its course up to the carriers (it takes
        // microseconds); whenever the acceptor goes on, the connector must be right.
        std::this_thread::sleep_for(300ms);
        release_hold();
        STEP("stop() was called; 300 ms later the acceptor goes on with the connection in hand");
        stopper.join();
        CHECK(stopped.load());
        CHECK(client.closed_by_peer(10s));
        STEP("stop() returned and the client's connection was closed");
    }
    CHECK(open_descriptors() == descriptors_before);
    const std::string said = stderr_text.text();
    STEP("stderr: " << said);
    CHECK(said.find("fiber failed") == std::string::npos);
}

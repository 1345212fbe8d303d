// Unit tests of the reactor: fibers on one carrier thread waiting for sockets and timers.
#include "lessons/02-fibers/carrier.hpp"
#include "lessons/02-fibers/fiber_stack.hpp"
#include "lessons/03-connector/fiber_socket.hpp"
#include "lessons/03-connector/reactor.hpp"
#include "lessons/common/test_support.hpp"

#include <boost/fiber/all.hpp>
#include <catch2/catch.hpp>

#include <atomic>
#include <climits>
#include <cstring>
#include <future>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

namespace {

using namespace std::chrono_literals;

// A connected pair of stream sockets: [0] for the code under test, [1] for the test to poke.
struct SocketPair {
    int fds[2] = {-1, -1};
    SocketPair() { REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0); }
    ~SocketPair() {
        if (fds[1] >= 0) ::close(fds[1]);
        // fds[0] belongs to a FiberSocket, which closes it.
    }
};

Carrier::SchedulerSetup reactor() {
    return [] { boost::fibers::use_scheduling_algorithm<Reactor>(); };
}

// Runs `task` as a fiber on a fresh reactor carrier and waits (up to 10 s) for it to finish.
// A Reactor with a check in front: a fiber handed to the scheduler while it is already on the
// ready queue is counted and dropped. Linked twice, the queue would be corrupted, which an
// optimised build survives or not by luck; counted, the test fails every time.
class ScheduleOnceCheck final : public boost::fibers::algo::algorithm {
public:
    explicit ScheduleOnceCheck(std::atomic<int>& scheduled_twice) : twice_(scheduled_twice) {}
    void awakened(boost::fibers::context* ctx) noexcept override {
        if (ctx->ready_is_linked()) {
            ++twice_;
            return;
        }
        reactor_.awakened(ctx);
    }
    boost::fibers::context* pick_next() noexcept override { return reactor_.pick_next(); }
    bool has_ready_fibers() const noexcept override { return reactor_.has_ready_fibers(); }
    void suspend_until(std::chrono::steady_clock::time_point const& until) noexcept override {
        reactor_.suspend_until(until);
    }
    void notify() noexcept override { reactor_.notify(); }

private:
    Reactor reactor_;
    std::atomic<int>& twice_;
};

// Keeps the carrier without giving it up (no fiber-aware wait) until `until`.
void busy_until(std::chrono::steady_clock::time_point until) {
    while (std::chrono::steady_clock::now() < until) {
    }
}

// 2^32 ms (49.7 days) and a bit: squeezed into a 32-bit int, that is just `bit`.
std::chrono::milliseconds wraps_to(std::chrono::milliseconds bit) {
    return std::chrono::milliseconds(1LL << 32) + bit;
}

template <typename Task> bool run_on_carrier(Carrier& carrier, Task task) {
    auto done = std::make_shared<std::promise<void>>();
    auto finished = done->get_future();
    carrier.spawn([task, done]() mutable {
        task();
        done->set_value();
    });
    return finished.wait_for(10s) == std::future_status::ready;
}

} // namespace

TEST_CASE("a fiber waiting for a socket leaves its carrier to the other fibers",
          "[lesson03][reactor]") {
    Carrier carrier("test-carrier", reactor());
    SocketPair pair;
    std::atomic<int> ticks{0};
    std::atomic<int> ticks_when_data_arrived{-1};
    std::string received;
    auto reader = std::async(std::launch::async, [&] {
        return run_on_carrier(carrier, [&] {
            FiberSocket socket(pair.fds[0]);
            char buffer[16] = {};
            const ssize_t n = socket.receive(buffer, sizeof buffer, no_deadline);
            ticks_when_data_arrived = ticks.load();
            received.assign(buffer, n > 0 ? static_cast<std::size_t>(n) : 0);
        });
    });
    REQUIRE(run_on_carrier(carrier, [&] {
        for (int i = 0; i < 20; ++i) {
            boost::this_fiber::sleep_for(1ms);
            ++ticks;
        }
    }));
    STEP("a ticker fiber on the same carrier ticked 20 times while the reader waited");
    REQUIRE(::write(pair.fds[1], "ping", 4) == 4);
    REQUIRE(reader.get());
    CHECK(received == "ping");
    CHECK(ticks_when_data_arrived == 20);
}

TEST_CASE("a timed socket wait gives up at its deadline", "[lesson03][reactor]") {
    Carrier carrier("test-carrier", reactor());
    SocketPair pair;
    double waited = 0;
    int error = 0;
    REQUIRE(run_on_carrier(carrier, [&] {
        FiberSocket socket(pair.fds[0]);
        char byte;
        const auto start = std::chrono::steady_clock::now();
        if (socket.receive(&byte, 1, deadline_after(100ms)) < 0) error = errno;
        waited = seconds_since(start);
    }));
    STEP("receive() on a silent socket with a 100 ms deadline returned after " << waited << " s");
    CHECK(error == ETIMEDOUT);
    CHECK(waited >= 0.099);
    CHECK(waited < 5.0);
}

TEST_CASE("a fiber parked on a fiber condition variable wakes when a plain thread notifies",
          "[lesson03][reactor]") {
    Carrier carrier("test-carrier", reactor());
    boost::fibers::mutex mutex;
    boost::fibers::condition_variable changed;
    bool flag = false;
    auto waiter = std::async(std::launch::async, [&] {
        return run_on_carrier(carrier, [&] {
            std::unique_lock<boost::fibers::mutex> lock(mutex);
            changed.wait(lock, [&] { return flag; });
        });
    });
    std::this_thread::sleep_for(50ms);
    {
        std::lock_guard<boost::fibers::mutex> lock(mutex); // this test thread is no carrier
        flag = true;
    }
    changed.notify_all();
    STEP("the test thread set the flag and notified");
    CHECK(waiter.get());
}

TEST_CASE("fibers that keep yielding do not starve a fiber waiting for a socket",
          "[lesson03][reactor]") {
    // With a fiber always ready, the carrier never idles, so epoll_wait in suspend_until never
    // runs. The reactor looks at the sockets once per pass over the ready fibers instead.
    Carrier carrier("test-carrier", reactor());
    SocketPair pair;
    std::atomic<bool> data_seen{false};
    std::atomic<bool> seen_while_spinning{false};
    auto reader = std::async(std::launch::async, [&] {
        return run_on_carrier(carrier, [&] {
            FiberSocket socket(pair.fds[0]);
            char byte;
            if (socket.receive(&byte, 1, no_deadline) == 1) data_seen = true;
        });
    });
    auto spinner = std::async(std::launch::async, [&] {
        return run_on_carrier(carrier, [&] {
            const auto give_up = std::chrono::steady_clock::now() + 5s;
            while (!data_seen && std::chrono::steady_clock::now() < give_up)
                boost::this_fiber::yield();
            seen_while_spinning = data_seen.load();
        });
    });
    std::this_thread::sleep_for(50ms);
    REQUIRE(::write(pair.fds[1], "x", 1) == 1);
    STEP("a byte was written while another fiber yielded in a loop");
    REQUIRE(spinner.get());
    CHECK(seen_while_spinning); // false if the reader only ran after the spinner gave up
    CHECK(reader.get());
}

TEST_CASE("on a thread that is no carrier, socket waits block that thread", "[lesson03][reactor]") {
    REQUIRE(Reactor::current() == nullptr);
    SocketPair pair;
    FiberSocket socket(pair.fds[0]);
    char buffer[8];
    const auto start = std::chrono::steady_clock::now();
    CHECK(socket.receive(buffer, sizeof buffer, deadline_after(100ms)) == -1);
    CHECK(errno == ETIMEDOUT);
    CHECK(seconds_since(start) >= 0.099);
    std::thread writer([&] {
        std::this_thread::sleep_for(50ms);
        [[maybe_unused]] auto n = ::write(pair.fds[1], "late", 4);
    });
    CHECK(socket.receive(buffer, sizeof buffer, deadline_after(5s)) == 4);
    writer.join();
}

TEST_CASE("a fiber whose timeout and socket fire in the same scheduler pass is scheduled once",
          "[lesson03][reactor]") {
    // The reader parks with a 20 ms deadline. Another fiber then writes its byte and keeps the
    // carrier until the deadline has passed, so the scheduler's next pass finds both the expired
    // timer and the ready socket before the reader runs. Boost readies the reader for its timer;
    // the socket must not ready it a second time.
    std::atomic<int> scheduled_twice{0};
    Carrier carrier("test-carrier", [&] {
        boost::fibers::use_scheduling_algorithm<ScheduleOnceCheck>(scheduled_twice);
    });
    SocketPair pair;
    ssize_t received = -2;
    bool wrote = false;
    REQUIRE(run_on_carrier(carrier, [&] {
        FiberSocket socket(pair.fds[0]);
        const Deadline reader_deadline = deadline_after(20ms);
        bool parked = false;
        boost::fibers::fiber reader(std::allocator_arg, FiberStack(64 * 1024), [&] {
            char byte;
            parked = true; // receive() finds nothing to read and parks at once
            received = socket.receive(&byte, 1, reader_deadline);
        });
        while (!parked)
            boost::this_fiber::yield();
        wrote = ::write(pair.fds[1], "x", 1) == 1;
        busy_until(reader_deadline + 10ms);
        reader.join();
    }));
    STEP("a reader parked with a 20 ms deadline; another fiber wrote its byte, then kept the "
         "carrier past the deadline");
    REQUIRE(wrote);
    INFO("the reader was put on the ready queue " << (1 + scheduled_twice.load())
                                                  << " time(s); receive() returned " << received);
    CHECK(scheduled_twice == 0);
    CHECK(received == 1); // the byte is there: a wait that ends at a ready socket reports it
}

TEST_CASE("a carrier whose next timer is weeks away sleeps until then or until notified",
          "[lesson03][reactor]") {
    // The test drives the scheduler hook itself, from a thread standing in for the carrier.
    Reactor reactor;
    std::promise<void> woke;
    auto woken = woke.get_future();
    std::thread carrier_thread([&] {
        reactor.suspend_until(std::chrono::steady_clock::now() + wraps_to(300ms));
        woke.set_value();
    });
    // 1 s is more than three times the 300 ms a wrapped-around timeout would wait; a busy
    // machine can only make a wrong wake-up later, never make a right one happen.
    const bool woke_by_itself = woken.wait_for(1s) == std::future_status::ready;
    reactor.notify();
    const bool woke_on_notify = woke_by_itself || woken.wait_for(10s) == std::future_status::ready;
    carrier_thread.join();
    STEP("suspend_until(now + 49.7 days + 300 ms); after 1 s the test called notify()");
    CHECK_FALSE(woke_by_itself);
    CHECK(woke_on_notify);
}

TEST_CASE("on a thread that is no carrier, a deadline weeks away does not time out early",
          "[lesson03][reactor]") {
    SocketPair pair;
    FiberSocket socket(pair.fds[0]);
    std::thread writer([&] {
        std::this_thread::sleep_for(1s); // past the 300 ms a wrapped-around timeout would wait
        [[maybe_unused]] auto n = ::write(pair.fds[1], "late", 4);
    });
    char buffer[8];
    const ssize_t n =
        socket.receive(buffer, sizeof buffer, std::chrono::steady_clock::now() + wraps_to(300ms));
    const int error = n < 0 ? errno : 0;
    writer.join();
    STEP("receive() with a deadline 49.7 days + 300 ms away; the peer wrote after 1 s");
    INFO("receive() returned " << n << (error ? std::string(", ") + std::strerror(error) : ""));
    CHECK(n == 4);
}

TEST_CASE("deadline_after saturates instead of overflowing", "[lesson03][reactor]") {
    using std::chrono::milliseconds;
    const auto now = std::chrono::steady_clock::now();
    const auto years_from_now = now + std::chrono::hours(24 * 365 * 100);
    for (const milliseconds timeout :
         {milliseconds::max(), milliseconds(std::chrono::hours(1'000'000'000)),
          milliseconds(LLONG_MAX / 1000)}) {
        const Deadline deadline = deadline_after(timeout);
        INFO("deadline_after("
             << timeout.count() << " ms) is "
             << std::chrono::duration_cast<std::chrono::hours>(deadline - now).count()
             << " hours from now");
        CHECK(deadline >= years_from_now); // no_deadline, or at least far in the future
    }
    CHECK(deadline_after(milliseconds(0)) == no_deadline);
    CHECK(deadline_after(milliseconds(-5)) == no_deadline);
}

TEST_CASE("a reader asked to lighten gives back its stack pages and goes on waiting",
          "[lesson03][reactor]") {
    // What the keep-alive timer does to a connection idle for a second (idle_connections.hpp).
    for (const bool data_comes_with_the_request : {false, true}) {
        SocketPair pair;
        FiberSocket* waiting = nullptr;
        StackSpan stack;
        std::size_t deep = 0, lightened = 0;
        bool returned_early = false;
        std::string received;
        Carrier carrier("test-carrier", reactor(), 256 * 1024); // last: its fibers end first
        auto reader = std::async(std::launch::async, [&] {
            return run_on_carrier(carrier, [&] {
                FiberSocket socket(pair.fds[0]);
                touch_stack(64 * 1024); // a deep request, over by now
                stack = current_fiber_stack();
                deep = resident_pages(stack.bottom, stack.top);
                waiting = &socket;
                char buffer[16] = {};
                const ssize_t n = socket.receive(buffer, sizeof buffer, deadline_after(10s));
                received.assign(buffer, n > 0 ? static_cast<std::size_t>(n) : 0);
            });
        });
        REQUIRE(run_on_carrier(carrier, [&] {
            while (waiting == nullptr) // the reader parks in the same turn that sets it
                boost::this_fiber::sleep_for(1ms);
            if (data_comes_with_the_request) // checked below: the reader gets "ping"
                [[maybe_unused]]
                const ssize_t sent = ::write(pair.fds[1], "ping", 4);
            waiting->lighten_reader();
            boost::this_fiber::sleep_for(10ms); // the reader lightens and parks again
            lightened = resident_pages(stack.bottom, stack.top);
            returned_early = !received.empty();
        }));
        STEP((data_comes_with_the_request ? "data and the request came together; " : "")
             << "the reader's stack: " << deep << " resident pages after a deep call, " << lightened
             << " after it was asked to lighten");
        if (!data_comes_with_the_request) {
            CHECK(deep >= 16);
            CHECK(lightened <= 3);
            CHECK_FALSE(returned_early); // still waiting: there was nothing to read
            REQUIRE(::write(pair.fds[1], "ping", 4) == 4);
        }
        REQUIRE(reader.get());
        CHECK(received == "ping");
    }
}

// Unit tests of the pinning detector, in one process: real carriers (lesson 02's round_robin and
// lesson 03's reactor), real fibers, real blocking calls. These also run under AddressSanitizer:
// the stack sampler's signal handler and backtrace() work there too.
//
// The detector measures wall clock, so a loaded machine stretches every turn. The tests use a
// threshold far above any stall a busy VM shows a carrier (150 ms), and pins four times that.
#include "lessons/02-fibers/carrier.hpp"
#include "lessons/02-fibers/fiber_stack.hpp"
#include "lessons/03-connector/fiber_socket.hpp"
#include "lessons/03-connector/reactor.hpp"
#include "lessons/common/process.hpp"
#include "lessons/common/test_support.hpp"
#include "lessons/instruments/pinning/fiber_name.hpp"
#include "lessons/instruments/pinning/pinning_detector.hpp"
#include "lessons/instruments/pinning/recording_detector.hpp"

#include <boost/fiber/all.hpp>
#include <catch2/catch.hpp>

#include <atomic>
#include <future>
#include <mutex>
#include <sys/socket.h>
#include <thread>

namespace {

using namespace std::chrono_literals;

constexpr auto threshold = 150ms;
constexpr auto pin = 600ms;
constexpr double pin_ms = 600;

Carrier::SchedulerSetup reactor() {
    return [] { use_carrier_algorithm<Reactor>(); };
}

// On one carrier: "waiter" wants the carrier every 5 ms, and after 50 ms a fiber named `name`
// runs `work`; the waiter stops once the work is done. Returns when both are done.
void run_beside_a_waiter(Carrier::SchedulerSetup setup, const std::string& name,
                         std::function<void()> work) {
    Carrier carrier("pin-test", std::move(setup));
    std::atomic<bool> done{false};
    carrier.spawn([&] {
        name_this_fiber("waiter");
        while (!done)
            boost::this_fiber::sleep_for(5ms);
    });
    carrier.spawn([&, name, work] {
        name_this_fiber(name);
        boost::this_fiber::sleep_for(50ms);
        work();
        done = true;
    });
    carrier.stop();
}

bool mentions(const std::vector<std::string>& stack, const std::string& what) {
    for (const auto& frame : stack)
        if (frame.find(what) != std::string::npos) return true;
    return false;
}

} // namespace

TEST_CASE("a fiber that sleeps with std::this_thread::sleep_for while another waits is reported "
          "once: its name, carrier, wall and CPU time, and the sleep on top of its stack",
          "[pindemo][detector]") {
    RecordingDetector detector(threshold);
    run_beside_a_waiter(reactor(), "blocker", [] { std::this_thread::sleep_for(pin); });
    STEP("a fiber held a reactor carrier for 600 ms in std::this_thread::sleep_for");
    const auto events = detector.stop();
    STEP("events: " << describe(events));
    REQUIRE(events.size() == 1);
    const PinningEvent& event = events[0];
    CHECK(event.fiber == "blocker");
    CHECK(event.carrier.rfind("pin-test#", 0) == 0);
    CHECK(event.duration_ms >= pin_ms);
    CHECK(event.duration_ms <= 10 * pin_ms); // only rules out nonsense on a very busy machine
    CHECK(event.cpu_ms < pin_ms / 2);        // it slept: the thread hardly ran
    CHECK(event.ready_waiting >= 1);         // the waiter's timer fell due meanwhile
    CHECK(event.sampled_at_ms >= 150);
    CHECK(event.sampled_at_ms < event.duration_ms);
    CHECK(event.blocked_in.find("sleep") != std::string::npos);
    CHECK(event.called_from.find("pindemo/pinning_test.cpp") != std::string::npos);
    CHECK(mentions(event.stack, "nanosleep"));
}

TEST_CASE("a fiber that computes without yielding is reported with its CPU time",
          "[pindemo][detector]") {
    // 600 ms of CPU time by the carrier thread's own clock: a busy machine stretches the turn,
    // never the computing.
    RecordingDetector detector(threshold);
    run_beside_a_waiter(reactor(), "cruncher", [] {
        const auto until = thread_cpu_time() + pin;
        while (thread_cpu_time() < until) {
        }
    });
    const auto events = detector.stop();
    STEP("events: " << describe(events));
    REQUIRE(events.size() == 1);
    const PinningEvent& event = events[0];
    CHECK(event.fiber == "cruncher");
    CHECK(event.cpu_ms >= pin_ms);
    CHECK(event.cpu_ms <= event.duration_ms + 1);
}

TEST_CASE("the same wait done with boost::this_fiber::sleep_for is not reported",
          "[pindemo][detector]") {
    RecordingDetector detector(threshold);
    run_beside_a_waiter(reactor(), "polite", [] { boost::this_fiber::sleep_for(pin); });
    const auto events = detector.stop();
    STEP("events: " << describe(events));
    CHECK(events.empty());
}

TEST_CASE("a carrier idle for longer than the threshold, every fiber parked, is not a pin",
          "[pindemo][detector]") {
    // Everybody waits 600 ms, fiber-aware: a sleep, and a socket whose peer answers after its
    // own sleep. The carrier itself waits in the scheduler (epoll_wait, or round_robin's condition
    // variable) for four thresholds, then several fibers are ready at once. A detector that
    // counted the scheduler's wait as part of the last fiber's turn would report it here.
    RecordingDetector detector(threshold);
    const auto began = std::chrono::steady_clock::now();
    SECTION("a reactor carrier, sleeping and waiting for a socket") {
        std::atomic<bool> received{false};
        {
            Carrier carrier("idle-test", reactor(), 64 * 1024);
            int fds[2];
            REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
            carrier.spawn([] { boost::this_fiber::sleep_for(pin); });
            carrier.spawn([fd = fds[0], &received] {
                FiberSocket socket(fd);
                char byte = 0;
                received = socket.receive(&byte, 1, deadline_after(10s)) == 1 && byte == 'x';
            });
            carrier.spawn([fd = fds[1]] {
                FiberSocket socket(fd);
                boost::this_fiber::sleep_for(pin);
                socket.send_all("x", 1, deadline_after(10s));
            });
        }
        CHECK(received);
    }
    SECTION("a round-robin carrier, sleeping") {
        Carrier carrier("idle-test", {}, 64 * 1024);
        for (int i = 0; i < 3; ++i)
            carrier.spawn([] { boost::this_fiber::sleep_for(pin); });
    }
    const auto idle_for = std::chrono::steady_clock::now() - began;
    STEP("the carrier's fibers were done after "
         << std::chrono::duration_cast<std::chrono::milliseconds>(idle_for).count() << " ms");
    CHECK(idle_for >= pin);
    // The detector was watching: a real pin right after is caught.
    run_beside_a_waiter(reactor(), "control", [] { std::this_thread::sleep_for(pin); });
    const auto events = detector.stop();
    STEP("events: " << describe(events));
    REQUIRE(events.size() == 1);
    CHECK(events[0].fiber == "control");
}

TEST_CASE("lesson 02's round-robin carriers are watched too", "[pindemo][detector]") {
    RecordingDetector detector(threshold);
    run_beside_a_waiter({}, "blocker", [] { std::this_thread::sleep_for(pin); });
    const auto events = detector.stop();
    STEP("events: " << describe(events));
    REQUIRE(events.size() == 1);
    CHECK(events[0].fiber == "blocker");
    CHECK(events[0].blocked_in.find("sleep") != std::string::npos);
}

TEST_CASE("a fiber blocked on a std::mutex is reported in pthread_mutex_lock",
          "[pindemo][detector]") {
    RecordingDetector detector(threshold);
    std::mutex mutex;
    std::unique_lock<std::mutex> held(mutex);
    std::thread releaser([&] {
        std::this_thread::sleep_for(50ms + pin); // the fiber asks for the lock at ~50 ms
        held.unlock();
    });
    run_beside_a_waiter(reactor(), "locker", [&] { std::lock_guard<std::mutex> lock(mutex); });
    releaser.join();
    const auto events = detector.stop();
    STEP("events: " << describe(events));
    REQUIRE(events.size() == 1);
    CHECK(events[0].fiber == "locker");
    CHECK(events[0].blocked_in == "pthread_mutex_lock");
}

TEST_CASE("a long turn while no other fiber wants the carrier is not reported",
          "[pindemo][detector]") {
    RecordingDetector detector(threshold);
    {
        Carrier carrier("pin-test", reactor());
        // stop() wakes the carrier's main fiber, which would then be a fiber waiting for the
        // carrier: call it only once the long turn is over. The fiber-aware sleep ends the turn
        // (nobody waiting) before the fiber tells us it is done.
        std::promise<void> done;
        carrier.spawn([&] {
            std::this_thread::sleep_for(pin);
            boost::this_fiber::sleep_for(1ms);
            done.set_value();
        });
        done.get_future().wait();
        carrier.stop();
    }
    const auto events = detector.stop();
    STEP("events: " << describe(events));
    CHECK(events.empty());
}

TEST_CASE("unnamed fibers are reported by their context's address", "[pindemo][detector]") {
    RecordingDetector detector(threshold);
    run_beside_a_waiter(reactor(), "", [] { std::this_thread::sleep_for(pin); });
    const auto events = detector.stop();
    STEP("events: " << describe(events));
    REQUIRE(events.size() == 1);
    CHECK(events[0].fiber.rfind("unnamed fiber 0x", 0) == 0);
}

TEST_CASE("a busy fiber-aware load on reactor carriers raises no false alarm, and a real pin "
          "right after it is still caught",
          "[pindemo][detector]") {
    RecordingDetector detector(threshold);
    // Per carrier: sleepers waking at staggered times, fibers that compute a little and yield,
    // and socket pairs passing a byte back and forth: every wait fiber-aware, for this long. Half
    // the sleeps, and one wait in a hundred on a socket, last longer than the threshold, so a
    // parked fiber mistaken for one that holds its carrier would be reported.
    constexpr auto busy_for = 1500ms;
    constexpr int sleepers = 500, yielders = 50, socket_pairs = 20;
    constexpr int fibers_per_carrier = sleepers + yielders + 2 * socket_pairs;
    std::atomic<long> sleeps{0}, yields{0}, round_trips{0};
    {
        std::vector<std::unique_ptr<Carrier>> carriers;
        for (int c = 0; c < 2; ++c)
            carriers.push_back(
                std::make_unique<Carrier>("busy-" + std::to_string(c), reactor(), 64 * 1024));
        for (auto& carrier : carriers) {
            carrier->spawn([&] {
                name_this_fiber("spawner");
                const auto end = std::chrono::steady_clock::now() + busy_for;
                auto running = [end] { return std::chrono::steady_clock::now() < end; };
                std::vector<boost::fibers::fiber> fibers;
                fibers.reserve(fibers_per_carrier);
                auto start = [&](std::function<void()> body) {
                    fibers.emplace_back(std::allocator_arg, FiberStack(64 * 1024), std::move(body));
                    // Starting a fiber takes a few microseconds: yield now and then so that this
                    // fiber does not itself hold the carrier for long.
                    if (fibers.size() % 50 == 0) boost::this_fiber::yield();
                };
                for (int i = 0; i < sleepers; ++i)
                    start([&, i] {
                        for (int n = 0; running(); ++n) {
                            boost::this_fiber::sleep_for(
                                std::chrono::milliseconds(1 + (i + n) % 300));
                            sleeps.fetch_add(1, std::memory_order_relaxed);
                        }
                    });
                for (int i = 0; i < yielders; ++i)
                    start([&] {
                        volatile unsigned work = 0;
                        while (running()) {
                            for (int k = 0; k < 1000; ++k)
                                work = work + k;
                            boost::this_fiber::yield();
                            yields.fetch_add(1, std::memory_order_relaxed);
                        }
                    });
                for (int i = 0; i < socket_pairs; ++i) {
                    int fds[2];
                    if (::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) break; // seen as 0 trips
                    auto ping_pong = [&](int fd, bool serves_first) {
                        FiberSocket socket(fd);
                        char byte = 'x';
                        const auto deadline = deadline_after(10s);
                        if (serves_first && !socket.send_all(&byte, 1, deadline)) return;
                        while (socket.receive(&byte, 1, deadline) == 1) {
                            const long trip = round_trips.fetch_add(1, std::memory_order_relaxed);
                            if (!running()) break; // closing ends the other side's receive
                            if (trip % 100 == 0) boost::this_fiber::sleep_for(threshold + 50ms);
                            if (!socket.send_all(&byte, 1, deadline)) break;
                        }
                    };
                    start([=] { ping_pong(fds[0], true); });
                    start([=] { ping_pong(fds[1], false); });
                }
                // Joining finished fibers: in batches too.
                for (std::size_t i = 0; i < fibers.size(); ++i) {
                    fibers[i].join();
                    fibers[i] = boost::fibers::fiber();
                    if (i % 50 == 0) boost::this_fiber::yield();
                }
            });
        }
        for (auto& carrier : carriers)
            carrier->stop();
    }
    STEP("two reactor carriers ran " << sleeps << " fiber sleeps, " << yields << " yields and "
                                     << round_trips << " socket round trips in 1.5 s");
    CHECK(sleeps > 2000); // counts that show the load ran, even on a crowded machine
    CHECK(yields > 500);
    CHECK(round_trips > 500);
    run_beside_a_waiter(reactor(), "control", [] { std::this_thread::sleep_for(pin); });
    STEP("then one fiber blocked a carrier for 600 ms");
    const auto events = detector.stop();
    STEP("events: " << describe(events));
    REQUIRE(events.size() == 1);
    CHECK(events[0].fiber == "control");
}

TEST_CASE("a second detector in the same process is refused", "[pindemo][detector]") {
    RecordingDetector first;
    CHECK_THROWS_WITH(PinningDetector(PinningDetector::Options{}),
                      "a pinning detector is already running in this process");
}

TEST_CASE("an events file that cannot be written is refused with the reason",
          "[pindemo][detector]") {
    PinningDetector::Options options;
    options.events_path = "/nonexistent-directory/events.jsonl";
    CHECK_THROWS_WITH(PinningDetector(options),
                      "cannot write pinning events to /nonexistent-directory/events.jsonl: No such "
                      "file or directory");
}

// Unit tests of the pinning detector, in one process: real carriers (lesson 02's round_robin and
// lesson 03's reactor), real fibers, real blocking calls. These also run under AddressSanitizer:
// the stack sampler's signal handler and backtrace() work there too.
#include "carrier.hpp"
#include "fiber_name.hpp"
#include "fiber_socket.hpp"
#include "fiber_stack.hpp"
#include "pinning_detector.hpp"
#include "reactor.hpp"
#include "recording_detector.hpp"
#include "test_support.hpp"
#include "turn_share.hpp"

#include <boost/fiber/all.hpp>
#include <catch2/catch.hpp>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <dirent.h>
#include <fstream>
#include <future>
#include <mutex>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace {

using namespace std::chrono_literals;

Carrier::SchedulerSetup reactor() {
    return [] { use_carrier_algorithm<Reactor>(); };
}

// On one carrier: "waiter" wants the carrier every 5 ms for 300 ms, and after 50 ms a fiber
// named `name` runs `work`. Returns when both are done.
void run_beside_a_waiter(Carrier::SchedulerSetup setup, const std::string& name,
                         std::function<void()> work) {
    Carrier carrier("pin-test", std::move(setup));
    carrier.spawn([] {
        name_this_fiber("waiter");
        for (int i = 0; i < 60; ++i)
            boost::this_fiber::sleep_for(5ms);
    });
    carrier.spawn([name, work] {
        name_this_fiber(name);
        boost::this_fiber::sleep_for(50ms);
        work();
    });
    carrier.stop();
}

// Fiber stacks mapped before a load starts and unmapped after it ends, so that no turn of the
// load maps or unmaps one. Those calls (mmap, mprotect, munmap) take the process's memory-map
// lock, and on a crowded or virtual machine a carrier can sleep there while the thread holding
// it has no CPU: a real stall of the carrier, reported (pindemo/README.md), but not a fiber-aware
// wait. One set per carrier, so handing a stack out or taking it back needs no lock.
class PremadeStacks {
public:
    PremadeStacks(std::size_t count, std::size_t size) : size_(size) {
        FiberStack maker(size);
        free_.reserve(count);
        returned_.reserve(count); // taking stacks back never allocates
        for (std::size_t i = 0; i < count; ++i)
            free_.push_back(maker.allocate());
    }
    ~PremadeStacks() {
        FiberStack maker(size_); // unmaps them, and tells AddressSanitizer
        for (auto* stacks : {&free_, &returned_})
            for (auto& stack : *stacks)
                maker.deallocate(stack);
    }
    PremadeStacks(const PremadeStacks&) = delete;
    PremadeStacks& operator=(const PremadeStacks&) = delete;

    // One fiber's stack allocator (what boost::fibers::fiber takes with std::allocator_arg).
    struct Allocator {
        PremadeStacks* stacks;
        boost::context::stack_context allocate() {
            if (stacks->free_.empty()) throw std::logic_error("more fibers than premade stacks");
            const auto stack = stacks->free_.back();
            stacks->free_.pop_back();
            return stack;
        }
        // Kept apart, never handed out again: a used stack would need its AddressSanitizer
        // poison cleared first (fiber_stack.cpp).
        void deallocate(boost::context::stack_context& stack) noexcept {
            stacks->returned_.push_back(stack);
        }
    };
    Allocator allocator() { return Allocator{this}; }

private:
    std::size_t size_;
    std::vector<boost::context::stack_context> free_, returned_;
};

bool mentions(const std::vector<std::string>& stack, const std::string& what) {
    for (const auto& frame : stack)
        if (frame.find(what) != std::string::npos) return true;
    return false;
}

// In a child process of the test's (so that a shell running the test never sees it stop): a
// fiber that tells a grandchild to stop this child, and computes on until it sees the clock jump
// (or for 15 ms of CPU time at most, under the threshold); the grandchild stops the child for
// 200 ms (SIGSTOP, which no process can catch) and lets it go on. Then a real pin. Writes to
// `report_fd` the number of events, where the first one was blocked, the detector's closing
// line, and the events.
// Only this process's own threads run here, none of Catch's checks.
[[noreturn]] void stop_in_a_child(int report_fd) {
    int go[2];
    if (::pipe(go) != 0) ::_exit(3);
    const pid_t child = ::getpid();
    const pid_t stopper = ::fork();
    if (stopper < 0) ::_exit(3);
    if (stopper == 0) { // async-signal-safe calls only, as after any fork
        char byte;
        const timespec stopped{0, 200'000'000};
        if (::read(go[0], &byte, 1) == 1 && ::getppid() == child) {
            ::kill(child, SIGSTOP);
            ::nanosleep(&stopped, nullptr);
            ::kill(child, SIGCONT);
        }
        ::_exit(0);
    }
    ::close(go[0]);
    std::string report;
    {
        // Once the stop is over the carrier may wait for a CPU before its turn can end. The
        // detector counts that wait as the fiber's (after a frozen VM it could be the same time
        // as the stretch the watchdog was held up, which is not taken out twice), so a threshold
        // of 60 ms leaves it room on a busy machine; the real pin below is 100 ms.
        RecordingDetector detector(60ms);
        run_beside_a_waiter(reactor(), "stopped-with-its-process", [&] {
            if (::write(go[1], "x", 1) != 1) return;
            const std::int64_t at_most = this_thread_cpu_ns() + 15'000'000;
            auto last = std::chrono::steady_clock::now();
            while (this_thread_cpu_ns() < at_most) {
                const auto now = std::chrono::steady_clock::now();
                if (now - last > 100ms) break; // that was the stop
                last = now;
            }
        });
        int status = 0;
        while (::waitpid(stopper, &status, 0) < 0 && errno == EINTR) {
        }
        run_beside_a_waiter(reactor(), "control", [] { std::this_thread::sleep_for(100ms); });
        const auto events = detector.stop();
        report = std::to_string(events.size()) + "\n" +
                 (events.empty() ? std::string() : events[0].blocked_in) + "\n" +
                 detector.summary() + describe(events);
    }
    const bool written =
        ::write(report_fd, report.data(), report.size()) == static_cast<ssize_t>(report.size());
    ::_exit(written ? 0 : 3);
}

} // namespace

TEST_CASE("a fiber that sleeps with std::this_thread::sleep_for while another waits is reported "
          "once: its name, carrier, duration and the sleep on top of its stack",
          "[pindemo][detector]") {
    RecordingDetector detector;
    run_beside_a_waiter(reactor(), "blocker", [] { std::this_thread::sleep_for(100ms); });
    STEP("a fiber held a reactor carrier for 100 ms in std::this_thread::sleep_for");
    const auto events = detector.stop();
    STEP("events: " << describe(events));
    REQUIRE(events.size() == 1);
    const PinningEvent& event = events[0];
    CHECK(event.fiber == "blocker");
    CHECK(event.carrier.rfind("pin-test#", 0) == 0);
    // 100 ms of sleep; the upper bound only rules out nonsense on a very busy machine.
    CHECK(event.duration_ms >= 60);
    CHECK(event.duration_ms <= 1000);
    CHECK(event.ready_waiting >= 1); // the waiter's timer fell due meanwhile
    CHECK(event.sampled_at_ms >= 15);
    CHECK(event.sampled_at_ms < event.duration_ms);
    CHECK(event.blocked_in.find("sleep") != std::string::npos);
    CHECK(event.called_from.find("pindemo/pinning_test.cpp") != std::string::npos);
    CHECK(mentions(event.stack, "nanosleep"));
    CHECK(event.stolen_ms == 0); // it left its CPU to sleep: nothing passes for steal
}

TEST_CASE("a fiber that computes for 100 ms without yielding is reported, all of it pinned",
          "[pindemo][detector]") {
    // 100 ms of CPU time by the carrier thread's own clock, so a busy machine only stretches
    // the turn. Whatever the OS or a hypervisor took on top, the pinned part is the computing:
    // had the steal rule counted computing as steal, it would come out short.
    RecordingDetector detector;
    run_beside_a_waiter(reactor(), "cruncher", [] {
        const std::int64_t until = this_thread_cpu_ns() + 100'000'000; // 100 ms
        while (this_thread_cpu_ns() < until) {
        }
    });
    const auto events = detector.stop();
    STEP("events: " << describe(events));
    REQUIRE(events.size() == 1);
    const PinningEvent& event = events[0];
    CHECK(event.fiber == "cruncher");
    const double pinned = event.duration_ms - event.runqueue_ms - event.stolen_ms;
    STEP("pinned part " << pinned << " ms");
    CHECK(pinned >= 90);
}

TEST_CASE("the same wait done with boost::this_fiber::sleep_for is not reported",
          "[pindemo][detector]") {
    RecordingDetector detector;
    run_beside_a_waiter(reactor(), "polite", [] { boost::this_fiber::sleep_for(100ms); });
    const auto events = detector.stop();
    STEP("events: " << describe(events));
    CHECK(events.empty());
}

TEST_CASE("a carrier idle for longer than the threshold, every fiber parked, is not a pin",
          "[pindemo][detector]") {
    // Everybody waits 100 ms, fiber-aware: a sleep, and a socket whose peer answers after its
    // own sleep. The carrier itself waits in the scheduler (epoll_wait, or round_robin's condition
    // variable) for five thresholds, then several fibers are ready at once. A detector that
    // counted the scheduler's wait as part of the last fiber's turn would report it here.
    RecordingDetector detector;
    const auto began = std::chrono::steady_clock::now();
    SECTION("a reactor carrier, sleeping and waiting for a socket") {
        std::atomic<bool> received{false};
        {
            Carrier carrier("idle-test", reactor(), 64 * 1024);
            int fds[2];
            REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
            carrier.spawn([] { boost::this_fiber::sleep_for(100ms); });
            carrier.spawn([fd = fds[0], &received] {
                FiberSocket socket(fd);
                char byte = 0;
                received = socket.receive(&byte, 1, deadline_after(10s)) == 1 && byte == 'x';
            });
            carrier.spawn([fd = fds[1]] {
                FiberSocket socket(fd);
                boost::this_fiber::sleep_for(100ms);
                socket.send_all("x", 1, deadline_after(10s));
            });
        }
        CHECK(received);
    }
    SECTION("a round-robin carrier, sleeping") {
        Carrier carrier("idle-test", {}, 64 * 1024);
        for (int i = 0; i < 3; ++i)
            carrier.spawn([] { boost::this_fiber::sleep_for(100ms); });
    }
    const auto idle_for = std::chrono::steady_clock::now() - began;
    STEP("the carrier's fibers were done after "
         << std::chrono::duration_cast<std::chrono::milliseconds>(idle_for).count() << " ms");
    CHECK(idle_for >= 100ms);
    // The detector was watching: a real pin right after is caught.
    run_beside_a_waiter(reactor(), "control", [] { std::this_thread::sleep_for(100ms); });
    const auto events = detector.stop();
    STEP("events: " << describe(events));
    REQUIRE(events.size() == 1);
    CHECK(events[0].fiber == "control");
}

TEST_CASE("lesson 02's round-robin carriers are watched too", "[pindemo][detector]") {
    RecordingDetector detector;
    run_beside_a_waiter({}, "blocker", [] { std::this_thread::sleep_for(100ms); });
    const auto events = detector.stop();
    STEP("events: " << describe(events));
    REQUIRE(events.size() == 1);
    CHECK(events[0].fiber == "blocker");
    CHECK(events[0].blocked_in.find("sleep") != std::string::npos);
}

TEST_CASE("a fiber blocked on a std::mutex is reported in pthread_mutex_lock",
          "[pindemo][detector]") {
    RecordingDetector detector;
    std::mutex mutex;
    std::unique_lock<std::mutex> held(mutex);
    std::thread releaser([&] {
        std::this_thread::sleep_for(250ms); // the fiber asks for the lock at ~50 ms
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
    RecordingDetector detector;
    {
        Carrier carrier("pin-test", reactor());
        // stop() wakes the carrier's main fiber, which would then be a fiber waiting for the
        // carrier: call it only once the long turn is over. The fiber-aware sleep ends the turn
        // (nobody waiting) before the fiber tells us it is done.
        std::promise<void> done;
        carrier.spawn([&] {
            std::this_thread::sleep_for(100ms);
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
    RecordingDetector detector;
    run_beside_a_waiter(reactor(), "", [] { std::this_thread::sleep_for(100ms); });
    const auto events = detector.stop();
    STEP("events: " << describe(events));
    REQUIRE(events.size() == 1);
    CHECK(events[0].fiber.rfind("unnamed fiber 0x", 0) == 0);
}

TEST_CASE("a turn stretched while the whole process was stopped is not blamed on the fiber, and "
          "a real pin right after it is still caught",
          "[pindemo][detector]") {
    // To the detector, a stopped process looks like a virtual machine its host froze: every
    // thread, the watchdog too, stops at once, and the clock runs on.
    int report[2];
    REQUIRE(::pipe(report) == 0);
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        ::close(report[0]);
        stop_in_a_child(report[1]);
    }
    ::close(report[1]);
    std::string text;
    char buffer[1024];
    pollfd readable{report[0], POLLIN, 0};
    bool ended = false;                                   // the child closed its end: it is exiting
    while (!ended && ::poll(&readable, 1, 30'000) == 1) { // it is done in about a second
        const ssize_t n = ::read(report[0], buffer, sizeof buffer);
        if (n > 0) text.append(buffer, static_cast<std::size_t>(n));
        ended = n == 0 || (n < 0 && errno != EINTR);
    }
    ::close(report[0]);
    if (!ended) ::kill(child, SIGKILL); // silent for 30 s: hung
    int status = 0;
    while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    STEP("the child reported: events, where the first was blocked, the closing line, the "
         "events:\n"
         << text);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
    // The stopped turn is in the closing line, not among the events; the real pin is. (By where
    // it blocked, not by name: on a crowded machine its sample may come as it ends, too late to
    // look its name up.)
    CHECK(text.rfind("1\nclock_nanosleep\n", 0) == 0);
    CHECK(text.find("1 long only while the watchdog itself was held up") != std::string::npos);
}

TEST_CASE("a busy fiber-aware load on reactor carriers raises no false alarm, and a real pin "
          "right after it is still caught",
          "[pindemo][detector]") {
    RecordingDetector detector;
    // Per carrier: sleepers waking at staggered times, fibers that compute a little and yield,
    // and socket pairs passing a byte back and forth: every wait fiber-aware, for this long. Half
    // the sleeps, and one wait in a hundred on a socket, last longer than the threshold, so a
    // parked fiber mistaken for one that holds its carrier would be reported.
    constexpr auto busy_for = 1500ms;
    constexpr int sleepers = 500, yielders = 50, socket_pairs = 20;
    constexpr int fibers_per_carrier = sleepers + yielders + 2 * socket_pairs;
    std::atomic<long> sleeps{0}, yields{0}, round_trips{0};
    {
        std::vector<std::unique_ptr<PremadeStacks>> stacks; // outlive the carriers
        std::vector<std::unique_ptr<Carrier>> carriers;
        for (int c = 0; c < 2; ++c) {
            stacks.push_back(std::make_unique<PremadeStacks>(fibers_per_carrier, 64 * 1024));
            carriers.push_back(
                std::make_unique<Carrier>("busy-" + std::to_string(c), reactor(), 64 * 1024));
        }
        for (std::size_t c = 0; c < carriers.size(); ++c) {
            carriers[c]->spawn([&, own_stacks = stacks[c].get()] {
                name_this_fiber("spawner");
                const auto end = std::chrono::steady_clock::now() + busy_for;
                auto running = [end] { return std::chrono::steady_clock::now() < end; };
                std::vector<boost::fibers::fiber> fibers;
                fibers.reserve(fibers_per_carrier);
                auto start = [&](std::function<void()> body) {
                    fibers.emplace_back(std::allocator_arg, own_stacks->allocator(),
                                        std::move(body));
                    // Starting a fiber takes a few microseconds: yield now and then so that this
                    // fiber does not itself hold the carrier for long.
                    if (fibers.size() % 50 == 0) boost::this_fiber::yield();
                };
                for (int i = 0; i < sleepers; ++i)
                    start([&, i] {
                        for (int n = 0; running(); ++n) {
                            boost::this_fiber::sleep_for(
                                std::chrono::milliseconds(1 + (i + n) % 40));
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
                            if (trip % 100 == 0) boost::this_fiber::sleep_for(30ms);
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
    CHECK(sleeps > 10000);
    CHECK(yields > 1000);
    CHECK(round_trips > 1000);
    run_beside_a_waiter(reactor(), "control", [] { std::this_thread::sleep_for(100ms); });
    STEP("then one fiber blocked a carrier for 100 ms");
    const auto events = detector.stop();
    STEP("the detector closed with: " << detector.summary());
    STEP("events: " << describe(events));
    REQUIRE(events.size() == 1);
    CHECK(events[0].fiber == "control");
}

TEST_CASE("the watchdog runs ahead of ordinary threads where the process may, and says so where "
          "it may not",
          "[pindemo][detector]") {
    // May this process use real-time priority? Ask on a thread of our own, which then ends.
    bool permitted = false;
    std::thread([&] {
        sched_param param{};
        param.sched_priority = sched_get_priority_min(SCHED_FIFO);
        permitted = ::sched_setscheduler(0, SCHED_FIFO, &param) == 0;
    }).join();
    STEP("real-time priority " << (permitted ? "permitted" : "not permitted") << " here");
    RecordingDetector detector;
    const int ordinary = ::sched_getscheduler(0); // this thread's policy, which threads inherit
    // The watchdog thread, by its name, and its scheduling policy once it has set it.
    int policy = -1;
    const bool found = eventually([&] {
        DIR* tasks = ::opendir("/proc/self/task");
        if (tasks == nullptr) return false;
        bool seen = false;
        while (dirent* task = ::readdir(tasks)) {
            std::string name;
            std::getline(std::ifstream("/proc/self/task/" + std::string(task->d_name) + "/comm"),
                         name);
            if (name != "pin-watchdog") continue;
            policy = ::sched_getscheduler(std::atoi(task->d_name));
            seen = !permitted || policy == (SCHED_FIFO | SCHED_RESET_ON_FORK);
        }
        ::closedir(tasks);
        return seen;
    });
    detector.stop();
    STEP("the detector closed with: " << detector.summary());
    REQUIRE(found);
    const bool says_ordinary =
        detector.summary().find("could not get real-time priority") != std::string::npos;
    if (permitted) {
        // Real-time, and what it might start is not.
        CHECK(policy == (SCHED_FIFO | SCHED_RESET_ON_FORK));
        CHECK_FALSE(says_ordinary);
    } else {
        CHECK(policy == ordinary);
        CHECK(says_ordinary);
    }
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

// How the detector splits a long turn into the fiber's part and the time its carrier thread
// could not run (turn_share.hpp): the arithmetic on hand-made readings, then the two kernel
// facts it rests on, checked on a real thread.
#include "test_support.hpp"
#include "turn_share.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <fcntl.h>
#include <thread>
#include <unistd.h>

namespace {

constexpr std::int64_t ms = 1000000; // nanoseconds

// A reading at `at` ms: `cpu` ms of CPU time so far, `arrivals` times put on a CPU.
ThreadTimes reading(std::int64_t at, std::int64_t cpu, std::uint64_t arrivals) {
    ThreadTimes times;
    times.valid = true;
    times.at_ns = at * ms;
    times.cpu_ns = cpu * ms;
    times.arrivals = arrivals;
    return times;
}

} // namespace

TEST_CASE("a fiber that blocked in a call holds its whole turn", "[pindemo][turn_share]") {
    // A 100 ms turn from 0 to 100 ms, read 5 ms in; the thread slept (it left its CPU and came
    // back: one more arrival) and hardly ran.
    const TurnShare share = share_of_turn(0, 100 * ms, 0, reading(5, 1, 7), reading(100, 2, 8));
    CHECK(share.pinned_ns == 100 * ms);
    CHECK(share.stolen_ns == 0);
}

TEST_CASE("a fiber that computed holds its whole turn", "[pindemo][turn_share]") {
    // Never left its CPU, and its CPU clock ran with the wall clock.
    const TurnShare share = share_of_turn(0, 100 * ms, 0, reading(5, 5, 7), reading(100, 100, 7));
    CHECK(share.pinned_ns == 100 * ms);
    CHECK(share.stolen_ns == 0);
}

TEST_CASE("time the hypervisor took the CPU away is not the fiber's", "[pindemo][turn_share]") {
    // Never left its CPU, yet ran only 2 ms of the 20 ms between the readings.
    const TurnShare share = share_of_turn(0, 25 * ms, 0, reading(5, 5, 7), reading(25, 7, 7));
    CHECK(share.stolen_ns == 18 * ms);
    CHECK(share.pinned_ns == 7 * ms);
}

TEST_CASE("time the OS kept the thread waiting for a CPU is not the fiber's",
          "[pindemo][turn_share]") {
    const TurnShare share = share_of_turn(0, 40 * ms, 30 * ms, reading(5, 1, 7), reading(40, 6, 8));
    CHECK(share.runqueue_ns == 30 * ms);
    CHECK(share.stolen_ns == 0);
    CHECK(share.pinned_ns == 10 * ms);
}

TEST_CASE("without a reading inside the turn nothing counts as stolen", "[pindemo][turn_share]") {
    SECTION("no reading at all") {
        const TurnShare share = share_of_turn(0, 25 * ms, 0, ThreadTimes{}, reading(25, 7, 7));
        CHECK(share.pinned_ns == 25 * ms);
    }
    SECTION("a reading taken before the turn began") {
        const TurnShare share =
            share_of_turn(10 * ms, 35 * ms, 0, reading(5, 5, 7), reading(35, 7, 7));
        CHECK(share.pinned_ns == 25 * ms);
    }
    SECTION("no reading at the end") {
        const TurnShare share = share_of_turn(0, 25 * ms, 0, reading(5, 5, 7), ThreadTimes{});
        CHECK(share.pinned_ns == 25 * ms);
    }
}

TEST_CASE("the parts of a turn never add up to more than the turn", "[pindemo][turn_share]") {
    // The run-queue figure may include waits just before the turn: it is capped at the turn.
    const TurnShare all_queue = share_of_turn(0, 20 * ms, 50 * ms, ThreadTimes{}, ThreadTimes{});
    CHECK(all_queue.runqueue_ns == 20 * ms);
    CHECK(all_queue.pinned_ns == 0);
    // Waiting and steal together: steal takes only what the queue left.
    const TurnShare both = share_of_turn(0, 30 * ms, 10 * ms, reading(1, 0, 3), reading(30, 0, 3));
    CHECK(both.runqueue_ns == 10 * ms);
    CHECK(both.stolen_ns == 20 * ms);
    CHECK(both.pinned_ns == 0);
}

TEST_CASE("the kernel facts behind it: a thread's CPU clock runs while it computes, and it is put "
          "back on a CPU after it sleeps",
          "[pindemo][turn_share]") {
    const int fd = ::open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    const ThreadTimes before = read_thread_times(fd, CLOCK_THREAD_CPUTIME_ID);
    REQUIRE(before.valid);
    // Compute for 20 ms of wall time.
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
    while (std::chrono::steady_clock::now() < until) {
    }
    const ThreadTimes computed = read_thread_times(fd, CLOCK_THREAD_CPUTIME_ID);
    STEP("20 ms of computing: the CPU clock moved " << (computed.cpu_ns - before.cpu_ns) / 1e6
                                                    << " ms");
    // Generous: even on a machine so busy that the thread waited for a CPU most of that time,
    // it ran at least a millisecond of it.
    CHECK(computed.cpu_ns - before.cpu_ns >= 1 * ms);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    const ThreadTimes slept = read_thread_times(fd, CLOCK_THREAD_CPUTIME_ID);
    STEP("then a 5 ms sleep: put on a CPU " << slept.arrivals - computed.arrivals << " more times");
    CHECK(slept.arrivals > computed.arrivals);
    ::close(fd);
}

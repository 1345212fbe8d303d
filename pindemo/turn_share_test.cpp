// How the detector splits a long turn into the fiber's part and the time its carrier thread
// could not run (turn_share.hpp): the arithmetic on hand-made readings, then the two kernel
// facts it rests on, checked on a real thread.
#include "test_support.hpp"
#include "turn_share.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <fcntl.h>
#include <thread>
#include <unistd.h>
#include <vector>

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
    const TurnShare share = share_of_turn(0, 100 * ms, 0, 0, reading(5, 1, 7), reading(100, 2, 8));
    CHECK(share.pinned_ns == 100 * ms);
    CHECK(share.stolen_ns == 0);
}

TEST_CASE("a fiber that computed holds its whole turn", "[pindemo][turn_share]") {
    // Never left its CPU, and its CPU clock ran with the wall clock.
    const TurnShare share =
        share_of_turn(0, 100 * ms, 0, 0, reading(5, 5, 7), reading(100, 100, 7));
    CHECK(share.pinned_ns == 100 * ms);
    CHECK(share.stolen_ns == 0);
}

TEST_CASE("time the hypervisor took the CPU away is not the fiber's", "[pindemo][turn_share]") {
    // Never left its CPU, yet ran only 2 ms of the 20 ms between the readings.
    const TurnShare share = share_of_turn(0, 25 * ms, 0, 0, reading(5, 5, 7), reading(25, 7, 7));
    CHECK(share.stolen_ns == 18 * ms);
    CHECK(share.pinned_ns == 7 * ms);
}

TEST_CASE("time the OS kept the thread waiting for a CPU is not the fiber's",
          "[pindemo][turn_share]") {
    const TurnShare share =
        share_of_turn(0, 40 * ms, 30 * ms, 0, reading(5, 1, 7), reading(40, 6, 8));
    CHECK(share.runqueue_ns == 30 * ms);
    CHECK(share.stolen_ns == 0);
    CHECK(share.pinned_ns == 10 * ms);
}

TEST_CASE("without a reading inside the turn nothing counts as stolen", "[pindemo][turn_share]") {
    SECTION("no reading at all") {
        const TurnShare share = share_of_turn(0, 25 * ms, 0, 0, ThreadTimes{}, reading(25, 7, 7));
        CHECK(share.pinned_ns == 25 * ms);
    }
    SECTION("a reading taken before the turn began") {
        const TurnShare share =
            share_of_turn(10 * ms, 35 * ms, 0, 0, reading(5, 5, 7), reading(35, 7, 7));
        CHECK(share.pinned_ns == 25 * ms);
    }
    SECTION("no reading at the end") {
        const TurnShare share = share_of_turn(0, 25 * ms, 0, 0, reading(5, 5, 7), ThreadTimes{});
        CHECK(share.pinned_ns == 25 * ms);
    }
    SECTION("a reading at the end taken after the turn ended") {
        // A stall after the turn is not the turn's: the carrier's reading must be its end.
        const TurnShare share =
            share_of_turn(0, 25 * ms, 0, 0, reading(5, 5, 7), reading(31, 25, 7));
        CHECK(share.pinned_ns == 25 * ms);
    }
}

TEST_CASE("a stretch the watchdog itself slept through is not the fiber's",
          "[pindemo][turn_share]") {
    // The whole machine stalled 25 ms of a 26 ms turn; nothing was read during it.
    const TurnShare share = share_of_turn(0, 26 * ms, 0, 25 * ms, ThreadTimes{}, ThreadTimes{});
    CHECK(share.unwatched_ns == 25 * ms);
    CHECK(share.pinned_ns == 1 * ms);
    // A stall shows in the run queue's share or the steal too: the larger share is left out,
    // not the sum. 20 ms of steal inside 25 ms unwatched: 25 ms left out.
    const TurnShare both =
        share_of_turn(0, 40 * ms, 0, 25 * ms, reading(1, 0, 3), reading(21, 0, 3));
    CHECK(both.stolen_ns == 20 * ms);
    CHECK(both.pinned_ns == 15 * ms);
}

TEST_CASE("overlap_ns adds up the parts of a span inside the stretches", "[pindemo][turn_share]") {
    const std::vector<Stretch> gaps{{10, 20}, {30, 40}};
    CHECK(overlap_ns(0, 100, gaps) == 20);
    CHECK(overlap_ns(15, 35, gaps) == 10);
    CHECK(overlap_ns(20, 30, gaps) == 0);
    CHECK(overlap_ns(12, 18, gaps) == 6);
}

TEST_CASE("the parts of a turn never add up to more than the turn", "[pindemo][turn_share]") {
    // The run-queue figure may include waits just before the turn: it is capped at the turn.
    const TurnShare all_queue = share_of_turn(0, 20 * ms, 50 * ms, 0, ThreadTimes{}, ThreadTimes{});
    CHECK(all_queue.runqueue_ns == 20 * ms);
    CHECK(all_queue.pinned_ns == 0);
    // Waiting and steal together: steal takes only what the queue left.
    const TurnShare both =
        share_of_turn(0, 30 * ms, 10 * ms, 0, reading(1, 0, 3), reading(30, 0, 3));
    CHECK(both.runqueue_ns == 10 * ms);
    CHECK(both.stolen_ns == 20 * ms);
    CHECK(both.pinned_ns == 0);
}

TEST_CASE("the kernel facts behind it: a thread that never leaves its CPU runs for as long as "
          "the wall clock says, and one that sleeps is put back on a CPU afterwards",
          "[pindemo][turn_share]") {
    const int fd = ::open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    const auto now = [] { return std::chrono::steady_clock::now().time_since_epoch().count(); };
    // Compute for a millisecond at a time, a hundred times. On a loaded machine some stretches
    // are cut by preemption (the arrival count moves) or by steal: they say nothing either way.
    // The best stretch without a switch shows what the clock does.
    int clean = 0;
    double best_share = 0;
    for (int attempt = 0; attempt < 100; ++attempt) {
        const ThreadTimes before = read_own_times(fd, now());
        REQUIRE(before.valid);
        const std::int64_t until = before.at_ns + 1 * ms;
        while (now() < until) {
        }
        const ThreadTimes after = read_own_times(fd, now());
        if (after.arrivals != before.arrivals) continue;
        ++clean;
        best_share = std::max(best_share, static_cast<double>(after.cpu_ns - before.cpu_ns) /
                                              static_cast<double>(after.at_ns - before.at_ns));
    }
    STEP(clean << " of 100 stretches of a millisecond's computing ran without a switch; in the "
                  "best, the CPU clock ran "
               << best_share * 100 << "% of the wall clock");
    REQUIRE(clean > 0);
    // 100% but for the reads themselves.
    CHECK(best_share > 0.9);
    const ThreadTimes before_sleep = read_own_times(fd, now());
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    const ThreadTimes after_sleep = read_own_times(fd, now());
    STEP("then a 5 ms sleep: put on a CPU " << after_sleep.arrivals - before_sleep.arrivals
                                            << " more times");
    CHECK(after_sleep.arrivals > before_sleep.arrivals);
    ::close(fd);
}

// How the detector splits a long turn into the fiber's part and the time its carrier thread
// could not run (turn_share.hpp): the arithmetic on hand-made readings, then the two kernel
// facts it rests on, checked on a real thread.
#include "test_support.hpp"
#include "turn_share.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fcntl.h>
#include <iterator>
#include <string>
#include <thread>
#include <unistd.h>

namespace {

constexpr std::int64_t ms = 1000000; // nanoseconds

// A reading at `at` ms: `ran` ms on a CPU so far, `arrivals` times put on a CPU, `queued` ms
// waited in the run queue.
ThreadTimes reading(std::int64_t at, std::int64_t ran, std::uint64_t arrivals,
                    std::int64_t queued = 0) {
    ThreadTimes times;
    times.valid = true;
    times.from_ns = times.at_ns = at * ms;
    times.ran_ns = ran * ms;
    times.arrivals = arrivals;
    times.runqueue_ns = queued * ms;
    return times;
}

const ThreadTimes none{};

} // namespace

TEST_CASE("a fiber that blocked in a call holds its whole turn", "[pindemo][turn_share]") {
    // A 100 ms turn from 0 to 100 ms, read 5 ms in; the thread slept (it left its CPU and came
    // back: one more arrival) and hardly ran.
    const TurnShare share = share_of_turn(0, 100 * ms, none, reading(5, 1, 7), reading(100, 2, 8));
    CHECK(share.pinned_ns == 100 * ms);
    CHECK(share.stolen_ns == 0);
}

TEST_CASE("a fiber that computed holds its whole turn", "[pindemo][turn_share]") {
    // Never left its CPU, and its CPU clock ran with the wall clock.
    const TurnShare share =
        share_of_turn(0, 100 * ms, reading(-1, 0, 7), reading(5, 6, 7), reading(100, 101, 7));
    CHECK(share.pinned_ns == 100 * ms);
    CHECK(share.stolen_ns == 0);
}

TEST_CASE("time the hypervisor took the CPU away is not the fiber's", "[pindemo][turn_share]") {
    SECTION("seen from a reading during the turn") {
        // Never left its CPU, yet ran only 2 ms of the 20 ms between the readings.
        const TurnShare share =
            share_of_turn(0, 25 * ms, none, reading(5, 5, 7), reading(25, 7, 7));
        CHECK(share.stolen_ns == 18 * ms);
        CHECK(share.pinned_ns == 7 * ms);
    }
    SECTION("seen from the last reading before it, when the stall froze the watchdog too") {
        // A turn from 10 ms to 36 ms that ran 1 ms; the watchdog's last reading was at 8 ms.
        // Of the 27 ms of steal since, at most 2 fell before the turn.
        const TurnShare share =
            share_of_turn(10 * ms, 36 * ms, reading(8, 8, 7), none, reading(36, 9, 7));
        CHECK(share.stolen_ns == 25 * ms);
        CHECK(share.pinned_ns == 1 * ms);
    }
}

TEST_CASE("time the OS kept the thread waiting for a CPU is not the fiber's",
          "[pindemo][turn_share]") {
    SECTION("counted from a reading during the turn") {
        const TurnShare share =
            share_of_turn(0, 40 * ms, none, reading(5, 1, 7, 0), reading(40, 6, 8, 30));
        CHECK(share.runqueue_ns == 30 * ms);
        CHECK(share.pinned_ns == 10 * ms);
    }
    SECTION("not counted from a reading before the turn") {
        // The kernel books a wait when it ends: this one may have begun long before the turn.
        const TurnShare share =
            share_of_turn(0, 40 * ms, reading(-4, 0, 7, 0), none, reading(40, 6, 8, 30));
        CHECK(share.runqueue_ns == 0);
        CHECK(share.pinned_ns == 40 * ms);
    }
}

TEST_CASE("the readings around a turn are picked by when they were taken",
          "[pindemo][turn_share]") {
    // The turn runs from 0 to 40 ms. The watchdog's readings, out of order: at -9, -4, 3, 12,
    // 40 and 50 ms, one invalid, and one under way as the turn began (from -1 to 1 ms).
    ThreadTimes invalid = reading(2, 1, 7);
    invalid.valid = false;
    ThreadTimes straddling = reading(1, 1, 7);
    straddling.from_ns = -1 * ms;
    const ThreadTimes kept[] = {reading(12, 1, 7, 10), reading(-4, 1, 7),    invalid,
                                reading(50, 9, 8, 48), straddling,           reading(3, 1, 7, 10),
                                reading(-9, 0, 6),     reading(40, 3, 8, 48)};
    const ReadingsAround around = readings_around(0, 40 * ms, kept, std::size(kept));
    REQUIRE(around.before.valid);
    CHECK(around.before.at_ns == -4 * ms); // the last before the turn began
    REQUIRE(around.during.valid);
    // The first wholly inside it: not the one under way at the start (its counters may be from
    // before it), not the invalid one, not a later one.
    CHECK(around.during.at_ns == 3 * ms);
    SECTION("the case it is for: a run-queue wait the watchdog saw under the previous turn") {
        // The carrier read the clock for the turn's start at 0 and was preempted before it
        // published the turn: it waited in the run queue until 38 ms, then ran to 40. The
        // watchdog, still seeing the previous turn, read it at 3 and 12 ms.
        const TurnShare share =
            share_of_turn(0, 40 * ms, around.before, around.during, reading(40, 3, 8, 48));
        CHECK(share.runqueue_ns == 38 * ms);
        CHECK(share.pinned_ns == 2 * ms);
    }
    SECTION("a reading under way as the turn began is not taken as inside it") {
        // Its counters may have been read before the start, and hold a wait booked then.
        const ReadingsAround only_straddling = readings_around(0, 40 * ms, &straddling, 1);
        CHECK_FALSE(only_straddling.before.valid);
        CHECK_FALSE(only_straddling.during.valid);
        CHECK(share_of_turn(0, 40 * ms, none, straddling, reading(40, 3, 8, 48)).pinned_ns ==
              40 * ms);
    }
    SECTION("a reading at the turn's very end is inside it; nothing inside a later turn") {
        CHECK(readings_around(39 * ms, 40 * ms, kept, std::size(kept)).during.at_ns == 40 * ms);
        const ReadingsAround later = readings_around(100 * ms, 140 * ms, kept, std::size(kept));
        CHECK_FALSE(later.during.valid);
        CHECK(later.before.at_ns == 50 * ms);
        CHECK_FALSE(readings_around(-50 * ms, -20 * ms, kept, std::size(kept)).before.valid);
    }
}

TEST_CASE("without the carrier's own reading at the end nothing is left out",
          "[pindemo][turn_share]") {
    SECTION("no reading at the end") {
        const TurnShare share =
            share_of_turn(0, 25 * ms, reading(-1, 0, 7), reading(5, 5, 7), none);
        CHECK(share.pinned_ns == 25 * ms);
    }
    SECTION("a reading at the end taken after the turn ended") {
        // A stall after the turn is not the turn's: the carrier's reading must be its end.
        const TurnShare share =
            share_of_turn(0, 25 * ms, none, reading(5, 5, 7), reading(31, 25, 7));
        CHECK(share.pinned_ns == 25 * ms);
    }
    SECTION("no reading before the end") {
        const TurnShare share = share_of_turn(0, 25 * ms, none, none, reading(25, 1, 7));
        CHECK(share.pinned_ns == 25 * ms);
    }
}

TEST_CASE("the parts of a turn never add up to more than the turn", "[pindemo][turn_share]") {
    // Figures no kernel would give (a wait longer than the turn since a reading inside it) are
    // capped at the turn.
    const TurnShare all_queue =
        share_of_turn(0, 20 * ms, none, reading(1, 0, 3, 0), reading(20, 1, 4, 50));
    CHECK(all_queue.runqueue_ns == 20 * ms);
    CHECK(all_queue.pinned_ns == 0);
    // A wait booked since a reading means the thread was put back on a CPU since: no steal from
    // that reading, nor from any earlier one. The two shares never cover the same time.
    const TurnShare both =
        share_of_turn(0, 30 * ms, reading(-1, 0, 3), reading(12, 0, 3), reading(30, 0, 4, 10));
    CHECK(both.runqueue_ns == 10 * ms);
    CHECK(both.stolen_ns == 0);
    CHECK(both.pinned_ns == 20 * ms);
}

TEST_CASE("the time the watchdog itself was held up is measured inside the turn only",
          "[pindemo][turn_share]") {
    // The turn runs from 10 to 70 ms. The watchdog was late from 0 to 15 ms (partly before the
    // turn), from 30 to 60 ms (inside it) and from 80 to 90 ms (after it); one stretch is empty.
    const Stretch late[] = {{0, 15 * ms}, {30 * ms, 60 * ms}, {}, {80 * ms, 90 * ms}};
    CHECK(time_covered(10 * ms, 70 * ms, late, std::size(late)) == 35 * ms);
    CHECK(time_covered(100 * ms, 140 * ms, late, std::size(late)) == 0);
    CHECK(time_covered(35 * ms, 40 * ms, late, std::size(late)) == 5 * ms); // wholly inside one
    CHECK(time_covered(10 * ms, 70 * ms, late, 0) == 0);
}

TEST_CASE("time the watchdog was held up comes off only beyond the OS's shares",
          "[pindemo][turn_share]") {
    TurnShare share;
    share.runqueue_ns = 30 * ms;
    share.stolen_ns = 10 * ms;
    share.pinned_ns = 160 * ms; // of a 200 ms turn
    CHECK(fibers_part(share, 0) == 160 * ms);
    CHECK(fibers_part(share, 25 * ms) == 160 * ms); // may be the same time as those 40 ms
    CHECK(fibers_part(share, 190 * ms) == 10 * ms); // 150 ms beyond them
}

TEST_CASE("the kernel facts behind it: a thread that never leaves its CPU runs for as long as "
          "the wall clock says, and one that sleeps is put back on a CPU afterwards",
          "[pindemo][turn_share]") {
    const int fd = ::open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    // The detector needs the kernel's scheduler statistics (CONFIG_SCHED_INFO, on in Debian).
    REQUIRE(read_own_times(fd).valid);
    // Compute for a millisecond at a time until ten stretches ran without a switch (or five
    // seconds passed). On a loaded machine many are cut by preemption (the arrival count moves)
    // or by steal: they say nothing either way. The best stretch without a switch shows what
    // the clock does.
    int clean = 0, tried = 0;
    double best_share = 0;
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (clean < 10 && std::chrono::steady_clock::now() < give_up) {
        ++tried;
        const ThreadTimes before = read_own_times(fd);
        const std::int64_t until = before.at_ns + 1 * ms;
        while (std::chrono::steady_clock::now().time_since_epoch().count() < until) {
        }
        const ThreadTimes after = read_own_times(fd);
        if (!before.valid || !after.valid || after.arrivals != before.arrivals) continue;
        ++clean;
        best_share = std::max(best_share, static_cast<double>(after.ran_ns - before.ran_ns) /
                                              static_cast<double>(after.at_ns - before.at_ns));
    }
    STEP(clean << " of " << tried
               << " stretches of a millisecond's computing ran without a switch; in the best, "
                  "the thread ran "
               << best_share * 100 << "% of the time that passed");
    REQUIRE(clean > 0);
    CHECK(best_share > 0.9); // 100% but for the reads themselves
    const ThreadTimes before_sleep = read_own_times(fd);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    const ThreadTimes after_sleep = read_own_times(fd);
    STEP("then a 5 ms sleep: put on a CPU " << after_sleep.arrivals - before_sleep.arrivals
                                            << " more times");
    CHECK(after_sleep.arrivals > before_sleep.arrivals);
    ::close(fd);
}

TEST_CASE("the watchdog's reading of another thread: what it ran lags, never leads",
          "[pindemo][turn_share]") {
    // A thread computes for 100 ms of CPU time (by its own clock, so a busy machine only makes
    // it take longer); another reads it the detector's way every few milliseconds.
    std::atomic<int> tid{0};
    std::atomic<bool> done{false};
    std::int64_t own_ran_at_end = 0;
    std::thread worker([&] {
        tid = static_cast<int>(::gettid());
        const std::int64_t until = this_thread_cpu_ns() + 100 * ms;
        while (this_thread_cpu_ns() < until) {
        }
        own_ran_at_end = this_thread_cpu_ns();
        done = true;
        while (done) // stay alive until the last reading is taken
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
    while (tid == 0)
        std::this_thread::yield();
    const std::string path = "/proc/self/task/" + std::to_string(tid) + "/schedstat";
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    ThreadTimes first = read_thread_times(fd), last = first;
    int readings = 1;
    while (!done) {
        std::this_thread::sleep_for(std::chrono::milliseconds(3));
        const ThreadTimes now = read_thread_times(fd);
        if (!done && now.valid) last = now, ++readings;
    }
    const ThreadTimes after = read_thread_times(fd);
    done = false;
    worker.join();
    ::close(fd);
    STEP(readings << " readings over 100 ms of CPU time; the time run rose from "
                  << first.ran_ns / 1e6 << " ms to " << last.ran_ns / 1e6
                  << " ms while computing, and the thread's own clock said " << own_ran_at_end / 1e6
                  << " ms at the end");
    REQUIRE(first.valid);
    REQUIRE(after.valid);
    CHECK(first.arrivals > 0);
    // Lags, never leads: the errors of a steal figure then lean towards finding less.
    CHECK(last.ran_ns <= own_ran_at_end);
    // It does move, a tick behind at worst: most of the 100 ms shows (generous: the last
    // reading may come a while before the end on a busy machine).
    CHECK(last.ran_ns - first.ran_ns >= 30 * ms);
}

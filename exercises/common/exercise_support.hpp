// Helpers for the exercises' graded tests: fibers on a carrier under a time limit, a ticker that
// shows whether a carrier stayed free, and a latch that holds fibers until the test lets them go.
//
// A student's code may block a carrier thread for good (a wait that is not fiber-aware, a lost
// wake-up). The tests must still report instead of hanging, so every wait here has a limit, and a
// carrier whose fiber did not finish in time is abandoned rather than joined: its thread lives on
// until the test program exits, and the test fails with its story.
//
// A watchdog names the likeliest mistake at once: each TestCarrier runs a heartbeat fiber, and
// when it has not run for 2 s the carrier thread is blocked (a std:: primitive or a blocking
// call on a fiber). finished() and run() then fail with that story instead of waiting out their
// limit, and the watchdog writes it to stderr too, for a test that is stuck elsewhere.
#pragma once

#include "lessons/02-fibers/carrier.hpp"
#include "lessons/common/test_support.hpp" // eventually(), STEP()

#include <boost/fiber/condition_variable.hpp>
#include <boost/fiber/mutex.hpp>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <string>

// A carrier for one test. Declare it after everything its fibers use: it is then destroyed
// first, and its fibers end while what they touch still exists.
class TestCarrier {
public:
    explicit TestCarrier(std::string name = "test-carrier", Carrier::SchedulerSetup setup = {});
    // Stops the carrier once its fibers have ended. A fiber that missed its limit in run() or
    // finished(), or that is still running 5 s from now, gets the carrier abandoned instead.
    ~TestCarrier();
    TestCarrier(const TestCarrier&) = delete;
    TestCarrier& operator=(const TestCarrier&) = delete;

    // Starts `task` as a fiber; the future is ready when it returned (or holds its exception).
    std::future<void> start(std::function<void()> task);

    // Runs `task` as a fiber and waits for it at most `limit`. False when it did not finish in
    // time, or when the carrier thread is blocked (see above): the carrier is then abandoned,
    // and the failing assertion's message says which it was. An exception from the task is
    // rethrown here.
    bool run(std::function<void()> task,
             std::chrono::milliseconds limit = std::chrono::milliseconds(10000));

    // Waits for a future from start() at most `limit`; abandons the carrier when it is not ready.
    bool finished(std::future<void>& done,
                  std::chrono::milliseconds limit = std::chrono::milliseconds(10000));

    Carrier& carrier() { return *carrier_; }

    // How long the carrier thread has run no fiber: a few ms while it is free, the whole time
    // while something blocks it.
    std::chrono::milliseconds blocked_for() const;

    // A carrier thread that ran no fiber for this long is blocked, not busy: a free carrier's
    // heartbeat runs every 20 ms, give or take the machine's noise, and no graded test pins a
    // carrier for more than 400 ms on purpose.
    static constexpr std::chrono::milliseconds blocked_limit{2000};

private:
    struct Watch;
    std::unique_ptr<Carrier> carrier_;
    std::shared_ptr<Watch> watch_;
    bool abandoned_ = false;
};

// What a Ticker saw.
struct TickerReport {
    int ticks = 0;             // wake-ups so far
    double longest_gap_ms = 0; // the longest time between two wake-ups (or since the start)
};

// A fiber that sleeps `period` again and again on a carrier and notes the gaps between its
// wake-ups. While every other fiber there waits the fiber-aware way it wakes every `period`, give
// or take the machine's scheduling noise (a few ms); a fiber that holds the carrier (blocks its
// thread, or computes without yielding) shows as one long gap. The oracle of every "the carrier
// stays free" test.
class Ticker {
public:
    // 5 ms: the tests' pins last 200-400 ms and their bound on a free carrier's gap is 150 ms,
    // so a free carrier ticks thirty times within the bound; finer would only cost CPU.
    explicit Ticker(TestCarrier& carrier,
                    std::chrono::milliseconds period = std::chrono::milliseconds(5));
    ~Ticker(); // stops the fiber
    Ticker(const Ticker&) = delete;
    Ticker& operator=(const Ticker&) = delete;

    // What it saw up to now, including the gap since its last wake-up.
    TickerReport report() const;
    // Stops it (waiting up to 2 s for its last wake-up) and returns what it saw.
    TickerReport stop();

private:
    struct State;
    std::shared_ptr<State> state_;
    std::shared_future<void> done_;
};

// A gate the test opens once: fibers (and plain threads) that wait() on it park until open().
// Tests hold handlers on one instead of sleeping, so "two requests are inside" is a fact, not
// a guess about timing.
class Latch {
public:
    void open();
    // False when `limit` passed before open(). The default is short: tests open latches within
    // milliseconds, and a stub that never gets there must fail fast, not after 10 s.
    bool wait(std::chrono::milliseconds limit = std::chrono::milliseconds(2000));

private:
    boost::fibers::mutex mutex_;
    boost::fibers::condition_variable opened_;
    bool open_ = false;
};

// Milliseconds since `start`.
double ms_since(std::chrono::steady_clock::time_point start);

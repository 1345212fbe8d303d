// Graded tests of exercise 10. Fibers on a test carrier hand work to your CpuLane; a ticker
// fiber on the same carrier shows whether the carrier stayed free meanwhile.
//
// The "computations" here block their thread in std::this_thread::sleep_for or on a latch the
// test opens: on a carrier that holds it exactly as a computation would, but takes the same
// time on a busy machine, and lets the test decide when work ends instead of guessing. A
// carrier held by the work shows as a ticker gap of the whole 300 ms; a free one, a few ms.
#include "cpu_lane.hpp"
#include "exercises/common/exercise_support.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr double free_carrier_gap_ms = 150;

// The thread the calling code runs on, as a number a test can compare and print.
std::uint64_t this_thread_number() {
    return std::hash<std::thread::id>()(std::this_thread::get_id()) % 100000;
}

// The carrier's thread, as this_thread_number() sees it there.
std::uint64_t carrier_thread(TestCarrier& carrier) {
    std::uint64_t number = 0;
    REQUIRE(carrier.run([&] { number = this_thread_number(); }, 2000ms));
    return number;
}

// Where OS threads meet: arrive() waits until `size` of them are inside at once, or `limit`
// passes. Plain std:: primitives on purpose: the lane's threads are plain threads.
class Meeting {
public:
    explicit Meeting(int size) : size_(size) {}
    // True when the others came within `limit`.
    bool arrive(std::chrono::milliseconds limit = 500ms) {
        std::unique_lock<std::mutex> lock(mutex_);
        ++inside_;
        most_ = std::max(most_, inside_);
        changed_.notify_all();
        const bool met = changed_.wait_for(lock, limit, [&] { return inside_ >= size_ || gone_; });
        gone_ = gone_ || met; // once they met, the later arrivals do not wait for a full group
        --inside_;
        return met;
    }
    int most_inside() {
        std::lock_guard<std::mutex> lock(mutex_);
        return most_;
    }

private:
    std::mutex mutex_;
    std::condition_variable changed_;
    const int size_;
    int inside_ = 0, most_ = 0;
    bool gone_ = false;
};

// A gate the test opens; plain threads (the lane's) wait on it, with a limit.
class Gate {
public:
    void open() {
        std::lock_guard<std::mutex> lock(mutex_);
        open_ = true;
        opened_.notify_all();
    }
    bool wait(std::chrono::milliseconds limit = 2000ms) {
        std::unique_lock<std::mutex> lock(mutex_);
        return opened_.wait_for(lock, limit, [&] { return open_; });
    }

private:
    std::mutex mutex_;
    std::condition_variable opened_;
    bool open_ = false;
};

} // namespace

// ---------------------------------------------------------------- task 1

TEST_CASE("compute runs the work on a lane thread and the carrier serves others meanwhile",
          "[ex10][task_1][points=2]") {
    CpuLane lane(2, 16);
    TestCarrier carrier("carrier");
    const std::uint64_t carrier_number = carrier_thread(carrier);
    Ticker ticker(carrier);
    std::uint64_t result = 0, computed_on = 0;
    double took_ms = 0;
    const bool finished = carrier.run(
        [&] {
            const auto began = Clock::now();
            result = lane.compute([&] {
                computed_on = this_thread_number();
                std::this_thread::sleep_for(300ms); // 300 ms of "computation"
                return std::uint64_t{42};
            });
            took_ms = ms_since(began);
        },
        5000ms);
    const TickerReport report = ticker.stop();
    STEP("a fiber handed a 300 ms computation to lane.compute(); it returned "
         << result << " after " << took_ms << " ms; computed on thread " << computed_on
         << ", the carrier is thread " << carrier_number << "; longest ticker gap "
         << report.longest_gap_ms << " ms");
    REQUIRE(finished);
    CHECK(result == 42);
    CHECK(computed_on != carrier_number);
    CHECK(took_ms >= 290);
    CHECK(report.longest_gap_ms < free_carrier_gap_ms);
}

TEST_CASE("an exception thrown by the work reaches the fiber that handed it over",
          "[ex10][task_1][points=1]") {
    CpuLane lane(1, 16);
    TestCarrier carrier("carrier");
    const std::uint64_t carrier_number = carrier_thread(carrier);
    std::uint64_t thrown_on = 0;
    std::string caught = "(nothing)";
    const bool finished = carrier.run(
        [&] {
            try {
                lane.compute([&]() -> std::uint64_t {
                    thrown_on = this_thread_number();
                    throw std::runtime_error("the work failed");
                });
            } catch (const std::exception& e) {
                caught = e.what();
            }
        },
        5000ms);
    STEP("the work threw 'the work failed' on thread "
         << thrown_on << " (the carrier is " << carrier_number << "); the fiber caught '" << caught
         << "'");
    REQUIRE(finished);
    CHECK(caught == "the work failed");
    CHECK(thrown_on != carrier_number);
}

TEST_CASE("the lane's threads compute side by side, and never more of them than it has",
          "[ex10][task_1][points=2]") {
    CpuLane lane(2, 16);
    TestCarrier carrier("carrier");
    const std::uint64_t carrier_number = carrier_thread(carrier);
    Meeting pairs(2); // each computation waits (up to 0.5 s) until another one runs beside it
    std::mutex mutex;
    std::set<std::uint64_t> threads;
    std::atomic<int> met{0};
    std::vector<std::future<void>> done;
    for (int i = 0; i < 4; ++i)
        done.push_back(carrier.start([&] {
            lane.compute([&] {
                {
                    std::lock_guard<std::mutex> lock(mutex);
                    threads.insert(this_thread_number());
                }
                if (pairs.arrive()) ++met;
                return std::uint64_t{0};
            });
        }));
    bool all = true;
    for (auto& d : done)
        all = carrier.finished(d, 8000ms) && all;
    STEP("4 fibers on one carrier each handed a computation to a lane of 2 threads; "
         << met << " of 4 found another one computing beside them; at most " << pairs.most_inside()
         << " computed at once, on " << threads.size() << " different threads; the carrier "
         << (threads.count(carrier_number) ? "was" : "was not") << " one of them");
    REQUIRE(all);
    CHECK(pairs.most_inside() == 2);
    CHECK(met >= 2);
    CHECK(threads.size() == 2);
    CHECK(threads.count(carrier_number) == 0);
}

// ---------------------------------------------------------------- task 2 (stretch)

TEST_CASE("a full lane refuses at once with CpuBusy and counts the tasks that wait",
          "[ex10][task_2][points=2]") {
    CpuLane lane(1, 2); // one thread; two may wait for it
    TestCarrier carrier("carrier");
    Gate gate;
    std::atomic<int> started{0};
    auto held = [&] {
        ++started;
        gate.wait();
        return std::uint64_t{1};
    };
    std::atomic<int> refused{0}; // of the first three: none may be
    auto hand_over = [&] {
        try {
            lane.compute(held);
        } catch (const CpuBusy&) {
            ++refused;
        }
    };
    // One computes (held at the gate) once it has started; then two wait for the thread.
    std::vector<std::future<void>> done;
    done.push_back(carrier.start(hand_over));
    const bool first_started = eventually([&] { return started == 1; }, 2000ms);
    for (int i = 0; i < 2; ++i)
        done.push_back(carrier.start(hand_over));
    const bool queued = first_started && eventually([&] { return lane.waiting() == 2; }, 2000ms);
    const int waiting = lane.waiting();
    std::string fourth = "(no answer)";
    double fourth_ms = -1;
    std::future<void> fourth_future = carrier.start([&] {
        const auto began = Clock::now();
        try {
            lane.compute(held);
            fourth = "computed";
        } catch (const CpuBusy&) {
            fourth = "CpuBusy";
        } catch (const std::exception& e) {
            fourth = std::string("another exception: ") + e.what();
        }
        fourth_ms = ms_since(began);
    });
    const bool fourth_done = carrier.finished(fourth_future, 1500ms); // a refusal takes µs
    const std::string fourth_then = fourth;
    const double fourth_ms_then = fourth_ms;
    gate.open();
    // Every fiber, the 4th too, must be over before the test's variables they write go away
    // (a 4th that waited for the thread finishes now): else a stub crashes instead of failing.
    bool all = true;
    for (auto& d : done)
        all = carrier.finished(d, 5000ms) && all;
    if (!fourth_done) carrier.finished(fourth_future, 5000ms);
    STEP("a lane of 1 thread, at most 2 waiting: 3 fibers handed it work held at a gate; "
         << started << " started, waiting() said " << waiting << ", " << refused
         << " were refused");
    STEP("a 4th fiber's compute() ended with " << fourth_then << " after " << fourth_ms_then
                                               << " ms; then the gate opened; after it, waiting() "
                                               << lane.waiting() << ", started " << started);
    CHECK(queued);
    REQUIRE(fourth_done);
    CHECK(fourth_then == "CpuBusy");
    CHECK(fourth_ms_then < 500);
    REQUIRE(all);
    CHECK(started == 3);
    CHECK(refused == 0);
    CHECK(lane.waiting() == 0);
}

TEST_CASE("destroying the lane finishes the work already handed to it",
          "[ex10][task_2][points=1]") {
    auto lane = std::make_unique<CpuLane>(2, 16);
    TestCarrier carrier("carrier");
    const std::uint64_t carrier_number = carrier_thread(carrier);
    std::atomic<int> started{0};
    std::mutex mutex;
    std::vector<std::uint64_t> results, threads;
    std::vector<std::future<void>> done;
    for (int i = 0; i < 4; ++i)
        done.push_back(carrier.start([&, i] {
            const std::uint64_t r = lane->compute([&, i] {
                ++started;
                {
                    std::lock_guard<std::mutex> lock(mutex);
                    threads.push_back(this_thread_number());
                }
                std::this_thread::sleep_for(100ms);
                return static_cast<std::uint64_t>(i);
            });
            std::lock_guard<std::mutex> lock(mutex);
            results.push_back(r);
        }));
    // Two computing, two waiting: then destroy the lane; all four must still be computed.
    const bool handed_over =
        eventually([&] { return started == 2 && lane->waiting() == 2; }, 2000ms);
    if (handed_over) lane.reset(); // (else the fibers may still call it: keep it until they end)
    bool all = true;
    for (auto& d : done)
        all = carrier.finished(d, 5000ms) && all;
    lane.reset();
    std::sort(results.begin(), results.end());
    const bool off_carrier =
        std::count(threads.begin(), threads.end(), carrier_number) == 0 && !threads.empty();
    STEP("4 fibers handed 100 ms computations to a lane of 2; "
         << (handed_over ? "the lane was destroyed once 2 computed and 2 waited"
                         : "2 never computed while 2 waited (waiting(): task 2)")
         << "; " << results.size() << " results came back; every one computed off the carrier: "
         << (off_carrier ? "yes" : "no"));
    CHECK(handed_over);
    REQUIRE(all);
    CHECK(results == std::vector<std::uint64_t>{0, 1, 2, 3});
    CHECK(off_carrier);
}

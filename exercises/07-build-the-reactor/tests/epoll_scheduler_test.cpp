// Graded tests of exercise 07. Each runs fibers on a carrier whose scheduling algorithm is your
// EpollScheduler, wrapped in an observer: it counts suspend_until()'s returns, notes the ones that
// came before their timer with no notify() to explain them, and shows the test thread the timer
// the carrier sleeps towards. The test's own thread plays the outside world: it writes to
// sockets, spawns fibers, opens latches.
//
// Why the verdicts do not depend on how busy the machine is. Every test carrier has a heartbeat
// fiber that sleeps 20 ms at a time, so an idle carrier always has a timer ahead.
// - A carrier asleep in epoll_wait returns from suspend_until when its timer is due, or earlier
//   only when notify() (or a socket) calls it; a busy machine can make it later, never earlier.
//   One that polls or spins returns before its timer with nothing to explain it, many times per
//   20 ms. The idle checks count those early returns (a correct carrier has none) and the CPU
//   time of the carrier thread (far below the bound whatever the load, while a spinning one uses
//   all it gets).
// - "A plain thread wakes the carrier at once" is an order, not a duration: the test thread acts
//   while the carrier sleeps with at least 10 ms to go before its timer, and the woken fiber
//   must run before that timer is due. Without notify() it cannot: only the timer wakes the
//   carrier. With it, the carrier wakes within a fraction of a ms; it is tried 10 times, and
//   most must make it.
// Wake-ups are allowed up to 500 ms late, and a free carrier's ticker gap up to 150 ms; both take
// a few ms.
#include "epoll_scheduler.hpp"
#include "exercises/common/exercise_support.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <boost/fiber/operations.hpp>
#include <ctime>
#include <functional>
#include <memory>
#include <optional>
#include <pthread.h>
#include <sstream>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr double late_ms = 500;             // how late a wake-up may be
constexpr double free_carrier_gap_ms = 150; // the longest ticker gap on a free carrier
constexpr double idle_cpu_share = 0.25;     // CPU time over wall time of an idle carrier
// Returns from suspend_until before its timer, with no notify() during the call, in an idle
// window: a carrier asleep in epoll_wait has none; one that waits at most 5 ms has three per
// 20 ms heartbeat, one that spins thousands. (A signal could end one wait early: hence not 0.)
constexpr long idle_early_returns = 3;
// A plain thread readies a fiber while the carrier sleeps with at least this long to go before
// its timer: a notify()'s wake-up takes a fraction of a ms, far less, under any load we know.
constexpr auto wake_margin = std::chrono::milliseconds(10);
constexpr int wake_rounds = 10;       // tries of "a plain thread wakes the carrier"
constexpr int wake_rounds_needed = 6; // of them, woken before the timer (none without notify)

std::int64_t ns_of(Clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

// What the observer saw, shared with the test thread.
struct Observed {
    std::atomic<long> returns{0}; // from suspend_until
    std::atomic<long> early{0};   // of them before their timer, with no notify() to explain it
    std::atomic<long> notifies{0};
    // The timer the carrier sleeps towards in suspend_until now (ns on the steady clock); 0 while
    // it is not in suspend_until.
    std::atomic<std::int64_t> asleep_until_ns{0};
};

// EpollScheduler observed. Everything is forwarded.
class Counted final : public boost::fibers::algo::algorithm {
public:
    explicit Counted(std::shared_ptr<Observed> observed)
        : observed_(std::move(observed)), inner_(std::make_unique<EpollScheduler>()) {}
    void awakened(boost::fibers::context* fiber) noexcept override { inner_->awakened(fiber); }
    boost::fibers::context* pick_next() noexcept override { return inner_->pick_next(); }
    bool has_ready_fibers() const noexcept override { return inner_->has_ready_fibers(); }
    void suspend_until(Clock::time_point const& until) noexcept override {
        observed_->asleep_until_ns = ns_of(until);
        inner_->suspend_until(until);
        observed_->asleep_until_ns = 0;
        // A notify() since the last return explains one early return: it may have come while
        // the carrier was still running fibers, and then it ends the next wait at once.
        const long notifies = observed_->notifies;
        if (Clock::now() < until && notifies == notifies_seen_) ++observed_->early;
        notifies_seen_ = notifies;
        ++observed_->returns;
    }
    void notify() noexcept override {
        ++observed_->notifies;
        inner_->notify();
    }

private:
    std::shared_ptr<Observed> observed_;
    std::unique_ptr<EpollScheduler> inner_;
    long notifies_seen_ = 0; // by the last return (only the carrier thread touches it)
};

// A carrier on your scheduler, with the means to watch it: what the observer saw and the CPU
// time of its thread.
struct Watched {
    std::shared_ptr<Observed> observed = std::make_shared<Observed>();
    clockid_t cpu_clock{};
    TestCarrier carrier{"reactor", [o = observed] { use_carrier_algorithm<Counted>(o); }};

    Watched() {
        // The first fiber needs notify() (task 1): the carrier may be asleep already.
        STEP("a carrier started on EpollScheduler; the test thread spawned its first fiber");
        const bool started =
            carrier.run([this] { ::pthread_getcpuclockid(::pthread_self(), &cpu_clock); }, 2000ms);
        INFO("the fiber did not run within 2 s: a carrier asleep in epoll_wait must be woken "
             "by notify() when another thread hands it a fiber (task 1)");
        REQUIRE(started);
    }
    double cpu_ms() const {
        timespec now{};
        ::clock_gettime(cpu_clock, &now);
        return now.tv_sec * 1e3 + now.tv_nsec / 1e6;
    }
    // Waits (up to 2 s) until the carrier sleeps in suspend_until with more than wake_margin to
    // go before its timer; returns that timer, or nothing.
    std::optional<std::int64_t> asleep_for_a_while() const {
        const auto limit = Clock::now() + 2000ms;
        while (Clock::now() < limit) {
            const std::int64_t until = observed->asleep_until_ns;
            if (until != 0 &&
                until - ns_of(Clock::now()) > std::chrono::nanoseconds(wake_margin).count())
                return until;
            std::this_thread::sleep_for(200us);
        }
        return std::nullopt;
    }
};

// What the carrier did during a window of wall time.
struct Window {
    double wall_ms = 0, cpu_ms = 0;
    long returns = 0, early = 0;
    double cpu_share() const { return wall_ms > 0 ? cpu_ms / wall_ms : 0; }
};

class Watch {
public:
    explicit Watch(const Watched& watched)
        : watched_(watched), began_(Clock::now()), cpu_(watched.cpu_ms()),
          returns_(watched.observed->returns), early_(watched.observed->early) {}
    Window done() const {
        return {ms_since(began_), watched_.cpu_ms() - cpu_, watched_.observed->returns - returns_,
                watched_.observed->early - early_};
    }

private:
    const Watched& watched_;
    Clock::time_point began_;
    double cpu_;
    long returns_, early_;
};

// The carrier slept through the window: little CPU, and suspend_until returned only when a timer
// was due or notify() called it.
void check_asleep(const Window& w) {
    CHECK(w.cpu_share() < idle_cpu_share);
    CHECK(w.early < idle_early_returns);
}

std::ostream& operator<<(std::ostream& out, const Window& w) {
    return out << "over " << w.wall_ms << " ms the carrier thread used " << w.cpu_ms
               << " ms of CPU and suspend_until returned " << w.returns << " times, " << w.early
               << " of them before its timer with no notify() to wake it";
}

// What happened when the test thread readied fibers while the carrier slept.
struct Wakeups {
    int rounds = 0;        // tries in which the carrier was seen asleep
    int before_timer = 0;  // of them, the fiber ran before the carrier's timer was due
    int ran = 0;           // of them, the fiber ran at all (within 2 s)
    double slowest_ms = 0; // from the test thread's act to the fiber's run
    long early = 0;        // suspend_until's returns before its timer with no notify() meanwhile
};

std::ostream& operator<<(std::ostream& out, const Wakeups& w) {
    out << "in " << w.rounds << " tries the fiber ran in " << w.ran << ", " << w.before_timer
        << " times before the carrier's timer was due; the slowest ran " << w.slowest_ms
        << " ms after. ";
    // A polling carrier finds the fiber without being woken: then these wake-ups prove nothing.
    if (w.early >= idle_early_returns)
        return out << "But meanwhile suspend_until returned " << w.early
                   << " times before its timer with no notify() to explain it: the carrier polls "
                      "(an epoll_wait with a short timeout?) instead of sleeping until notify() "
                      "wakes it";
    return out;
}

// A fiber the test thread can ready, and how to: the act readies it and waits for it to have
// run (true) or not (false, after a limit).
using Act = std::function<bool()>;
// Makes such a fiber; it calls `ran` when it runs.
using Prepare = std::function<Act(std::function<void()> ran)>;

// `wake_rounds` times: prepare a fiber, wait until the carrier sleeps with at least wake_margin
// to go before its timer, then act on the test thread and see whether the fiber ran before that
// timer was due.
Wakeups wake_while_asleep(const Watched& watched, const Prepare& prepare) {
    Wakeups wakeups;
    const long early = watched.observed->early;
    for (int i = 0; i < wake_rounds; ++i) {
        auto ran_ns = std::make_shared<std::atomic<std::int64_t>>(0);
        const Act act = prepare([ran_ns] { *ran_ns = ns_of(Clock::now()); });
        const std::optional<std::int64_t> timer = watched.asleep_for_a_while();
        if (!timer) continue;
        ++wakeups.rounds;
        const auto acted = Clock::now();
        if (!act()) continue;
        ++wakeups.ran;
        wakeups.slowest_ms = std::max(wakeups.slowest_ms, (*ran_ns - ns_of(acted)) / 1e6);
        if (*ran_ns < *timer) ++wakeups.before_timer;
    }
    wakeups.early = watched.observed->early - early;
    return wakeups;
}

// The outcome of one wait_readable() on a fiber.
struct Waited {
    bool readable = false;
    double ms = 0;
    std::string error; // what it threw, if it threw
};

Waited wait_for_fd(int fd, Deadline deadline) {
    Waited waited;
    const auto began = Clock::now();
    try {
        EpollScheduler* scheduler = EpollScheduler::current();
        if (scheduler == nullptr) throw std::logic_error("EpollScheduler::current() is nullptr");
        waited.readable = scheduler->wait_readable(fd, deadline);
    } catch (const std::exception& e) {
        waited.error = e.what();
    }
    waited.ms = ms_since(began);
    return waited;
}

std::ostream& operator<<(std::ostream& out, const Waited& w) {
    if (!w.error.empty()) return out << "threw '" << w.error << "' after " << w.ms << " ms";
    return out << "returned " << (w.readable ? "true" : "false") << " after " << w.ms << " ms";
}

// A connected pair of sockets: the fiber waits on `mine`, the test thread writes to `peer`.
struct SocketPair {
    int mine = -1, peer = -1;
    SocketPair() {
        int fds[2];
        REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, fds) == 0);
        mine = fds[0];
        peer = fds[1];
    }
    ~SocketPair() {
        ::close(mine);
        ::close(peer);
    }
    SocketPair(const SocketPair&) = delete;
    SocketPair& operator=(const SocketPair&) = delete;
    void send(char byte) const { REQUIRE(::send(peer, &byte, 1, MSG_NOSIGNAL) == 1); }
    void drain() const {
        char buffer[64];
        while (::recv(mine, buffer, sizeof buffer, 0) > 0) {
        }
    }
};

} // namespace

// ---------------------------------------------------------------- task 1: sleep in the kernel

TEST_CASE("sleeping fibers wake in order and on time while the carrier sleeps in the kernel",
          "[ex7][task_1][points=2]") {
    Watched watched;
    constexpr int sleepers = 5;
    std::vector<double> woke_ms(sleepers, -1);
    std::vector<int> order;
    std::vector<std::future<void>> done;
    const Watch watch(watched);
    const auto began = Clock::now();
    for (int i = sleepers - 1; i >= 0; --i) // started longest first: the order is the timers'
        done.push_back(watched.carrier.start([&, i] {
            boost::this_fiber::sleep_until(began + (i + 1) * 100ms);
            woke_ms[static_cast<std::size_t>(i)] = ms_since(began);
            order.push_back(i);
        }));
    bool all = true;
    for (auto& d : done)
        all = watched.carrier.finished(d, 3000ms) && all;
    const Window window = watch.done();
    std::string woke;
    for (const double ms : woke_ms)
        woke += " " + std::to_string(static_cast<int>(ms));
    STEP("5 fibers slept until 100, 200, 300, 400 and 500 ms; they woke at (ms):" << woke);
    STEP(window);
    REQUIRE(all);
    CHECK(order == std::vector<int>{0, 1, 2, 3, 4});
    for (int i = 0; i < sleepers; ++i) {
        CHECK(woke_ms[static_cast<std::size_t>(i)] >= (i + 1) * 100 - 1);
        CHECK(woke_ms[static_cast<std::size_t>(i)] < (i + 1) * 100 + late_ms);
    }
    check_asleep(window);
}

TEST_CASE("an idle carrier waits in the kernel until its next timer and uses no CPU",
          "[ex7][task_1][points=2]") {
    Watched watched;
    const Watch watch(watched);
    std::this_thread::sleep_for(500ms);
    const Window window = watch.done();
    STEP("the carrier had nothing to do but the tests' heartbeat fiber, which sleeps 20 ms at a "
         "time: suspend_until(its next wake-up)");
    STEP(window << " (a carrier that sleeps in epoll_wait returns when the timer is due, about "
                   "25 times; one that polls every 5 ms returns early 3 times per 20 ms; one "
                   "that spins, millions of times a second)");
    check_asleep(window);
}

TEST_CASE("a fiber spawned by a plain thread wakes the idle carrier, which then sleeps again",
          "[ex7][task_1][points=2]") {
    Watched watched;
    const Watch before(watched);
    std::this_thread::sleep_for(300ms);
    const Window asleep = before.done();
    STEP("the carrier idled: " << asleep);
    const Wakeups wakeups = wake_while_asleep(watched, [&](std::function<void()> ran) {
        return Act([&watched, ran] { return watched.carrier.run(ran, 2000ms); });
    });
    STEP("the test thread spawned a fiber while the carrier slept with at least "
         << wake_margin.count() << " ms to go before its timer: " << wakeups);
    const Watch after(watched);
    std::this_thread::sleep_for(300ms);
    const Window again = after.done();
    STEP("then the carrier idled again: " << again);
    check_asleep(asleep); // else no notify() was needed to see the fiber
    CHECK(wakeups.ran == wakeups.rounds);
    CHECK(wakeups.rounds == wake_rounds);
    CHECK(wakeups.before_timer >= wake_rounds_needed); // notify() woke the carrier
    CHECK(wakeups.early < idle_early_returns);         // ...and not a poll
    CHECK(wakeups.slowest_ms < late_ms);
    check_asleep(again); // a wake-up left pending makes it spin for good
}

TEST_CASE("a plain thread opening a latch wakes the fiber parked on it at once",
          "[ex7][task_1][points=1]") {
    Watched watched;
    const Watch watch(watched);
    const Wakeups wakeups = wake_while_asleep(watched, [&](std::function<void()> ran) {
        auto latch = std::make_shared<Latch>();
        auto parking = std::make_shared<std::atomic<bool>>(false);
        auto waiter = std::make_shared<std::future<void>>(watched.carrier.start([=] {
            *parking = true;
            if (latch->wait(5000ms)) ran();
        }));
        // Once the fiber has run, the carrier's next sleep comes after it parked on the latch.
        eventually([&] { return parking->load(); }, 2000ms);
        return Act([&watched, latch, waiter] {
            latch->open();
            return watched.carrier.finished(*waiter, 6000ms);
        });
    });
    const Window window = watch.done();
    // Then idle: a carrier that polls wakes by itself, and would have found the fiber anyway.
    const Watch idling(watched);
    std::this_thread::sleep_for(100ms);
    const Window idle = idling.done();
    STEP(wake_rounds << " times a fiber parked on a latch (5 s limit) and the test thread opened "
                        "it while the carrier slept with at least "
                     << wake_margin.count() << " ms to go before its timer: " << wakeups);
    STEP(window);
    CHECK(wakeups.ran == wakeups.rounds);
    CHECK(wakeups.rounds == wake_rounds);
    CHECK(wakeups.before_timer >= wake_rounds_needed); // without notify() the timer wakes it
    CHECK(wakeups.early < idle_early_returns);         // ...unless it polls
    CHECK(wakeups.slowest_ms < late_ms);
    // Between the wake-ups it slept. (Its CPU share says little here: the window is a few ms of
    // spawning and waking fibers.)
    CHECK(window.early < idle_early_returns);
    STEP("then the carrier idled: "
         << idle
         << (idle.early >= idle_early_returns
                 ? ". It polls: it wakes by itself, so it finds a readied fiber without notify(), "
                   "and the wake-ups above say nothing about notify()"
                 : ""));
    CHECK(idle.early < idle_early_returns);
}

// ---------------------------------------------------------------- task 2: wait for an fd

TEST_CASE("a fiber waiting for its socket wakes when the peer writes and the carrier runs on",
          "[ex7][task_2][points=2]") {
    Watched watched;
    SocketPair pair;
    Ticker ticker(watched.carrier);
    Waited waited;
    auto reader =
        watched.carrier.start([&] { waited = wait_for_fd(pair.mine, Clock::now() + 5000ms); });
    std::this_thread::sleep_for(200ms);
    pair.send('x');
    const bool finished = watched.carrier.finished(reader, 6000ms);
    const TickerReport report = ticker.stop();
    STEP("a fiber called wait_readable (5 s deadline); the peer wrote a byte 200 ms later");
    STEP("wait_readable " << waited << "; longest ticker gap " << report.longest_gap_ms << " ms");
    REQUIRE(finished);
    CHECK(waited.error.empty());
    CHECK(waited.readable);
    CHECK(waited.ms >= 190);
    CHECK(waited.ms < 200 + late_ms);
    CHECK(report.longest_gap_ms < free_carrier_gap_ms);
}

TEST_CASE("wait_readable returns at once for a socket that is already readable",
          "[ex7][task_2][points=1]") {
    Watched watched;
    SocketPair pair;
    pair.send('x');
    Waited waited;
    const bool finished = watched.carrier.run(
        [&] { waited = wait_for_fd(pair.mine, Clock::now() + 5000ms); }, 6000ms);
    STEP("a byte was waiting; wait_readable (5 s deadline) " << waited);
    REQUIRE(finished);
    CHECK(waited.error.empty());
    CHECK(waited.readable);
    CHECK(waited.ms < late_ms);
}

TEST_CASE("wait_readable gives up at its deadline and returns false", "[ex7][task_2][points=1]") {
    Watched watched;
    SocketPair pair;
    Waited waited;
    const bool finished =
        watched.carrier.run([&] { waited = wait_for_fd(pair.mine, Clock::now() + 300ms); }, 3000ms);
    STEP("nothing was sent; wait_readable with a 300 ms deadline " << waited);
    REQUIRE(finished);
    CHECK(waited.error.empty());
    CHECK_FALSE(waited.readable);
    CHECK(waited.ms >= 295);
    CHECK(waited.ms < 300 + late_ms);
}

TEST_CASE("a socket can be waited for again after a timeout and after a wake-up",
          "[ex7][task_2][points=2]") {
    Watched watched;
    SocketPair pair;
    std::vector<Waited> waits;
    const bool finished = watched.carrier.run(
        [&] {
            waits.push_back(wait_for_fd(pair.mine, Clock::now() + 100ms)); // times out
            pair.send('x'); // no one waits now: what epoll still holds of the wait must be gone
            boost::this_fiber::sleep_for(50ms); // the carrier passes through suspend_until
            waits.push_back(wait_for_fd(pair.mine, Clock::now() + 1000ms)); // readable
            waits.push_back(wait_for_fd(pair.mine, Clock::now() + 1000ms)); // still unread
            pair.drain();
            waits.push_back(wait_for_fd(pair.mine, Clock::now() + 100ms)); // times out again
        },
        5000ms);
    std::string story;
    for (const Waited& w : waits) {
        std::ostringstream one;
        one << w;
        story += "\n  " + one.str();
    }
    STEP("wait 100 ms (nothing sent); the peer writes; wait; wait again (the byte still unread); "
         "read it; wait 100 ms. wait_readable:"
         << story);
    REQUIRE(finished);
    REQUIRE(waits.size() == 4);
    for (const Waited& w : waits)
        CHECK(w.error.empty());
    CHECK_FALSE(waits[0].readable);
    CHECK(waits[1].readable);
    CHECK(waits[2].readable);
    CHECK_FALSE(waits[3].readable);
}

TEST_CASE("a hundred fibers wait on a hundred sockets and each wakes for its own",
          "[ex7][task_2][points=2]") {
    constexpr int fibers = 100;
    Watched watched;
    std::vector<std::unique_ptr<SocketPair>> pairs;
    std::vector<Waited> waited(fibers);
    std::vector<std::future<void>> done;
    const Deadline deadline = Clock::now() + 1500ms;
    for (int i = 0; i < fibers; ++i) {
        pairs.push_back(std::make_unique<SocketPair>());
        done.push_back(watched.carrier.start([&, i, fd = pairs.back()->mine] {
            waited[static_cast<std::size_t>(i)] = wait_for_fd(fd, deadline);
        }));
    }
    for (int i = 1; i < fibers; i += 2)
        pairs[static_cast<std::size_t>(i)]->send('x');
    bool all = true;
    for (auto& d : done)
        all = watched.carrier.finished(d, 5000ms) && all;
    int right = 0, early = 0;
    std::string first_wrong;
    for (int i = 0; i < fibers; ++i) {
        const Waited& w = waited[static_cast<std::size_t>(i)];
        const bool sent = i % 2 == 1;
        if (w.error.empty() && w.readable == sent) {
            ++right;
            if (sent && w.ms < 1000) ++early;
        } else if (first_wrong.empty()) {
            std::ostringstream one;
            one << "fiber " << i << (sent ? " (its peer wrote)" : " (its peer wrote nothing)")
                << ": wait_readable " << w;
            first_wrong = one.str();
        }
    }
    STEP("100 fibers waited on 100 sockets (1.5 s deadline); the peers of the odd ones wrote");
    STEP(right << " of 100 returned what their socket did; " << early << " of 50 readable ones "
               << "woke before 1 s" << (first_wrong.empty() ? "" : "; first wrong: ")
               << first_wrong);
    REQUIRE(all);
    CHECK(right == fibers);
    CHECK(early == fibers / 2);
}

// ---------------------------------------------------------------- task 3 (stretch): busy fibers

TEST_CASE("a fiber that yields in a loop does not starve a fiber waiting for its socket",
          "[ex7][task_3][points=2]") {
    Watched watched;
    SocketPair pair;
    std::atomic<bool> woke{false};
    Waited waited;
    long yields = 0;
    double yielded_ms = 0;
    auto reader = watched.carrier.start([&] {
        waited = wait_for_fd(pair.mine, Clock::now() + 10000ms);
        woke = true;
    });
    auto busy = watched.carrier.start([&] {
        // A fiber that is always ready: the carrier never idles while it runs, so suspend_until
        // is not called. It stops when the reader woke, or after 3 s.
        const auto began = Clock::now();
        while (!woke && Clock::now() - began < 3000ms) {
            boost::this_fiber::yield();
            ++yields;
        }
        yielded_ms = ms_since(began);
    });
    std::this_thread::sleep_for(50ms);
    pair.send('x');
    const bool finished =
        watched.carrier.finished(reader, 6000ms) && watched.carrier.finished(busy, 6000ms);
    STEP("a fiber waited for its socket while another yielded in a loop; the peer wrote after "
         "50 ms; the yielder stopped "
         << (yielded_ms < 3000 ? "because the reader woke" : "at its 3 s cap") << " after "
         << yielded_ms << " ms and " << yields << " yields; wait_readable " << waited);
    REQUIRE(finished);
    CHECK(waited.readable);
    CHECK(yielded_ms < 3000); // the reader woke while the yielder still ran: order, not time
}

#include "pinning_detector.hpp"

#include "carrier.hpp"
#include "carrier_monitor.hpp"
#include "fiber_name.hpp"
#include "monitored_algorithm.hpp"
#include "process.hpp"
#include "stack_sampler.hpp"
#include "symbolizer.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <mutex>
#include <pthread.h>
#include <sched.h>
#include <stdexcept>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

std::int64_t now_ns() {
    return std::chrono::steady_clock::now().time_since_epoch().count();
}

// Whether `frame` is what "blocked in" should name: the innermost function a program calls by
// name (clock_nanosleep, poll, pthread_mutex_lock; not glibc's internal __lll_lock_wait), or a
// function of the program itself (a loop that computes). The same with or without the
// libraries' debug information installed.
bool names_the_wait(const Frame& frame) {
    if (frame.function == "??") return false;
    if (frame.in_program) return true;
    return frame.exported && frame.function[0] != '_';
}

// Puts the calling thread (the watchdog) ahead of every ordinary thread, if the process may: the
// lowest real-time priority, which nothing it might start inherits. Why: to leave
// out the time the OS kept a carrier waiting for a CPU, the watchdog must read the carrier's
// statistics while that wait is under way (turn_share.hpp). On a machine crowded with runnable
// threads, an ordinary watchdog waits in the same queue as the carrier and may first read it
// once the carrier has had its CPU back: the wait is then in that reading, and it counts towards
// a pin. At real-time priority no ordinary thread keeps it from its tick. It needs CAP_SYS_NICE
// (root has it, outside most containers) or an RLIMIT_RTPRIO above 0. Returns 0 or the errno.
int watch_ahead_of_ordinary_threads() {
    sched_param param{};
    param.sched_priority = sched_get_priority_min(SCHED_FIFO);
    return ::sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &param) == 0 ? 0 : errno;
}

// The watchdog's view of one carrier.
struct Watched {
    std::shared_ptr<CarrierMonitor> monitor;
    int schedstat_fd = -1; // the carrier thread's scheduler statistics; -1 if unavailable

    std::int64_t seen_turn = 0; // the turn under way at the last tick
    // The last readings of the carrier's times, taken once a tick while the carrier is awake, kept
    // by when they were taken (see readings_around in turn_share.hpp for why).
    static constexpr std::size_t kept_readings = 16;
    std::array<ThreadTimes, kept_readings> recent;
    std::size_t recent_count = 0;
    void remember(const ThreadTimes& times) { recent[recent_count++ % recent.size()] = times; }
    const ThreadTimes& last_times() const { // invalid before the first reading
        return recent[(recent_count + recent.size() - 1) % recent.size()];
    }
    // The first reading inside each of the last few turns seen under way, and the one before it,
    // kept until the turn ends, for turns longer than `recent` reaches back. (A turn reaches the
    // watchdog only once the next fiber is picked, and by then later turns may have been seen.)
    struct SeenTurn {
        std::int64_t start_ns = 0;
        ThreadTimes before; // last_times() as it was first seen
        ThreadTimes during; // read then, inside the turn
    };
    std::array<SeenTurn, 8> seen_turns;
    std::size_t seen_count = 0;
    // The readings to split the turn [start_ns, end_ns] with.
    ReadingsAround readings_around(std::int64_t start_ns, std::int64_t end_ns) const {
        std::array<ThreadTimes, kept_readings + 2> kept{};
        std::copy(recent.begin(), recent.end(), kept.begin());
        if (const SeenTurn* seen = find_seen(start_ns)) {
            kept[kept_readings] = seen->before;
            kept[kept_readings + 1] = seen->during;
        }
        return ::readings_around(start_ns, end_ns, kept.data(), kept.size());
    }
    const SeenTurn* find_seen(std::int64_t start_ns) const {
        for (const SeenTurn& seen : seen_turns)
            if (seen.start_ns == start_ns) return &seen;
        return nullptr;
    }

    std::int64_t sampled_turn = 0; // the turn a sample was asked for
    bool sample_pending = false;
    std::int64_t sample_requested_ns = 0;
    bool sample_ok = false; // `sample` belongs to sampled_turn
    StackSample sample;
    std::string fiber_name;

    Watched(std::shared_ptr<CarrierMonitor> m) : monitor(std::move(m)) {
        const std::string path = "/proc/self/task/" + std::to_string(monitor->tid()) + "/schedstat";
        schedstat_fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    }
    ~Watched() {
        if (schedstat_fd >= 0) ::close(schedstat_fd);
    }
    Watched(const Watched&) = delete;
    Watched& operator=(const Watched&) = delete;

    ThreadTimes times() const { return read_thread_times(schedstat_fd); }
};

std::unique_ptr<boost::fibers::algo::algorithm>
monitor_carrier(std::unique_ptr<boost::fibers::algo::algorithm> inner);

std::mutex current_mutex;
PinningDetector::Impl* current = nullptr; // the running detector, guarded by current_mutex

} // namespace

struct PinningDetector::Impl {
    Options options;
    std::chrono::nanoseconds threshold;
    // How often the watchdog looks: a quarter of the threshold, so a pin is sampled at most a
    // quarter of the threshold late; never more often than every millisecond. Each look is a
    // wake-up of the watchdog thread, its main cost (see pindemo/README.md): a higher threshold
    // costs less.
    std::chrono::microseconds tick;
    std::FILE* events_file = nullptr;
    std::atomic<int> events{0};

    std::mutex adopt_mutex;
    std::vector<std::shared_ptr<CarrierMonitor>> adopted; // new carriers, for the watchdog

    // The watchdog's own state.
    std::vector<std::unique_ptr<Watched>> watched;
    long long long_turns_alone = 0;     // long turns while no other fiber was ready
    long long long_turns_excused = 0;   // long only because the OS kept the thread off a CPU
    long long long_turns_stolen = 0;    // long only because the hypervisor took the CPU away
    long long long_turns_unwatched = 0; // long only while the watchdog itself was held up
    // The last stretches when the watchdog was held up (turn_share.hpp: Stretch), oldest
    // overwritten first, and what finding them needs: when it last knew itself awake, and its own
    // scheduler statistics (its own waits for a CPU are not a stall of the process).
    std::array<Stretch, 64> held_up{};
    std::size_t held_up_count = 0;
    std::int64_t awake_at_ns = 0;
    int own_schedstat_fd = -1;
    std::int64_t own_runqueue_ns = 0;
    int realtime_error = 0; // why the watchdog runs at ordinary priority (0: it does not)

    std::mutex stop_mutex;
    std::condition_variable stop_requested;
    bool stopping = false;
    std::thread watchdog;

    // Events found, on their way to the reporting thread. Naming a stack runs addr2line, which
    // takes milliseconds to seconds: on the watchdog, that would be ticks missed, and turns it
    // could not split. The reporting thread, and the addr2line it starts, run at ordinary
    // priority (the constructor's thread starts it, not the watchdog).
    struct Unnamed {
        PinningEvent event;
        bool sampled = false;
        StackSample sample;
    };
    std::mutex report_mutex;
    std::condition_variable report_ready;
    std::deque<Unnamed> to_report;
    bool reporting_done = false;
    Symbolizer symbolizer; // the reporting thread's
    std::thread reporter;

    explicit Impl(Options o)
        : options(std::move(o)), threshold(options.threshold),
          tick(std::max<std::chrono::microseconds>(options.threshold / 4,
                                                   std::chrono::milliseconds(1))) {}

    std::shared_ptr<CarrierMonitor> add_carrier(std::string label, int tid) {
        auto monitor = std::make_shared<CarrierMonitor>(std::move(label), tid);
        std::lock_guard<std::mutex> lock(adopt_mutex);
        adopted.push_back(monitor);
        return monitor;
    }

    void run() {
        name_this_thread("pin-watchdog");
        realtime_error = watch_ahead_of_ordinary_threads();
        own_schedstat_fd = ::open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
        const ThreadTimes own = read_thread_times(own_schedstat_fd);
        own_runqueue_ns = own.runqueue_ns;
        awake_at_ns = now_ns();
        std::unique_lock<std::mutex> lock(stop_mutex);
        while (!stop_requested.wait_for(lock, tick, [this] { return stopping; })) {
            lock.unlock();
            awake_after(tick_ns());
            look();
            lock.lock();
            awake_after(0);
        }
        lock.unlock();
        awake_after(tick_ns()); // woken by stop(), or at the tick: either is no stall
        // Final rounds: turns that ended just now, and samples still on their way.
        for (int round = 0; round < 100; ++round) {
            look();
            bool pending = false;
            for (const auto& w : watched)
                pending = pending || w->sample_pending;
            if (!pending) break;
            constexpr auto nap = std::chrono::milliseconds(2);
            awake_after(0);
            std::this_thread::sleep_for(nap);
            awake_after(std::chrono::nanoseconds(nap).count());
        }
        if (own_schedstat_fd >= 0) ::close(own_schedstat_fd);
    }

    std::int64_t tick_ns() const { return std::chrono::nanoseconds(tick).count(); }

    // Stops watching new carriers, then the watchdog (after its final rounds), then the
    // reporting thread (after the events still queued). Either thread may not exist.
    void stop();

    // A checkpoint of the watchdog's: since the last one it meant to sleep `planned_ns` and
    // otherwise work for microseconds. Over a tick more than that, it was held up (turn_share.hpp:
    // Stretch), less any time it waited for a CPU since it last found itself held up: that is
    // the OS's run queue, which the carriers' own statistics show. (So a watchdog without
    // real-time priority, kept waiting by a crowd, excuses nothing: for one at real-time
    // priority that wait is nil.)
    void awake_after(std::int64_t planned_ns) {
        const std::int64_t now = now_ns();
        const std::int64_t from = awake_at_ns + planned_ns;
        awake_at_ns = now;
        if (now - from <= tick_ns()) return;
        const ThreadTimes own = read_thread_times(own_schedstat_fd);
        std::int64_t waited = 0;
        if (own.valid) {
            waited = own.runqueue_ns - own_runqueue_ns;
            own_runqueue_ns = own.runqueue_ns;
        }
        const std::int64_t to = now - waited; // a wait for a CPU comes last, as it wakes
        if (to - from > tick_ns()) held_up[held_up_count++ % held_up.size()] = {from, to};
    }

    void look() {
        {
            std::lock_guard<std::mutex> lock(adopt_mutex);
            for (auto& monitor : adopted)
                watched.push_back(std::make_unique<Watched>(std::move(monitor)));
            adopted.clear();
        }
        for (auto& w : watched) {
            awake_after(0); // before it collects an ended turn: a stop just now must be known
            look_at(*w);
        }
        // Forget carriers that have ended, once everything they reported is out.
        for (auto it = watched.begin(); it != watched.end();) {
            Watched& w = **it;
            LongTurn turn;
            if (w.monitor->retired() && !w.sample_pending && !w.monitor->next_long_turn(turn)) {
                it = watched.erase(it);
            } else {
                ++it;
            }
        }
    }

    void look_at(Watched& w) {
        const std::int64_t now = now_ns();
        if (w.sample_pending) {
            if (w.monitor->collect_sample(w.sample)) {
                sample_arrived(w);
            } else if (now - w.sample_requested_ns >
                       std::chrono::nanoseconds(std::chrono::seconds(1)).count()) {
                // The signal never got handled (the thread ended meanwhile): report without it.
                w.monitor->cancel_sample();
                w.sample_pending = false;
                w.sample_ok = false;
            }
        }
        if (!w.sample_pending) {
            LongTurn turn;
            while (w.monitor->next_long_turn(turn))
                turn_ended(w, turn);
        }
        const std::int64_t turn = w.monitor->current_turn_start();
        const bool new_turn = turn != w.seen_turn;
        w.seen_turn = turn;
        // Reading the carrier's times is a /proc read, the watchdog's main cost: once a tick,
        // and only while the carrier is awake. An idle server reads nothing.
        // In the scheduler's own turn (0) it reads too: the carrier reads the clock for the next
        // fiber's turn a moment before it publishes it, and if the OS makes it wait in between,
        // this is the only reading taken inside that turn (readings_around).
        if (turn == 0 && w.monitor->is_parked()) return;
        const ThreadTimes times = w.times();
        if (turn != 0) { // a fiber's turn
            if (new_turn) {
                // The turn was published before this reading began, so the reading lies inside it
                // (readings_around drops it if the turn ended meanwhile).
                w.seen_turns[w.seen_count++ % w.seen_turns.size()] = {turn, w.last_times(), times};
            } else if (turn != w.sampled_turn && !w.sample_pending) {
                // Sample once the turn is long without the time the OS kept the thread waiting.
                // (Steal is only known as the turn ends: now the carrier may be asleep in the very
                // call that pins it, which a reading from here cannot tell from steal.)
                // Nor while the turn is long only by a stretch the watchdog was held up: after a
                // stop every carrier would be signalled, just as they all want a CPU again.
                const ReadingsAround around = w.readings_around(turn, times.at_ns);
                TurnShare so_far =
                    share_of_turn(turn, times.at_ns, around.before, around.during, times);
                so_far.pinned_ns += so_far.stolen_ns; // not known yet
                so_far.stolen_ns = 0;
                if (fibers_part(so_far, held_up_during(turn, times.at_ns)) >= threshold.count())
                    ask_for_sample(w, turn);
            }
        }
        if (times.valid) w.remember(times);
    }

    void ask_for_sample(Watched& w, std::int64_t turn) {
        if (!w.monitor->request_sample()) return;
        w.sampled_turn = turn;
        w.sample_pending = true;
        w.sample_ok = false;
        w.sample_requested_ns = now_ns();
        // The handler runs as soon as the carrier thread gets a CPU, usually within
        // microseconds. Waiting for it briefly lets us look the fiber's name up while the fiber
        // most likely still holds the carrier. If it takes longer, later ticks collect it.
        constexpr auto nap = std::chrono::microseconds(100);
        for (int i = 0; i < 100 && w.sample_pending; ++i) {
            if (w.monitor->collect_sample(w.sample)) {
                sample_arrived(w);
            } else {
                awake_after(0);
                std::this_thread::sleep_for(nap);
                awake_after(std::chrono::nanoseconds(nap).count());
            }
        }
    }

    void sample_arrived(Watched& w) {
        w.sample_pending = false;
        w.sample_ok = w.sample.turn_start_ns == w.sampled_turn;
        // A fiber's name is removed when it ends, so a name found is (but for a freed context
        // being reused and named within microseconds) the sampled fiber's.
        if (w.sample_ok) w.fiber_name = fiber_display_name(w.sample.fiber);
    }

    void turn_ended(Watched& w, const LongTurn& turn) {
        if (turn.ready_waiting <= 0) {
            ++long_turns_alone;
            return;
        }
        const ReadingsAround around = w.readings_around(turn.start_ns, turn.end_ns);
        const TurnShare share =
            share_of_turn(turn.start_ns, turn.end_ns, around.before, around.during, turn.at_end);
        if (share.pinned_ns < threshold.count()) {
            const bool os_alone = share.pinned_ns + share.stolen_ns < threshold.count();
            ++(os_alone ? long_turns_excused : long_turns_stolen);
            return;
        }
        // Not claimed either: a turn long only by the stretches when the watchdog was held up.
        const std::int64_t held = held_up_during(turn.start_ns, turn.end_ns);
        if (fibers_part(share, held) < threshold.count()) {
            ++long_turns_unwatched;
            return;
        }
        Unnamed found;
        PinningEvent& event = found.event;
        event.carrier = w.monitor->label();
        event.duration_ms = (turn.end_ns - turn.start_ns) / 1e6;
        event.runqueue_ms = share.runqueue_ns / 1e6;
        event.stolen_ms = share.stolen_ns / 1e6;
        event.held_up_ms = held / 1e6;
        event.ready_waiting = turn.ready_waiting;
        found.sampled = w.sample_ok && w.sampled_turn == turn.start_ns;
        event.fiber = found.sampled ? w.fiber_name : fiber_display_name(turn.fiber);
        if (found.sampled) {
            event.sampled_at_ms = (w.sample.taken_ns - turn.start_ns) / 1e6;
            found.sample = w.sample;
        }
        events.fetch_add(1);
        {
            std::lock_guard<std::mutex> lock(report_mutex);
            to_report.push_back(std::move(found));
        }
        report_ready.notify_one();
    }

    // How much of [start_ns, end_ns] the watchdog was held up.
    std::int64_t held_up_during(std::int64_t start_ns, std::int64_t end_ns) const {
        return time_covered(start_ns, end_ns, held_up.data(), held_up.size());
    }

    // The reporting thread: names the sampled stacks and reports the events, in the order found.
    void run_reporter() {
        name_this_thread("pin-reporter");
        std::unique_lock<std::mutex> lock(report_mutex);
        while (true) {
            report_ready.wait(lock, [this] { return !to_report.empty() || reporting_done; });
            if (to_report.empty()) return; // done, and nothing left
            Unnamed found = std::move(to_report.front());
            to_report.pop_front();
            lock.unlock();
            if (found.sampled) name_the_stack(found.event, found.sample);
            report(found.event);
            lock.lock();
        }
    }

    void name_the_stack(PinningEvent& event, const StackSample& sample) {
        const auto frames = symbolizer.frames(sample.frames, sample.depth, sample.first_is_exact);
        // Everything down to our own code matters; below it, only our frames and calls into
        // shared libraries: the rest is std::function and Boost.Context templates inlined
        // from system headers, which say nothing about the pin.
        int left_out = 0;
        for (const auto& frame : frames) {
            if (event.blocked_in.empty() && names_the_wait(frame))
                event.blocked_in = frame.function;
            const bool below_our_code = !event.called_from.empty();
            if (event.called_from.empty() && frame.in_project) event.called_from = frame.text();
            if (below_our_code && !frame.in_project && !frame.file.empty()) {
                ++left_out;
                continue;
            }
            event.stack.push_back(frame.text());
        }
        if (event.blocked_in.empty() && !frames.empty()) event.blocked_in = frames[0].function;
        if (left_out > 0)
            event.stack.push_back("(" + std::to_string(left_out) +
                                  " frames inlined from library headers left out)");
    }

    void report(const PinningEvent& event) {
        if (options.print) write_all(STDERR_FILENO, to_text(event));
        if (events_file) {
            std::fputs((to_json(event) + "\n").c_str(), events_file);
            std::fflush(events_file);
        }
        if (options.on_event) options.on_event(event);
    }

    static void write_all(int fd, const std::string& text) {
        std::size_t done = 0;
        while (done < text.size()) {
            const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
            if (n > 0) {
                done += static_cast<std::size_t>(n);
            } else if (n < 0 && errno != EINTR) {
                return;
            }
        }
    }

    std::string summary() const {
        long long dropped = 0;
        for (const auto& w : watched)
            dropped += static_cast<long long>(w->monitor->dropped_turns());
        std::string text =
            "pinning detector: " + std::to_string(events.load()) +
            (events.load() == 1 ? " event" : " events") + " (threshold " +
            std::to_string(options.threshold.count()) +
            "ms); not reported: " + std::to_string(long_turns_alone) +
            " long turns with no fiber waiting, " + std::to_string(long_turns_excused) +
            " long only because the OS kept the carrier off a CPU, " +
            std::to_string(long_turns_stolen) + " only because the hypervisor took its CPU away";
        if (long_turns_unwatched > 0)
            text += "; " + std::to_string(long_turns_unwatched) +
                    " long only while the watchdog itself was held up (the process or the "
                    "machine stalled)";
        if (dropped > 0)
            text += "; " + std::to_string(dropped) + " long turns lost (watchdog too slow)";
        if (realtime_error != 0)
            text += "; the watchdog could not get real-time priority (" +
                    std::string(std::strerror(realtime_error)) +
                    "), so on a machine crowded with threads a carrier's wait for a CPU may pass "
                    "for a pin";
        return text + "\n";
    }
};

namespace {

std::unique_ptr<boost::fibers::algo::algorithm>
monitor_carrier(std::unique_ptr<boost::fibers::algo::algorithm> inner) {
    std::lock_guard<std::mutex> lock(current_mutex);
    if (current == nullptr) return inner;
    char name[16] = "";
    ::pthread_getname_np(::pthread_self(), name, sizeof name);
    const int tid = static_cast<int>(::gettid());
    auto monitor = current->add_carrier(std::string(name) + "#" + std::to_string(tid), tid);
    return std::make_unique<MonitoredAlgorithm>(std::move(inner), std::move(monitor),
                                                current->threshold);
}

} // namespace

PinningDetector::PinningDetector(Options options)
    : impl_(std::make_unique<Impl>(std::move(options))) {
    if (impl_->options.threshold < std::chrono::milliseconds(1))
        throw std::runtime_error("the pinning threshold must be at least 1ms");
    if (!impl_->options.events_path.empty()) {
        impl_->events_file = std::fopen(impl_->options.events_path.c_str(), "w");
        if (impl_->events_file == nullptr)
            throw std::runtime_error("cannot write pinning events to " +
                                     impl_->options.events_path + ": " + std::strerror(errno));
    }
    install_sample_handler();
    {
        std::lock_guard<std::mutex> lock(current_mutex);
        if (current != nullptr) {
            if (impl_->events_file) std::fclose(impl_->events_file);
            throw std::runtime_error("a pinning detector is already running in this process");
        }
        current = impl_.get();
    }
    observe_carrier_schedulers(monitor_carrier);
    try {
        impl_->reporter = std::thread([impl = impl_.get()] { impl->run_reporter(); });
        impl_->watchdog = std::thread([impl = impl_.get()] { impl->run(); });
    } catch (...) { // no thread for it: leave nothing behind
        impl_->stop();
        if (impl_->events_file) std::fclose(impl_->events_file);
        throw;
    }
}

void PinningDetector::Impl::stop() {
    observe_carrier_schedulers(nullptr);
    {
        std::lock_guard<std::mutex> lock(current_mutex);
        current = nullptr;
    }
    {
        std::lock_guard<std::mutex> lock(stop_mutex);
        stopping = true;
    }
    stop_requested.notify_all();
    if (watchdog.joinable()) watchdog.join();
    {
        std::lock_guard<std::mutex> lock(report_mutex);
        reporting_done = true;
    }
    report_ready.notify_one();
    if (reporter.joinable()) reporter.join(); // every event found is out
}

PinningDetector::~PinningDetector() {
    impl_->stop();
    const std::string summary = impl_->summary();
    if (impl_->options.print) Impl::write_all(STDERR_FILENO, summary);
    if (impl_->options.on_summary) impl_->options.on_summary(summary);
    if (impl_->events_file) std::fclose(impl_->events_file);
}

int PinningDetector::events() const {
    return impl_->events.load();
}

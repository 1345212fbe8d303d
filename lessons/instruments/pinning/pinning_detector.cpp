#include "lessons/instruments/pinning/pinning_detector.hpp"

#include "lessons/02-fibers/carrier.hpp"
#include "lessons/common/flags.hpp"
#include "lessons/common/process.hpp"
#include "lessons/instruments/pinning/carrier_monitor.hpp"
#include "lessons/instruments/pinning/fiber_name.hpp"
#include "lessons/instruments/pinning/frame_names.hpp"
#include "lessons/instruments/pinning/monitored_algorithm.hpp"
#include "lessons/instruments/pinning/stack_sampler.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <pthread.h>
#include <stdexcept>
#include <thread>
#include <unistd.h>

namespace {

std::int64_t now_ns() {
    return std::chrono::steady_clock::now().time_since_epoch().count();
}

// What "blocked in" names: the innermost function a program calls by name (clock_nanosleep,
// poll, pthread_mutex_lock; not glibc's internal __lll_lock_wait), or one of the program's own
// (a loop that computes).
bool names_the_wait(const Frame& frame) {
    if (frame.function == "??") return false;
    return frame.in_program || frame.function[0] != '_';
}

// The watchdog's view of one carrier.
struct Watched {
    std::shared_ptr<CarrierMonitor> monitor;
    std::int64_t sampled_turn = 0; // the turn a sample was asked for
    std::string sampled_fiber;     // its fiber's name, read while the fiber was alive
    StackSample sample;            // the last sample taken
};

} // namespace

struct PinningDetector::Impl {
    Options options;
    std::FILE* events_file = nullptr;
    std::atomic<int> events{0};

    std::mutex mutex; // guards stopping and added
    std::condition_variable wake;
    bool stopping = false;
    std::vector<Watched> added;   // carriers started since the watchdog last looked
    std::vector<Watched> watched; // the watchdog's own
    std::thread watchdog;

    // The detector the carriers report to, and a lock so that none is destroyed mid-report.
    static std::mutex current_mutex;
    static Impl* current;

    // The scheduler observer (lesson 02's hook): on each new carrier thread, before it runs.
    static std::unique_ptr<boost::fibers::algo::algorithm>
    watch_carrier(std::unique_ptr<boost::fibers::algo::algorithm> algorithm) {
        std::lock_guard<std::mutex> current_lock(current_mutex);
        Impl* self = current;
        if (self == nullptr) return algorithm;
        char name[16] = "";
        ::pthread_getname_np(::pthread_self(), name, sizeof name);
        const int tid = static_cast<int>(::gettid());
        auto monitor =
            std::make_shared<CarrierMonitor>(std::string(name) + "#" + std::to_string(tid), tid);
        {
            std::lock_guard<std::mutex> lock(self->mutex);
            self->added.emplace_back();
            self->added.back().monitor = monitor;
        }
        return std::make_unique<MonitoredAlgorithm>(std::move(algorithm), std::move(monitor),
                                                    self->options.threshold);
    }

    void run() {
        name_this_thread("pin-watchdog");
        const auto tick = std::max(options.threshold / 4, std::chrono::milliseconds(1));
        std::unique_lock<std::mutex> lock(mutex);
        for (bool last = false; !last;) {
            wake.wait_for(lock, tick, [&] { return stopping; });
            last = stopping;
            std::move(added.begin(), added.end(), std::back_inserter(watched));
            added.clear();
            lock.unlock(); // reporting may take a while; new carriers must not wait for it
            look();
            lock.lock();
        }
    }

    void look() {
        const std::int64_t threshold_ns = std::chrono::nanoseconds(options.threshold).count();
        for (auto w = watched.begin(); w != watched.end();) {
            const bool retired = w->monitor->retired(); // before its last turns are taken
            const std::vector<LongTurn> turns = w->monitor->take_long_turns();
            w->monitor->collect_sample(w->sample); // after the turns: a sample of theirs is in
            for (const LongTurn& turn : turns)
                report(*w, turn);
            std::int64_t start = 0;
            const void* fiber = nullptr;
            if (!retired && w->monitor->current_turn(start, fiber) && start != w->sampled_turn &&
                now_ns() - start >= threshold_ns) {
                w->sampled_turn = start;
                w->sampled_fiber = fiber_name(fiber); // the fiber is alive: it holds the carrier
                w->monitor->request_sample();
            }
            w = retired ? watched.erase(w) : w + 1;
        }
    }

    void report(const Watched& w, const LongTurn& turn) {
        PinningEvent event;
        event.carrier = w.monitor->label();
        event.fiber = w.sampled_turn == turn.start_ns && !w.sampled_fiber.empty() ? w.sampled_fiber
                                                                                  : turn.fiber_name;
        event.duration_ms = (turn.end_ns - turn.start_ns) / 1e6;
        event.cpu_ms = turn.cpu_ns / 1e6;
        event.ready_waiting = turn.ready_waiting;
        if (w.sample.turn_start_ns == turn.start_ns && w.sample.depth > 0) {
            event.sampled_at_ms = (w.sample.taken_ns - turn.start_ns) / 1e6;
            for (const Frame& frame :
                 name_frames(w.sample.frames, w.sample.depth, w.sample.first_is_exact)) {
                if (event.blocked_in.empty() && names_the_wait(frame))
                    event.blocked_in = frame.function;
                // Below the repository's first frame, the standard library's inlined plumbing
                // (std::function, std::invoke) only separates one of our frames from the next.
                if (!event.called_from.empty() && frame.file.rfind("/usr/include/c++/", 0) == 0)
                    continue;
                if (event.called_from.empty() && frame.in_project) event.called_from = frame.text();
                event.stack.push_back(frame.text());
            }
        }
        ++events;
        if (options.print) std::fputs(to_text(event).c_str(), stderr);
        if (events_file != nullptr) {
            std::fprintf(events_file, "%s\n", to_json(event).c_str());
            std::fflush(events_file);
        }
        if (options.on_event) options.on_event(event);
    }
};

std::mutex PinningDetector::Impl::current_mutex;
PinningDetector::Impl* PinningDetector::Impl::current = nullptr;

PinningDetector::PinningDetector(Options options) : impl_(std::make_unique<Impl>()) {
    if (options.threshold < std::chrono::milliseconds(1))
        throw std::runtime_error("the pinning threshold must be at least 1ms");
    // Held until this detector is the current one, so that a refused second detector never
    // truncates the first one's events file.
    std::lock_guard<std::mutex> lock(Impl::current_mutex);
    if (Impl::current != nullptr)
        throw std::runtime_error("a pinning detector is already running in this process");
    if (!options.events_path.empty()) {
        impl_->events_file = std::fopen(options.events_path.c_str(), "w");
        if (impl_->events_file == nullptr)
            throw std::runtime_error("cannot write pinning events to " + options.events_path +
                                     ": " + std::strerror(errno));
    }
    impl_->options = std::move(options);
    try {
        install_sample_handler();
        impl_->watchdog = std::thread([this] { impl_->run(); });
    } catch (...) {
        if (impl_->events_file != nullptr) std::fclose(impl_->events_file);
        throw;
    }
    Impl::current = impl_.get(); // last: nothing above can leave it pointing at a failed detector
    observe_carrier_schedulers(&Impl::watch_carrier);
}

PinningDetector::~PinningDetector() {
    stop_observing_carrier_schedulers(&Impl::watch_carrier);
    {
        std::lock_guard<std::mutex> lock(Impl::current_mutex);
        Impl::current = nullptr;
    }
    {
        std::lock_guard<std::mutex> lock(impl_->mutex);
        impl_->stopping = true;
    }
    impl_->wake.notify_one();
    impl_->watchdog.join();
    if (impl_->options.print)
        std::fprintf(stderr, "pinning detector: %d event%s (threshold %s)\n", impl_->events.load(),
                     impl_->events == 1 ? "" : "s",
                     format_duration(impl_->options.threshold).c_str());
    if (impl_->events_file != nullptr) std::fclose(impl_->events_file);
}

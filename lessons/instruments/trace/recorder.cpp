#include "lessons/instruments/trace/recorder.hpp"

#include "lessons/02-fibers/carrier.hpp"
#include "lessons/common/tracing.hpp"
#include "lessons/instruments/trace/records.hpp"
#include "lessons/instruments/trace/trace_writer.hpp"

#include <atomic>
#include <boost/fiber/context.hpp>
#include <boost/fiber/fss.hpp>
#include <cstdio>
#include <memory>
#include <mutex>
#include <pthread.h>
#include <stdexcept>
#include <vector>

namespace trace {
namespace {

// Records kept per track and per kind (turns, waits, labels, counters). Memory must stay bounded
// however long and however hard the server runs: 131,072 turns cover a 2 s window at 65,000
// switches a second on one carrier, more than a carrier makes serving /hello flat out, and
// cost 3 MiB (24 bytes each) once full (24 MiB for the four kinds). At the limit the oldest
// record is overwritten: one still inside the window is counted in otherData.dropped_events,
// and that track's trace then starts later than the window asks.
constexpr std::size_t events_per_carrier = 1u << 17;
// Any other thread that records (lesson 05's 200 platform threads) makes one slice and a few
// waits per request: 2,048 cover a 2 s window at 1,000 requests a second on that thread, and 200
// such tracks hold at most 77 MiB (192 bytes a record for the four kinds), not 4.8 GiB.
constexpr std::size_t events_per_thread = 1u << 11;

struct Tracer {
    TraceOptions options;
    std::int64_t start_ns = 0;
    std::mutex mutex; // guards tracks
    std::vector<std::shared_ptr<Track>> tracks;
    std::mutex write_mutex; // one write at a time (SIGUSR1 and exit), and one start
    bool started = false;
    std::atomic<std::int64_t> stop_began_ns{0}; // 0: no stop yet
};

// Never destroyed: carriers and the SIGUSR1 writer may still record while the program exits.
Tracer& tracer() {
    static auto* instance = new Tracer;
    return *instance;
}

thread_local Track* this_track = nullptr;
thread_local const void* working_for = nullptr; // set by a TraceTurn

// The calling thread's track, made on first use and named after the thread; nullptr if memory
// ran out.
Track* this_thread_track(std::size_t capacity = events_per_thread) noexcept {
    if (this_track != nullptr) return this_track;
    try {
        char name[16] = "";
        ::pthread_getname_np(::pthread_self(), name, sizeof name);
        auto track = std::make_shared<Track>(capacity);
        track->name = name;
        Tracer& t = tracer();
        track->window_ns = std::chrono::nanoseconds(t.options.window).count();
        std::lock_guard<std::mutex> lock(t.mutex);
        track->tid = static_cast<int>(t.tracks.size()) + 1;
        t.tracks.push_back(track);
        this_track = track.get();
    } catch (...) {
    }
    return this_track;
}

const void* current_fiber() noexcept {
    return working_for != nullptr ? working_for : boost::fibers::context::active();
}

void add_label(const void* fiber, const char* format, std::va_list args) noexcept {
    Track* track = this_thread_track();
    if (track == nullptr) return;
    Label label{fiber, now_ns(), {}};
    std::vsnprintf(label.text, sizeof label.text, format, args); // cuts a longer label
    track->add(track->labels, label);
}

void add_label(const void* fiber, const char* format, ...) noexcept {
    std::va_list args;
    va_start(args, format);
    add_label(fiber, format, args);
    va_end(args);
}

// Lives in a labelled fiber's fiber-specific storage: when the fiber ends, its label ends too,
// so a new fiber that Boost places at the same address is not named after the old one.
struct LabelEnd {
    explicit LabelEnd(const void* owner) : fiber(owner) {}
    LabelEnd(const LabelEnd&) = delete;
    LabelEnd& operator=(const LabelEnd&) = delete;
    ~LabelEnd() { add_label(fiber, ""); }
    const void* fiber;
};

boost::fibers::fiber_specific_ptr<LabelEnd>& label_ends() {
    static auto* instance = new boost::fibers::fiber_specific_ptr<LabelEnd>;
    return *instance;
}

// What the facade's calls record (lessons/common/tracing.hpp).
class Recorder final : public TraceRecorder {
public:
    void label_fiber(const char* format, std::va_list args) noexcept override {
        if (working_for == nullptr && label_ends().get() == nullptr) {
            try {
                label_ends().reset(new LabelEnd(boost::fibers::context::active()));
            } catch (...) { // out of memory: a later fiber at this address may borrow the label
            }
        }
        add_label(current_fiber(), format, args);
    }
    void counter(const char* name, const char* key, std::int64_t value, const char* key2,
                 std::int64_t value2) noexcept override {
        if (Track* track = this_thread_track())
            track->add(track->counters, Counter{name, now_ns(), {key, key2}, {value, value2}});
    }
    bool begin_wait(TraceWaitRecord& wait) noexcept override {
        Track* track = this_thread_track();
        if (track == nullptr) return false;
        wait.where = track;
        wait.fiber = current_fiber();
        wait.start_ns = now_ns();
        return true;
    }
    void end_wait(const TraceWaitRecord& wait) noexcept override {
        auto* track = static_cast<Track*>(wait.where);
        track->add(track->waits, Wait{wait.name, wait.fiber, wait.start_ns, now_ns(), wait.key,
                                      wait.text, wait.number});
    }
    bool begin_turn(TraceTurnRecord& turn) noexcept override {
        Track* track = this_thread_track();
        if (track == nullptr) return false;
        working_for = turn.fiber;
        turn.where = track;
        turn.start_ns = now_ns();
        return true;
    }
    void end_turn(const TraceTurnRecord& turn) noexcept override {
        working_for = nullptr;
        auto* track = static_cast<Track*>(turn.where);
        track->add(track->turns, Turn{turn.fiber, turn.start_ns, now_ns()});
    }
    void stop_began() noexcept override {
        std::int64_t none = 0; // the first stop counts
        tracer().stop_began_ns.compare_exchange_strong(none, now_ns());
    }
};

bool is_dispatcher(const boost::fibers::context* ctx) {
    return ctx->is_context(boost::fibers::type::dispatcher_context);
}

// A carrier's scheduling algorithm, wrapped: forwards every call, and at each switch stores the
// turn that just ended. One clock read per switch. The scheduler's own turns (the dispatcher:
// idling, polling, starting the next fiber) are not stored.
class TracedAlgorithm final : public boost::fibers::algo::algorithm {
public:
    TracedAlgorithm(std::unique_ptr<boost::fibers::algo::algorithm> inner, Track* track)
        : inner_(std::move(inner)), track_(track) {}

    void awakened(boost::fibers::context* ctx) noexcept override { inner_->awakened(ctx); }
    boost::fibers::context* pick_next() noexcept override {
        boost::fibers::context* next = inner_->pick_next();
        if (next == nullptr) return nullptr; // the dispatcher goes on looking
        const std::int64_t now = now_ns();
        if (holder_ != nullptr) track_->add(track_->turns, Turn{holder_, turn_start_ns_, now});
        holder_ = is_dispatcher(next) ? nullptr : next;
        turn_start_ns_ = now;
        return next;
    }
    bool has_ready_fibers() const noexcept override { return inner_->has_ready_fibers(); }
    void suspend_until(std::chrono::steady_clock::time_point const& until) noexcept override {
        inner_->suspend_until(until);
    }
    void notify() noexcept override { inner_->notify(); }

private:
    std::unique_ptr<boost::fibers::algo::algorithm> inner_;
    Track* track_;
    const boost::fibers::context* holder_ = nullptr; // nullptr: the scheduler's own turn
    std::int64_t turn_start_ns_ = 0;
};

// The scheduler observer (carrier.hpp): on each new carrier thread, before its first fiber.
std::unique_ptr<boost::fibers::algo::algorithm>
trace_carrier(std::unique_ptr<boost::fibers::algo::algorithm> algorithm) {
    Track* track = this_thread_track(events_per_carrier);
    if (track == nullptr) return algorithm;
    // The carrier's own first fiber, which starts the fibers spawned onto it (Carrier::run).
    add_label(boost::fibers::context::active(), "carrier inbox");
    return std::make_unique<TracedAlgorithm>(std::move(algorithm), track);
}

} // namespace
} // namespace trace

void start_tracing(TraceOptions options) {
    using namespace trace;
    Tracer& t = tracer();
    std::lock_guard<std::mutex> lock(t.write_mutex);
    if (t.started) throw std::runtime_error("tracing is already on in this process");
    check_writable(options.path);
    t.options = std::move(options);
    t.start_ns = now_ns();
    // Installed only once the options are set: a thread that sees the recorder sees them.
    static auto* recorder = new Recorder; // never destroyed, as the tracer
    install_trace_recorder(*recorder);
    t.started = true;
    observe_carrier_schedulers(&trace_carrier);
}

bool write_trace() {
    using namespace trace;
    Tracer& t = tracer();
    std::lock_guard<std::mutex> writing(t.write_mutex);
    if (!t.started) return false;
    try {
        std::vector<std::shared_ptr<Track>> tracks;
        {
            std::lock_guard<std::mutex> lock(t.mutex);
            tracks = t.tracks;
        }
        return write_tracks({t.options.path, t.options.program, t.options.window, t.start_ns,
                             t.stop_began_ns.load()},
                            tracks);
    } catch (const std::exception& e) { // out of memory copying the tracks: the server goes on
        std::fprintf(stderr, "%s: cannot write the trace to %s: %s\n", t.options.program.c_str(),
                     t.options.path.c_str(), e.what());
        return false;
    }
}

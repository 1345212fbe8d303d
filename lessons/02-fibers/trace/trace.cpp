#include "trace.hpp"

#include "carrier.hpp"
#include "flags.hpp"

#include <algorithm>
#include <atomic>
#include <boost/fiber/context.hpp>
#include <boost/fiber/fss.hpp>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <pthread.h>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>
#include <unordered_map>
#include <vector>

namespace {

// Records kept per track and per kind (turns, waits, labels, counters). Memory must stay bounded
// however long and however hard the server runs: 131,072 turns cover a 2 s window at 65,000
// switches a second on one carrier, more than a carrier makes serving /hello flat out, and
// cost 3 MiB (24 bytes each; rings grow only as far as they are used). At the limit the oldest
// record is overwritten: one still inside the window is counted in otherData.dropped_events, and
// that track's trace then starts later than the window asks.
constexpr std::size_t events_per_track = 1u << 17;

std::int64_t now_ns() {
    return std::chrono::steady_clock::now().time_since_epoch().count();
}

// One relaxed load decides whether anything is recorded.
std::atomic<bool> tracing_on{false};

struct Turn {
    const void* fiber;
    std::int64_t start_ns, end_ns;
};
struct Wait {
    const char* name;
    const void* fiber;
    std::int64_t start_ns, end_ns;
    const char* key; // the one argument, a text or a number; nullptr: none
    const char* text;
    std::int64_t number;
};
struct Label {
    const void* fiber;
    std::int64_t at_ns;
    char text[trace_label_chars + 1]; // "": the fiber ended
};
struct Counter {
    const char* name;
    std::int64_t at_ns;
    const char* key[2];
    std::int64_t value[2];
};
// When a record was complete: what the window is measured against.
std::int64_t done_ns(const Turn& turn) {
    return turn.end_ns;
}
std::int64_t done_ns(const Wait& wait) {
    return wait.end_ns;
}
std::int64_t done_ns(const Label& label) {
    return label.at_ns;
}
std::int64_t done_ns(const Counter& counter) {
    return counter.at_ns;
}

// The last events_per_track records, oldest overwritten first.
template <typename T> class Ring {
public:
    bool full() const { return items_.size() == events_per_track; }
    const T& oldest() const { return full() ? items_[next_] : items_.front(); }
    void push(const T& item) {
        if (!full()) {
            items_.push_back(item);
            return;
        }
        items_[next_] = item;
        next_ = (next_ + 1) % events_per_track;
    }
    std::vector<T> in_order() const {
        std::vector<T> out(items_.begin() + static_cast<std::ptrdiff_t>(next_), items_.end());
        out.insert(out.end(), items_.begin(), items_.begin() + static_cast<std::ptrdiff_t>(next_));
        return out;
    }

private:
    std::vector<T> items_;
    std::size_t next_ = 0; // the oldest, once full
};

} // namespace

// One thread's records. Only that thread adds to it (a TraceWait that ends elsewhere excepted);
// the writer copies them. The mutex is uncontended but for those moments: ~20 ns a record.
struct Track {
    int tid = 0;
    std::string name;
    std::int64_t window_ns = 0;
    std::mutex mutex;
    Ring<Turn> turns;
    Ring<Wait> waits;
    Ring<Label> labels;
    Ring<Counter> counters;
    std::uint64_t dropped = 0;

    template <typename T> void add(Ring<T>& ring, const T& record) noexcept {
        std::lock_guard<std::mutex> lock(mutex);
        if (ring.full() && done_ns(ring.oldest()) >= done_ns(record) - window_ns) ++dropped;
        try {
            ring.push(record);
        } catch (...) { // out of memory: this record is lost
            ++dropped;
        }
    }
};

namespace {

struct Tracer {
    TraceOptions options;
    std::int64_t start_ns = 0;
    std::mutex mutex; // guards tracks
    std::vector<std::shared_ptr<Track>> tracks;
    std::mutex write_mutex; // one write at a time (SIGUSR1 and exit)
};

// Never destroyed: carriers and the SIGUSR1 writer may still record while the program exits.
Tracer& tracer() {
    static auto* instance = new Tracer;
    return *instance;
}

thread_local Track* this_track = nullptr;
thread_local const void* working_for = nullptr; // set by TraceTurn

// The calling thread's track, made on first use and named after the thread; nullptr if memory
// ran out.
Track* this_thread_track() noexcept {
    if (this_track != nullptr) return this_track;
    try {
        char name[16] = "";
        ::pthread_getname_np(::pthread_self(), name, sizeof name);
        auto track = std::make_shared<Track>();
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
    Track* track = this_thread_track();
    if (track == nullptr) return algorithm;
    // The carrier's own first fiber, which starts the fibers spawned onto it (Carrier::run).
    add_label(boost::fibers::context::active(), "carrier inbox");
    return std::make_unique<TracedAlgorithm>(std::move(algorithm), track);
}

// --- Writing

// A JSON string; ASCII only, so that a label cut mid-character still parses.
std::string quoted(const char* text) {
    std::string out = "\"";
    for (const char* c = text; *c != '\0'; ++c) {
        const unsigned char byte = static_cast<unsigned char>(*c);
        if (byte == '"' || byte == '\\') {
            out += '\\';
            out += *c;
        } else if (byte < 0x20 || byte >= 0x7f) {
            out += '?';
        } else {
            out += *c;
        }
    }
    return out + "\"";
}

std::string fiber_address(const void* fiber) {
    char text[32];
    std::snprintf(text, sizeof text, "%p", fiber);
    return text;
}

// The labels every fiber had, to name its turns and waits: the label last set before the turn
// ended. A label's end ("") before the turn began means the fiber at that address is another.
class Names {
public:
    explicit Names(std::vector<Label> labels) : labels_(std::move(labels)) {
        for (const Label& label : labels_)
            by_fiber_[label.fiber].push_back(&label);
        for (auto& [fiber, list] : by_fiber_)
            std::stable_sort(list.begin(), list.end(),
                             [](const Label* a, const Label* b) { return a->at_ns < b->at_ns; });
    }
    std::string of(const void* fiber, std::int64_t start_ns, std::int64_t end_ns) const {
        const auto found = by_fiber_.find(fiber);
        if (found != by_fiber_.end()) {
            const auto& list = found->second;
            auto last = std::upper_bound(
                list.begin(), list.end(), end_ns,
                [](std::int64_t at, const Label* label) { return at < label->at_ns; });
            while (last != list.begin()) {
                const Label* label = *--last;
                if (label->text[0] != '\0') return quoted(label->text);
                if (label->at_ns < start_ns) break; // ended before: another fiber since
            }
        }
        return quoted(("fiber " + fiber_address(fiber)).c_str());
    }

private:
    std::vector<Label> labels_;
    std::unordered_map<const void*, std::vector<const Label*>> by_fiber_;
};

struct Snapshot {
    int tid;
    std::string name;
    std::vector<Turn> turns;
    std::vector<Wait> waits;
    std::vector<Counter> counters;
};

// Writes the events after `cutoff_ns` to `out`; returns how many.
std::size_t write_events(std::FILE* out, const Tracer& t, std::int64_t cutoff_ns,
                         const std::vector<Snapshot>& tracks, const Names& names) {
    const int pid = static_cast<int>(::getpid());
    const auto us = [&](std::int64_t ns) { return static_cast<double>(ns - t.start_ns) / 1e3; };
    std::size_t count = 0;
    std::fprintf(out, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":%s}}",
                 pid, quoted(t.options.program.c_str()).c_str());
    long long id = 0;
    for (const Snapshot& track : tracks) {
        std::fprintf(out,
                     ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,"
                     "\"args\":{\"name\":%s}}",
                     pid, track.tid, quoted(track.name.c_str()).c_str());
        for (const Turn& turn : track.turns) {
            if (turn.end_ns < cutoff_ns) continue;
            std::fprintf(out,
                         ",\n{\"ph\":\"X\",\"cat\":\"turn\",\"name\":%s,\"pid\":%d,\"tid\":%d,"
                         "\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"fiber\":\"%s\"}}",
                         names.of(turn.fiber, turn.start_ns, turn.end_ns).c_str(), pid, track.tid,
                         us(turn.start_ns), (turn.end_ns - turn.start_ns) / 1e3,
                         fiber_address(turn.fiber).c_str());
            ++count;
        }
        for (const Wait& wait : track.waits) {
            if (wait.end_ns < cutoff_ns) continue;
            std::string args = "\"fiber\":" + names.of(wait.fiber, wait.start_ns, wait.end_ns);
            if (wait.key != nullptr)
                args += "," + quoted(wait.key) + ":" +
                        (wait.text != nullptr ? quoted(wait.text) : std::to_string(wait.number));
            ++id;
            std::fprintf(out,
                         ",\n{\"ph\":\"b\",\"cat\":\"wait\",\"name\":%s,\"id\":%lld,\"pid\":%d,"
                         "\"tid\":%d,\"ts\":%.3f,\"args\":{%s}}"
                         ",\n{\"ph\":\"e\",\"cat\":\"wait\",\"name\":%s,\"id\":%lld,\"pid\":%d,"
                         "\"tid\":%d,\"ts\":%.3f}",
                         quoted(wait.name).c_str(), id, pid, track.tid, us(wait.start_ns),
                         args.c_str(), quoted(wait.name).c_str(), id, pid, track.tid,
                         us(wait.end_ns));
            count += 2;
        }
        for (const Counter& counter : track.counters) {
            if (counter.at_ns < cutoff_ns) continue;
            std::string args = quoted(counter.key[0]) + ":" + std::to_string(counter.value[0]);
            if (counter.key[1] != nullptr)
                args += "," + quoted(counter.key[1]) + ":" + std::to_string(counter.value[1]);
            std::fprintf(out,
                         ",\n{\"ph\":\"C\",\"name\":%s,\"pid\":%d,\"tid\":%d,\"ts\":%.3f,"
                         "\"args\":{%s}}",
                         quoted(counter.name).c_str(), pid, track.tid, us(counter.at_ns),
                         args.c_str());
            ++count;
        }
    }
    return count;
}

} // namespace

void start_tracing(TraceOptions options) {
    Tracer& t = tracer();
    std::lock_guard<std::mutex> lock(t.write_mutex);
    if (tracing_on.load()) throw std::runtime_error("tracing is already on in this process");
    // A trace that cannot be written should say so now, not when the server stops.
    const std::string tmp = options.path + ".tmp";
    std::FILE* probe = std::fopen(tmp.c_str(), "w");
    if (probe == nullptr)
        throw std::runtime_error("cannot write the trace to " + options.path + ": " +
                                 std::strerror(errno));
    std::fclose(probe);
    std::remove(tmp.c_str());
    struct stat file {};
    if (::stat(options.path.c_str(), &file) == 0 && S_ISDIR(file.st_mode))
        throw std::runtime_error("cannot write the trace to " + options.path + ": Is a directory");
    t.options = std::move(options);
    t.start_ns = now_ns();
    tracing_on.store(true);
    observe_carrier_schedulers(&trace_carrier);
}

bool write_trace() {
    Tracer& t = tracer();
    std::lock_guard<std::mutex> writing(t.write_mutex);
    if (!tracing_on.load()) return false;
    const std::int64_t cutoff_ns = now_ns() - std::chrono::nanoseconds(t.options.window).count();
    std::vector<std::shared_ptr<Track>> tracks;
    {
        std::lock_guard<std::mutex> lock(t.mutex);
        tracks = t.tracks;
    }
    // Copy each track's records, holding it for a copy's time only; resolve names afterwards.
    std::vector<Snapshot> snapshots;
    std::vector<Label> labels;
    std::uint64_t dropped = 0;
    for (const auto& track : tracks) {
        std::lock_guard<std::mutex> lock(track->mutex);
        snapshots.push_back(Snapshot{track->tid, track->name, track->turns.in_order(),
                                     track->waits.in_order(), track->counters.in_order()});
        const std::vector<Label> more = track->labels.in_order();
        labels.insert(labels.end(), more.begin(), more.end());
        dropped += track->dropped;
    }
    const Names names(std::move(labels));

    const std::string tmp = t.options.path + ".tmp";
    std::FILE* out = std::fopen(tmp.c_str(), "w");
    if (out == nullptr) {
        std::fprintf(stderr, "%s: cannot write the trace to %s: %s\n", t.options.program.c_str(),
                     tmp.c_str(), std::strerror(errno));
        return false;
    }
    std::fputs("{\"traceEvents\":[\n", out);
    const std::size_t count = write_events(out, t, cutoff_ns, snapshots, names);
    std::fprintf(out,
                 "\n],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":{\"program\":%s,"
                 "\"window_s\":%g,\"dropped_events\":%llu}}\n",
                 quoted(t.options.program.c_str()).c_str(), t.options.window.count() / 1e3,
                 static_cast<unsigned long long>(dropped));
    bool written = !std::ferror(out);
    written = std::fclose(out) == 0 && written;
    // The rename is atomic: FILE is the previous whole trace until it is this whole trace.
    if (!written || std::rename(tmp.c_str(), t.options.path.c_str()) != 0) {
        std::fprintf(stderr, "%s: cannot write the trace to %s: %s\n", t.options.program.c_str(),
                     t.options.path.c_str(), std::strerror(errno));
        std::remove(tmp.c_str());
        return false;
    }
    std::fprintf(stderr, "%s: trace of the last %s written to %s (%zu events, %llu dropped)\n",
                 t.options.program.c_str(), format_duration(t.options.window).c_str(),
                 t.options.path.c_str(), count, static_cast<unsigned long long>(dropped));
    return true;
}

bool tracing() noexcept {
    return tracing_on.load(std::memory_order_relaxed);
}

void trace_label_fiber(const char* format, ...) noexcept {
    if (!tracing_on.load(std::memory_order_relaxed)) return;
    if (working_for == nullptr && label_ends().get() == nullptr) {
        try {
            label_ends().reset(new LabelEnd(boost::fibers::context::active()));
        } catch (...) { // out of memory: a later fiber at this address may borrow the label
        }
    }
    std::va_list args;
    va_start(args, format);
    add_label(current_fiber(), format, args);
    va_end(args);
}

void trace_counter(const char* name, const char* key, std::int64_t value, const char* key2,
                   std::int64_t value2) noexcept {
    if (!tracing_on.load(std::memory_order_relaxed)) return;
    if (Track* track = this_thread_track())
        track->add(track->counters, Counter{name, now_ns(), {key, key2}, {value, value2}});
}

TraceWait::TraceWait(const char* name) noexcept : name_(name) {
    if (!tracing_on.load(std::memory_order_relaxed)) return;
    track_ = this_thread_track();
    fiber_ = current_fiber();
    start_ns_ = now_ns();
}

void TraceWait::arg(const char* key, const char* text) noexcept {
    key_ = key;
    text_ = text;
}

void TraceWait::arg(const char* key, std::int64_t number) noexcept {
    key_ = key;
    text_ = nullptr;
    number_ = number;
}

void TraceWait::end() noexcept {
    if (track_ == nullptr) return;
    track_->add(track_->waits, Wait{name_, fiber_, start_ns_, now_ns(), key_, text_, number_});
    track_ = nullptr;
}

TraceTurn::TraceTurn(const void* fiber) noexcept {
    if (!tracing_on.load(std::memory_order_relaxed)) return;
    fiber_ = fiber;
    working_for = fiber;
    track_ = this_thread_track();
    start_ns_ = now_ns();
}

TraceTurn::~TraceTurn() {
    if (fiber_ == nullptr) return;
    working_for = nullptr;
    if (track_ != nullptr) track_->add(track_->turns, Turn{fiber_, start_ns_, now_ns()});
}

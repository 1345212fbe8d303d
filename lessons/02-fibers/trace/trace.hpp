// The tracer: a timeline of every fiber on every carrier, written as Chrome/Perfetto trace JSON
// (open it in ui.perfetto.dev or chrome://tracing).
//
// The scheduling algorithm already sees every switch: Boost.Fiber asks it for the next fiber
// (pick_next) each time a fiber gives its carrier up. The tracer wraps every carrier's algorithm
// through carrier.hpp's observer hook, as the pinning detector does, reads the clock once per
// switch, and stores the turn that just ended: (fiber, start, duration). What the program adds
// costs as little, and is turned into JSON only when the trace is written:
//
//   trace_label_fiber("conn %d", fd);       // names the calling fiber's turns from now on
//   TraceWait wait("pool.borrow");           // a wait: one record (start, end, name, arg) when
//   wait.arg("outcome", "ok");               //   it ends; an async span in the trace
//   trace_counter("inflight", "value", n);   // a counter sample
//
// With tracing off, each of these costs one relaxed atomic load.
//
// Every thread that records is a track (its thread name: carrier-0, platform-3). A track keeps
// its records in rings of events_per_track (trace.cpp), and the trace holds only the last
// `window` of them; a record is resolved to names (the fiber's label at that time) only then.
// The trace is written to FILE.tmp and renamed to FILE: FILE is always a whole trace.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

// A label is stored in place, not as a std::string, so labelling costs no allocation; longer
// labels are cut to this many characters ("conn 12 GET /work?..." stays readable).
constexpr std::size_t trace_label_chars = 47;

struct TraceOptions {
    std::string path;                       // where write_trace() writes
    std::chrono::milliseconds window{2000}; // only the last `window` of events is written
    std::string program;                    // otherData.program, and the name of the process track
};

// Starts tracing every carrier started from now on, and any thread that records. Once per
// process; tracing then lasts until the process exits. Throws std::runtime_error when
// options.path cannot be written.
void start_tracing(TraceOptions options);

// True while tracing: for a label whose arguments cost something to compute.
bool tracing() noexcept;

// Writes the last window now (FILE.tmp, then rename) and says so in one line on stderr. Returns
// false, with the reason on stderr, when it could not. Safe from any thread, at any time.
bool write_trace();

// Names the calling fiber's turns from now on: printf's format and arguments, formatted only
// when tracing is on (at most trace_label_chars are kept). On a thread that works for a fiber
// (TraceTurn below), names that fiber.
void trace_label_fiber(const char* format, ...) noexcept __attribute__((format(printf, 1, 2)));

// A counter sample: one or two values of `name` (string literals: they are kept by address).
void trace_counter(const char* name, const char* key, std::int64_t value,
                   const char* key2 = nullptr, std::int64_t value2 = 0) noexcept;

// A wait, from construction to end() or destruction: one async span in the trace, on the track
// of the thread where it began. Names and keys are string literals (kept by address).
class TraceWait {
public:
    explicit TraceWait(const char* name) noexcept;
    ~TraceWait() { end(); }
    TraceWait(const TraceWait&) = delete;
    TraceWait& operator=(const TraceWait&) = delete;

    // One argument shown with the span: {"outcome": "ok"}, {"connection": 3}.
    void arg(const char* key, const char* text) noexcept;
    void arg(const char* key, std::int64_t number) noexcept;
    // Ends the wait now (once; the destructor does nothing after it). May run on another thread.
    void end() noexcept;
    // The fiber that waits (the caller's, or the one a TraceTurn works for).
    const void* fiber() const { return fiber_; }

private:
    struct Track* track_ = nullptr; // nullptr: not traced (tracing off, or ended)
    const char* name_;
    const void* fiber_ = nullptr;
    std::int64_t start_ns_ = 0;
    const char* key_ = nullptr;
    const char* text_ = nullptr;
    std::int64_t number_ = 0;
};

// For a thread that is not a carrier (lesson 05's platform threads): the work it does for
// `fiber` from construction to destruction is one slice on this thread's track, named by that
// fiber's label, and labels and waits in it belong to that fiber.
class TraceTurn {
public:
    explicit TraceTurn(const void* fiber) noexcept;
    ~TraceTurn();
    TraceTurn(const TraceTurn&) = delete;
    TraceTurn& operator=(const TraceTurn&) = delete;

private:
    struct Track* track_ = nullptr;
    const void* fiber_ = nullptr;
    std::int64_t start_ns_ = 0;
};

// The tracing facade: how lesson code shows itself in a --trace timeline without knowing what
// records it (the pattern of Rust's `tracing`). Until a recorder is installed, and a fiber
// server installs one only for --trace (lessons/instruments/trace/), every call here costs one
// atomic load and does nothing else.
//
//   trace_label_fiber("conn %d", fd);       // names the calling fiber's turns from now on
//   TraceWait wait("pool.borrow");           // a wait, from here to end() or the scope's end,
//   wait.arg("outcome", "ok");               //   with one argument
//   trace_counter("inflight", "value", n);   // a counter sample
//   TraceTurn turn(fiber);                   // a thread that is not a carrier works for a fiber
//
// Names and keys are string literals: a recorder keeps them by address.
#pragma once

#include <atomic>
#include <cstdarg>
#include <cstdint>

// A wait, as the recorder sees it. The recorder fills fiber, where and start_ns at the start.
struct TraceWaitRecord {
    const char* name;
    const void* fiber = nullptr; // the fiber that waits
    void* where = nullptr;       // the recorder's: where the record goes when the wait ends
    std::int64_t start_ns = 0;
    const char* key = nullptr; // the one argument, a text or a number; nullptr: none
    const char* text = nullptr;
    std::int64_t number = 0;
};

// A thread's work for a fiber (TraceTurn), as the recorder sees it.
struct TraceTurnRecord {
    const void* fiber;
    void* where = nullptr;
    std::int64_t start_ns = 0;
};

// What records. The tracer implements it (lessons/instruments/trace/recorder.hpp); lesson code
// only calls the functions below. Every member may be called from any thread at any time.
class TraceRecorder {
public:
    virtual void label_fiber(const char* format, std::va_list args) noexcept = 0;
    virtual void counter(const char* name, const char* key, std::int64_t value, const char* key2,
                         std::int64_t value2) noexcept = 0;
    // Fill in the record's start; false: this one is not recorded (and gets no end call).
    virtual bool begin_wait(TraceWaitRecord& wait) noexcept = 0;
    virtual void end_wait(const TraceWaitRecord& wait) noexcept = 0;
    virtual bool begin_turn(TraceTurnRecord& turn) noexcept = 0;
    virtual void end_turn(const TraceTurnRecord& turn) noexcept = 0;
    // The process was asked to stop (SIGTERM, Ctrl+C): its trace keeps what came before.
    virtual void stop_began() noexcept = 0;

protected:
    ~TraceRecorder() = default; // installed for the process's life, never destroyed
};

// Installs `recorder` for the rest of the process. Once: a second call throws std::logic_error.
void install_trace_recorder(TraceRecorder& recorder);

inline std::atomic<TraceRecorder*> installed_trace_recorder{nullptr};

// Acquire pairs with the installation's release: a thread that sees the recorder sees it built.
// (On x86 it is the same plain load as a relaxed one.)
inline TraceRecorder* trace_recorder() noexcept {
    return installed_trace_recorder.load(std::memory_order_acquire);
}

// True while tracing: for a label whose arguments cost something to compute.
inline bool tracing() noexcept {
    return trace_recorder() != nullptr;
}

// Names the calling fiber's turns from now on (printf's format; a recorder may cut it short). On
// a thread inside a TraceTurn, names the fiber that turn works for.
void trace_label_fiber(const char* format, ...) noexcept __attribute__((format(printf, 1, 2)));

// Says that the process was asked to stop; a trace written at exit keeps its window before this.
inline void trace_stop_began() noexcept {
    if (TraceRecorder* recorder = trace_recorder()) recorder->stop_began();
}

// A counter sample: one or two values of `name`.
inline void trace_counter(const char* name, const char* key, std::int64_t value,
                          const char* key2 = nullptr, std::int64_t value2 = 0) noexcept {
    if (TraceRecorder* recorder = trace_recorder())
        recorder->counter(name, key, value, key2, value2);
}

// A wait, from construction to end() or destruction: one span in the trace.
class TraceWait {
public:
    explicit TraceWait(const char* name) noexcept : wait_{name} {
        TraceRecorder* recorder = trace_recorder();
        if (recorder != nullptr && recorder->begin_wait(wait_)) recorder_ = recorder;
    }
    ~TraceWait() { end(); }
    TraceWait(const TraceWait&) = delete;
    TraceWait& operator=(const TraceWait&) = delete;

    // One argument shown with the span: {"outcome": "ok"}, {"connection": 3}.
    void arg(const char* key, const char* text) noexcept {
        wait_.key = key;
        wait_.text = text;
    }
    void arg(const char* key, std::int64_t number) noexcept {
        wait_.key = key;
        wait_.text = nullptr;
        wait_.number = number;
    }
    // Ends the wait now (once; the destructor does nothing after it). May run on another thread.
    void end() noexcept {
        if (recorder_ == nullptr) return;
        recorder_->end_wait(wait_);
        recorder_ = nullptr;
    }
    // The fiber that waits; nullptr when not traced.
    const void* fiber() const { return wait_.fiber; }

private:
    TraceRecorder* recorder_ = nullptr; // nullptr: not traced, or ended
    TraceWaitRecord wait_;
};

// For a thread that is not a carrier (lesson 05's platform threads): the work it does for
// `fiber` from construction to destruction is one slice on this thread's track, named by that
// fiber's label, and labels and waits in it belong to that fiber.
class TraceTurn {
public:
    explicit TraceTurn(const void* fiber) noexcept : turn_{fiber} {
        TraceRecorder* recorder = trace_recorder();
        if (recorder != nullptr && fiber != nullptr && recorder->begin_turn(turn_))
            recorder_ = recorder;
    }
    ~TraceTurn() {
        if (recorder_ != nullptr) recorder_->end_turn(turn_);
    }
    TraceTurn(const TraceTurn&) = delete;
    TraceTurn& operator=(const TraceTurn&) = delete;

private:
    TraceRecorder* recorder_ = nullptr;
    TraceTurnRecord turn_;
};

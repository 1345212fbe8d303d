#include "lessons/instruments/trace/trace_flags.hpp"

#include "lessons/common/process.hpp"

#include <csignal>
#include <cstdlib>
#include <stdexcept>
#include <thread>

namespace {

// The shortest window a trace may keep: below a millisecond a trace holds hardly one turn.
constexpr std::chrono::milliseconds min_window{1};
// The longest: an hour of a busy server is far more than a track's rings keep (recorder.cpp), so
// a longer window would only promise what the trace cannot hold.
constexpr std::chrono::milliseconds max_window = std::chrono::hours(1);

} // namespace

TraceFlags::TraceFlags(Flags& flags) {
    options_.program = flags.program();
    flags
        .add("trace", options_.path,
             "write a timeline of every fiber on every carrier (Chrome/Perfetto JSON: open it in "
             "ui.perfetto.dev) to this file at exit, and on SIGUSR1")
        .add("trace-window", options_.window, min_window, max_window,
             "the trace keeps only this much of the most recent time")
        .on_parsed([this] { start(); });
}

void TraceFlags::start() {
    if (options_.path.empty()) return;
    try {
        start_tracing(options_);
    } catch (const std::exception& e) {
        fail(options_.program, e.what(), 2); // as for any bad flag
    }
    // At exit, after main() has stopped the carriers: their last turns are in.
    std::atexit([] { write_trace(); });
    // And when a stop gives up on a busy fiber (std::quick_exit): the trace shows what it was.
    std::at_quick_exit([] { write_trace(); });
    // SIGUSR1 writes the trace now; the server goes on serving. Detached: it waits until exit.
    std::thread([] {
        sigset_t usr1;
        sigemptyset(&usr1);
        sigaddset(&usr1, SIGUSR1);
        for (;;) {
            int signal = 0;
            if (sigwait(&usr1, &signal) == 0) write_trace();
        }
    }).detach();
}

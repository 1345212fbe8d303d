// The tracer's recorder: a timeline of every fiber on every carrier, written as Chrome/Perfetto
// trace JSON (open it in ui.perfetto.dev or chrome://tracing).
//
// The scheduling algorithm already sees every switch: Boost.Fiber asks it for the next fiber
// (pick_next) each time a fiber gives its carrier up. The recorder wraps every carrier's
// algorithm through carrier.hpp's observer hook, as the pinning detector does, reads the clock
// once per switch, and stores the turn that just ended: (fiber, start, end). What lesson code
// reports through the tracing facade (lessons/common/tracing.hpp: labels, waits, counters) costs
// as little, and is turned into JSON only when the trace is written (trace_writer.hpp).
//
// Every thread that records is a track (its thread name: carrier-0, platform-3). A track keeps
// its records in bounded rings (recorder.cpp says how many), and the trace holds only the last
// `window` of them; a record is resolved to names (the fiber's label at that time) only then.
#pragma once

#include <chrono>
#include <string>

struct TraceOptions {
    std::string path;                       // where write_trace() writes
    std::chrono::milliseconds window{2000}; // only the last `window` of events is written
    std::string program;                    // otherData.program, and the name of the process track
};

// Installs the recorder behind the tracing facade and starts tracing every carrier started from
// now on, and any thread that records. Once per process; tracing then lasts until the process
// exits. Throws std::runtime_error when options.path cannot be written.
void start_tracing(TraceOptions options);

// Writes the last window now (FILE.tmp, then rename) and says so in one line on stderr. Returns
// false, with the reason on stderr, when it could not. Safe from any thread, at any time.
bool write_trace();

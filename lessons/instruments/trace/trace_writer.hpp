// Writes what the tracks hold as Chrome/Perfetto trace JSON: carriers and threads as tracks,
// fiber turns as "X" slices named by the fiber's label at the time, waits as async "b"/"e"
// spans, counters as "C" samples. Only the last `window` is written.
#pragma once

#include "lessons/instruments/trace/records.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace trace {

struct WriteRequest {
    std::string path;    // written as path.tmp, then renamed: path is always a whole trace
    std::string program; // otherData.program, and the name of the process track
    std::chrono::milliseconds window;
    std::int64_t start_ns; // the trace's time 0
    // When the process was asked to stop (0: not yet). The window then ends there, and what came
    // after is kept too: a stop that waits its grace (5 s) for a busy fiber, longer than the
    // window (2 s), would otherwise leave a trace of nothing but the tracks' names, when what
    // the reader wants is what that fiber was doing as the stop began.
    std::int64_t stop_began_ns = 0;
};

// Checks now that `path` can be written, and is absent or a regular file (a trace that cannot be
// written should say so at start, not when the server stops); throws std::runtime_error with
// the reason. write_tracks() checks the second again before it replaces `path`.
void check_writable(const std::string& path);

// Copies the tracks (each held for a copy's time only) and writes the trace. Returns false, with
// the reason on stderr, when it could not; says what it wrote in one line on stderr.
bool write_tracks(const WriteRequest& request, const std::vector<std::shared_ptr<Track>>& tracks);

} // namespace trace

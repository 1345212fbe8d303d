#include "lessons/instruments/pinning/pinning_flags.hpp"

#include "lessons/common/process.hpp"

#include <cstdlib>
#include <memory>
#include <stdexcept>

namespace {

// Lives until the program exits, after main() has stopped its carriers (see start()).
std::unique_ptr<PinningDetector> detector;

} // namespace

PinningFlags::PinningFlags(Flags& flags) : program_(flags.program()) {
    flags
        .add("detect-pinning", detect_,
             "report on stderr every fiber that holds its carrier thread (pins it) longer than "
             "--pinning-threshold while other fibers wait, with a stack sample")
        .add("pinning-threshold", options_.threshold, std::chrono::milliseconds(1),
             std::chrono::hours(1),
             "the shortest pin reported (wall clock: raise it on a busy machine)")
        .add("pinning-events", options_.events_path,
             "also write each pinning event to this file, one JSON object per line "
             "(implies --detect-pinning)")
        .on_parsed([this] { start(); });
}

void PinningFlags::start() {
    if (!detect_ && options_.events_path.empty()) return;
    try {
        detector = std::make_unique<PinningDetector>(options_);
    } catch (const std::exception& e) {
        fail(program_, e.what(), 2); // as for any bad flag
    }
    // Stopped at exit before any static object is destroyed: its last report may still need them.
    std::atexit([] { detector.reset(); });
}

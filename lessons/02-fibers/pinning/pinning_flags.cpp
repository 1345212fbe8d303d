#include "pinning_flags.hpp"

#include "process.hpp"

#include <cerrno>
#include <cstdlib>
#include <memory>
#include <stdexcept>

namespace {

// Lives until the program exits, after main() has stopped its carriers (see start()).
std::unique_ptr<PinningDetector> detector;

} // namespace

PinningFlags::PinningFlags(Flags& flags) {
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
        // As for any bad flag. glibc's name of the program: the one Flags prints too.
        fail(program_invocation_short_name, e.what(), 2);
    }
    // Stopped at exit before any static object is destroyed: its last report may still need them.
    std::atexit([] { detector.reset(); });
}

// --detect-pinning for every fiber server, without a line in its main.cpp.
//
// pindemo/CMakeLists.txt links this file into each server; its static initializer registers a
// flags extension (lessons/common/flags.hpp). Flags::parse() then offers the flags below, and,
// once they are parsed, before the server starts any carrier, this starts the detector.
//
//   --detect-pinning            report fibers that pin their carrier, on stderr
//   --pinning-threshold 20ms    ... that hold it at least this long while others wait
//   --pinning-events FILE       ... and write each event to FILE as one JSON line
#include "flags.hpp"
#include "pinning_detector.hpp"
#include "process.hpp"

#include <cstdlib>
#include <memory>
#include <stdexcept>

namespace {

bool detect = false;
PinningDetector::Options options;
// Lives until the program exits, after main() has stopped its carriers.
std::unique_ptr<PinningDetector> detector;

void add(Flags& flags) {
    flags
        .add("detect-pinning", detect,
             "report on stderr every fiber that holds its carrier thread (pins it) longer than "
             "--pinning-threshold while other fibers wait, with a stack sample")
        .add("pinning-threshold", options.threshold, std::chrono::milliseconds(1),
             std::chrono::hours(1),
             "the shortest pin reported (wall clock: raise it on a busy machine)")
        .add("pinning-events", options.events_path,
             "also write each pinning event to this file, one JSON object per line "
             "(implies --detect-pinning)");
}

void start(const std::string& program) {
    if (!detect && options.events_path.empty()) return;
    try {
        detector = std::make_unique<PinningDetector>(options);
    } catch (const std::exception& e) {
        fail(program, e.what(), 2); // as for any bad flag
    }
    // Stopped at exit before any static object is destroyed: its last report may still need them.
    std::atexit([] { detector.reset(); });
}

[[maybe_unused]] const auto unregistered = std::make_pair(add, start); // TEMP: flags branch

} // namespace

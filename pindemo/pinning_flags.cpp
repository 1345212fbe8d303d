#include "pinning_flags.hpp"

#include "process.hpp"

#include <stdexcept>

void add_pinning_flags(Flags& flags, PinningOptions& options) {
    flags
        .add("detect-pinning", options.detect,
             "report on stderr every fiber that holds its carrier thread (pins it) longer than "
             "--pinning-threshold while other fibers wait, with a stack sample")
        .add("pinning-threshold", options.threshold,
             "the shortest pin reported; time the OS keeps the thread off a CPU does not count")
        .add("pinning-events", options.events_path,
             "also write each pinning event to this file, one JSON object per line "
             "(implies --detect-pinning)");
}

std::unique_ptr<PinningDetector> start_pinning_detector(const PinningOptions& options,
                                                        const std::string& program) {
    if (!options.detect && options.events_path.empty()) return nullptr;
    PinningDetector::Options detector;
    detector.threshold = options.threshold;
    detector.events_path = options.events_path;
    try {
        return std::make_unique<PinningDetector>(detector);
    } catch (const std::exception& e) {
        fail(program, e.what(), 2);
    }
}

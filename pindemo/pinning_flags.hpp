// The pinning detector as a command-line option, for every server in this repository:
//
//   PinningOptions pinning;
//   add_pinning_flags(flags, pinning);
//   flags.parse(argc, argv);
//   const auto detector = start_pinning_detector(pinning, "lesson03"); // before any carrier
//
//   --detect-pinning            report fibers that pin their carrier, on stderr
//   --pinning-threshold 20ms    ... that hold it at least this long while others wait
//   --pinning-events FILE       ... and write each event to FILE as one JSON line
#pragma once

#include "flags.hpp"
#include "pinning_detector.hpp"

#include <chrono>
#include <memory>
#include <string>

struct PinningOptions {
    bool detect = false;
    std::chrono::milliseconds threshold = PinningDetector::Options{}.threshold;
    std::string events_path;
};

void add_pinning_flags(Flags& flags, PinningOptions& options);

// A running detector when --detect-pinning or --pinning-events was given, otherwise nullptr.
// Keep it alive until the carriers have stopped. A problem (the events file cannot be written)
// ends the program: "<program>: <why>" on stderr, exit status 2, as for any bad flag.
std::unique_ptr<PinningDetector> start_pinning_detector(const PinningOptions& options,
                                                        const std::string& program);

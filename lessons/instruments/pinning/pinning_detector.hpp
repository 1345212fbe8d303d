// The pinning detector: reports fibers that hold their carrier thread while other fibers wait.
// The C++ counterpart of JFR's jdk.VirtualThreadPinned event, and like it one rule:
//
//   a fiber's turn on its carrier lasted longer than the threshold, and when it ended another
//   fiber was ready to run on that carrier.
//
// A fiber pins its carrier when it waits in a call that is not fiber-aware (a blocking sleep,
// read, poll, std::mutex, PQexec) or computes for long without yielding. While a detector exists:
//  1. every carrier started from then on runs its scheduling algorithm inside a
//     MonitoredAlgorithm, which times each fiber's turn (monitored_algorithm.hpp);
//  2. a watchdog thread looks at every carrier four times per threshold; a turn already longer
//     than the threshold gets one stack sample, taken while the fiber still holds the carrier
//     (stack_sampler.hpp);
//  3. when such a turn ends with others ready, the watchdog reports one event: a block of text
//     on stderr, a JSON line in the events file, a call to on_event. Reporting at the end means
//     the duration and the CPU time are known; a fiber that never gives its carrier back is never
//     reported (lesson 08's stall alarm shows how to catch a hang).
//
// Wall clock, like JFR: a turn also lasts longer when the OS, a hypervisor or a debugger keeps
// the thread from running. On a busy machine, raise the threshold (pindemo/README.md).
#pragma once

#include "lessons/instruments/pinning/pinning_event.hpp"

#include <chrono>
#include <functional>
#include <memory>
#include <string>

class PinningDetector {
public:
    struct Options {
        // JFR's default threshold for jdk.VirtualThreadPinned: longer than any honest stretch of
        // work between two waits in a server, shorter than a blocking database round trip.
        std::chrono::milliseconds threshold{20};
        std::string events_path; // also write each event here as a JSON line ("": don't)
        bool print = true;       // the text block on stderr, and a summary line as it stops
        std::function<void(const PinningEvent&)> on_event; // called on the watchdog thread
    };

    // Starts the watchdog and watches every carrier started from now on. Throws
    // std::runtime_error when the events file cannot be written, the threshold is below 1 ms,
    // or another detector is running (there is one per process).
    explicit PinningDetector(Options options);
    // Reports the long turns that have ended, then stops watching.
    ~PinningDetector();
    PinningDetector(const PinningDetector&) = delete;
    PinningDetector& operator=(const PinningDetector&) = delete;

    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
};

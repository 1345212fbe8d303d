// The pinning detector: reports fibers that hold their carrier thread while other fibers wait.
// The C++ counterpart of JFR's jdk.VirtualThreadPinned event.
//
// A fiber pins its carrier when it waits in a call that is not fiber-aware (a blocking sleep,
// read, poll, std::mutex, PQexec) or computes for long without yielding: the carrier thread is
// stuck with it, and every other fiber on that carrier waits. While a detector exists:
//  1. every carrier started from then on runs its scheduling algorithm inside a
//     MonitoredAlgorithm, which times each fiber's turn on the carrier (monitored_algorithm.hpp);
//  2. a watchdog thread (one per process) looks at every carrier each tick (a quarter of the
//     threshold); a turn older than the threshold gets its stack sampled on the spot, while the
//     fiber still holds the carrier (stack_sampler.hpp);
//  3. when that turn ends, one event is reported: a block of text on stderr, one JSON object
//     per line in the events file, and a call to on_event, from a reporting thread that names
//     the sampled stack (the watchdog never waits for that). Reporting at the end means the
//     duration is known; the price is that a fiber that never gives its carrier back is never
//     reported (a hung program is a job for a debugger).
//
// Not reported:
//  * a long turn while no other fiber was ready to run: nothing waited for the carrier;
//  * time the OS kept the carrier thread waiting for a CPU, read from the kernel's scheduler
//    statistics (/proc/self/task/TID/schedstat): on a busy machine a thread may wait tens of
//    milliseconds for a core, which no fiber can help;
//  * time a virtual machine's hypervisor took the carrier's CPU away (steal), told apart by the
//    carrier thread running for less time than passed while it never left its CPU
//    (turn_share.hpp);
//  * time the watchdog itself could not look, woken more than a tick late: the process was
//    stopped or the machine stalled, and the turn's length says nothing about the fiber.
// Only the rest of a turn counts toward the threshold. Each kind of long turn left out is
// counted and shown in the summary line the detector prints when it stops.
//
// Cost when nothing pins: a clock read and a few stores per fiber switch, and a watchdog that
// wakes four times per threshold (see pindemo/README.md for measurements).
#pragma once

#include "pinning_event.hpp"

#include <chrono>
#include <functional>
#include <memory>
#include <string>

class PinningDetector {
public:
    struct Options {
        // A turn at least this long, not counting time the OS took, is reported if others
        // waited. 20 ms is JFR's default threshold for jdk.VirtualThreadPinned: longer than any
        // honest stretch of work between two waits in a server, shorter than a blocking
        // database round trip or sleep.
        std::chrono::milliseconds threshold{20};
        std::string events_path; // also write each event here as a JSON line ("": don't)
        bool print = true;       // the text block on stderr, and the summary line at the end
        std::function<void(const PinningEvent&)> on_event;  // on the reporting thread
        std::function<void(const std::string&)> on_summary; // the closing line, as it stops
    };

    // Starts the watchdog and watches every carrier started from now on. Throws
    // std::runtime_error when the events file cannot be written, when the threshold is below
    // 1 ms, or when another detector is running (there is one per process).
    explicit PinningDetector(Options options);
    // Reports the turns that have ended, then stops watching.
    ~PinningDetector();
    PinningDetector(const PinningDetector&) = delete;
    PinningDetector& operator=(const PinningDetector&) = delete;

    int events() const; // found so far (each is reported a moment later)

    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
};

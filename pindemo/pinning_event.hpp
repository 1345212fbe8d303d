// One pinning event: a fiber held its carrier thread longer than the threshold while other
// fibers were ready to run. The C++ counterpart of JFR's jdk.VirtualThreadPinned.
#pragma once

#include <string>
#include <vector>

struct PinningEvent {
    std::string fiber;      // the name it gave itself (name_this_fiber), or "unnamed fiber 0x..."
    std::string carrier;    // the carrier thread's name and kernel thread id: "carrier-0#4242"
    double duration_ms = 0; // how long the fiber held the carrier
    // Of that, at least this long the OS kept the carrier thread waiting for a CPU (another
    // thread had it). It is not the fiber's doing; the detector does not count it toward the
    // threshold.
    double runqueue_ms = 0;
    // And at least this long the carrier thread sat on a CPU that the hypervisor had taken away
    // (steal time on a virtual machine; turn_share.hpp). Not counted either.
    double stolen_ms = 0;
    // And about this long the watchdog itself was held up: the process was stopped or the
    // machine froze (turn_share.hpp: Stretch). It may be the same time as the two above, so only
    // what it covers beyond them is not counted.
    double held_up_ms = 0;
    int ready_waiting = 0;     // fibers ready to run when the carrier was free again
    double sampled_at_ms = -1; // when the stack was sampled, from the start of the turn; -1: never
    std::string blocked_in;    // the innermost function of the sample: clock_nanosleep, poll, ...
    std::string called_from;   // the innermost frame in this repository's code, "" if none
    std::vector<std::string> stack; // the sample, innermost frame first
};

// A block of text for a terminal, ending in a newline.
std::string to_text(const PinningEvent& event);

// One JSON object, no newline: {"event":"fiber_pinned","fiber":"...",...,"stack":[...]}
std::string to_json(const PinningEvent& event);

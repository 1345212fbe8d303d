// One pinning event: a fiber held its carrier thread longer than the threshold while other
// fibers on that carrier were ready to run. The C++ counterpart of JFR's jdk.VirtualThreadPinned.
#pragma once

#include <string>
#include <vector>

struct PinningEvent {
    std::string fiber;      // the name it gave itself (name_this_fiber), or "unnamed fiber 0x..."
    std::string carrier;    // the carrier thread's name and kernel thread id: "carrier-0#4242"
    double duration_ms = 0; // how long the fiber held the carrier (wall clock)
    // How much of that the carrier thread ran on a CPU. Far less than duration_ms: the fiber
    // waited in a call that is not fiber-aware. About as much: it computed. (On a busy machine
    // the OS may also have kept the thread off the CPU; that shows as "waited" too.)
    double cpu_ms = 0;
    int ready_waiting = 0;          // fibers ready to run on the carrier when the turn ended
    double sampled_at_ms = -1;      // when the stack was sampled, from the turn's start; -1: never
    std::string blocked_in;         // the innermost function a program calls by name: poll, ...
    std::string called_from;        // the innermost frame in this repository's code, "" if none
    std::vector<std::string> stack; // the sample, innermost frame first
};

// A block of text for a terminal, ending in a newline.
std::string to_text(const PinningEvent& event);

// One JSON object, no newline: {"event":"fiber_pinned","fiber":"...",...,"stack":[...]}
std::string to_json(const PinningEvent& event);

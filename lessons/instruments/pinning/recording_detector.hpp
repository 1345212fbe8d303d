// For tests: a pinning detector that keeps its events instead of printing them.
//
//   RecordingDetector detector;            // before the carriers it should watch
//   ... run fibers on carriers ...
//   auto events = detector.stop();         // reports the turns that ended, returns every event
//   STEP("events: " << describe(events));
#pragma once

#include "lessons/instruments/pinning/pinning_detector.hpp"

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

class RecordingDetector {
public:
    explicit RecordingDetector(std::chrono::milliseconds threshold = std::chrono::milliseconds(20));
    // Stops the detector (it reports the turns that have ended) and returns every event.
    std::vector<PinningEvent> stop();

private:
    std::mutex mutex_;
    std::vector<PinningEvent> events_;
    std::unique_ptr<PinningDetector> detector_;
};

// The events as the detector would print them, or "no pinning events".
std::string describe(const std::vector<PinningEvent>& events);

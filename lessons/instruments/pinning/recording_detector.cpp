#include "lessons/instruments/pinning/recording_detector.hpp"

RecordingDetector::RecordingDetector(std::chrono::milliseconds threshold) {
    PinningDetector::Options options;
    options.threshold = threshold;
    options.print = false;
    options.on_event = [this](const PinningEvent& event) {
        std::lock_guard<std::mutex> lock(mutex_);
        events_.push_back(event);
    };
    detector_ = std::make_unique<PinningDetector>(options);
}

std::vector<PinningEvent> RecordingDetector::stop() {
    detector_.reset();
    std::lock_guard<std::mutex> lock(mutex_);
    return events_;
}

std::string describe(const std::vector<PinningEvent>& events) {
    std::string text;
    for (const auto& event : events)
        text += to_text(event);
    return text.empty() ? "no pinning events" : text;
}

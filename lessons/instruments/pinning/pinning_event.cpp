#include "lessons/instruments/pinning/pinning_event.hpp"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

namespace {

std::string fixed1(double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f", value);
    return text;
}

double rounded1(double value) {
    return std::round(value * 10) / 10;
}

} // namespace

std::string to_text(const PinningEvent& event) {
    std::string text =
        "pinned: fiber \"" + event.fiber + "\" held " + event.carrier + " for " +
        fixed1(event.duration_ms) + " ms, on CPU " + fixed1(event.cpu_ms) + " ms, while " +
        std::to_string(event.ready_waiting) +
        (event.ready_waiting == 1 ? " ready fiber waited\n" : " ready fibers waited\n");
    text +=
        "  blocked in:  " + (event.blocked_in.empty() ? "(not sampled)" : event.blocked_in) + "\n";
    text += "  called from: " +
            (event.called_from.empty() ? "(no frame in this repository)" : event.called_from) +
            "\n";
    if (event.sampled_at_ms < 0)
        return text + "  stack: not sampled (the turn ended before the watchdog looked)\n";
    text += "  stack, sampled " + fixed1(event.sampled_at_ms) + " ms into the turn:\n";
    for (std::size_t i = 0; i < event.stack.size(); ++i)
        text += "    #" + std::to_string(i) + (i < 10 ? "  " : " ") + event.stack[i] + "\n";
    return text;
}

std::string to_json(const PinningEvent& event) {
    const nlohmann::json json = {
        {"event", "fiber_pinned"},
        {"fiber", event.fiber},
        {"carrier", event.carrier},
        {"duration_ms", rounded1(event.duration_ms)},
        {"cpu_ms", rounded1(event.cpu_ms)},
        {"ready_waiting", event.ready_waiting},
        {"blocked_in", event.blocked_in},
        {"called_from", event.called_from},
        {"sampled_at_ms", event.sampled_at_ms < 0 ? nlohmann::json(nullptr)
                                                  : nlohmann::json(rounded1(event.sampled_at_ms))},
        {"stack", event.stack}};
    // Stack frames come from debug information: never let a stray byte make the line invalid.
    return json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

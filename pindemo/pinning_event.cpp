#include "pinning_event.hpp"

#include <cstdio>

namespace {

std::string fixed1(double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f", value);
    return text;
}

std::string quoted(const std::string& text) {
    std::string out = "\"";
    for (const unsigned char c : text) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c < 0x20) {
            char escape[8];
            std::snprintf(escape, sizeof escape, "\\u%04x", c);
            out += escape;
        } else {
            out += static_cast<char>(c);
        }
    }
    return out + "\"";
}

} // namespace

std::string to_text(const PinningEvent& event) {
    std::string text = "pinned: fiber \"" + event.fiber + "\" held " + event.carrier + " for " +
                       fixed1(event.duration_ms) + " ms while " +
                       std::to_string(event.ready_waiting) +
                       (event.ready_waiting == 1 ? " ready fiber waited" : " ready fibers waited");
    std::string excused;
    if (event.runqueue_ms >= 1) excused = fixed1(event.runqueue_ms) + " ms of it off-CPU by the OS";
    if (event.stolen_ms >= 1)
        excused += (excused.empty() ? "" : ", ") + fixed1(event.stolen_ms) +
                   " ms of it stolen by the hypervisor";
    if (event.held_up_ms >= 1)
        excused += (excused.empty() ? "" : ", ") + fixed1(event.held_up_ms) +
                   " ms of it with the whole process held up";
    if (!excused.empty()) text += " (" + excused + ")";
    text += "\n";
    text +=
        "  blocked in:  " + (event.blocked_in.empty() ? "(not sampled)" : event.blocked_in) + "\n";
    text += "  called from: " +
            (event.called_from.empty() ? "(no frame in this repository)" : event.called_from) +
            "\n";
    if (event.sampled_at_ms < 0) {
        text += "  stack: not sampled (the turn ended before the watchdog got to it)\n";
        return text;
    }
    text += "  stack, sampled " + fixed1(event.sampled_at_ms) + " ms into the turn:\n";
    for (std::size_t i = 0; i < event.stack.size(); ++i)
        text += "    #" + std::to_string(i) + (i < 10 ? "  " : " ") + event.stack[i] + "\n";
    return text;
}

std::string to_json(const PinningEvent& event) {
    std::string json = "{\"event\":\"fiber_pinned\"";
    json += ",\"fiber\":" + quoted(event.fiber);
    json += ",\"carrier\":" + quoted(event.carrier);
    json += ",\"duration_ms\":" + fixed1(event.duration_ms);
    json += ",\"runqueue_ms\":" + fixed1(event.runqueue_ms);
    json += ",\"stolen_ms\":" + fixed1(event.stolen_ms);
    json += ",\"held_up_ms\":" + fixed1(event.held_up_ms);
    json += ",\"ready_waiting\":" + std::to_string(event.ready_waiting);
    json += ",\"blocked_in\":" + quoted(event.blocked_in);
    json += ",\"called_from\":" + quoted(event.called_from);
    json +=
        ",\"sampled_at_ms\":" + (event.sampled_at_ms < 0 ? "null" : fixed1(event.sampled_at_ms));
    json += ",\"stack\":[";
    for (std::size_t i = 0; i < event.stack.size(); ++i)
        json += (i ? "," : "") + quoted(event.stack[i]);
    return json + "]}";
}

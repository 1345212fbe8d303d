#include "lessons/06-gate/gate_flags.hpp"

void add_gate_flags(Flags& flags, GateOptions& options, std::string& policy_name) {
    flags
        .add("gate-limit", options.limit, 0, 1'000'000,
             "vt-gated: calls of the work service inside at once (0: none, every call rejected)")
        .add("gate-policy", policy_name, {"reject", "block"},
             "vt-gated: what a call finds when the gate is full: reject = fail at once (503); "
             "block = park until a permit frees, with no timeout");
}

bool gate_armed_by(const std::string& profile) {
    return profile == "vt-gated";
}

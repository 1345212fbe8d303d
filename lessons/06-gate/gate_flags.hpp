// The gate's command-line flags (lesson 06), and which profile arms it.
#pragma once

#include "lessons/06-gate/concurrency_gate.hpp"
#include "lessons/common/flags.hpp"

#include <string>

// --gate-limit and --gate-policy. The policy's text lands in `policy_name`: turn it into
// GateOptions::policy with gate_policy_named after parsing.
void add_gate_flags(Flags& flags, GateOptions& options, std::string& policy_name);

// Only the vt-gated profile arms the gate; in every other the gate passes everything through.
bool gate_armed_by(const std::string& profile);

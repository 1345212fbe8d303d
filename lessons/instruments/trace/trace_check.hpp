// For tests: a trace a server wrote with --trace, read and checked for what every trace must be.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

// The trace at `path`; throws std::runtime_error when it is missing or is not whole JSON.
nlohmann::json read_trace(const std::string& path);

// What is wrong with `trace`, one line per problem ("" when nothing is): the top-level shape and
// otherData; every event's pid and tid; a thread_name for every track; complete slices ("X")
// that never overlap on one track; every async begin ("b") with exactly one end ("e") of the
// same id, name and track, not before it.
std::string trace_problems(const nlohmann::json& trace);

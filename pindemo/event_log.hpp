// For tests: the events file a program under test writes with --events / --pinning-events.
#pragma once

#include <string>
#include <vector>

class EventLog {
public:
    // A fresh path in the tests' log directory (removed if it exists).
    explicit EventLog(const std::string& name);
    const std::string& path() const { return path_; }
    // Its lines, one JSON object per pinning event; none if the file does not exist.
    std::vector<std::string> events() const;
    // The lines as text, for a failing test's story.
    std::string text() const;
    // One short line per event: who, where, how long, what was left out, where it was sampled;
    // "(no events)" when there are none. Checked as `CHECK(log.brief() == "(no events)")`, a
    // failure shows it first, before any longer story that a cut log may lose.
    std::string brief() const;

private:
    std::string path_;
};

// The line the detector closed with in a program's output ("pinning detector: ..."); "" if none.
std::string detector_summary(const std::string& output);

// The value of a top-level field of one event: a string unescaped ("clock_nanosleep"), a number
// as its text ("100.2"); "" when the field is missing. Unlike test_support's json_field it reads
// strings that contain commas, such as demangled C++ names.
std::string event_field(const std::string& event, const std::string& name);

// The field as a number; -1 when it is missing or not a number.
double event_number(const std::string& event, const std::string& name);

// Starts a lesson server with the detector on (`args` come after --detect-pinning), sends `count`
// concurrent GET `path` (lesson 03's crowd: one connection each), stops it, and checks every answer
// was 200, no event was written, and the detector really ran. For servers whose waits are all
// fiber-aware: they must report nothing.
void check_no_pins_under_load(const std::string& binary, const std::vector<std::string>& args,
                              const std::string& path, int count);

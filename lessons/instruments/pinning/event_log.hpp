// For tests: the events file a program under test writes with --events / --pinning-events.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

class EventLog {
public:
    // A fresh path in the tests' log directory (removed if it exists).
    explicit EventLog(const std::string& name);
    const std::string& path() const { return path_; }
    // One JSON object per pinning event (pinning_event.hpp); none if the file does not exist.
    std::vector<nlohmann::json> events() const;
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

// Starts a lesson server with the detector on (`args` come after --detect-pinning), sends `count`
// concurrent GET `path` with hey (one connection each), stops it, and checks every answer was
// 200, no event was written, and the detector really ran. For servers whose waits are all
// fiber-aware: they must report nothing.
void check_no_pins_under_load(const std::string& binary, const std::vector<std::string>& args,
                              const std::string& path, int count);

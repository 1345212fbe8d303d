#include "event_log.hpp"

#include "test_support.hpp"

#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <stdexcept>

EventLog::EventLog(const std::string& name) : path_(test_log_dir() + "/" + name + ".jsonl") {
    std::remove(path_.c_str());
}

std::vector<std::string> EventLog::events() const {
    std::vector<std::string> lines;
    std::ifstream file(path_);
    for (std::string line; std::getline(file, line);)
        if (!line.empty()) lines.push_back(line);
    return lines;
}

std::string event_field(const std::string& event, const std::string& name) {
    const auto at = event.find("\"" + name + "\":");
    if (at == std::string::npos) return "";
    std::size_t i = at + name.size() + 3;
    std::string value;
    if (i < event.size() && event[i] == '"') {
        for (++i; i < event.size() && event[i] != '"'; ++i) {
            if (event[i] == '\\' && i + 1 < event.size())
                ++i; // \" or \\ (no control characters occur)
            value += event[i];
        }
        return value;
    }
    while (i < event.size() && event[i] != ',' && event[i] != '}')
        value += event[i++];
    return value;
}

double event_number(const std::string& event, const std::string& name) {
    try {
        return std::stod(event_field(event, name));
    } catch (const std::exception&) {
        return -1;
    }
}

std::string EventLog::text() const {
    std::string text;
    for (const auto& line : events())
        text += line + "\n";
    return text.empty() ? "(no events)" : text;
}

void check_no_pins_under_load(const std::string& binary, const std::vector<std::string>& args,
                              const std::string& path, int count) {
    const std::string name = binary.substr(binary.rfind('/') + 1) + "-pins";
    EventLog log(name);
    std::vector<std::string> all_args{"--detect-pinning", "--pinning-events", log.path()};
    all_args.insert(all_args.end(), args.begin(), args.end());
    ServerProcess server(binary, all_args, name);
    STEP(name << ": --detect-pinning on port " << server.port());
    int ok = 0;
    for (const auto& result : concurrent_get(server.port(), path, count))
        ok += result.status == 200;
    STEP(ok << " of " << count << " concurrent GET " << path << " answered 200");
    CHECK(ok == count);
    CHECK(server.stop() == 0);
    STEP("events:\n" << log.text());
    CHECK(log.events().empty());
    // The detector was really on: it says so when it stops.
    CHECK(server.log().find("pinning detector: 0 events (threshold 20ms)") != std::string::npos);
}

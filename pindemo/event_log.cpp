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

namespace {

std::string last_line(const std::string& text) {
    const auto end = text.find_last_not_of('\n');
    if (end == std::string::npos) return "";
    const auto newline = text.rfind('\n', end);
    const auto begin = newline == std::string::npos ? 0 : newline + 1;
    return text.substr(begin, end + 1 - begin);
}

} // namespace

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
    // The clients are fibers on one thread (lesson 03's crowd), not one thread each: the server
    // gets the same load, and the machine is not crowded with hundreds of runnable client
    // threads. On a crowded machine the OS makes carriers wait for a CPU (the detector leaves
    // that out), and it may also keep a carrier blocked inside a system call while a preempted
    // thread holds a kernel lock the call needs: a real stall of the carrier, reported as one
    // (pindemo/README.md), but not what this checks.
    std::string crowd_output;
    const int crowd_status = run_program(
        {BIN_DIR "/crowd", "--url", "http://127.0.0.1:" + std::to_string(server.port()) + path,
         "--connections", std::to_string(count), "--carriers", "1", "--timeout", "20s"},
        crowd_output, std::chrono::seconds(60));
    STEP("crowd --connections " << count << " exited with " << crowd_status << ":\n"
                                << crowd_output);
    CHECK(crowd_status == 0); // every answer was 200
    CHECK(server.stop() == 0);
    STEP("server's closing line: " << last_line(server.log()));
    STEP("events:\n" << log.text());
    CHECK(log.events().empty());
    // The detector was really on: it says so when it stops.
    CHECK(server.log().find("pinning detector: 0 events (threshold 20ms)") != std::string::npos);
}

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

std::string EventLog::brief() const {
    std::string text;
    for (const auto& event : events()) {
        const std::string sampled_at = event_field(event, "sampled_at_ms");
        const std::string blocked_in = event_field(event, "blocked_in");
        text += event_field(event, "fiber") + " on " + event_field(event, "carrier") + ": " +
                event_field(event, "duration_ms") + " ms (on CPU " + event_field(event, "cpu_ms") +
                " ms), " + event_field(event, "ready_waiting") + " ready; " +
                (sampled_at == "null" ? "not sampled"
                                      : "sampled at " + sampled_at + " ms in " + blocked_in +
                                            " from " + event_field(event, "called_from")) +
                "\n";
    }
    return text.empty() ? "(no events)" : text;
}

std::string detector_summary(const std::string& output) {
    const auto at = output.rfind("pinning detector: ");
    if (at == std::string::npos) return "";
    return output.substr(at, output.find('\n', at) - at);
}

void check_no_pins_under_load(const std::string& binary, const std::vector<std::string>& args,
                              const std::string& path, int count) {
    const std::string name = binary.substr(binary.rfind('/') + 1) + "-pins";
    EventLog log(name);
    // Far above any stall a loaded machine shows a carrier (the detector uses the wall clock), and
    // far below what one blocking wait for the pool or the database costs under this load.
    std::vector<std::string> all_args{"--detect-pinning", "--pinning-threshold", "500ms",
                                      "--pinning-events", log.path()};
    all_args.insert(all_args.end(), args.begin(), args.end());
    ServerProcess server(binary, all_args, name);
    STEP(name << ": --detect-pinning on port " << server.port());
    // The clients are fibers on one thread (lesson 03's crowd), not one thread each: the server
    // gets the same load, and the machine is not crowded with hundreds of client threads.
    std::string crowd_output;
    const int crowd_status = run_program(
        {BIN_DIR "/crowd", "--url", "http://127.0.0.1:" + std::to_string(server.port()) + path,
         "--connections", std::to_string(count), "--carriers", "1", "--timeout", "20s"},
        crowd_output, std::chrono::seconds(60));
    const int server_status = server.stop();
    STEP("crowd --connections " << count << " exited with " << crowd_status << ":\n"
                                << crowd_output);
    STEP("events:\n" << log.text());
    // Most telling first: Catch prints a failure's expansion before its messages, and a cut log
    // keeps the first failures.
    CHECK(log.brief() == "(no events)");
    // The detector was really on: it says so when it stops.
    CHECK(detector_summary(server.log()) == "pinning detector: 0 events (threshold 500ms)");
    CHECK(crowd_status == 0); // every answer was 200
    CHECK(server_status == 0);
}

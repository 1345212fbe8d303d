#include "lessons/instruments/pinning/event_log.hpp"

#include "lessons/common/test_support.hpp"

#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>

EventLog::EventLog(const std::string& name) : path_(test_log_dir() + "/" + name + ".jsonl") {
    std::remove(path_.c_str());
}

std::vector<nlohmann::json> EventLog::events() const {
    std::vector<nlohmann::json> events;
    std::ifstream file(path_);
    for (std::string line; std::getline(file, line);)
        if (!line.empty()) events.push_back(nlohmann::json::parse(line));
    return events;
}

std::string EventLog::text() const {
    std::string text;
    for (const auto& event : events())
        text += event.dump() + "\n";
    return text.empty() ? "(no events)" : text;
}

std::string EventLog::brief() const {
    std::string text;
    for (const auto& e : events()) {
        const auto number = [&e](const char* name) { return e[name].dump(); };
        text += e.value("fiber", "") + " on " + e.value("carrier", "") + ": " +
                number("duration_ms") + " ms (on CPU " + number("cpu_ms") + " ms), " +
                number("ready_waiting") + " ready; " +
                (e["sampled_at_ms"].is_null()
                     ? "not sampled"
                     : "sampled at " + number("sampled_at_ms") + " ms in " +
                           e.value("blocked_in", "") + " from " + e.value("called_from", "")) +
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
    const std::string n = std::to_string(count);
    std::string hey_output;
    const int hey_status =
        run_program({"/usr/bin/hey", "-n", n, "-c", n, "-disable-keepalive", "-t", "20",
                     "http://127.0.0.1:" + std::to_string(server.port()) + path},
                    hey_output, std::chrono::seconds(60));
    const int server_status = server.stop();
    STEP("hey -n " << n << " -c " << n << " exited with " << hey_status << ":\n" << hey_output);
    STEP("events:\n" << log.text());
    // Most telling first: Catch prints a failure's expansion before its messages, and a cut log
    // keeps the first failures.
    CHECK(log.brief() == "(no events)");
    // The detector was really on: it says so when it stops.
    CHECK(detector_summary(server.log()) == "pinning detector: 0 events (threshold 500ms)");
    CHECK(hey_status == 0);
    // hey lists each status it got; every answer was 200, and no request failed.
    CHECK(hey_output.find("[200]\t" + n + " responses") != std::string::npos);
    CHECK(hey_output.find("Error distribution") == std::string::npos);
    CHECK(server_status == 0);
}

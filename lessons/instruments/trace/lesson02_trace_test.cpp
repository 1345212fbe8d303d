// lesson02 --trace: the tracer's flags, and the tracer beside the pinning detector.
#include "lessons/common/test_support.hpp"
#include "lessons/instruments/pinning/event_log.hpp"
#include "lessons/instruments/trace/trace_check.hpp"

#include <catch2/catch.hpp>
#include <cstdio>

namespace {
const std::string lesson02 = BIN_DIR "/lesson02";
} // namespace

TEST_CASE("lesson02 with a trace file it cannot write says so in one line and exits 2",
          "[lesson02][trace]") {
    std::string output;
    CHECK(run_program({lesson02, "--trace", "/nonexistent-directory/t.json"}, output) == 2);
    CHECK(output == "lesson02: cannot write the trace to /nonexistent-directory/t.json: No such "
                    "file or directory\n");
    CHECK(run_program({lesson02, "--trace", test_log_dir()}, output) == 2);
    CHECK(output == "lesson02: cannot write the trace to " + test_log_dir() + ": Is a directory\n");
    CHECK(run_program({lesson02, "--trace", "t.json", "--trace-window", "0ms"}, output) == 2);
    CHECK(output.find("--trace-window") != std::string::npos);
}

TEST_CASE("lesson02 --detect-pinning and --trace together: the event and the long turn",
          "[lesson02][trace][pinning]") {
    EventLog log("lesson02-pins-and-trace");
    const std::string trace_path = test_log_dir() + "/lesson02-pins-and-trace.json";
    std::remove(trace_path.c_str());
    std::vector<TimedGet> results;
    {
        // 300 ms, as lesson02_pinning_test says: above what a loaded machine adds to a turn.
        ServerProcess server(lesson02,
                             {"--bad-blocking-sleep", "--detect-pinning", "--pinning-threshold",
                              "300ms", "--pinning-events", log.path(), "--trace", trace_path,
                              "--trace-window", "1h"},
                             "lesson02-pins-and-trace");
        STEP("lesson02 --bad-blocking-sleep with both on, port " << server.port());
        // Two blocking sleeps on one carrier: the second request waits behind the first (a pin).
        results = concurrent_get(server.port(), "/benchmark", 2);
        CHECK(server.stop() == 0);
        STEP("server log:\n" << server.log());
    }
    for (const auto& result : results)
        REQUIRE(result.status == 200);
    STEP("pinning events:\n" << log.text());
    CHECK(log.events().size() >= 1);
    const nlohmann::json trace = read_trace(trace_path);
    STEP("trace " << trace_path);
    CHECK(trace_problems(trace) == "");
    // Each blocking sleep is one turn of a second or more on the carrier.
    int long_turns = 0;
    for (const auto& event : trace["traceEvents"])
        if (event["ph"] == "X" && event["dur"].get<double>() >= 900'000) ++long_turns;
    CHECK(long_turns >= 2);
}

// Lesson 05's platform wiring with --trace: the queue the requests wait in shows in the trace.
#include "lessons/04-pool/pg_test_support.hpp"
#include "lessons/instruments/trace/trace_check.hpp"

#include <catch2/catch.hpp>
#include <cstdio>
#include <map>
#include <set>

TEST_CASE("lesson05 --profile platform --trace shows the executor's queue, its threads and the "
          "pool",
          "[lesson05][trace]") {
    const std::string path = test_log_dir() + "/lesson05-platform.json";
    std::remove(path.c_str());
    std::vector<TimedGet> results;
    {
        // Two threads for six requests: four wait in the executor's queue, whatever the timing.
        ServerProcess server(BIN_DIR "/lesson05",
                             {"--db", test_conninfo(), "--profile", "platform", "--threads-max",
                              "2", "--management-port", "0", "--trace", path, "--trace-window",
                              "1h"},
                             "lesson05-platform-trace");
        STEP("lesson05 --profile platform --threads-max 2 --trace on port " << server.port());
        results = concurrent_get(server.port(), "/work", 6);
        CHECK(server.stop() == 0);
        STEP("server log:\n" << server.log());
    }
    for (const auto& result : results)
        REQUIRE(result.status == 200);
    const nlohmann::json trace = read_trace(path);
    STEP("6 concurrent GET /work answered; trace " << path);
    REQUIRE(trace_problems(trace) == "");

    std::map<int, std::string> tracks;
    std::set<int> work_slice_tracks;  // where slices named after a GET /work ran
    std::map<std::string, int> spans; // by name
    std::set<std::string> counters;
    for (const auto& event : trace["traceEvents"]) {
        if (event["ph"] == "M" && event["name"] == "thread_name")
            tracks[event["tid"]] = event["args"]["name"];
        if (event["ph"] == "X" &&
            event["name"].get<std::string>().find(" GET /work") != std::string::npos)
            work_slice_tracks.insert(event["tid"].get<int>());
        if (event["ph"] == "b") ++spans[event["name"]];
        if (event["ph"] == "C") counters.insert(event["name"].get<std::string>());
    }
    // Each request ran on a platform thread: a slice named after its connection's fiber there.
    int platform_tracks = 0;
    for (int tid : work_slice_tracks)
        if (tracks[tid].rfind("platform-", 0) == 0) ++platform_tracks;
    CHECK(platform_tracks >= 1);
    CHECK(platform_tracks <= 2);
    CHECK(spans["executor.queue"] == 6);
    CHECK(spans["pool.hold"] >= 6); // and the pool's opening holds, at start-up
    for (const char* counter : {"inflight", "pool", "connections"})
        CHECK(counters.count(counter) == 1);
}

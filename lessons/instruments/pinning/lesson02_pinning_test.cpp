// Lesson 02's counter-examples, caught by the pinning detector (lesson02 --detect-pinning).
#include "lessons/common/test_support.hpp"
#include "lessons/instruments/pinning/event_log.hpp"

#include <catch2/catch.hpp>

namespace {
const std::string lesson02 = BIN_DIR "/lesson02";
// The pins below last a second or more. A 300 ms threshold keeps out what a loaded machine adds
// to a turn, and cpp-httplib's own short wait for a request's first bytes (a blocking poll: a
// real pin, the subject of lesson 03, but not the one these tests look for).
const std::string threshold = "300ms";
} // namespace

TEST_CASE("lesson02 --bad-blocking-sleep --detect-pinning reports each blocking sleep",
          "[lesson02][pinning]") {
    EventLog log("lesson02-bad-blocking-sleep-pins");
    std::vector<TimedGet> results;
    {
        ServerProcess server(lesson02,
                             {"--bad-blocking-sleep", "--detect-pinning", "--pinning-threshold",
                              threshold, "--pinning-events", log.path()},
                             "lesson02-bad-blocking-sleep-pins");
        STEP("lesson02 --bad-blocking-sleep --detect-pinning on port " << server.port());
        results = concurrent_get(server.port(), "/benchmark", 10);
        CHECK(server.stop() == 0);
    }
    for (const auto& result : results)
        REQUIRE(result.status == 200);
    const auto events = log.events();
    STEP("10 concurrent GET /benchmark answered; events:\n" << log.text());
    // Each of the ten one-second sleeps holds the carrier while the connections behind it wait:
    // nine pins at least (the last sleeper may have nobody behind it), one per sleep.
    CHECK(events.size() >= 9);
    CHECK(events.size() <= 10);
    // The stack is sampled by a thread of the detector's once a turn passes the threshold; on a
    // machine busy enough that it gets no CPU before the second is over, an event has none (its
    // "stack" is empty). Ten chances to miss: every sampled event must show the sleep, and
    // one must be sampled at least.
    int sampled = 0;
    for (const auto& event : events) {
        CHECK(event["duration_ms"].get<double>() >= 900);
        const std::string blocked_in = event["blocked_in"];
        if (blocked_in.empty()) continue;
        ++sampled;
        CHECK(blocked_in.find("sleep") != std::string::npos);
        CHECK(event["called_from"].get<std::string>().find(
                  "lessons/01-one-thread/benchmark_routes.cpp") != std::string::npos);
    }
    CHECK(sampled >= 1);
}

TEST_CASE("lesson02 --detect-pinning reports nothing for the fiber-aware sleep",
          "[lesson02][pinning]") {
    EventLog log("lesson02-fiber-sleep-pins");
    // What must not be reported is the one-second fiber-aware sleep, which 300 ms would catch.
    ServerProcess server(
        lesson02,
        {"--detect-pinning", "--pinning-threshold", threshold, "--pinning-events", log.path()},
        "lesson02-fiber-sleep-pins");
    for (const auto& result : concurrent_get(server.port(), "/benchmark", 10))
        REQUIRE(result.status == 200);
    CHECK(server.stop() == 0);
    STEP("10 concurrent GET /benchmark answered; events:\n" << log.text());
    CHECK(log.brief() == "(no events)");
    CHECK(detector_summary(server.log()) == "pinning detector: 0 events (threshold 300ms)");
}

TEST_CASE("lesson02 --keep-alive --detect-pinning reports cpp-httplib's keep-alive wait",
          "[lesson02][pinning]") {
    EventLog log("lesson02-keep-alive-pins");
    ServerProcess server(lesson02,
                         {"--keep-alive", "--detect-pinning", "--pinning-threshold", threshold,
                          "--pinning-events", log.path()},
                         "lesson02-keep-alive-pins");
    RawConnection first(server.port());
    RawConnection second(server.port());
    const std::string request = "GET /benchmark HTTP/1.1\r\nHost: localhost\r\n\r\n";
    REQUIRE(first.send(request));
    REQUIRE(second.send(request));
    STEP("two keep-alive connections each sent one request and then stay open, quiet");
    CHECK(status_of(first.receive_response(std::chrono::seconds(30))) == 200);
    CHECK(status_of(second.receive_response(std::chrono::seconds(30))) == 200);
    // Hanging up ends the second fiber's keep-alive wait at once, so the server can stop.
    first.close();
    second.close();
    CHECK(server.stop() == 0);
    const auto events = log.events();
    STEP("both answered; events:\n" << log.text());
    // The first connection's fiber waits for a next request in cpp-httplib's poll loop (5 s
    // keep-alive timeout) while the second connection's fiber is ready: that is the pin.
    int keep_alive_waits = 0;
    for (const auto& event : events) {
        const std::string blocked_in = event["blocked_in"];
        if (event["duration_ms"].get<double>() >= 3000 &&
            (blocked_in == "poll" || blocked_in.find("sleep") != std::string::npos))
            ++keep_alive_waits;
    }
    CHECK(keep_alive_waits >= 1);
}

TEST_CASE("lesson02 with an events file it cannot write says so in one line and exits 2",
          "[lesson02][pinning]") {
    std::string output;
    const int status =
        run_program({lesson02, "--pinning-events", "/nonexistent-directory/e.jsonl"}, output);
    CHECK(status == 2);
    CHECK(output == "lesson02: cannot write pinning events to /nonexistent-directory/e.jsonl: No "
                    "such file or directory\n");
}

// Lesson 03 with the pinning detector on: its waits are all fiber-aware, so nothing to report.
#include "event_log.hpp"
#include "test_support.hpp"

#include <catch2/catch.hpp>

TEST_CASE("lesson03 --detect-pinning reports nothing under two hundred concurrent sleeps",
          "[lesson03][pindemo]") {
    EventLog log("lesson03-pins");
    ServerProcess server(BIN_DIR "/lesson03", {"--detect-pinning", "--pinning-events", log.path()},
                         "lesson03-pins");
    STEP("lesson03 --detect-pinning on port " << server.port());
    int ok = 0;
    for (const auto& result : concurrent_get(server.port(), "/benchmark", 200))
        ok += result.status == 200;
    STEP(ok << " of 200 concurrent GET /benchmark answered 200");
    CHECK(ok == 200);
    CHECK(server.stop() == 0);
    STEP("events:\n" << log.text());
    CHECK(log.events().empty());
    // The detector was really on: it says so when it stops.
    CHECK(server.log().find("pinning detector: 0 events (threshold 20ms)") != std::string::npos);
}

// Lesson 03 with the pinning detector on: its waits are all fiber-aware, so nothing to report.
#include "lessons/instruments/pinning/event_log.hpp"

#include <catch2/catch.hpp>

TEST_CASE("lesson03 --detect-pinning reports nothing under two hundred concurrent sleeps",
          "[lesson03][pinning]") {
    check_no_pins_under_load(BIN_DIR "/lesson03", {}, "/benchmark", 200);
}

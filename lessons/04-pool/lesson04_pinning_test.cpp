// Lesson 04 with the pinning detector on: libpq runs through the async API and the connector's
// fiber-aware waits, and a fiber waiting for the pool parks, so nothing pins a carrier.
#include "lessons/04-pool/pg_test_support.hpp"
#include "lessons/instruments/pinning/event_log.hpp"

#include <catch2/catch.hpp>

TEST_CASE("lesson04 --detect-pinning reports nothing under a hundred concurrent GET /work",
          "[lesson04][pinning]") {
    // A hundred requests for ten connections: ninety wait for the pool at first.
    check_no_pins_under_load(BIN_DIR "/lesson04", {"--db", test_conninfo()}, "/work", 100);
}

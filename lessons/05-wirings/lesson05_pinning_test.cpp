// Lesson 05's vt wiring with the pinning detector on: handlers run on the connection fibers, and
// every wait on the way (the pool, libpq, the socket) is fiber-aware, so nothing pins a carrier.
#include "lessons/04-pool/pg_test_support.hpp"
#include "lessons/instruments/pinning/event_log.hpp"

#include <catch2/catch.hpp>

TEST_CASE("lesson05 --profile vt --detect-pinning reports nothing under fifty concurrent GET /work",
          "[lesson05][pinning]") {
    // Fifty requests for ten connections: forty fibers wait for the pool at first.
    check_no_pins_under_load(BIN_DIR "/lesson05",
                             {"--db", test_conninfo(), "--profile", "vt", "--management-port", "0"},
                             "/work", 50);
}

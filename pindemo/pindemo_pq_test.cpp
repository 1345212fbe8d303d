// pindemo's database case against a real PostgreSQL (CTest's `postgres` fixture starts one).
#include "lessons/04-pool/pg_test_support.hpp"
#include "lessons/common/test_support.hpp"
#include "lessons/instruments/pinning/event_log.hpp"

#include <catch2/catch.hpp>

TEST_CASE("PQexec on a fiber pins its carrier in poll, lesson 04's PgConnection does not",
          "[pindemo]") {
    const std::string pindemo = BIN_DIR "/pindemo";
    const std::string db = test_conninfo();
    STEP("PostgreSQL: " << db);

    EventLog pinned_log("pindemo-pq");
    std::string output;
    const int status = run_program({pindemo, "--case", "pq", "--db", db, "--events",
                                    pinned_log.path(), "--threshold", "200ms", "--work", "800ms"},
                                   output);
    STEP("pindemo --case pq exited " << status << ":\n" << output);
    REQUIRE(status == 0);
    const auto events = pinned_log.events();
    REQUIRE(events.size() == 1);
    CHECK(events[0]["fiber"] == "db-client");
    CHECK(events[0]["blocked_in"] == "poll");
    CHECK(events[0]["stack"].dump().find("PQgetResult") != std::string::npos);
    CHECK(events[0]["called_from"].get<std::string>().find("pindemo/pin_cases.cpp") !=
          std::string::npos);

    EventLog fixed_log("pindemo-pq-fixed");
    const int fixed_status =
        run_program({pindemo, "--case", "pq", "--fixed", "--db", db, "--events", fixed_log.path(),
                     "--threshold", "200ms", "--work", "800ms"},
                    output);
    STEP("pindemo --case pq --fixed exited " << fixed_status << ":\n" << output);
    REQUIRE(fixed_status == 0);
    CHECK(fixed_log.brief() == "(no events)");
}

// Lesson 01 checkpoint: one worker thread serves ten one-second requests one after another.
#include "lessons/common/test_support.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>
#include <thread>

namespace {
const std::string lesson01 = BIN_DIR "/lesson01";

} // namespace

TEST_CASE("ten concurrent one-second requests take ten seconds on one worker thread",
          "[lesson01][checkpoint]") {
    ServerProcess server(lesson01, {}, "lesson01-checkpoint");
    STEP("lesson01 listening on port " << server.port() << ", log " << server.log_path());
    const auto results = concurrent_get(server.port(), "/benchmark", 10);
    STEP("sent 10 concurrent GET /benchmark");

    std::set<std::string> threads;
    double slowest = 0;
    for (const auto& result : results) {
        INFO("response: " << result.status << " after " << result.seconds << " s: " << result.body);
        REQUIRE(result.status == 200);
        const auto answer = nlohmann::json::parse(result.body);
        CHECK(answer.at("sleep_ms") == 1000);
        CHECK(answer.at("fiber") == false);
        threads.insert(answer.at("thread").get<std::string>());
        slowest = std::max(slowest, result.seconds);
    }
    STEP("the slowest answer came after " << slowest << " s");
    // Ten sleeps of one second on one thread cannot overlap: the last answer needs >= 10 s.
    // The bound is 9 s only to allow for clock granularity; it cannot pass if requests overlap.
    CHECK(slowest >= 9.0);
    CHECK(threads.size() == 1);
}

TEST_CASE("with --keep-alive the one worker stays with a quiet client until its keep-alive ends",
          "[lesson01]") {
    ServerProcess server(lesson01, {"--keep-alive"}, "lesson01-keep-alive");
    STEP("lesson01 --keep-alive listening on port " << server.port());
    const KeepAliveRace race = two_quiet_keep_alive_clients(server.port(), "/benchmark");
    STEP("two keep-alive connections each sent one request and stayed quiet; answers after "
         << race.first_at << " s and " << race.second_at << " s");
    REQUIRE(race.first_status == 200);
    REQUIRE(race.second_status == 200);
    // The worker sleeps 1 s for the first request, then waits up to 5 s (cpp-httplib's keep-alive
    // timeout) for the first client's next request before it takes the second connection.
    CHECK(race.second_at >= 5.5);
}

TEST_CASE("lesson01 refuses an unknown flag with one line and status 2", "[lesson01]") {
    std::string output;
    const int status = run_program({lesson01, "--no-such-flag"}, output);
    INFO("output: " << output);
    CHECK(status == 2);
    CHECK(output == "lesson01: unknown flag '--no-such-flag' (try --help)\n");
}

TEST_CASE("lesson01 on a port that is taken says so and exits 1", "[lesson01]") {
    ServerProcess holder(lesson01, {}, "lesson01-port-holder");
    STEP("a first lesson01 holds port " << holder.port());
    std::string output;
    const int status = run_program({lesson01, "--port", std::to_string(holder.port())}, output);
    INFO("output: " << output);
    CHECK(status == 1);
    CHECK(output.find("cannot listen on 127.0.0.1:" + std::to_string(holder.port()) +
                      ": Address already in use") != std::string::npos);
}

TEST_CASE("lesson01 exits 0 on SIGTERM", "[lesson01]") {
    ServerProcess server(lesson01, {}, "lesson01-sigterm");
    CHECK(server.stop() == 0);
}

TEST_CASE("lesson01 stops on SIGTERM even while a client trickles a request at its one worker",
          "[lesson01]") {
    ServerProcess server(lesson01, {}, "lesson01-sigterm-trickle");
    // A byte a second: cpp-httplib's 5 s read timeout is per read, so this holds the worker for
    // as long as the client likes (the whole request would take 30 s).
    TricklingClient trickler(server.port(), get_request("/benchmark"), std::chrono::seconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(500)); // the worker is reading it
    const auto start = std::chrono::steady_clock::now();
    // The grace is 5 s; 20 s is slack for a busy machine. A SIGKILL after it reads 137.
    const int status = server.stop(std::chrono::seconds(20));
    STEP("a client trickles GET /benchmark; SIGTERM: exited " << status << " after "
                                                              << seconds_since(start) << " s");
    CHECK(status == 0);
    CHECK(server.log().find("still busy") != std::string::npos);
}

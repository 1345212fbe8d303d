// Lesson 02 checkpoint: fibers on one carrier sleep side by side, unless something pins it.
#include "lessons/common/test_support.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>

namespace {
const std::string lesson02 = BIN_DIR "/lesson02";

struct Outcome {
    double slowest = 0;
    std::set<std::string> threads;
    std::set<bool> fiber_flags;
};

Outcome ten_concurrent_benchmarks(int port) {
    Outcome outcome;
    for (const auto& result : concurrent_get(port, "/benchmark", 10)) {
        INFO("response: " << result.status << " after " << result.seconds << " s: " << result.body);
        REQUIRE(result.status == 200);
        outcome.slowest = std::max(outcome.slowest, result.seconds);
        const auto answer = nlohmann::json::parse(result.body);
        outcome.threads.insert(answer.at("thread").get<std::string>());
        outcome.fiber_flags.insert(answer.at("fiber").get<bool>());
    }
    return outcome;
}
} // namespace

TEST_CASE("ten concurrent one-second requests take one second on fibers of one carrier",
          "[lesson02][checkpoint]") {
    ServerProcess server(lesson02, {}, "lesson02-checkpoint");
    STEP("lesson02 listening on port " << server.port() << ", log " << server.log_path());
    const Outcome outcome = ten_concurrent_benchmarks(server.port());
    STEP("10 concurrent GET /benchmark answered; the slowest after " << outcome.slowest << " s");
    // The sleeps overlap, so the last answer comes after ~1 s. Taking turns needs 10 s, so
    // 5 s cannot be met by a pinned carrier and leaves 4 s for a busy machine.
    CHECK(outcome.slowest < 5.0);
    CHECK(outcome.threads.size() == 1);
    CHECK(outcome.threads.begin()->rfind("carrier-0#", 0) == 0);
    CHECK(outcome.fiber_flags == std::set<bool>{true});
}

TEST_CASE("a blocking sleep inside a fiber pins the carrier: ten seconds again", "[lesson02]") {
    ServerProcess server(lesson02, {"--bad-blocking-sleep"}, "lesson02-bad-blocking-sleep");
    STEP("lesson02 --bad-blocking-sleep listening on port " << server.port());
    const Outcome outcome = ten_concurrent_benchmarks(server.port());
    STEP("10 concurrent GET /benchmark answered; the slowest after " << outcome.slowest << " s");
    // Each std::this_thread::sleep_for holds the only carrier for a full second.
    CHECK(outcome.slowest >= 9.0);
    CHECK(outcome.fiber_flags == std::set<bool>{true});
}

TEST_CASE("cpp-httplib's blocking keep-alive wait inside a fiber pins the carrier", "[lesson02]") {
    ServerProcess server(lesson02, {"--keep-alive"}, "lesson02-keep-alive");
    STEP("lesson02 --keep-alive listening on port " << server.port());
    const KeepAliveRace race = two_quiet_keep_alive_clients(server.port(), "/benchmark");
    STEP("two keep-alive connections each sent one request and stayed quiet; answers after "
         << race.first_at << " s and " << race.second_at << " s");
    REQUIRE(race.first_status == 200);
    REQUIRE(race.second_status == 200);
    // Both sleeps end at ~1 s. The first fiber answers, then waits for its client's next request
    // in cpp-httplib's poll loop (5 s keep-alive timeout) without yielding: the second fiber is
    // ready but cannot run until that wait gives up. (4 s: a busy machine, still far from 6 s.)
    CHECK(race.first_at < 4.0);
    CHECK(race.second_at >= 5.5);
}

TEST_CASE("lesson02 refuses an unknown flag with one line and status 2", "[lesson02]") {
    std::string output;
    CHECK(run_program({lesson02, "--bogus"}, output) == 2);
    CHECK(output == "lesson02: unknown flag '--bogus' (try --help)\n");
}

TEST_CASE("lesson02 survives a Range header built to exhaust a fiber's stack", "[lesson02]") {
    ServerProcess server(lesson02, {}, "lesson02-range");
    STEP("lesson02 listening on port " << server.port());
    // cpp-httplib matches Range with std::regex, which recurses per character: ~4 MiB of stack
    // for this header. Lesson 02's fibers have 8 MiB stacks, as OS threads do.
    std::string range = "bytes=0-1";
    while (range.size() < 8000)
        range += ",0-1";
    RawConnection connection(server.port());
    REQUIRE(connection.send("GET /hello HTTP/1.1\r\nHost: x\r\nRange: " + range + "\r\n\r\n"));
    STEP("sent GET /hello with a " << range.size() << "-byte Range header");
    const std::string answer = connection.receive_response(std::chrono::seconds(20));
    STEP("answer: " << answer.substr(0, answer.find('\r')));
    CHECK(status_of(answer) != 0);
    CHECK(server.running());
}

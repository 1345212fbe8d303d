// Lesson 03 checkpoint: with fiber-aware sockets, kept-alive connections no longer pin anything.
#include "lessons/common/test_support.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <memory>
#include <set>
#include <thread>

namespace {
const std::string lesson03 = BIN_DIR "/lesson03";
const std::string crowd = BIN_DIR "/crowd";
} // namespace

TEST_CASE("ten kept-alive one-second requests on one carrier take one second, not ten",
          "[lesson03][checkpoint]") {
    // One carrier: ten sleeps that pinned it would take 10 s in turns, whatever the core count
    // (on one carrier per core, an 8-core laptop would take turns in 2 s).
    ServerProcess server(lesson03, {"--carriers", "1"}, "lesson03-checkpoint");
    STEP("lesson03 --carriers 1 listening on port " << server.port() << ", log "
                                                    << server.log_path());
    std::vector<std::unique_ptr<RawConnection>> clients;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < 10; ++i) {
        clients.push_back(std::make_unique<RawConnection>(server.port()));
        // HTTP/1.1 without "Connection: close": the connections stay open after the answer.
        REQUIRE(clients.back()->send("GET /benchmark HTTP/1.1\r\nHost: localhost\r\n\r\n"));
    }
    STEP("10 keep-alive connections sent GET /benchmark");
    std::set<bool> fiber_flags;
    for (auto& client : clients) {
        const std::string response = client->receive_response(std::chrono::seconds(30));
        INFO("response: " << response);
        REQUIRE(status_of(response) == 200);
        CHECK(response.find("Keep-Alive: timeout=5") != std::string::npos);
        fiber_flags.insert(nlohmann::json::parse(body_of(response)).at("fiber").get<bool>());
    }
    const double elapsed = seconds_since(start);
    STEP("all 10 answered after " << elapsed << " s");
    // Overlapping sleeps: ~1 s. Taking turns: 10 s. 5 s leaves 4 s for a busy machine.
    CHECK(elapsed < 5.0);
    CHECK(fiber_flags == std::set<bool>{true});
    STEP("a second round on the same kept-alive connections");
    for (auto& client : clients)
        REQUIRE(client->send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n"));
    for (auto& client : clients)
        CHECK(status_of(client->receive_response(std::chrono::seconds(10))) == 200);
}

TEST_CASE("two thousand concurrent one-second requests all succeed", "[lesson03][checkpoint]") {
    // The 10,000-connection version with timing and memory is the lesson's checkpoint script;
    // here the point is correctness under a crowd, with a bound no busy machine can break.
    ServerProcess server(lesson03, {}, "lesson03-crowd");
    STEP("lesson03 listening on port " << server.port());
    std::string output;
    const int status = run_program(
        {crowd, "--url", "http://127.0.0.1:" + std::to_string(server.port()) + "/benchmark",
         "--connections", "2000"},
        output, std::chrono::seconds(120));
    STEP("crowd said:\n" << output);
    CHECK(status == 0);
    CHECK(output.find("answers: 200: 2000") != std::string::npos);
}

TEST_CASE("lesson03 refuses bad flags with one line and status 2", "[lesson03]") {
    std::string output;
    CHECK(run_program({lesson03, "--max-connections", "many"}, output) == 2);
    CHECK(output == "lesson03: --max-connections: 'many' is not a number (try --help)\n");
    CHECK(run_program({lesson03, "--keep-alive-timeout", "soon"}, output) == 2);
    CHECK(output.find("'soon' is not a duration") != std::string::npos);
}

TEST_CASE("lesson03 refuses a value outside a flag's range with one line and status 2",
          "[lesson03]") {
    // Each of these once started a server that did something else: 70000 listened on 4464, -1
    // on 65535, max-connections 0 never accepted, read-timeout 0 never timed out, and a huge
    // one overflowed into a negative duration.
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"--port", "70000"},
        {"--port", "-1"},
        {"--max-connections", "0"},
        {"--max-connections", "-3"},
        {"--accept-count", "0"},
        {"--keep-alive-requests", "0"},
        {"--carriers", "-1"},
        {"--read-timeout", "0"},
        {"--write-timeout", "0"},
        {"--keep-alive-timeout", "0"},
        {"--read-timeout", "99999999999999999999"},
    };
    for (const auto& [flag, value] : cases) {
        std::string output;
        const int status = run_program({lesson03, flag, value}, output, std::chrono::seconds(10));
        STEP("lesson03 " << flag << " " << value << " exited " << status << ": " << output);
        CHECK(status == 2);
        CHECK(output.rfind("lesson03: " + flag + ": '" + value + "' is ", 0) == 0);
        CHECK(output.find("(try --help)\n") != std::string::npos);
        CHECK(std::count(output.begin(), output.end(), '\n') == 1);
    }
}

TEST_CASE("lesson03 on a port that is taken says so and exits 1", "[lesson03]") {
    ServerProcess holder(lesson03, {}, "lesson03-port-holder");
    std::string output;
    CHECK(run_program({lesson03, "--port", std::to_string(holder.port())}, output) == 1);
    CHECK(output == "lesson03: cannot listen on 127.0.0.1:" + std::to_string(holder.port()) +
                        ": Address already in use\n");
}

TEST_CASE("lesson03 exits 0 on SIGTERM, even with requests in flight", "[lesson03]") {
    ServerProcess server(lesson03, {}, "lesson03-sigterm");
    RawConnection busy(server.port());
    REQUIRE(busy.send("GET /benchmark HTTP/1.1\r\nHost: x\r\n\r\n"));
    RawConnection idle(server.port());
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    STEP("one request sleeping, one idle connection; sending SIGTERM");
    CHECK(server.stop() == 0);
    CHECK(status_of(busy.receive_response(std::chrono::seconds(5))) == 200);
}

// Lesson 08 checkpoint: each pitfall fails with its --bad-... flag and not without it. Every
// verdict rests on an order of events the server cannot change, never on how fast it runs.
#include "request_context.hpp"
#include "test_support.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <memory>
#include <poll.h>
#include <set>

namespace {
const std::string lesson08 = BIN_DIR "/lesson08";
// Generous: a busy laptop answers in milliseconds; only a hung server takes this long.
constexpr std::chrono::seconds answer_within{60};

// Sends GET /request-id for ids 1..10, each asking to wait until all 10 have kept their id;
// returns how many answers read back another request's id. Fails the test on a non-200.
int answers_with_another_id(const std::vector<std::string>& flags, const std::string& log) {
    ServerProcess server(lesson08, flags, log);
    STEP("lesson08 " << Catch::Detail::stringify(flags) << " on port " << server.port());
    std::vector<std::unique_ptr<RawConnection>> clients;
    for (int id = 1; id <= 10; ++id) {
        clients.push_back(std::make_unique<RawConnection>(server.port()));
        REQUIRE(
            clients.back()->send(get_request("/request-id?together=10&id=" + std::to_string(id))));
    }
    STEP("10 requests sent, ids 1 to 10, each parked until all 10 have kept theirs");
    int wrong = 0;
    for (int id = 1; id <= 10; ++id) {
        const std::string response = clients[id - 1]->receive_response(answer_within);
        INFO("request " << id << " got: " << response);
        REQUIRE(status_of(response) == 200);
        const auto answer = nlohmann::json::parse(body_of(response));
        if (answer.at("read_back") != std::to_string(id)) ++wrong;
    }
    return wrong;
}

// True when the peer has sent something we have not read yet (looks, does not wait).
bool has_unread_bytes(const RawConnection& connection) {
    pollfd p{connection.fd(), POLLIN, 0};
    return ::poll(&p, 1, 0) == 1;
}
} // namespace

TEST_CASE("a thread_local request id is read back by other requests' fibers, and never with "
          "either fix or on platform threads",
          "[lesson08][checkpoint]") {
    INFO("each figure: of 10 concurrent requests, how many read back another request's id");
    // One carrier: all ten fibers share its thread_local. Each keeps its id, parks until the
    // ten have kept theirs, then reads: all read the last writer's id, so nine are wrong.
    CHECK(answers_with_another_id({"--carriers", "1", "--bad-thread-local"}, "lesson08-tl-bad") ==
          9);
    CHECK(answers_with_another_id({"--carriers", "1"}, "lesson08-tl-explicit") == 0);
    CHECK(answers_with_another_id({"--carriers", "1", "--fiber-specific"}, "lesson08-tl-fss") == 0);
    // The same thread_local is right on platform threads: one request per thread at a time.
    CHECK(answers_with_another_id({"--profile", "platform", "--bad-thread-local"},
                                  "lesson08-tl-platform") == 0);
}

TEST_CASE("a std::mutex held across a fiber wait hangs the carrier, and the watchdog says so",
          "[lesson08][checkpoint]") {
    ServerProcess server(lesson08, {"--carriers", "1", "--bad-std-mutex"}, "lesson08-std-mutex");
    STEP("lesson08 --carriers 1 --bad-std-mutex, log " << server.log_path());
    // The first holds the lock for 5 s of fiber wait; the second reaches lock() long before.
    RawConnection first(server.port()), second(server.port());
    REQUIRE(first.send(get_request("/locked?ms=5000")));
    REQUIRE(second.send(get_request("/locked?ms=5000")));
    STEP("two GET /locked?ms=5000 sent on one carrier");
    // The watchdog speaks after 2 s of silence; 30 s allows for a machine that is very busy.
    const bool reported = eventually(
        [&] {
            return server.log().find("watchdog: carrier-0 has run no other fiber for 2 s") !=
                   std::string::npos;
        },
        std::chrono::seconds(30));
    STEP("server log:\n" << server.log());
    CHECK(reported);
    CHECK_FALSE(has_unread_bytes(first)); // nobody was answered: a deadlock, not a delay
    // A hung carrier must not make the server hang on SIGTERM: it exits after its stop grace.
    CHECK(server.stop(std::chrono::seconds(30)) == 0);
}

TEST_CASE("with boost::fibers::mutex, ten requests holding the lock across a wait all complete",
          "[lesson08][checkpoint]") {
    ServerProcess server(lesson08, {"--carriers", "1"}, "lesson08-fiber-mutex");
    std::vector<std::unique_ptr<RawConnection>> clients;
    for (int i = 0; i < 10; ++i) {
        clients.push_back(std::make_unique<RawConnection>(server.port()));
        REQUIRE(clients.back()->send(get_request("/locked?ms=100")));
    }
    STEP("10 GET /locked?ms=100 sent on one carrier");
    std::set<long> updates;
    for (auto& client : clients) {
        const std::string response = client->receive_response(answer_within);
        INFO("got: " << (response.empty() ? "no answer within 60 s; server log:\n" + server.log()
                                          : response));
        REQUIRE(status_of(response) == 200);
        updates.insert(nlohmann::json::parse(body_of(response)).at("updates").get<long>());
    }
    STEP("server log:\n" << server.log());
    CHECK(updates.size() == 10); // one update each, none lost: the lock excluded
    CHECK(server.log().find("watchdog") == std::string::npos);
}

TEST_CASE("a /hello sent while /cpu computes on the only carrier waits for it, but not "
          "when CPU threads compute",
          "[lesson08][checkpoint]") {
    const bool on_carrier = GENERATE(true, false);
    std::vector<std::string> flags{"--carriers", "1"};
    if (on_carrier) flags.push_back("--bad-cpu-on-carrier");
    ServerProcess server(lesson08, flags, on_carrier ? "lesson08-cpu-bad" : "lesson08-cpu-fix");
    STEP("lesson08 " << Catch::Detail::stringify(flags));
    // /cpu's request is in the server's socket before /hello's connection even exists, so the
    // carrier starts on /cpu first. A second of CPU time is long beside a /hello's microseconds.
    RawConnection cpu(server.port());
    REQUIRE(cpu.send(get_request("/cpu?ms=1000")));
    RawConnection hello(server.port());
    REQUIRE(hello.send(get_request("/hello")));
    STEP("GET /cpu?ms=1000 sent, then GET /hello on a second connection");
    const std::string hello_response = hello.receive_response(answer_within);
    REQUIRE(status_of(hello_response) == 200);
    const bool cpu_answered_first = has_unread_bytes(cpu);
    STEP("/hello answered; /cpu's answer " << (cpu_answered_first ? "had" : "had not")
                                           << " arrived before it");
    CHECK(cpu_answered_first == on_carrier);
    const std::string cpu_response = cpu.receive_response(answer_within);
    INFO("/cpu got: " << cpu_response);
    REQUIRE(status_of(cpu_response) == 200);
    const std::string computed_on =
        nlohmann::json::parse(body_of(cpu_response)).at("computed_on").get<std::string>();
    CHECK(computed_on.rfind(on_carrier ? "carrier-0" : "platform-", 0) == 0);
}

TEST_CASE("lesson08 refuses contradictory flags and bad query values", "[lesson08]") {
    std::string output;
    CHECK(run_program({lesson08, "--bad-thread-local", "--fiber-specific"}, output) == 2);
    CHECK(output == "lesson08: --bad-thread-local and --fiber-specific exclude each other "
                    "(try --help)\n");
    CHECK(run_program({lesson08, "--cpu-threads", "0"}, output) == 2);
    CHECK(run_program({lesson08, "--help"}, output) == 0);
    for (const char* flag : {"--bad-thread-local", "--bad-std-mutex", "--bad-cpu-on-carrier"}) {
        INFO("--help: " << output);
        CHECK(output.find(std::string(flag) + " ") != std::string::npos);
    }
    ServerProcess server(lesson08, {}, "lesson08-bad-queries");
    for (const char* path : {"/cpu?ms=soon", "/cpu?ms=-1", "/locked?ms=1e3", "/request-id",
                             "/request-id?id=1&together=0"}) {
        INFO("GET " << path);
        CHECK(http_get(server.port(), path).status == 400);
    }
}

TEST_CASE("a request id that is not visible ASCII or is too long is a 400, and no answer "
          "carries an exception's text",
          "[lesson08]") {
    ServerProcess server(lesson08, {}, "lesson08-bad-ids");
    const std::string longest(max_request_id_length, '7');
    // %FF is no UTF-8 at all; %C3%A9 is UTF-8 (an e with an accent) but not ASCII; %01 and %20
    // are a control character and a space.
    for (const std::string& id :
         std::vector<std::string>{"%FF", "%C3%A9", "7%01", "7%207", longest + "7"}) {
        RawConnection client(server.port());
        REQUIRE(client.send(get_request("/request-id?id=" + id)));
        const std::string response = client.receive_response(answer_within);
        INFO("GET /request-id?id=" << id << " got: " << response);
        CHECK(status_of(response) == 400);
        CHECK(response.find("EXCEPTION_WHAT") == std::string::npos);
    }
    CHECK(http_get(server.port(), "/request-id?id=" + longest).status == 200);
    CHECK(http_get(server.port(), "/request-id?id=!~").status == 200);
}

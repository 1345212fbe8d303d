// lesson03 --trace: the timeline of a known workload, and a trace written on SIGUSR1 or lost to
// SIGKILL, never a half file.
#include "lessons/common/test_support.hpp"
#include "lessons/instruments/trace/trace_check.hpp"

#include <catch2/catch.hpp>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace {

const std::string lesson03 = BIN_DIR "/lesson03";

// A fresh path in the tests' log directory for a trace.
std::string trace_path(const std::string& name) {
    const std::string path = test_log_dir() + "/" + name + ".json";
    std::remove(path.c_str());
    return path;
}

bool starts_with(const std::string& text, const std::string& prefix) {
    return text.rfind(prefix, 0) == 0;
}

struct Turn {
    double start, end;
    int tid;
};

} // namespace

TEST_CASE("lesson03 --trace: ten one-second sleeps are ten fibers, each parked a second",
          "[lesson03][trace]") {
    const std::string path = trace_path("lesson03-ten-sleeps");
    // One carrier: the connections' turns take turns on it, which the socket waits rely on. An
    // hour's window: a slow machine must not push the first turns out of the trace.
    ServerProcess server(lesson03, {"--carriers", "1", "--trace", path, "--trace-window", "1h"},
                         "lesson03-ten-sleeps");
    STEP("lesson03 --carriers 1 --trace on port " << server.port());
    std::vector<std::unique_ptr<RawConnection>> clients;
    for (int i = 0; i < 10; ++i) {
        clients.push_back(std::make_unique<RawConnection>(server.port()));
        REQUIRE(clients.back()->send("GET /benchmark HTTP/1.1\r\nHost: localhost\r\n\r\n"));
    }
    for (auto& client : clients)
        REQUIRE(status_of(client->receive_response(std::chrono::seconds(30))) == 200);
    STEP("10 kept-alive connections each got their GET /benchmark answered, and stay open");
    // Stopped with the connections open: each fiber that answered has parked in its keep-alive
    // wait (a socket.read), which the stop ends, before the exit writes the trace.
    CHECK(server.stop() == 0);
    STEP("server log:\n" << server.log());
    const nlohmann::json trace = read_trace(path);
    STEP("trace " << path);
    REQUIRE(trace_problems(trace) == "");
    CHECK(trace["otherData"]["program"] == "lesson03");

    std::map<std::string, std::vector<Turn>> turns; // by fiber address
    std::set<std::string> benchmark_fibers;
    std::set<std::string> read_waits; // the labels of the fibers that waited in socket.read
    for (const auto& event : trace["traceEvents"]) {
        if (event["ph"] == "X") {
            const std::string name = event["name"];
            if (!starts_with(name, "conn ")) continue;
            const double ts = event["ts"];
            turns[event["args"]["fiber"]].push_back(
                Turn{ts, ts + event["dur"].get<double>(), event["tid"].get<int>()});
            if (name.find(" GET /benchmark") != std::string::npos)
                benchmark_fibers.insert(event["args"]["fiber"].get<std::string>());
        } else if (event["ph"] == "b" && event["name"] == "socket.read") {
            read_waits.insert(event["args"]["fiber"].get<std::string>());
        }
    }
    CHECK(benchmark_fibers.size() == 10);
    int parked_a_second = 0;
    for (const std::string& fiber : benchmark_fibers) {
        const std::vector<Turn>& list = turns[fiber]; // in the order they were written: by time
        bool found = false;
        for (std::size_t i = 1; i < list.size(); ++i) {
            CHECK(list[i].tid == list[0].tid); // a fiber never leaves its carrier
            // sleep_for never wakes early, whatever the load: the gap is a second at least.
            if (list[i].start - list[i - 1].end >= 900'000) found = true;
        }
        parked_a_second += found ? 1 : 0;
    }
    CHECK(parked_a_second == 10);
    // The acceptor waits for connections after the last one, until the stop.
    CHECK(read_waits.count("acceptor") == 1);
    // On one carrier, nine of the answers were sent by a fiber that then parked before the next
    // one could send; the last may not have parked before the stop.
    int connections_waited = 0;
    for (const std::string& label : read_waits)
        if (label.find(" GET /benchmark") != std::string::npos) ++connections_waited;
    CHECK(connections_waited >= 9);
}

TEST_CASE("lesson03 writes its trace on SIGUSR1 and goes on serving", "[lesson03][trace]") {
    const std::string path = trace_path("lesson03-sigusr1");
    ServerProcess server(lesson03,
                         {"--benchmark-sleep", "10ms", "--trace", path, "--trace-window", "1h"},
                         "lesson03-sigusr1");
    // The sleep parks the fiber: the turn that read the request has ended before the answer
    // leaves, so the trace written after the answer must hold it.
    REQUIRE(http_get(server.port(), "/benchmark").status == 200);
    ::kill(server.pid(), SIGUSR1);
    STEP("GET /benchmark answered, then SIGUSR1 sent to " << server.pid());
    // The file appears by a rename, whole: as soon as it exists it can be read.
    REQUIRE(eventually([&] { return ::access(path.c_str(), F_OK) == 0; }));
    const nlohmann::json trace = read_trace(path);
    CHECK(trace_problems(trace) == "");
    int turns = 0;
    for (const auto& event : trace["traceEvents"])
        if (event["ph"] == "X" &&
            event["name"].get<std::string>().find(" GET /benchmark") != std::string::npos)
            ++turns;
    CHECK(turns >= 1);
    CHECK(http_get(server.port(), "/hello").status == 200);
    CHECK(server.stop() == 0);
}

TEST_CASE("a lesson03 killed while it writes its trace leaves no trace or a whole one",
          "[lesson03][trace]") {
    // SIGKILL lands as soon as the write has begun (a file of the trace's appears), or a moment
    // later: the file is absent or whole. A writer that wrote FILE in place would leave half of
    // one here.
    const std::string batch = [] {
        std::string requests;
        for (int i = 0; i < 100; ++i)
            requests += "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n";
        return requests;
    }();
    for (const int delay_ms : {0, 5, 40}) {
        const std::string path = trace_path("lesson03-killed");
        std::remove((path + ".tmp").c_str());
        ServerProcess server(lesson03, {"--trace", path, "--trace-window", "1h"},
                             "lesson03-killed");
        // Pipelined, 100 on each connection (the connector's keep-alive limit): 5,000 requests
        // in a blink, and a trace that takes milliseconds to write.
        for (int round = 0; round < 50; ++round) {
            RawConnection client(server.port());
            REQUIRE(client.send(batch));
            for (int i = 0; i < 100; ++i)
                REQUIRE(status_of(client.receive_response(std::chrono::seconds(10))) == 200);
        }
        ::kill(server.pid(), SIGUSR1);
        const auto exists = [](const std::string& file) {
            return ::access(file.c_str(), F_OK) == 0;
        };
        // Spun, not slept: a sleep could outlast the write. Bounded for a writer that never starts.
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (!exists(path + ".tmp") && !exists(path) &&
               std::chrono::steady_clock::now() < give_up) {
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
        ::kill(server.pid(), SIGKILL);
        CHECK(server.stop() == 128 + SIGKILL);
        STEP("5,000 requests, SIGUSR1, the write began, " << delay_ms << " ms, SIGKILL");
        if (!exists(path)) continue; // killed before the rename: no trace, as promised
        CHECK(trace_problems(read_trace(path)) == "");
    }
}

TEST_CASE("lesson03 --trace follows no link at its temporary file, and keeps the trace private",
          "[lesson03][trace]") {
    const std::string path = trace_path("lesson03-private");
    const std::string victim = test_log_dir() + "/lesson03-private-victim.txt";
    { std::ofstream(victim) << "precious\n"; }
    std::remove((path + ".tmp").c_str());
    REQUIRE(::symlink(victim.c_str(), (path + ".tmp").c_str()) == 0);
    STEP("planted " << path << ".tmp as a link to " << victim);
    ServerProcess server(lesson03, {"--trace", path}, "lesson03-private");
    REQUIRE(http_get(server.port(), "/hello").status == 200);
    CHECK(server.stop() == 0);
    std::ifstream kept(victim);
    std::string text;
    std::getline(kept, text);
    CHECK(text == "precious"); // another file the server may write is left alone
    struct stat file {};
    REQUIRE(::stat(path.c_str(), &file) == 0);
    CHECK((file.st_mode & 077) == 0); // request targets (query strings too) are for its owner
    CHECK(trace_problems(read_trace(path)) == "");
}

TEST_CASE("a lesson03 that stops without waiting for a busy connection still writes its trace",
          "[lesson03][trace]") {
    const std::string path = trace_path("lesson03-gave-up");
    ServerProcess server(lesson03,
                         {"--benchmark-sleep", "1h", "--trace", path, "--trace-window", "1h"},
                         "lesson03-gave-up");
    RawConnection busy(server.port());
    REQUIRE(busy.send(get_request("/benchmark")));
    REQUIRE(http_get(server.port(), "/hello").status == 200);
    STEP("one GET /benchmark sleeps an hour; SIGTERM: the server gives up after its stop grace");
    // 30 s: the server's own stop grace is 5 s; a loaded machine needs far less than the rest.
    CHECK(server.stop(std::chrono::seconds(30)) == 0);
    REQUIRE(::access(path.c_str(), F_OK) == 0);
    const nlohmann::json trace = read_trace(path);
    CHECK(trace_problems(trace) == "");
    int sleeping = 0; // the fiber still asleep: its turn that read the request is in the trace
    for (const auto& event : trace["traceEvents"])
        if (event["ph"] == "X" &&
            event["name"].get<std::string>().find(" GET /benchmark") != std::string::npos)
            ++sleeping;
    CHECK(sleeping >= 1);
}

TEST_CASE("a lesson03 whose stop gives up after a grace longer than its window keeps the window "
          "before the stop began",
          "[lesson03][trace]") {
    // The stop grace is 5 s, the window 3 s: a window that ended at the exit held only the
    // tracks' names (3 metadata events). 3 s: the turn that read the request comes a /hello
    // before the SIGTERM, far less than that even on a loaded machine.
    const std::string path = trace_path("lesson03-gave-up-window");
    ServerProcess server(lesson03,
                         {"--benchmark-sleep", "1h", "--trace", path, "--trace-window", "3s"},
                         "lesson03-gave-up-window");
    RawConnection busy(server.port());
    REQUIRE(busy.send(get_request("/benchmark")));
    REQUIRE(http_get(server.port(), "/hello").status == 200);
    STEP("one GET /benchmark sleeps an hour; SIGTERM: the server gives up after 5 s");
    CHECK(server.stop(std::chrono::seconds(30)) == 0);
    STEP("server log:\n" << server.log());
    CHECK(server.log().find("lesson03: trace of the 3s before the stop began and the ") !=
          std::string::npos);
    REQUIRE(::access(path.c_str(), F_OK) == 0);
    const nlohmann::json trace = read_trace(path);
    CHECK(trace_problems(trace) == "");
    int sleeping = 0;
    for (const auto& event : trace["traceEvents"])
        if (event["ph"] == "X" &&
            event["name"].get<std::string>().find(" GET /benchmark") != std::string::npos)
            ++sleeping;
    STEP(trace["traceEvents"].size() << " events in the trace");
    CHECK(sleeping >= 1);
}

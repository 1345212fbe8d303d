// lesson02 --trace: the tracer's flags, and the tracer beside the pinning detector.
#include "lessons/common/test_support.hpp"
#include "lessons/instruments/pinning/event_log.hpp"
#include "lessons/instruments/trace/trace_check.hpp"

#include <catch2/catch.hpp>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

namespace {
const std::string lesson02 = BIN_DIR "/lesson02";

// A fresh directory of the test's own, for files that are not regular files (never /dev's).
std::string fresh_directory(const std::string& name) {
    std::string path = test_log_dir() + "/" + name + ".XXXXXX";
    REQUIRE(::mkdtemp(path.data()) != nullptr);
    return path;
}

bool is_fifo(const std::string& path) {
    struct stat file {};
    return ::lstat(path.c_str(), &file) == 0 && S_ISFIFO(file.st_mode);
}
} // namespace

TEST_CASE("lesson02 with a trace file it cannot write says so in one line and exits 2",
          "[lesson02][trace]") {
    std::string output;
    CHECK(run_program({lesson02, "--trace", "/nonexistent-directory/t.json"}, output) == 2);
    CHECK(output == "lesson02: cannot write the trace to /nonexistent-directory/t.json: No such "
                    "file or directory\n");
    CHECK(run_program({lesson02, "--trace", test_log_dir()}, output) == 2);
    CHECK(output == "lesson02: cannot write the trace to " + test_log_dir() + ": Is a directory\n");
    CHECK(run_program({lesson02, "--trace", "t.json", "--trace-window", "0ms"}, output) == 2);
    CHECK(output.find("--trace-window") != std::string::npos);
}

TEST_CASE("lesson02 --detect-pinning and --trace together: the event and the long turn",
          "[lesson02][trace][pinning]") {
    EventLog log("lesson02-pins-and-trace");
    const std::string trace_path = test_log_dir() + "/lesson02-pins-and-trace.json";
    std::remove(trace_path.c_str());
    std::vector<TimedGet> results;
    {
        // 300 ms, as lesson02_pinning_test says: above what a loaded machine adds to a turn.
        ServerProcess server(lesson02,
                             {"--bad-blocking-sleep", "--detect-pinning", "--pinning-threshold",
                              "300ms", "--pinning-events", log.path(), "--trace", trace_path,
                              "--trace-window", "1h"},
                             "lesson02-pins-and-trace");
        STEP("lesson02 --bad-blocking-sleep with both on, port " << server.port());
        // Two blocking sleeps on one carrier: the second request waits behind the first (a pin).
        results = concurrent_get(server.port(), "/benchmark", 2);
        CHECK(server.stop() == 0);
        STEP("server log:\n" << server.log());
    }
    for (const auto& result : results)
        REQUIRE(result.status == 200);
    STEP("pinning events:\n" << log.text());
    CHECK(log.events().size() >= 1);
    const nlohmann::json trace = read_trace(trace_path);
    STEP("trace " << trace_path);
    CHECK(trace_problems(trace) == "");
    // Each blocking sleep is one turn of a second or more on the carrier.
    int long_turns = 0;
    for (const auto& event : trace["traceEvents"])
        if (event["ph"] == "X" && event["dur"].get<double>() >= 900'000) ++long_turns;
    CHECK(long_turns >= 2);
}

TEST_CASE("lesson02 refuses a --trace target that is not a regular file, a link included",
          "[lesson02][trace]") {
    // As root, --trace /dev/null replaced the device with a regular file (the rename over it).
    // The same kinds of target, made in a directory of the test's own.
    const std::string dir = fresh_directory("lesson02-not-a-file");
    const std::string fifo = dir + "/fifo";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    const std::string file = dir + "/file.json";
    { std::ofstream(file) << "a regular file\n"; }
    const std::string link = dir + "/link.json";
    REQUIRE(::symlink(file.c_str(), link.c_str()) == 0);
    const std::string dangling = dir + "/dangling.json";
    REQUIRE(::symlink((dir + "/absent").c_str(), dangling.c_str()) == 0);
    for (const std::string& target : {fifo, link, dangling}) {
        STEP("lesson02 --trace " << target << ": want one line and exit 2 at once");
        std::string output;
        // 20 s: it exits at once; a lesson02 that started serving is killed then.
        CHECK(run_program({lesson02, "--trace", target}, output, std::chrono::seconds(20)) == 2);
        CHECK(output == "lesson02: cannot write the trace to " + target +
                            ": not a regular file (the trace replaces only a regular file)\n");
    }
    CHECK(is_fifo(fifo));
    struct stat status {};
    REQUIRE(::lstat(link.c_str(), &status) == 0);
    CHECK(S_ISLNK(status.st_mode));
}

TEST_CASE("lesson02 whose --trace target became a FIFO says so on SIGUSR1 and at exit, leaves "
          "it a FIFO and goes on serving",
          "[lesson02][trace]") {
    const std::string dir = fresh_directory("lesson02-became-fifo");
    const std::string path = dir + "/trace.json";
    ServerProcess server(lesson02, {"--trace", path}, "lesson02-became-fifo");
    REQUIRE(::mkfifo(path.c_str(), 0600) == 0);
    STEP("lesson02 started with --trace " << path << ", which then became a FIFO; SIGUSR1");
    ::kill(server.pid(), SIGUSR1);
    const std::string refused = "lesson02: cannot write the trace to " + path +
                                ": not a regular file (the trace replaces only a regular file)\n";
    const auto said = [&](const std::string& what) {
        return server.log().find(what) != std::string::npos;
    };
    REQUIRE(eventually([&] { return said(refused) || said("written to " + path); },
                       std::chrono::seconds(30)));
    STEP("server log:\n" << server.log());
    CHECK(is_fifo(path));
    CHECK(http_get(server.port(), "/hello").status == 200);
    CHECK(server.stop() == 0);
    STEP("server log after the stop:\n" << server.log());
    CHECK(is_fifo(path));
    const std::string log = server.log();
    std::size_t refusals = 0;
    for (std::size_t at = log.find(refused); at != std::string::npos;
         at = log.find(refused, at + 1))
        ++refusals;
    CHECK(refusals == 2);                                // SIGUSR1's and the exit's, one line each
    CHECK(::access((path + ".tmp").c_str(), F_OK) != 0); // nothing left beside it
}

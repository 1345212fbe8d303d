// pindemo, run as a reader runs it: exactly one event for each pinned case, none when fixed.
#include "lessons/common/test_support.hpp"
#include "lessons/instruments/pinning/event_log.hpp"

#include <catch2/catch.hpp>

#include <regex>

namespace {

const std::string pindemo = BIN_DIR "/pindemo";

struct DemoRun {
    int status = -1;
    std::string output; // stdout and stderr
    std::vector<nlohmann::json> events;
    int missed_ticks = -1;
};

// The detector measures wall clock, and a loaded machine stretches every turn: the tests use a
// threshold far above such stalls, and work four times as long.
const std::vector<std::string> load_proof = {"--threshold", "200ms", "--work", "800ms"};

DemoRun run_pindemo(const EventLog& log, std::vector<std::string> args) {
    args.insert(args.begin(), load_proof.begin(), load_proof.end());
    args.insert(args.begin(), {pindemo, "--events", log.path()});
    DemoRun run;
    run.status = run_program(args, run.output, std::chrono::seconds(60));
    run.events = log.events();
    std::smatch match;
    static const std::regex ticker(R"(ticker: \d+ ticks due, \d+ on time, (\d+) missed)");
    if (std::regex_search(run.output, match, ticker)) run.missed_ticks = std::stoi(match[1]);
    return run;
}

int occurrences(const std::string& text, const std::string& what) {
    int count = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
        ++count;
    return count;
}

} // namespace

TEST_CASE("pindemo reports exactly one pin, naming the blocking sleep, on stderr and as one "
          "JSON line",
          "[pindemo]") {
    EventLog log("pindemo-sleep");
    const DemoRun run = run_pindemo(log, {});
    STEP("pindemo --events " << log.path() << " exited " << run.status << ":\n" << run.output);
    REQUIRE(run.status == 0);
    CHECK(occurrences(run.output, "pinned: fiber") == 1);
    REQUIRE(run.events.size() == 1);
    const nlohmann::json& event = run.events[0];
    STEP("the event: " << event);
    CHECK(event["event"] == "fiber_pinned");
    CHECK(event["fiber"] == "sleeper");
    CHECK(event["carrier"].get<std::string>().rfind("carrier-0#", 0) == 0);
    // The fiber sleeps 800 ms; the upper bound only rules out nonsense on a very busy machine.
    CHECK(event["duration_ms"].get<double>() >= 800);
    CHECK(event["duration_ms"].get<double>() <= 8000);
    CHECK(event["cpu_ms"].get<double>() < 400); // it slept
    CHECK(event["ready_waiting"].get<int>() >= 1);
    CHECK(event["blocked_in"].get<std::string>().find("sleep") != std::string::npos);
    CHECK(event["called_from"].get<std::string>().find("pindemo/pin_cases.cpp") !=
          std::string::npos);
    CHECK(!event["stack"].empty());
    // Eighty ticks fall due during the 800 ms pin; a carrier free for them would miss none.
    CHECK(run.missed_ticks >= 5);
}

TEST_CASE("pindemo --fixed does the same work fiber-aware and reports nothing", "[pindemo]") {
    EventLog log("pindemo-sleep-fixed");
    const DemoRun run = run_pindemo(log, {"--fixed"});
    STEP("pindemo --fixed exited " << run.status << ":\n" << run.output);
    REQUIRE(run.status == 0);
    CHECK(run.events.empty());
    CHECK(occurrences(run.output, "pinning detector: 0 events") == 1);
    CHECK(run.missed_ticks >= 0); // it ran to the end and reported the ticker
}

TEST_CASE("a std::mutex and a computing loop pin the carrier too, their fiber-aware versions "
          "do not",
          "[pindemo]") {
    const auto [name, blocked_in] = GENERATE(table<std::string, std::string>({
        {"mutex", "pthread_mutex_lock"},
        {"cpu", ""}, // wherever the loop happens to be; it is our code either way
    }));
    EventLog pinned_log("pindemo-" + name);
    const DemoRun pinned = run_pindemo(pinned_log, {"--case", name});
    STEP("pindemo --case " << name << " exited " << pinned.status << ":\n" << pinned.output);
    REQUIRE(pinned.status == 0);
    REQUIRE(pinned.events.size() == 1);
    const nlohmann::json& event = pinned.events[0];
    if (blocked_in.empty()) {
        // The sample may land in a helper the loop calls (thread_cpu_time, in lessons/common):
        // the loop itself is somewhere below it on the stack.
        CHECK(event["stack"].dump().find("run at pindemo/pin_cases.cpp") != std::string::npos);
    } else {
        CHECK(event["blocked_in"] == blocked_in);
        CHECK(event["called_from"].get<std::string>().find("pindemo/pin_cases.cpp") !=
              std::string::npos);
    }
    CHECK(event["duration_ms"].get<double>() >= 800);

    EventLog fixed_log("pindemo-" + name + "-fixed");
    const DemoRun fixed = run_pindemo(fixed_log, {"--case", name, "--fixed"});
    STEP("pindemo --case " << name << " --fixed exited " << fixed.status << ":\n" << fixed.output);
    REQUIRE(fixed.status == 0);
    CHECK(fixed.events.empty());
}

TEST_CASE("pindemo says in one line what is wrong with its flags", "[pindemo]") {
    std::string output;
    CHECK(run_program({pindemo, "--case", "pq"}, output) == 2);
    CHECK(output == "pindemo: --case pq needs --db CONNINFO, a libpq connection string such as "
                    "the one lessons/tools/pg-cluster start prints\n");
    CHECK(run_program({pindemo, "--events", "/nonexistent-directory/e.jsonl"}, output) == 2);
    CHECK(output == "pindemo: cannot write pinning events to /nonexistent-directory/e.jsonl: No "
                    "such file or directory\n");
    CHECK(run_program({pindemo, "--case", "disk"}, output) == 2);
    CHECK(output == "pindemo: --case: 'disk' is not one of sleep|mutex|pq|cpu (try --help)\n");
}

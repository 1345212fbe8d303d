// Graded tests of exercise 12. Two traces: tests/two_connections.json, made by hand, small enough
// to check every answer on paper (the timeline below), and tests/lesson05_vt.json, an excerpt of
// a real trace of lesson 05's server (how it was made, and where each answer comes from: below).
#include "lessons/common/test_support.hpp"
#include "pool_trace.hpp"

#include <catch2/catch.hpp>

#include <fstream>
#include <set>
#include <sstream>

namespace {

std::vector<PoolSpan> spans_of_file(const std::string& name) {
    const std::string path = std::string(EXERCISE_DIR) + "/tests/" + name;
    std::ifstream in(path);
    REQUIRE(in.good());
    return read_pool_spans(in);
}

std::vector<PoolSpan> spans_of(const std::string& json) {
    std::istringstream in(json);
    return read_pool_spans(in);
}

// tests/two_connections.json: a pool of 2 connections (0 and 1) on two carriers (tid 1 and 2),
// ms (the file says µs). Seven requests, named by their connection fiber, "conn N GET /work":
//
//   request  track  waits (pool.borrow)    holds (pool.hold)       got it from
//   conn 1   1      (did not wait)         connection 0, 0.01 - 50
//   conn 2   2      (did not wait)         connection 1, 1.01 - 51
//   conn 3   1      10 - 50    ok (40)     connection 0, 50 - 100  conn 1
//   conn 4   2      20 - 51    ok (31)     connection 1, 51 - 101  conn 2
//   conn 5   1      30 - 100   ok (70)     connection 0, 100 - 150 conn 3
//   conn 7   2      45 - 101   ok (56)     connection 1, 101 - 151 conn 4
//   conn 6   2      46 - 136   timeout (90)
//
// A borrow that finds a free connection does not wait: conn 1 and conn 2 have holds only.
// First come, first served: when conn 3 gives connection 0 back at 100, conn 5 (waiting since
// 30) gets it; at 101 conn 7 (since 45) gets connection 1; conn 6 (since 46) gives up at 136.
// The file lists carrier 1's events, then carrier 2's, as a per-carrier buffer writes them,
// with a turn, a socket wait and a counter among them; some ids repeat under another name.
const char* const two_connections = "two_connections.json";

// Spans made in the test, times in ms: the tasks after the first need no reading.
PoolSpan borrow(std::string fiber, double begin_ms, double end_ms, std::string outcome = "ok",
                int track = 1) {
    return {"pool.borrow", std::move(fiber),   track, begin_ms * 1000,
            end_ms * 1000, std::move(outcome), -1};
}

PoolSpan hold(std::string fiber, double begin_ms, double end_ms, int connection, int track = 1) {
    return {"pool.hold", std::move(fiber), track, begin_ms * 1000, end_ms * 1000, "", connection};
}

// The spans of tests/two_connections.json, in the order read_pool_spans returns them.
std::vector<PoolSpan> two_connections_spans() {
    return {hold("conn 1 GET /work", 0.01, 50, 0),
            hold("conn 2 GET /work", 1.01, 51, 1, 2),
            borrow("conn 3 GET /work", 10, 50),
            borrow("conn 4 GET /work", 20, 51, "ok", 2),
            borrow("conn 5 GET /work", 30, 100),
            borrow("conn 7 GET /work", 45, 101, "ok", 2),
            borrow("conn 6 GET /work", 46, 136, "timeout", 2),
            hold("conn 3 GET /work", 50, 100, 0),
            hold("conn 4 GET /work", 51, 101, 1, 2),
            hold("conn 5 GET /work", 100, 150, 0),
            hold("conn 7 GET /work", 101, 151, 1, 2)};
}

std::string describe(const PoolSpan& span) {
    std::ostringstream text;
    text << span.name << " of '" << span.fiber << "' on track " << span.track << ", "
         << span.begin_us << " - " << span.end_us << " us, outcome '" << span.outcome
         << "', connection " << span.connection;
    return text.str();
}

PoolSpan find(const std::vector<PoolSpan>& spans, const std::string& name,
              const std::string& fiber) {
    for (const PoolSpan& span : spans)
        if (span.name == name && span.fiber == fiber) return span;
    const bool found = false;
    INFO("no " << name << " of '" << fiber << "' among the " << spans.size() << " spans");
    REQUIRE(found);
    return {};
}

// The answer's fiber, or "none".
std::string fiber_of(const std::optional<PoolSpan>& span) {
    return span ? span->fiber : "none";
}

std::string fibers(const std::vector<PoolSpan>& spans) {
    std::string names;
    for (const PoolSpan& span : spans)
        names += (names.empty() ? "" : ", ") + span.fiber;
    return "[" + names + "]";
}

// tests/lesson05_vt.json: lesson 05's server under vt, 100 clients for 1 s, a 300 ms pool timeout,
// traced whole (the window is longer than the run). Made on Debian 12, 2 cores shared with other
// builds, 4 December 2026, these commands exactly (ports of our own: others were taken):
//   lessons/tools/pg-cluster start /tmp/traceex-pg --port auto
//   build/bin/lesson05 --profile vt --pool-timeout 300ms --port 18480 --management-port 18481
//       --trace /tmp/traceex-vt.json --trace-window 10s --db "$(cat /tmp/traceex-pg/conninfo)" &
//   hey -z 1s -c 100 http://127.0.0.1:18480/work    # 221 answers 200, 118 answers 500
//   kill $!                                          # the trace is written at exit
// (the server's command is one line), then trimmed to the track names, the pool's spans and its
// counter (200 KB of 567 KB):
//   jq -c '.traceEvents[] | select(.ph == "M" or .name == "pool.borrow" or .name == "pool.hold"
//       or .name == "pool")' /tmp/traceex-vt.json |
//       sed '1s/^/{"traceEvents":[\n/; $!s/$/,/; $s/$/\n]}/' > tests/lesson05_vt.json
// The answers below were read from the file with jq, not with a solution: one object per b/e
// pair, `[.traceEvents[] | select(.name == "pool.borrow" or .name == "pool.hold")] |
// group_by([.name, .id]) | map(...)`, then each question as the README defines it (the longest
// wait: `map(select(.name == "pool.borrow" and .outcome == "ok")) | max_by(.end - .begin)`).
const char* const lesson05_vt = "lesson05_vt.json";

// conn 111's wait that began 2,375,110.679 us in (its connection made other requests too).
PoolSpan longest_in_lesson05(const std::vector<PoolSpan>& spans) {
    for (const PoolSpan& span : spans)
        if (span.name == "pool.borrow" && span.fiber == "conn 111 GET /work" &&
            span.begin_us == Approx(2375110.679))
            return span;
    const bool found = false;
    INFO("no pool.borrow of 'conn 111 GET /work' that began at 2,375,110.679 us among the "
         << spans.size() << " spans that read_pool_spans (task 1) read from " << lesson05_vt);
    REQUIRE(found);
    return {};
}
} // namespace

TEST_CASE("the pool's spans are read from both carriers, and nothing else",
          "[ex12][task_1][points=2]") {
    const auto spans = spans_of_file(two_connections);
    STEP("read tests/two_connections.json: " << spans.size() << " spans " << fibers(spans));
    STEP("want the 11 pool spans of the timeline above, sorted by begin: 5 borrows (conn 6's "
         "timed out), 6 holds (hold id 5 is not borrow id 5), and not the turn, the socket wait "
         "or the counter");
    REQUIRE(spans.size() == 11);
    const auto expected = two_connections_spans();
    for (std::size_t i = 0; i < spans.size(); ++i) {
        STEP("span " << i << ": want " << describe(expected[i]));
        STEP("span " << i << ": got  " << describe(spans[i]));
        CHECK(spans[i].name == expected[i].name);
        CHECK(spans[i].fiber == expected[i].fiber);
        CHECK(spans[i].track == expected[i].track);
        CHECK(spans[i].begin_us == Approx(expected[i].begin_us));
        CHECK(spans[i].end_us == Approx(expected[i].end_us));
        CHECK(spans[i].outcome == expected[i].outcome);
        CHECK(spans[i].connection == expected[i].connection);
    }
}

TEST_CASE("a file that is not a trace of paired spans is refused with what is wrong",
          "[ex12][task_1][points=1]") {
    const std::string b = R"({"ph":"b","cat":"wait","name":"pool.borrow","id":9,"tid":1,"ts":5,)"
                          R"("args":{"fiber":"conn 9","outcome":"ok"}})";
    const std::string e = R"({"ph":"e","cat":"wait","name":"pool.borrow","id":9,"tid":1,"ts":8})";
    STEP("not JSON");
    CHECK_THROWS_AS(spans_of("{\"traceEvents\": ["), TraceError);
    STEP("JSON without a traceEvents list");
    CHECK_THROWS_AS(spans_of("{\"events\": []}"), TraceError);
    CHECK_THROWS_AS(spans_of("[1, 2]"), TraceError);
    STEP("a pool.borrow's e without its b: the error names id 9");
    CHECK_THROWS_WITH(spans_of("{\"traceEvents\": [" + e + "]}"), Catch::Contains("9"));
    STEP("a pool.borrow's b without its e");
    CHECK_THROWS_AS(spans_of("{\"traceEvents\": [" + b + "]}"), TraceError);
    STEP("both, the e first in the file: one span of 3 us");
    const auto spans = spans_of("{\"traceEvents\": [" + e + ", " + b + "]}");
    REQUIRE(spans.size() == 1);
    CHECK(spans[0].duration_us() == Approx(3));
    STEP("no events at all: no spans, and no error");
    CHECK(spans_of("{\"traceEvents\": []}").empty());
}

TEST_CASE("the longest wait is the longest that got a connection, not one that timed out",
          "[ex12][task_2][points=2]") {
    const auto longest = longest_wait(two_connections_spans());
    STEP("conn 6 waited 90 ms and timed out; of the waits that got a connection, conn 5's 70 ms "
         "(30 - 100) is the longest; got '"
         << fiber_of(longest) << "'" << (longest ? ", " + describe(*longest) : ""));
    CHECK(fiber_of(longest) == "conn 5 GET /work");
    CHECK(longest.value_or(PoolSpan{}).duration_us() == Approx(70000));
}

TEST_CASE("of equal waits the first to begin is the longest, and none is without a connection",
          "[ex12][task_2][points=1]") {
    const std::vector<PoolSpan> tie{borrow("conn 1", 0, 10), borrow("conn 2", 5, 25),
                                    borrow("conn 3", 2, 22, "ok", 2), hold("conn 2", 25, 30, 0),
                                    hold("conn 4", 0, 40, 1)};
    STEP("conn 2 (5 - 25 ms) and conn 3 (2 - 22 ms) both waited 20 ms; conn 3 began first; "
         "conn 4's hold of 40 ms is not a wait");
    CHECK(fiber_of(longest_wait(tie)) == "conn 3");
    STEP("only holds and a timed-out borrow: no answer");
    CHECK_FALSE(longest_wait({hold("conn 4", 0, 40, 1), borrow("conn 5", 0, 30, "timeout")}));
    CHECK_FALSE(longest_wait({}));
}

TEST_CASE("behind whom: the requests that held the connections when the wait began",
          "[ex12][task_3][points=2]") {
    const auto spans = two_connections_spans();
    const PoolSpan waited = find(spans, "pool.borrow", "conn 5 GET /work");
    const auto holders = holders_when_it_began(spans, waited);
    STEP("conn 5 began waiting at 30 ms: connection 0 was conn 1's, connection 1 conn 2's; got "
         << fibers(holders));
    CHECK(fibers(holders) == "[conn 1 GET /work, conn 2 GET /work]");
    STEP("conn 3 and conn 4 held them later in its wait: they were queued ahead, not holding");

    const std::vector<PoolSpan> edges{hold("a", 0, 10, 0), hold("b", 10, 20, 0),
                                      hold("c", 4, 30, 1), hold("d", 12, 13, 2),
                                      borrow("w", 10, 20)};
    const auto at_ten = holders_when_it_began(edges, edges.back());
    STEP("a wait that began at 10 ms: a's hold ended at 10 (gone), b's began at 10 (held), c's "
         "runs 4 - 30 (held), d's began at 12 (later); got "
         << fibers(at_ten));
    CHECK(fibers(at_ten) == "[b, c]");
}

TEST_CASE("behind whom: the requests queued ahead of it, including those that later gave up",
          "[ex12][task_4][points=2]") {
    const auto spans = two_connections_spans();
    const PoolSpan waited = find(spans, "pool.borrow", "conn 5 GET /work");
    const auto ahead = queued_ahead(spans, waited);
    STEP("conn 5 began waiting at 30 ms behind conn 3 (since 10) and conn 4 (since 20); got "
         << fibers(ahead));
    CHECK(fibers(ahead) == "[conn 3 GET /work, conn 4 GET /work]");
    const PoolSpan last = find(spans, "pool.borrow", "conn 6 GET /work");
    const auto behind = queued_ahead(spans, last);
    STEP("conn 6 began at 46 ms behind conn 3, conn 4, conn 5 and conn 7, not itself; got "
         << fibers(behind));
    CHECK(fibers(behind) == "[conn 3 GET /work, conn 4 GET /work, conn 5 GET /work, "
                            "conn 7 GET /work]");

    const std::vector<PoolSpan> edges{borrow("late", 12, 40),
                                      borrow("gone", 0, 10),
                                      borrow("timed out", 2, 60, "timeout"),
                                      borrow("same time", 10, 30, "ok", 2),
                                      hold("h", 0, 50, 0),
                                      borrow("w", 10, 35)};
    const auto at_ten = queued_ahead(edges, edges.back());
    STEP("a wait that began at 10 ms: 'gone' was served at 10, 'same time' began with it, "
         "'late' after it, 'timed out' (since 2) was ahead and gave up later; got "
         << fibers(at_ten));
    CHECK(fibers(at_ten) == "[timed out]");
}

TEST_CASE("the request that handed the longest waiter its connection", "[ex12][task_5][points=2]") {
    const auto spans = two_connections_spans();
    const PoolSpan waited = find(spans, "pool.borrow", "conn 5 GET /work");
    const auto from = handed_over_by(spans, waited);
    STEP("conn 5's wait ended at 100 ms; its hold of connection 0 began then; connection 0 was "
         "conn 3's until 100; got '"
         << fiber_of(from) << "'" << (from ? ", " + describe(*from) : ""));
    CHECK(fiber_of(from) == "conn 3 GET /work");
    CHECK(from.value_or(PoolSpan{}).connection == 0);

    const std::vector<PoolSpan> keep_alive{hold("conn 8", 0, 5, 1),   borrow("conn 8", 6, 20),
                                           hold("x", 3, 19, 0),       hold("y", 4, 18, 1),
                                           hold("conn 8", 20, 25, 1), hold("conn 8", 30, 35, 0),
                                           hold("z", 26, 29, 1)};
    STEP("conn 8 holds connection 1 (0 - 5), waits 6 - 20, holds connection 1 again (20 - 25), "
         "later connection 0: the connection it got at 20 was y's (4 - 18)");
    CHECK(fiber_of(handed_over_by(keep_alive, keep_alive[1])) == "y");
    const auto lesson05 = spans_of_file(lesson05_vt);
    const auto real = handed_over_by(lesson05, longest_in_lesson05(lesson05));
    STEP("in lesson 05's trace conn 111 got connection 8 from conn 94; got "
         << (real ? describe(*real) : "none"));
    CHECK(fiber_of(real) == "conn 94 GET /work");
    CHECK(real.value_or(PoolSpan{}).connection == 8);
    STEP("its own hold is not in the trace: no answer");
    CHECK_FALSE(
        handed_over_by({borrow("conn 9", 0, 10), hold("x", 0, 10, 0)}, borrow("conn 9", 0, 10)));
}

TEST_CASE("lesson 05's trace: 329 waits, 118 of them timed out, and 231 holds, on three tracks",
          "[ex12][task_1][points=1]") {
    const auto spans = spans_of_file(lesson05_vt);
    long ok = 0, timed_out = 0, holds = 0;
    std::set<int> tracks;
    for (const PoolSpan& span : spans) {
        ok += span.outcome == "ok";
        timed_out += span.outcome == "timeout";
        holds += span.name == "pool.hold";
        tracks.insert(span.track);
    }
    STEP("read tests/lesson05_vt.json: " << spans.size() << " spans: " << ok << " borrows ok, "
                                         << timed_out << " timed out, " << holds << " holds");
    CHECK(spans.size() == 560);
    CHECK(ok == 211);
    CHECK(timed_out == 118);
    CHECK(holds == 231);
    STEP("on track 1 (the main thread: the pool opens its 10 connections at start-up) and on "
         "the two carriers, tracks 3 and 4");
    CHECK(tracks == std::set<int>{1, 3, 4});
    REQUIRE_FALSE(spans.empty());
    STEP("the first: the start-up's hold of connection 0, 43,662.458 us in; got "
         << describe(spans.front()));
    CHECK(spans.front().connection == 0);
    CHECK(spans.front().begin_us == Approx(43662.458));
}

TEST_CASE("lesson 05's trace: the longest wait that got a connection is conn 111's, 324 ms",
          "[ex12][task_2][points=1]") {
    const auto longest = longest_wait(spans_of_file(lesson05_vt));
    STEP("want conn 111's, 2,375,110.679 - 2,699,194.353 us on track 3: 324,083.674 us, longer "
         "than the 300 ms timeout, as the wait ends when the waiter runs again; got "
         << (longest ? describe(*longest) : "none"));
    CHECK(fiber_of(longest) == "conn 111 GET /work");
    CHECK(longest.value_or(PoolSpan{}).duration_us() == Approx(324083.674));
}

TEST_CASE("lesson 05's trace: the longest waiter began behind all 10 connections held",
          "[ex12][task_3][points=1]") {
    const auto spans = spans_of_file(lesson05_vt);
    STEP("read tests/lesson05_vt.json (task 1): "
         << spans.size() << " spans; conn 111's wait began 2,375,110.679 us in");
    const auto holders = holders_when_it_began(spans, longest_in_lesson05(spans));
    STEP("conn 111 began waiting at 2,375,110.679 us; connections 0-9 were held by conn 85, 93, "
         "103, 49, 51, 87, 89, 80, 23 and 91; got "
         << fibers(holders));
    CHECK(fibers(holders) == "[conn 85 GET /work, conn 93 GET /work, conn 103 GET /work, "
                             "conn 49 GET /work, conn 51 GET /work, conn 87 GET /work, "
                             "conn 89 GET /work, conn 80 GET /work, conn 23 GET /work, "
                             "conn 91 GET /work]");
    std::string connections;
    for (const PoolSpan& span : holders)
        connections += std::to_string(span.connection);
    CHECK(connections == "0123456789");
}

TEST_CASE("lesson 05's trace: 86 requests were queued ahead of the longest waiter",
          "[ex12][task_4][points=1]") {
    const auto spans = spans_of_file(lesson05_vt);
    STEP("read tests/lesson05_vt.json (task 1): "
         << spans.size() << " spans; conn 111's wait began 2,375,110.679 us in");
    const auto ahead = queued_ahead(spans, longest_in_lesson05(spans));
    long timed_out = 0;
    for (const PoolSpan& span : ahead)
        timed_out += span.outcome == "timeout";
    STEP("want 86 (32 of them gave up later), conn 55 first and conn 82 last; got "
         << ahead.size() << " (" << timed_out << " gave up later)");
    REQUIRE(ahead.size() == 86);
    CHECK(timed_out == 32);
    CHECK(ahead.front().fiber == "conn 55 GET /work");
    CHECK(ahead.back().fiber == "conn 82 GET /work");
}

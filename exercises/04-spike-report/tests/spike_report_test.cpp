// Graded tests of exercise 04. tests/spike_small.csv is a small spike written by hand (warmup
// 1,000 ms), with every answer below worked out in the comments so a reader can check it.
#include "lessons/common/test_support.hpp"
#include "spike_report.hpp"

#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

namespace {

std::vector<SpikeRow> fixture_rows() {
    const std::string path = std::string(EXERCISE_DIR) + "/tests/spike_small.csv";
    std::ifstream in(path);
    REQUIRE(in.good());
    return read_spike_csv(in);
}

std::vector<SpikeRow> rows_of(const std::string& csv) {
    std::istringstream in(csv);
    return read_spike_csv(in);
}

// The spike_small.csv facts. 37 rows: 5 start before 1,000 ms (warmup), 32 after. After the
// warmup: 20 x 200 and 1 x 204 (latencies 5, 10, 20, ..., 200), 4 x 503, 2 x 500, 2 x -1,
// 1 each of -2, -3, -4. The last attempt to end started at 10,000 ms and took 1,000 ms.
constexpr double warmup_ms = 1000;

} // namespace

TEST_CASE("the fixture's 37 rows are read with their three fields", "[ex4][task_1][points=2]") {
    const auto rows = fixture_rows();
    STEP("read tests/spike_small.csv: " << rows.size() << " rows");
    REQUIRE(rows.size() == 37);
    STEP("the first row is 0.000,200,52.100");
    CHECK(rows.front().ts_ms == Approx(0.0));
    CHECK(rows.front().status == 200);
    CHECK(rows.front().latency_ms == Approx(52.1));
    STEP("the last row is 10000.000,-1,1000.000 (rows are written as attempts end)");
    CHECK(rows.back().ts_ms == Approx(10000.0));
    CHECK(rows.back().status == -1);
    CHECK(rows.back().latency_ms == Approx(1000.0));
}

TEST_CASE("a CSV that is not a spike log is refused with the line that is wrong",
          "[ex4][task_1][points=2]") {
    STEP("a header that is not ts,status,latency_ms");
    CHECK_THROWS_WITH(rows_of("time,code,ms\n1,200,3\n"), Catch::Contains("line 1"));
    STEP("an empty file");
    CHECK_THROWS_AS(rows_of(""), SpikeCsvError);
    STEP("a status that is not a number, on line 3");
    CHECK_THROWS_WITH(rows_of("ts,status,latency_ms\n1,200,3\n2,abc,4\n"),
                      Catch::Contains("line 3"));
    STEP("a row with two fields, on line 2");
    CHECK_THROWS_WITH(rows_of("ts,status,latency_ms\n1,200\n"), Catch::Contains("line 2"));
    STEP("a latency with trailing junk, on line 2");
    CHECK_THROWS_AS(rows_of("ts,status,latency_ms\n1,200,3ms\n"), SpikeCsvError);
    STEP("a good file still reads: two rows");
    CHECK(rows_of("ts,status,latency_ms\n1.5,200,3.25\n2,-3,1000\n").size() == 2);
}

TEST_CASE("the status mix counts every attempt after the warmup, sentinels included",
          "[ex4][task_2][points=2]") {
    const SpikeReport report = summarize(fixture_rows(), warmup_ms);
    STEP("summarized the fixture with a 1,000 ms warmup: " << report.attempts << " attempts, "
                                                           << report.successes << " successes");
    CHECK(report.attempts == 32);
    const std::map<int, long> expected{{-4, 1},   {-3, 1},  {-2, 1},  {-1, 2},
                                       {200, 20}, {204, 1}, {500, 2}, {503, 4}};
    CHECK(report.by_status == expected);
    STEP("the 5 warmup rows (3 x 200, a 500, a -2) do not count");
    CHECK(report.successes == 21);
}

TEST_CASE("timeouts, transport errors and 5xx are never successes", "[ex4][task_2][points=1]") {
    const auto rows = rows_of("ts,status,latency_ms\n"
                              "0,-1,1000\n0,-2,1\n0,-3,1000\n0,-4,5\n0,500,30000\n0,503,1\n"
                              "0,302,4\n0,404,2\n");
    const SpikeReport report = summarize(rows, 0);
    STEP("8 attempts, none of them 2xx");
    CHECK(report.attempts == 8);
    CHECK(report.by_status.size() == 8);
    CHECK(report.successes == 0);
    CHECK(report.goodput == 0);
    STEP("no successes, so no latency percentiles");
    CHECK_FALSE(report.p50_ms.has_value());
    CHECK_FALSE(report.p95_ms.has_value());
}

TEST_CASE("goodput is successes per second from the warmup to the end of the last attempt",
          "[ex4][task_3][points=2]") {
    const SpikeReport report = summarize(fixture_rows(), warmup_ms);
    STEP("the last attempt ends at 10,000 + 1,000 ms: the window is 11,000 - 1,000 ms = 10 s");
    CHECK(report.window_s == Approx(10.0));
    STEP("21 successes in 10 s");
    CHECK(report.goodput == Approx(2.1));
    STEP("with a warmup of 0 the window starts at 0: 24 successes in 11 s");
    const SpikeReport whole = summarize(fixture_rows(), 0);
    CHECK(whole.window_s == Approx(11.0));
    CHECK(whole.goodput == Approx(24.0 / 11.0));
    STEP("a quiet start: a 1,000 ms warmup, then two successes sent at 1,500 and 1,900 ms, "
         "100 ms each: the window still starts at 1,000 ms, so it is 1 s; goodput is 2 per s");
    const SpikeReport quiet =
        summarize(rows_of("ts,status,latency_ms\n1500,200,100\n1900,200,100\n"), 1000);
    CHECK(quiet.window_s == Approx(1.0));
    CHECK(quiet.goodput == Approx(2.0));
}

TEST_CASE("p50 and p95 are nearest-rank percentiles of the successes' latencies",
          "[ex4][task_4][points=2]") {
    const SpikeReport report = summarize(fixture_rows(), warmup_ms);
    STEP("the 21 success latencies are 5, 10, 20, ..., 200: rank ceil(0.50 * 21) = 11 is 100, "
         "rank ceil(0.95 * 21) = 20 is 190");
    REQUIRE(report.p50_ms.has_value());
    REQUIRE(report.p95_ms.has_value());
    CHECK(*report.p50_ms == Approx(100.0));
    CHECK(*report.p95_ms == Approx(190.0));
    STEP("the 500s at the 3,000 ms line and the 1,000 ms timeouts are not successes: they do not "
         "pull the percentiles up");

    std::string csv = "ts,status,latency_ms\n";
    for (int latency = 100; latency >= 1; --latency)
        csv +=
            "0," + std::to_string(latency % 2 ? 200 : 201) + "," + std::to_string(latency) + "\n";
    const SpikeReport hundred = summarize(rows_of(csv), 0);
    STEP("latencies 1..100 in reverse order: p50 is 50, p95 is 95");
    CHECK(hundred.p50_ms.value_or(-1) == Approx(50.0));
    CHECK(hundred.p95_ms.value_or(-1) == Approx(95.0));

    std::string ten_csv = "ts,status,latency_ms\n";
    for (int latency = 10; latency <= 100; latency += 10)
        ten_csv += "0,200," + std::to_string(latency) + "\n";
    const SpikeReport ten = summarize(rows_of(ten_csv), 0);
    STEP("ten latencies 10, 20, ..., 100: p50 is rank ceil(0.50 * 10) = 5, which is 50; p95 is "
         "rank ceil(0.95 * 10) = 10, the slowest, 100");
    CHECK(ten.p50_ms.value_or(-1) == Approx(50.0));
    CHECK(ten.p95_ms.value_or(-1) == Approx(100.0));

    const SpikeReport one = summarize(rows_of("ts,status,latency_ms\n5,200,42\n"), 0);
    STEP("a single success is both its p50 and its p95");
    CHECK(one.p50_ms.value_or(-1) == Approx(42.0));
    CHECK(one.p95_ms.value_or(-1) == Approx(42.0));
}

TEST_CASE("sentinels print by name and statuses by number", "[ex4][task_5][points=1]") {
    CHECK(status_name(200) == "200");
    CHECK(status_name(503) == "503");
    CHECK(status_name(-1) == "response timeout");
    CHECK(status_name(-2) == "transport error");
    CHECK(status_name(-3) == "connect timeout");
    CHECK(status_name(-4) == "interrupted");
}

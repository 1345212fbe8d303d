// The tests of summarize, the script that turns a spike's two CSVs into the figures the
// checkpoints and the demo quote: its definitions of goodput and percentiles, checked on CSVs
// small enough to check by hand.
#include "lessons/common/test_support.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>

#ifndef SUMMARIZE
#error "SUMMARIZE must name the summarize script"
#endif

namespace {

std::string written(const std::string& name, const std::string& text) {
    const std::string path = test_log_dir() + "/" + name;
    std::ofstream(path) << text;
    return path;
}

} // namespace

TEST_CASE("summarize counts goodput by arrival and percentiles by start, in the steady state, and "
          "says which",
          "[summarize]") {
    // Steady state 1 s .. 3 s. Each row: when it started, its status, how long it took.
    const std::string spike =
        written("summarize-spike.csv", "ts,status,latency_ms\n"
                                       "500,200,100\n"  // before, arrives before
                                       "900,200,200\n"  // before, arrives in it
                                       "1000,200,10\n"  // in it
                                       "1500,200,20\n"  // in it
                                       "2000,503,0.5\n" // in it
                                       "2500,200,30\n"  // in it
                                       "2900,200,200\n" // in it, arrives after
                                       "3000,-1,5000\n" // in it: a timeout
                                       "3500,200,5\n"); // after
    const std::string probe =
        written("summarize-probe.csv", "ts,inflight,connections,pool_pending\n"
                                       "0,5,10,-1\n"
                                       "1000,-1,-1,-1\n"
                                       "2000,7,9,3\n");
    std::string output;
    REQUIRE(run_program({SUMMARIZE, "--label", "spike", "--from", "1", "--to", "3", spike, probe},
                        output) == 0);
    // Goodput: 4 answers arrived within the 2 s (at 1.1, 1.01, 1.52, 2.53 s). The 200s that
    // started in it took 10, 20, 30, 200 ms: nearest rank p50 = 2nd, p95 = 4th.
    CHECK(output ==
          "spike: 9 rows (200: 7, 503: 1, -1: 1)\n"
          "  steady state 1 s .. 3 s: goodput 2.0/s (200s that arrived in it, per second)\n"
          "  latency: 200s p50 20.0 ms, p95 200.0 ms (4 started in it); 503s p50 0.5 ms, p95 "
          "0.5 ms (1 started in it)\n"
          "  probe (3 samples): max in flight 7, max open connections 10, max pool pending 3\n");

    // 200s that arrive in the steady state count for goodput even when none started in it (lesson
    // 06's clients that gave up): the latency part must say "started", or it reads as a
    // contradiction beside the goodput.
    const std::string late = written("summarize-late.csv", "ts,status,latency_ms\n"
                                                           "500,200,1000\n"   // arrives at 1.5 s
                                                           "600,200,1200\n"   // arrives at 1.8 s
                                                           "1500,-1,5000\n"); // in it: a timeout
    REQUIRE(run_program({SUMMARIZE, "--label", "late", "--from", "1", "--to", "3", late}, output) ==
            0);
    CHECK(output ==
          "late: 3 rows (200: 2, -1: 1)\n"
          "  steady state 1 s .. 3 s: goodput 1.0/s (200s that arrived in it, per second)\n"
          "  latency: no 200s started in it; no 503s started in it\n");

    const std::string broken = written("summarize-broken.csv", "ts,status,latency_ms\n1,abc,2\n");
    CHECK(run_program({SUMMARIZE, broken}, output) == 2);
    CHECK(output == "summarize: " + broken + ":2: not numbers: 1,abc,2\n");
    CHECK(run_program({SUMMARIZE, probe}, output) == 2);
    CHECK(output == "summarize: " + probe + " is not a CSV with the header ts,status,latency_ms\n");
    CHECK(run_program({SUMMARIZE, test_log_dir() + "/absent.csv"}, output) == 1); // cannot read
}

TEST_CASE("summarize reports an open loop's latency from the intended start and, beside it, from "
          "the send",
          "[summarize]") {
    std::string output;
    // An open loop's CSV: ts is the intended start, the latency counts from it, sent_ms is when
    // the request went out. Latency from the send = latency_ms - (sent_ms - ts).
    const std::string open = written("summarize-open.csv", "ts,status,latency_ms,sent_ms\n"
                                                           "0,200,100,0\n"       // on time: 100
                                                           "500,200,700,800\n"   // 300 late: 400
                                                           "1000,200,900,1500\n" // 500 late: 400
                                                           "1500,503,600,2000\n" // 500 late: 100
                                                           "2000,-5,3000,-1\n"); // never sent
    REQUIRE(run_program({SUMMARIZE, "--label", "open", "--from", "0", "--to", "2", open}, output) ==
            0);
    // Goodput: 200s arrived at 0.1, 1.2 and 1.9 s. Sent late: 0, 300, 500, 500 ms (nearest rank:
    // p50 the 2nd, p95 the 4th). 200s from the intended start 100, 700, 900; from the send 100,
    // 400, 400 (p50 the 2nd, p95 the 3rd).
    CHECK(output == "open: 5 rows (200: 3, 503: 1, -5: 1)\n"
                    "  steady state 0 s .. 2 s: goodput 1.5/s (200s that arrived in it, per "
                    "second)\n"
                    "  open loop: 4 sent, 300.0 ms late at p50, 500.0 ms at p95, 500.0 ms at "
                    "most; 1 not sent\n"
                    "  latency from the intended start: 200s p50 700.0 ms, p95 900.0 ms (3 "
                    "intended in it); 503s p50 600.0 ms, p95 600.0 ms (1 intended in it)\n"
                    "  latency from the send:           200s p50 400.0 ms, p95 400.0 ms (3 "
                    "intended in it); 503s p50 100.0 ms, p95 100.0 ms (1 intended in it)\n");
}

TEST_CASE("summarize refuses a malformed row in one line and exit status 2, never a traceback or "
          "a figure of nan",
          "[summarize]") {
    std::string output;
    const auto refuses = [&](const std::string& name, const std::string& text,
                             const std::string& words) {
        const std::string path = written(name, text);
        STEP("summarize " << path << ": want one line with \"" << words << "\", exit 2");
        CHECK(run_program({SUMMARIZE, path}, output) == 2);
        STEP("it printed: " << output);
        CHECK(output.find(words) != std::string::npos);
        CHECK(output.rfind("summarize: ", 0) == 0);
        CHECK(std::count(output.begin(), output.end(), '\n') == 1);
    };
    const std::string header = "ts,status,latency_ms\n";
    refuses("summarize-nan-status.csv", header + "1,nan,2\n", ":2: not finite numbers: 1,nan,2");
    refuses("summarize-inf-status.csv", header + "1,inf,2\n", ":2: not finite numbers: 1,inf,2");
    refuses("summarize-huge-status.csv", header + "1,1e400,2\n", ":2: not finite numbers");
    refuses("summarize-nan-ts.csv", header + "nan,200,2\n", ":2: not finite numbers");
    refuses("summarize-nan-sent.csv", "ts,status,latency_ms,sent_ms\n1,200,2,nan\n",
            ":2: not finite numbers");
    refuses("summarize-not-utf8.csv", header + "1,200,2\n1,\xff\xfe,2\n", "not UTF-8 text");
    refuses("summarize-not-utf8-header.csv", "ts,st\xff\n", "not UTF-8 text");
    // Far shorter than the attacker's 200 MB, and enough: what passes the limit is refused.
    refuses("summarize-huge-field.csv", header + "1,200," + std::string(300'000, '7') + "\n",
            ":2: a row longer than 200 characters");
    refuses("summarize-bad-row.csv", header + "1,abc,2\n", ":2: not numbers: 1,abc,2");

    const std::string good = written("summarize-good.csv", header + "0,200,1\n1000,200,1\n");
    for (const std::string bound : {"--from", "--to"})
        for (const std::string value : {"nan", "inf", "-inf"}) {
            STEP("summarize " << bound << "=" << value); // "--from -inf" would read as a flag
            CHECK(run_program({SUMMARIZE, bound + "=" + value, good}, output) == 2);
            STEP("it printed: " << output);
            CHECK(output.find(bound + " must be a finite number") != std::string::npos);
            CHECK(std::count(output.begin(), output.end(), '\n') == 1);
        }
}

// Exercise 04: the numbers behind a spike's figure, from its CSV.
//
// The spike (lessons/instruments/spike) writes one row per attempt: `ts,status,latency_ms`, ts
// when the attempt started (ms since the spike began), status the HTTP status or a sentinel for an
// attempt that got no answer (-1 response timeout, -2 transport error, -3 connect timeout,
// -4 interrupted), and latency_ms how long it took. This file turns such a CSV into the report
// a reader checks the lesson's claims against: what happened (the status mix), how much useful
// work got done (goodput), and how long the useful work took (p50, p95) — after the warmup.
#pragma once

#include <istream>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

// ---- do not change (to the end of the file): the graded tests use these declarations ----

struct SpikeRow {
    double ts_ms = 0;      // when the attempt started, ms since the spike began
    int status = 0;        // HTTP status, or a sentinel (negative)
    double latency_ms = 0; // from the start to the answer or the failure
};

// A CSV that cannot be read; what() names the line: "line 3: status 'abc' is not a number".
class SpikeCsvError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Task 1. Reads the header `ts,status,latency_ms` and every row after it. Throws SpikeCsvError
// for a missing or different header and for any row that is not three numbers.
std::vector<SpikeRow> read_spike_csv(std::istream& in);

struct SpikeReport {
    long attempts = 0;             // rows that started at or after the warmup
    std::map<int, long> by_status; // status or sentinel -> rows, after the warmup
    long successes = 0;            // rows with a 2xx status, after the warmup
    double window_s = 0;           // from the warmup to the end of the last attempt that counts
    double goodput = 0;            // successes per second of the window
    std::optional<double> p50_ms;  // latency percentiles of the successes; none without any
    std::optional<double> p95_ms;
};

// Tasks 2-4. The report of the rows that started at or after `warmup_ms`.
SpikeReport summarize(const std::vector<SpikeRow>& rows, double warmup_ms);

// Task 5. How a report prints a status: "200", "503", and the sentinels by name:
// "response timeout" (-1), "transport error" (-2), "connect timeout" (-3), "interrupted" (-4).
std::string status_name(int status);

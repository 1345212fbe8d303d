// What a spike is: how many workers, how they ramp up, how long they hold, and how long each
// attempt may take; or, with a rate, the schedule of an open loop. Every number is a flag; the
// defaults are the study's (a closed loop).
#pragma once

#include "lessons/common/flags.hpp"

#include <chrono>
#include <string>

// The highest --rate: far more than this spike can send on a small machine (it would fall behind
// its schedule, which its CSV's sent_ms column shows), and low enough that rate x the longest
// --hold (24 h) counts requests far inside a 64-bit integer.
constexpr int max_rate = 100000;

struct SpikeOptions {
    std::string url = "http://127.0.0.1:8080/work";
    // 7,000 workers: the study's crowd, far more than the 200 platform threads and the 10 pool
    // connections, so every wiring has a queue somewhere.
    int workers = 7000;
    // Worker i starts at ramp * i / workers: a linear, repeatable ramp with no randomness.
    std::chrono::milliseconds ramp{20000};
    // After the ramp every worker keeps asking until ramp + hold; then no new attempt starts.
    std::chrono::milliseconds hold{90000};
    // An attempt (connect included) not answered within this is recorded as -1.
    std::chrono::milliseconds timeout{90000};
    // A connect not done within this is recorded as -3. Ten seconds covers a connect whose SYN
    // the server's kernel dropped once (Linux resends it after 1 s, then 3 s, then 7 s) and still
    // tells a full accept queue from a slow answer.
    std::chrono::milliseconds connect_timeout{10000};
    // After any answer other than 200 the worker waits this long before its next attempt, so
    // a failing server is not hammered by 7,000 tight loops.
    std::chrono::milliseconds backoff{2000};
    std::string out = "spike.csv"; // the spike program's default is <build>/logs/spike.csv
    std::string probe_url;         // empty: no probe
    std::string probe_out;         // empty: probe.csv when there is a probe
    // Requests per second of an open loop (spike_run.hpp): request i is intended at i / rate s,
    // whatever the answers. 0: the closed loop above.
    int rate = 0;
    // Carrier threads for the workers' fibers. The spike shares the machine with the server, so
    // it stays small; two keep one busy carrier from delaying every worker's clock.
    int carriers = 2;
};

// `default_probe_out`: what --help says --probe-out is when it is left out.
void add_spike_flags(Flags& flags, SpikeOptions& options, const std::string& default_probe_out);

// What is wrong with `options` ("--workers must be at least 1"), or "" when they make a spike.
std::string check_spike_options(const SpikeOptions& options);

// Every worker holds one socket, so a spike needs about `workers` + a few open files. Raises the
// soft limit toward the hard one when needed; returns what is wrong ("--workers 30000 needs ...")
// or "" when the limit suffices.
std::string ensure_file_limit(int workers);

// spike: the load driver lesson 05 teaches. N workers in a closed loop, each a fiber with its
// own kept-alive HTTP/1.1 connection, ramping up, holding, then stopping by themselves. With
// --rate, an open loop: requests on a fixed schedule, carried by at most N connections.
//
//   spike --url http://127.0.0.1:8080/work --workers 7000 --ramp 20 --hold 90
//         --timeout 90 --backoff 2 --out /tmp/spike.csv
//         --probe-url http://127.0.0.1:8081/metrics --probe-out /tmp/spike-probe.csv
//   spike --url http://127.0.0.1:8080/work --rate 400 --workers 2000 --ramp 0 --hold 20
//
// Output (by default in <build>/logs, beside the checkpoints' logs, wherever it is run from):
//   --out        ts,status,latency_ms: one row per attempt (see spike_log.hpp). status is the
//                HTTP status or a sentinel: -1 response timeout, -2 other transport error,
//                -3 connect timeout (checked first), -4 still in flight when interrupted,
//                -5 not sent (open loop: the spike fell behind its schedule by --timeout, or
//                by all of it but 10 ms).
//                With --rate, ts,status,latency_ms,sent_ms: ts is the intended start, the
//                latency counts from it, sent_ms is when the request went out.
//                [default: <build>/logs/spike.csv]
//   --probe-out  ts,inflight,connections,pool_pending from the server's /metrics once a second
//                (probe.hpp). [default: <build>/logs/spike-probe.csv]
//   stderr       progress: a refreshed line each second on a terminal, a plain line every
//                10 s otherwise.
//   stdout       a summary line at the end: rows and status mix.
// Exit status: 0 when the spike ran its course (whatever the server answered: failures are
// data); 2 for a bad flag or too few open files for --workers; 1 when a CSV cannot be written;
// 130 after Ctrl+C (143 after SIGTERM), once every row so far is written.
#include "lessons/common/process.hpp"
#include "lessons/instruments/spike/spike_progress.hpp"
#include "lessons/instruments/spike/spike_run.hpp"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <unistd.h>

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// SIGINT or SIGTERM if one arrived within `timeout`, else 0. The signals are blocked in every
// thread (block_shutdown_signals), so they wait here until asked for.
int shutdown_signal_within(std::chrono::milliseconds timeout) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    const timespec wait{0, static_cast<long>(std::chrono::nanoseconds(timeout).count())};
    const int signal = ::sigtimedwait(&set, nullptr, &wait);
    return signal > 0 ? signal : 0;
}

// <build>/logs for the program at <build>/bin/spike: where a spike run by hand leaves its CSVs,
// never the directory it was started from (which is often the repository's root).
std::filesystem::path logs_dir() {
    std::error_code error;
    const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
    return error ? std::filesystem::current_path() : self.parent_path().parent_path() / "logs";
}

std::string files_written(const Spike& spike, const SpikeOptions& options) {
    const SpikeCounts counts = spike.counts();
    std::string text = std::to_string(counts.rows) + " rows in " + options.out + " (" +
                       status_mix(counts.by_status) + ")";
    if (options.rate > 0)
        text = "open loop at " + std::to_string(options.rate) + "/s, " +
               std::to_string(spike.scheduled()) + " requests scheduled; " + text;
    if (!options.probe_url.empty())
        text += "; " + std::to_string(spike.probe_samples()) + " probe samples in " +
                options.probe_out + " (" + std::to_string(spike.probe_failures()) + " failed)";
    return text;
}

} // namespace

int main(int argc, char** argv) {
    block_shutdown_signals();
    SpikeOptions options;
    Flags flags(
        "spike",
        "Drives a closed-loop spike: workers ramp up, hold, then stop by themselves; or, "
        "with --rate, an open loop: requests on a fixed schedule, however slow the answers. "
        "One CSV row per attempt, ts,status,latency_ms, ts being when the attempt started (ms "
        "since the spike began); status is the HTTP status or -1 response timeout, -2 other "
        "transport error, -3 connect timeout, -4 still in flight at Ctrl+C, -5 not sent (an open "
        "loop that fell behind: less than 10 ms of --timeout left when a worker was free). "
        "With --rate, ts is the intended start, the latency counts from it, and a fourth "
        "column, sent_ms, says when the request went out (-1: never). Durations are seconds "
        "(fractions allowed) or carry a unit (500ms).");
    const std::filesystem::path logs = logs_dir();
    options.out = (logs / "spike.csv").string();
    const std::string default_probe_out = (logs / "spike-probe.csv").string();
    add_spike_flags(flags, options, default_probe_out);
    flags.parse(argc, argv);
    if (const std::string error = check_spike_options(options); !error.empty())
        fail("spike", error + " (try --help)", 2);
    if (const std::string error = ensure_file_limit(options.workers); !error.empty())
        fail("spike", error, 2);
    if (!options.probe_url.empty() && options.probe_out.empty())
        options.probe_out = default_probe_out;
    std::error_code ignored; // a directory that cannot be made shows as "cannot write" below
    std::filesystem::create_directories(logs, ignored);

    std::unique_ptr<Spike> spike;
    try {
        spike = std::make_unique<Spike>(options);
    } catch (const std::exception& e) {
        fail("spike", e.what());
    }
    // On a terminal one line is redrawn every second; in a log a line every ten seconds is
    // enough to show it is alive without burying everything else.
    const bool terminal = ::isatty(STDERR_FILENO) == 1;
    const auto report_every = terminal ? 1s : 10s;
    auto next_report = Clock::now() + report_every;
    auto report = [&] {
        const std::string line =
            progress_line(spike->elapsed(), spike->planned(), spike->counts(), spike->last_probe());
        std::fprintf(stderr, terminal ? "\r\033[Kspike: %s" : "spike: %s\n", line.c_str());
    };
    for (;;) {
        if (const int signal = shutdown_signal_within(100ms)) {
            const double at = std::chrono::duration<double>(spike->elapsed()).count();
            int in_flight = 0;
            try {
                in_flight = spike->interrupt();
            } catch (const std::exception& e) {
                fail("spike", e.what());
            }
            if (terminal) std::fputc('\n', stderr);
            std::printf("spike: interrupted after %.1f s; %d attempts in flight recorded as -4; "
                        "%s\n",
                        at, in_flight, files_written(*spike, options).c_str());
            std::fflush(stdout);
            // Attempts still in flight may run for up to --timeout; their rows are written, so
            // leave without waiting for them (destroying the spike would wait).
            std::_Exit(128 + signal);
        }
        try {
            if (spike->wait_for(0ms)) break;
        } catch (const std::exception& e) {
            fail("spike", e.what());
        }
        if (Clock::now() >= next_report) {
            report();
            next_report += report_every;
        }
    }
    if (terminal) {
        report();
        std::fputc('\n', stderr);
    }
    std::printf("spike: done in %.1f s; %s\n",
                std::chrono::duration<double>(spike->elapsed()).count(),
                files_written(*spike, options).c_str());
}

#include "lessons/instruments/spike/spike_options.hpp"

#include "lessons/common/process.hpp"
#include "lessons/instruments/client/http_client.hpp"

#include <limits>
#include <stdexcept>
#include <sys/resource.h>

namespace {

using namespace std::chrono_literals;

// What is wrong with `url` for our client, or "".
std::string check_url(const std::string& flag, const std::string& url) {
    std::string host, path;
    int port = 0;
    try {
        split_url(url, host, port, path);
    } catch (const std::invalid_argument& e) {
        return flag + ": " + e.what();
    }
    return "";
}

} // namespace

void add_spike_flags(Flags& flags, SpikeOptions& options, const std::string& default_probe_out) {
    flags.add("url", options.url, "what every worker asks for (http://IPv4:PORT/path)")
        .add("workers", options.workers, 1, std::numeric_limits<int>::max(),
             "workers, each a fiber with its own kept-alive connection (bound in practice by "
             "the open-file limit, which the spike checks); with --rate, the most requests "
             "outstanding at once: a request that finds every worker busy is sent late")
        .add("ramp", options.ramp, 0ms, 24h,
             "worker i starts at ramp * i / workers (0: all at once)")
        .add("hold", options.hold, 1ms, 24h,
             "after the ramp, keep asking this long; then start no attempt")
        .add("timeout", options.timeout, 1ms, 24h,
             "an attempt (connect included) not answered within this is recorded as -1 (with "
             "--rate: within this of its intended start)")
        .add("connect-timeout", options.connect_timeout, 1ms, 24h,
             "a connect not done within this is recorded as -3 (checked before --timeout)")
        .add("backoff", options.backoff, 0ms, 1h,
             "after any answer other than 200, wait this long (0: not at all; closed loop only: "
             "an open loop keeps its schedule)")
        .add("out", options.out,
             "the CSV of attempts: ts,status,latency_ms (with --rate also sent_ms)")
        .add("probe-url", options.probe_url,
             "read http_server_requests_inflight and connector_connections_current from this "
             "Prometheus /metrics URL once a second (none: no probe)")
        .add("probe-out", options.probe_out,
             "the probe's CSV, with --probe-url: ts,inflight,connections,pool_pending "
             "[default: " +
                 default_probe_out + "]")
        .add("rate", options.rate, 0, max_rate,
             "requests per second of an open loop: request i starts at i / rate s into --hold "
             "whatever the answers, and its latency counts from then; needs --ramp 0 (0: a "
             "closed loop)")
        .add("carriers", options.carriers, 1, 1024, "carrier threads running the workers' fibers");
}

std::string check_spike_options(const SpikeOptions& options) {
    if (std::string error = check_url("--url", options.url); !error.empty()) return error;
    if (options.out.empty()) return "--out must name a file";
    if (options.rate > 0 && options.ramp.count() != 0)
        return "--rate: an open loop starts at its full rate; give --ramp 0 too";
    if (!options.probe_url.empty()) {
        if (std::string error = check_url("--probe-url", options.probe_url); !error.empty())
            return error;
    } else if (!options.probe_out.empty()) {
        return "--probe-out needs --probe-url (what to probe)";
    }
    return "";
}

std::string ensure_file_limit(int workers) {
    // Besides one socket per worker: stdio, the two CSVs, each carrier's epoll and eventfd, the
    // probe's socket. 64 is a comfortable margin for those.
    const rlim_t needed = static_cast<rlim_t>(workers) + 64;
    const long allowed = raise_open_file_limit();
    if (allowed < 0 || static_cast<rlim_t>(allowed) >= needed) return "";
    return "--workers " + std::to_string(workers) + " needs about " + std::to_string(needed) +
           " open files, but this process may open at most " + std::to_string(allowed) +
           " (the hard limit, ulimit -Hn)";
}

// crowd: a crowd of clients that all ask at once. Each client is a fiber with its own
// connection; all connect first, then all send GET at the same moment, then wait for answers.
// It prints how long the last answer took and, given the server's pid, the server's memory per
// connection while every request is in flight.
//
//   crowd --url http://127.0.0.1:8080/benchmark --connections 10000 --server-pid 1234
#include "lessons/02-fibers/carrier.hpp"
#include "lessons/03-connector/reactor.hpp"
#include "lessons/common/flags.hpp"
#include "lessons/common/process.hpp"
#include "lessons/instruments/client/http_client.hpp"

#include <algorithm>
#include <atomic>
#include <boost/fiber/condition_variable.hpp>
#include <boost/fiber/mutex.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::duration d) {
    return std::chrono::duration<double>(d).count();
}

// The server's resident memory in KiB (VmRSS), or -1.
long resident_kib(int pid) {
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    std::string key;
    long value = -1;
    while (status >> key) {
        if (key == "VmRSS:") {
            status >> value;
            return value;
        }
        status.ignore(1 << 12, '\n');
    }
    return -1;
}

struct Outcome {
    int status = 0; // 0: failed before an answer
    std::string error;
    double seconds = 0;
};

} // namespace

int main(int argc, char** argv) {
    std::string url = "http://127.0.0.1:8080/benchmark";
    int connections = 10000;
    int carriers = 2;
    int server_pid = 0;
    std::chrono::milliseconds timeout{30000};
    Flags flags("crowd", "Opens N connections, sends one GET on each at the same moment, and "
                         "reports when the answers came back (and the server's memory).");
    flags.add("url", url, "what every client asks for")
        .add("connections", connections, 1, 1'000'000,
             "how many clients, each with its own connection")
        .add("carriers", carriers, 1, 1024, "carrier threads for the clients' fibers")
        .add("server-pid", server_pid, 0, std::numeric_limits<int>::max(),
             "measure this process's memory (0: don't)")
        .add("timeout", timeout, std::chrono::milliseconds(1), std::chrono::hours(1),
             "give up on a connect or an answer after this long");
    flags.parse(argc, argv);
    std::string host, path;
    int port = 0;
    try {
        split_url(url, host, port, path);
    } catch (const std::exception& e) {
        fail("crowd", e.what(), 2);
    }
    if (connections < 1) fail("crowd", "--connections must be at least 1", 2);
    // One socket per client, plus a few for the carriers and the measurement.
    if (raise_open_file_limit() < connections + 64L)
        fail("crowd",
             "--connections " + std::to_string(connections) +
                 " needs more open files than this process may have (ulimit -Hn)",
             2);

    const long before_kib = server_pid > 0 ? resident_kib(server_pid) : -1;
    if (server_pid > 0 && before_kib < 0)
        fail("crowd", "no process " + std::to_string(server_pid) + " to measure", 2);
    std::atomic<long> peak_kib{before_kib};
    std::atomic<bool> sampling{server_pid > 0};
    std::thread sampler([&] {
        while (sampling) {
            peak_kib = std::max(peak_kib.load(), resident_kib(server_pid));
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
    });

    // The choreography, shared by the fibers (on carriers) and main (a plain thread).
    boost::fibers::mutex mutex;
    boost::fibers::condition_variable all_connected, start, all_done;
    int connected = 0, done = 0;
    bool go = false;
    std::vector<Outcome> outcomes(static_cast<std::size_t>(connections));
    Clock::time_point sent_at;

    const auto began = Clock::now();
    {
        std::vector<std::unique_ptr<Carrier>> threads;
        for (int i = 0; i < carriers; ++i)
            threads.push_back(std::make_unique<Carrier>(
                "crowd-" + std::to_string(i),
                [] { boost::fibers::use_scheduling_algorithm<Reactor>(); }, 64 * 1024));
        for (int i = 0; i < connections; ++i) {
            threads[static_cast<std::size_t>(i % carriers)]->spawn([&, i] {
                Outcome& outcome = outcomes[static_cast<std::size_t>(i)];
                std::unique_ptr<HttpClientConnection> connection;
                try {
                    connection =
                        std::make_unique<HttpClientConnection>(host, port, deadline_after(timeout));
                } catch (const std::exception& e) {
                    outcome.error = e.what();
                }
                {
                    std::unique_lock<boost::fibers::mutex> lock(mutex);
                    if (++connected == connections) all_connected.notify_one();
                    start.wait(lock, [&] { return go; });
                }
                if (connection) {
                    try {
                        outcome.status = connection->get(path, deadline_after(timeout)).status;
                    } catch (const std::exception& e) {
                        outcome.error = e.what();
                    }
                    outcome.seconds = seconds(Clock::now() - sent_at);
                }
                std::lock_guard<boost::fibers::mutex> lock(mutex);
                if (++done == connections) all_done.notify_one();
            });
        }
        std::unique_lock<boost::fibers::mutex> lock(mutex);
        all_connected.wait(lock, [&] { return connected == connections; });
        std::printf("crowd: %d connections to %s:%d opened in %.3f s\n", connections, host.c_str(),
                    port, seconds(Clock::now() - began));
        sent_at = Clock::now();
        go = true;
        start.notify_all();
        all_done.wait(lock, [&] { return done == connections; });
    } // joins the carriers
    sampling = false;
    sampler.join();

    std::map<std::string, int> counts;
    std::vector<double> answered;
    for (const auto& outcome : outcomes) {
        counts[outcome.status ? std::to_string(outcome.status) : "error: " + outcome.error]++;
        if (outcome.status) answered.push_back(outcome.seconds);
    }
    std::sort(answered.begin(), answered.end());
    std::string mix;
    for (const auto& [what, count] : counts)
        mix += (mix.empty() ? "" : ", ") + what + ": " + std::to_string(count);
    std::printf("crowd: %d x GET %s sent at once; answers: %s\n", connections, path.c_str(),
                mix.c_str());
    if (!answered.empty())
        std::printf("crowd: first answer after %.3f s, median %.3f s, last %.3f s\n",
                    answered.front(), answered[answered.size() / 2], answered.back());
    if (server_pid > 0)
        std::printf("crowd: server memory %.1f MiB before, %.1f MiB at peak: %.1f KiB per "
                    "connection\n",
                    before_kib / 1024.0, peak_kib / 1024.0,
                    static_cast<double>(peak_kib - before_kib) / connections);
    return counts.size() == 1 && counts.count("200") ? 0 : 1;
}

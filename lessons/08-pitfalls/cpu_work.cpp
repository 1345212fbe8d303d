#include "lessons/08-pitfalls/cpu_work.hpp"

#include "lessons/06-gate/concurrency_gate.hpp"
#include "lessons/08-pitfalls/query_param.hpp"
#include "lessons/common/process.hpp"

#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace {

// One of splitmix64's rounds: cheap, and each step depends on the one before.
std::uint64_t mix(std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

} // namespace

std::uint64_t compute_for(std::chrono::milliseconds cpu_time) {
    const auto until = thread_cpu_time() + cpu_time;
    std::uint64_t x = 0;
    do {
        // Reading a thread's CPU clock is a system call: look at it every 100,000 steps only.
        for (int i = 0; i < 100'000; ++i)
            x = mix(x);
    } while (thread_cpu_time() < until);
    return x;
}

void add_cpu_route(httplib::Server& server, CpuPlacement placement, PlatformExecutor* cpu_threads,
                   int queue) {
    if (placement == CpuPlacement::on_cpu_threads && (cpu_threads == nullptr || queue < 0))
        throw std::logic_error("add_cpu_route: on_cpu_threads needs the threads and a queue >= 0");
    // On the CPU threads, lesson 06's gate (REJECT) lets in as many requests as there are
    // threads plus the queue: the rest are turned away before they queue.
    std::shared_ptr<ConcurrencyGate> lane;
    if (placement == CpuPlacement::on_cpu_threads)
        lane = std::make_shared<ConcurrencyGate>(GateOptions{
            cpu_threads->threads_max() + queue, GatePolicy::reject, true, "the CPU threads"});
    server.Get("/cpu", [placement, cpu_threads, lane](const httplib::Request& req,
                                                      httplib::Response& res) {
        std::chrono::milliseconds cpu_time{};
        try {
            cpu_time = std::chrono::milliseconds(
                whole_number_param(req, "ms", 20, 0, max_cpu_time.count()));
        } catch (const std::invalid_argument& e) {
            return answer_bad_request(res, e.what());
        }
        std::uint64_t result = 0;
        std::string computed_on;
        auto work = [&] {
            result = compute_for(cpu_time);
            computed_on = thread_label();
            return true;
        };
        if (placement == CpuPlacement::on_cpu_threads) {
            try {
                const auto place = lane->enter(); // throws at once when the lane is full
                cpu_threads->run(work);           // parks this fiber; a CPU thread computes
            } catch (const ConcurrencyLimitReached&) {
                res.status = 503; // busy, not broken: the client may try again
                const nlohmann::json busy = {{"error", "the CPU threads and their queue are full"}};
                return res.set_content(busy.dump() + "\n", "application/json");
            }
        } else {
            work(); // holds whatever runs the handler: under vt, the carrier
        }
        const nlohmann::ordered_json answer = {{"cpu_ms", cpu_time.count()},
                                               {"result", std::to_string(result)},
                                               {"computed_on", computed_on}};
        res.set_content(answer.dump() + "\n", "application/json");
    });
}

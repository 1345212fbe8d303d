#include "lessons/01-one-thread/benchmark_routes.hpp"

#include "lessons/common/process.hpp"

#include <nlohmann/json.hpp>
#include <thread>

namespace {

void sleep_thread(std::chrono::milliseconds duration) {
    std::this_thread::sleep_for(duration);
}

} // namespace

const BenchmarkWait thread_sleep{"std::this_thread::sleep_for", sleep_thread};

void add_benchmark_routes(httplib::Server& server, const BenchmarkWait& wait, bool (*on_fiber)(),
                          std::chrono::milliseconds duration) {
    server.Get("/benchmark", [&wait, on_fiber, duration](const httplib::Request&,
                                                         httplib::Response& res) {
        wait.sleep(duration);
        // ordered_json keeps the fields in the order written, the order the lesson texts show.
        const nlohmann::ordered_json answer = {{"message", std::string("slept with ") + wait.name},
                                               {"sleep_ms", duration.count()},
                                               {"thread", thread_label()},
                                               {"fiber", on_fiber && on_fiber()}};
        res.set_content(answer.dump() + "\n", "application/json");
    });
    server.Get("/hello", [](const httplib::Request&, httplib::Response& res) {
        res.set_content("hello\n", "text/plain");
    });
}

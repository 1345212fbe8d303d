#include "lessons/04-pool/work_service.hpp"

#include "lessons/common/process.hpp"

#include <cmath>
#include <nlohmann/json.hpp>

namespace {

using Clock = std::chrono::steady_clock;

// The query sleeps 50 ms. A server that has not answered after 10 s is stuck, not busy: the
// request then fails (500) and the pool drops that connection rather than reuse it mid-query.
constexpr std::chrono::milliseconds query_timeout{10000};

double ms_since(Clock::time_point start) {
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// Milliseconds to the microsecond: the digits beyond are clock noise, not information.
double to_microsecond(double ms) {
    return std::round(ms * 1000) / 1000;
}

} // namespace

WorkResult WorkService::do_work() {
    WorkResult result;
    const auto start = Clock::now();
    PgPool::Lease lease = pool_.borrow();
    result.checkout_ms = ms_since(start);
    const auto query_start = Clock::now();
    lease->query(query, query_timeout);
    result.query_ms = ms_since(query_start);
    result.backend_pid = lease->backend_pid();
    return result;
}

void add_work_route(httplib::Server& server, WorkCall work) {
    server.Get("/work", [work = std::move(work)](const httplib::Request&, httplib::Response& res) {
        std::string failure;
        try {
            const WorkResult result = work();
            const nlohmann::ordered_json answer = {
                {"checkout_ms", to_microsecond(result.checkout_ms)},
                {"query_ms", to_microsecond(result.query_ms)},
                {"backend_pid", result.backend_pid},
                {"thread", thread_label()}};
            res.set_content(answer.dump() + "\n", "application/json");
            return;
        } catch (const PoolTimeout& e) {
            failure = e.what();
        } catch (const PgError& e) {
            failure = e.what();
        }
        res.status = 500;
        res.set_content(failure + "\n", "text/plain");
    });
}

void add_work_route(httplib::Server& server, WorkService& work) {
    add_work_route(server, [&work] { return work.do_work(); });
}

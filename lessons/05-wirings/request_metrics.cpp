#include "lessons/05-wirings/request_metrics.hpp"

#include "lessons/common/tracing.hpp"

#include <boost/fiber/fss.hpp>
#include <string>

namespace {

std::size_t slot_of(int status) {
    return status >= 100 && status < 600 ? static_cast<std::size_t>(status) : 0;
}

// The InFlight of the request this fiber serves (a platform thread counts as its own fiber).
// Fiber-local, not thread_local: under vt a fiber parks in flush() after the logger ran, and the
// carrier's next fiber, on the same thread, serves a request of its own meanwhile.
// Never destroyed: its destructor would use the main thread's fiber context, which may be gone by
// the time static objects are destroyed at exit.
boost::fibers::fiber_specific_ptr<RequestMetrics::InFlight>& current_request() {
    static auto* current = new boost::fibers::fiber_specific_ptr<RequestMetrics::InFlight>(
        [](RequestMetrics::InFlight*) {}); // it points at a guard on the stack: nothing to free
    return *current;
}

} // namespace

RequestMetrics::InFlight::InFlight(RequestMetrics& metrics) : metrics_(metrics) {
    trace_counter("inflight", "value",
                  metrics_.inflight_.fetch_add(1, std::memory_order_relaxed) + 1);
    current_request().reset(this);
}

RequestMetrics::InFlight::~InFlight() {
    current_request().reset(nullptr);
    trace_counter("inflight", "value",
                  metrics_.inflight_.fetch_sub(1, std::memory_order_relaxed) - 1);
}

bool RequestMetrics::InFlight::sent(bool sent) {
    if (sent && status_ != 0) metrics_.count_response(status_);
    status_ = 0;
    return sent;
}

void RequestMetrics::count_response(int status) {
    by_status_[slot_of(status)].fetch_add(1, std::memory_order_relaxed);
}

std::uint64_t RequestMetrics::responses(int status) const {
    return by_status_[slot_of(status)].load(std::memory_order_relaxed);
}

void RequestMetrics::collect(MetricsText& out) const {
    out.gauge("http_server_requests_inflight",
              "Requests inside the application: handlers running now. Requests queued for a "
              "platform thread are not in flight yet.",
              inflight());
    out.family("http_server_requests_total", MetricsText::Type::counter,
               "Responses the application sent, by HTTP status.");
    for (std::size_t status = 0; status < by_status_.size(); ++status) {
        const std::uint64_t count = by_status_[status].load(std::memory_order_relaxed);
        if (count == 0) continue; // a status never written has no series yet, as in Micrometer
        out.sample(static_cast<double>(count),
                   {{"status", status == 0 ? "other" : std::to_string(status)}});
    }
}

void collect_refusals(const Connector& connector, const std::string& family,
                      const std::string& help, MetricsText& out) {
    out.family(family, MetricsText::Type::counter, help);
    for (const auto& [status, count] : connector.refusals())
        out.sample(static_cast<double>(count),
                   {{"status", std::to_string(status)}, {"reason", refusal_reason(status)}});
}

void count_responses(httplib::Server& app, RequestMetrics& metrics) {
    app.set_logger([&metrics](const httplib::Request&, const httplib::Response& res) {
        if (RequestMetrics::InFlight* request = current_request().get()) {
            request->status_ = res.status; // counted by sent(), if it leaves
        } else {
            metrics.count_response(res.status); // served outside the wirings: nobody to ask
        }
    });
}

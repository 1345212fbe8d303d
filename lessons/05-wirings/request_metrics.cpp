#include "request_metrics.hpp"

#include <string>

namespace {

std::size_t slot_of(int status) {
    return status >= 100 && status < 600 ? static_cast<std::size_t>(status) : 0;
}

} // namespace

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
               "Responses written by the application, by HTTP status.");
    for (std::size_t status = 0; status < by_status_.size(); ++status) {
        const std::uint64_t count = by_status_[status].load(std::memory_order_relaxed);
        if (count == 0) continue; // a status never written has no series yet, as in Micrometer
        out.sample(static_cast<double>(count),
                   {{"status", status == 0 ? "other" : std::to_string(status)}});
    }
}

void count_responses(httplib::Server& app, RequestMetrics& metrics) {
    app.set_logger([&metrics](const httplib::Request&, const httplib::Response& res) {
        metrics.count_response(res.status);
    });
}

// What the application counts about its requests, for GET /metrics.
//
//  * in flight: requests inside the app, i.e. whose handler is running right now. The executor
//    counts them (wiring.hpp) with an InFlight guard around the request's serve function, so a
//    request waiting in the platform executor's queue is NOT in flight: its connection is open
//    (connector_connections_current counts it) but the app has not started on it. Under vt every
//    request whose head has arrived is in flight at once.
//  * responses by status: every response the app sent, 404s and 500s included. cpp-httplib
//    reports each one it writes to its logger (count_responses installs one), but it writes into
//    the connector's buffer: the response leaves only when the connector flushes it, after the
//    logger ran. So the logger only notes the status in the request's InFlight guard, and the
//    executor counts it once serve() says the response was sent (InFlight::sent). A response
//    whose client was gone, or took none of it within the write timeout, is not counted.
//    The connector's own refusals (400, 408, 413, 431 ...) never reach the app: they are counted
//    apart, by the connector, and collect_refusals reports them.
//
// Everything is an atomic: handlers on carriers and on platform threads update it, and the
// management thread reads it without ever waiting for them.
#pragma once

#include "lessons/03-connector/connector.hpp"
#include "lessons/05-wirings/metrics_text.hpp"

#include <array>
#include <atomic>
#include <cstdint>
#include <httplib.h>
#include <string>

class RequestMetrics {
public:
    // A request inside the app for the guard's lifetime (RAII: an exception cannot leak a count),
    // and the status of its response until sent() says whether it left.
    class InFlight {
    public:
        explicit InFlight(RequestMetrics& metrics);
        ~InFlight();
        InFlight(const InFlight&) = delete;
        InFlight& operator=(const InFlight&) = delete;

        // Takes serve()'s result (true: the response was sent) and passes it on. Counts the
        // response by its status when it was sent.
        bool sent(bool sent);

    private:
        friend void count_responses(httplib::Server& app, RequestMetrics& metrics);
        RequestMetrics& metrics_;
        int status_ = 0; // the status of the response cpp-httplib wrote; 0: none yet
    };

    int inflight() const { return inflight_.load(std::memory_order_relaxed); }

    void count_response(int status);
    // Responses sent with `status` so far.
    std::uint64_t responses(int status) const;

    // http_server_requests_inflight and http_server_requests_total{status="..."}.
    void collect(MetricsText& out) const;

private:
    std::atomic<int> inflight_{0};
    // One counter per status code 100..599; anything outside that range counts as 0 ("other").
    std::array<std::atomic<std::uint64_t>, 600> by_status_{};
};

// `family`{status="408",reason="read_timeout"} ...: the requests `connector` refused before any
// app saw them (connector.hpp, refusals()), a counter per status. No samples until the first.
void collect_refusals(const Connector& connector, const std::string& family,
                      const std::string& help, MetricsText& out);

// Makes `app` count each response it writes in `metrics` (through cpp-httplib's logger).
void count_responses(httplib::Server& app, RequestMetrics& metrics);

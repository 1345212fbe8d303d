// The management port: how the server reports on itself, in the spirit of Spring Boot's
// actuator. It is a separate HTTP server on its own port and its own two threads, which never
// touch the carriers, the platform executor's queue or the database pool's queue, so it
// answers within milliseconds however overloaded the application is: exactly when it matters.
//
//   GET /health   200 {"status":"UP","app":"UP","database":"UP"}, or 503 with "DOWN" and why
//                 ("database_error"). The database check opens a connection of its own
//                 (PQping), never one from the pool: a pool with 2,000 borrowers waiting would
//                 make the health check wait 10 s too.
//   GET /metrics  Prometheus text (metrics_text.hpp) from every collector added with
//                 add_metrics: each reads atomic counters, so it never waits for a lock.
//
// Each request gets a fresh connection (keep-alive off): cpp-httplib ties a thread to a
// kept-alive connection, and two idle browsers would otherwise take both threads.
#pragma once

#include "metrics_text.hpp"

#include <atomic>
#include <functional>
#include <httplib.h>
#include <memory>
#include <string>
#include <thread>
#include <vector>

class ManagementServer {
public:
    // Adds this component's metrics to a /metrics body.
    using Collector = std::function<void(MetricsText&)>;
    // True when the database answers; otherwise false and `why`.
    using DatabaseCheck = std::function<bool(std::string& why)>;

    ManagementServer(std::string host, int port, DatabaseCheck database);
    // Stops the server and joins its thread.
    ~ManagementServer();
    ManagementServer(const ManagementServer&) = delete;
    ManagementServer& operator=(const ManagementServer&) = delete;

    // Before start(): collectors are called in the order added.
    void add_metrics(Collector collector);

    // Binds (port 0 picks a free one) and starts serving on its own thread. Throws
    // std::runtime_error ("cannot listen on 127.0.0.1:8081 for management: Address already in
    // use") when it cannot bind.
    void start();
    int port() const { return port_; }

    // The /metrics body, as served.
    std::string metrics() const;

private:
    std::string host_;
    int port_;
    DatabaseCheck database_;
    std::vector<Collector> collectors_;
    httplib::Server server_;
    std::atomic<bool> finished_{false}; // the listening thread has returned
    std::thread thread_;
};

// The database check /health uses: PQping with `conninfo` (libpq syntax or URI), giving the
// server `timeout_seconds` to answer. Blocks the calling thread, the management thread.
ManagementServer::DatabaseCheck ping_database(std::string conninfo, int timeout_seconds = 2);

// The management port: how the server reports on itself, in the spirit of Spring Boot's
// actuator. It is a second connector (lesson 03) on its own port with one carrier thread of its
// own, which never touches the application's carriers, the platform executor's queue or the
// database pool's queue, so it answers within milliseconds however overloaded the application
// is: exactly when it matters.
//
//   GET /health   200 {"status":"UP","app":"UP","database":"UP"}, or 503 with "DOWN" and why
//                 ("database_error"). The database check opens a connection of its own
//                 (ping_database), never one from the pool: a pool with 2,000 borrowers waiting
//                 would make the health check wait 10 s too. One check at a time: /health
//                 requests that arrive while one runs share its answer.
//   GET /metrics  Prometheus text (metrics_text.hpp) from every collector added with
//                 add_metrics: each reads atomic counters, so it never waits for a lock.
//
// Being a connector, it holds against clients as the application's port does: a request head
// must arrive whole within 2 s (a client trickling bytes gets 408, however regularly it sends),
// bodies are refused with 413 before a byte of them is read, and a stop ends within the
// application's grace whatever a client is doing. Its limits are in management_server.cpp.
#pragma once

#include "lessons/03-connector/connector.hpp"
#include "lessons/05-wirings/metrics_text.hpp"

#include <boost/fiber/future.hpp>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

class ManagementServer {
public:
    // Adds this component's metrics to a /metrics body.
    using Collector = std::function<void(MetricsText&)>;
    // True when the database answers; otherwise false and `why`. Runs on the management
    // carrier: it must wait the fiber-aware way (ping_database does).
    using DatabaseCheck = std::function<bool(std::string& why)>;

    ManagementServer(const std::string& host, int port, DatabaseCheck database);
    ManagementServer(const ManagementServer&) = delete;
    ManagementServer& operator=(const ManagementServer&) = delete;

    // Before start(): collectors are called in the order added.
    void add_metrics(Collector collector);

    // Binds (port 0 picks a free one) and starts serving on its own carrier. Throws
    // std::runtime_error ("cannot listen on 127.0.0.1:8081 for management: Address already in
    // use (choose another with --management-port)") when it cannot bind.
    void start();
    int port() const { return connector_.port(); }

    // The /metrics body, as served.
    std::string metrics() const;

    // For run_until_shutdown, which stops it together with the application's connector.
    Connector& connector() { return connector_; }

private:
    struct DatabaseHealth {
        bool up = false;
        std::string why;
    };
    // Runs database_, or waits for the check another /health started: one check at a time, so
    // a crowd of monitors costs one database connection, not one each.
    bool database_up_now(std::string& why);

    DatabaseCheck database_;
    boost::fibers::shared_future<DatabaseHealth> check_in_progress_; // valid() while one runs
    std::vector<Collector> collectors_;
    HttpApp app_;
    Connector connector_; // last: stopped and destroyed before what its fibers use
};

// The database check /health uses: connects to `conninfo` (libpq syntax) with lesson 04's
// fiber-aware PgConnection, giving the server `timeout` to finish the handshake, and hangs up.
// It parks the management fiber while it waits, never its carrier.
ManagementServer::DatabaseCheck
ping_database(std::string conninfo, std::chrono::milliseconds timeout = std::chrono::seconds(2));

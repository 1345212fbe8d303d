#include "lessons/05-wirings/management_server.hpp"

#include "lessons/04-pool/pg_connection.hpp"
#include "lessons/05-wirings/request_metrics.hpp"

#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace {

using namespace std::chrono_literals;

// The management port's limits. Its clients are a scraper, a probe and an operator's curl.
ConnectorOptions management_options(const std::string& host, int port) {
    ConnectorOptions options;
    options.host = host;
    options.port = port;
    // Its own thread: a carrier of the application's, pinned or swamped, cannot delay it.
    options.carriers = 1;
    options.carrier_name = "management";
    options.connections_counter = "management.connections";
    // Any cap can be filled by a client that keeps opening connections; the timeouts below decide
    // how dear that is. A connection that has sent no request must send one within 2 s of its
    // accept, so holding all 1,024 that way takes 500 new connections a second. Holding them with
    // polite requests does not work: at the cap, a newcomer in the kernel's accept queue takes the
    // place of the connection idle longest between its requests (fair admission, lesson 03); one
    // that always has a request in progress is bounded by the 2 s head timeout below. A parked
    // connection costs ~13 KiB.
    options.max_connections = 1024;
    options.accept_count = 128;
    // A whole request head within 2 s, or 408 and closed: a slow client cannot hold a connection
    // for longer, however regularly it sends.
    options.read_timeout = 2s;
    options.write_timeout = 2s;
    options.keep_alive_timeout = 2s;
    return options;
}

} // namespace

ManagementServer::ManagementServer(const std::string& host, int port, DatabaseCheck database)
    : database_(std::move(database)), connector_(app_, management_options(host, port)) {
    app_.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
        res.set_content(metrics(), "text/plain; version=0.0.4; charset=utf-8");
    });
    app_.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
        std::string why;
        const bool database_up = database_up_now(why);
        // The app answers: it is up. The whole is up only when the database is too.
        nlohmann::ordered_json health = {{"status", database_up ? "UP" : "DOWN"},
                                         {"app", "UP"},
                                         {"database", database_up ? "UP" : "DOWN"}};
        if (!database_up) health["database_error"] = why;
        res.status = database_up ? 200 : 503;
        res.set_content(health.dump() + "\n", "application/json");
    });
}

bool ManagementServer::database_up_now(std::string& why) {
    if (!database_) return true;
    // Only this server's one carrier runs here, so plain members are safe: fibers on one thread
    // switch only where they wait.
    if (check_in_progress_.valid()) {
        // A check is running: its answer is ours too, instead of a connection of our own.
        const auto running = check_in_progress_; // the member is reset when the check ends
        const DatabaseHealth health = running.get();
        why = health.why;
        return health.up;
    }
    boost::fibers::promise<DatabaseHealth> answer;
    check_in_progress_ = answer.get_future().share();
    DatabaseHealth health;
    try {
        health.up = database_(health.why);
    } catch (const std::exception& e) { // never leave the others waiting on a broken promise
        std::fprintf(stderr, "health check: %s\n", e.what());
        health = {false, "the check failed"};
    }
    answer.set_value(health);
    check_in_progress_ = boost::fibers::shared_future<DatabaseHealth>();
    why = health.why;
    return health.up;
}

void ManagementServer::add_metrics(Collector collector) {
    collectors_.push_back(std::move(collector));
}

void ManagementServer::start() {
    try {
        connector_.start();
    } catch (const std::runtime_error& e) {
        // "cannot listen on 127.0.0.1:8081: Address already in use", said for this port.
        std::string what = e.what();
        if (const auto colon = what.find(": "); colon != std::string::npos)
            what.insert(colon, " for management");
        throw std::runtime_error(what + " (choose another with --management-port)");
    }
}

std::string ManagementServer::metrics() const {
    MetricsText text;
    for (const auto& collect : collectors_)
        collect(text);
    text.gauge("management_connections_current", "Open connections to the management port.",
               connector_.open_connections());
    text.counter("management_idle_evictions_total",
                 "Kept-alive connections to the management port closed in their keep-alive wait "
                 "to let a newcomer in at its 1,024 connections (the one idle longest each time).",
                 static_cast<double>(connector_.idle_evictions()));
    collect_refusals(connector_, "management_refusals_total",
                     "Requests the management port refused itself (malformed, too slow, with a "
                     "body), by status and reason.",
                     text);
    return text.text();
}

ManagementServer::DatabaseCheck ping_database(std::string conninfo,
                                              std::chrono::milliseconds timeout) {
    return [conninfo = std::move(conninfo), timeout](std::string& why) {
        try {
            PgConnection probe(conninfo, timeout); // closed again at once
            return true;
        } catch (const PgError& e) {
            // /health answers anyone who can reach the port: it says what kind of failure, and
            // the server's log says the rest (libpq's words name hosts, roles and databases).
            std::fprintf(stderr, "health check: %s\n", e.what());
            why = std::string(e.what()).find("no answer within") != std::string::npos
                      ? "no answer from the server"
                      : "the server refused or dropped the connection";
            return false;
        }
    };
}

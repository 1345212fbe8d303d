#include "management_server.hpp"

#include "pg_connection.hpp"
#include "request_metrics.hpp"

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
    // A few scrapers and operators at once; beyond it, the kernel's accept queue holds the rest
    // until a connection closes (at the latest after the read or keep-alive timeout below).
    options.max_connections = 64;
    options.accept_count = 64;
    // A whole request head within 2 s, or 408 and closed: a slow client cannot hold a connection
    // for longer, however regularly it sends.
    options.read_timeout = 2s;
    options.write_timeout = 2s;
    options.keep_alive_timeout = 5s;
    // /health may be waiting for the database (2 s at most): a stop lets it finish, no longer.
    options.stop_grace = 3s;
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
        const bool database_up = !database_ || database_(why);
        // The app answers: it is up. The whole is up only when the database is too.
        nlohmann::ordered_json health = {{"status", database_up ? "UP" : "DOWN"},
                                         {"app", "UP"},
                                         {"database", database_up ? "UP" : "DOWN"}};
        if (!database_up) health["database_error"] = why;
        res.status = database_up ? 200 : 503;
        res.set_content(health.dump() + "\n", "application/json");
    });
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
            why = e.what();
            return false;
        }
    };
}

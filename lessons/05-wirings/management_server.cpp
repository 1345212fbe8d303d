#include "management_server.hpp"

#include "process.hpp"

#include <chrono>
#include <libpq-fe.h>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <sys/socket.h>
#include <thread>

namespace {

// Two threads: /metrics stays quick while the other one waits on a slow /health ping.
constexpr std::size_t management_threads = 2;
// A client that connects and sends nothing holds a thread this long at most.
constexpr time_t management_read_timeout_s = 2;

} // namespace

ManagementServer::ManagementServer(std::string host, int port, DatabaseCheck database)
    : host_(std::move(host)), port_(port), database_(std::move(database)) {
    server_.new_task_queue = [] { return new httplib::ThreadPool(management_threads); };
    server_.set_keep_alive_max_count(1);
    // SO_REUSEADDR only: cpp-httplib's default SO_REUSEPORT would let a forgotten server from an
    // earlier run share the port (lesson 01's serve.cpp says more).
    server_.set_socket_options([](socket_t sock) {
        const int yes = 1;
        ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    });
    server_.set_read_timeout(management_read_timeout_s, 0);
    server_.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
        res.set_content(metrics(), "text/plain; version=0.0.4; charset=utf-8");
    });
    server_.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
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

ManagementServer::~ManagementServer() {
    if (!thread_.joinable()) return;
    // stop() does nothing until the thread has entered listen: repeat it until the thread ends.
    while (!finished_.load()) {
        server_.stop();
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    thread_.join();
}

void ManagementServer::add_metrics(Collector collector) {
    collectors_.push_back(std::move(collector));
}

void ManagementServer::start() {
    int bound = -1;
    if (port_ == 0) {
        bound = server_.bind_to_any_port(host_);
    } else if (server_.bind_to_port(host_, port_)) {
        bound = port_;
    }
    if (bound < 0)
        throw std::runtime_error("cannot listen on " + host_ + ":" + std::to_string(port_) +
                                 " for management: " + explain_bind_failure(host_, port_) +
                                 " (choose another with --management-port)");
    port_ = bound;
    thread_ = std::thread([this] {
        name_this_thread("management");
        server_.listen_after_bind();
        finished_ = true;
    });
}

std::string ManagementServer::metrics() const {
    MetricsText text;
    for (const auto& collect : collectors_)
        collect(text);
    return text.text();
}

ManagementServer::DatabaseCheck ping_database(std::string conninfo, int timeout_seconds) {
    return [conninfo = std::move(conninfo),
            timeout = std::to_string(timeout_seconds)](std::string& why) {
        // expand_dbname: `conninfo` is a whole connection string; connect_timeout, listed after
        // it, overrides any it holds.
        const char* keywords[] = {"dbname", "connect_timeout", nullptr};
        const char* values[] = {conninfo.c_str(), timeout.c_str(), nullptr};
        switch (PQpingParams(keywords, values, 1)) {
        case PQPING_OK:
            return true;
        case PQPING_REJECT:
            why = "the server is running but refuses connections (starting up or shutting down)";
            return false;
        case PQPING_NO_RESPONSE:
            why = "no answer from the server";
            return false;
        default:
            why = "the connection string is invalid";
            return false;
        }
    };
}

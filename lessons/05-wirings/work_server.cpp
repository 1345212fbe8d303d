#include "lessons/05-wirings/work_server.hpp"

#include "lessons/03-connector/connector_flags.hpp"
#include "lessons/common/process.hpp"

#include <cstdio>
#include <cstdlib>

void add_server_flags(Flags& flags, ServerOptions& options, const std::vector<Profile>& profiles) {
    std::vector<std::string> names;
    std::string help = "the wiring:";
    for (const Profile& profile : profiles) {
        names.push_back(profile.name);
        help += (names.size() > 1 ? "; " : " ") + profile.name + " = " + profile.meaning;
    }
    flags.add("profile", options.profile, names, help)
        .add("threads-max", options.threads_max, 1, 10'000,
             "platform threads running handlers (platform profile only: it has no effect under "
             "vt, where every request runs on its connection's fiber)")
        .add("management-port", options.management_port, 0, 65535,
             "port of /health and /metrics on 127.0.0.1; 0 picks a free one")
        .add("print-config", options.print_config,
             "print the effective settings as key=value lines and exit");
    add_connector_flags(flags, options.connector);
    add_pool_flags(flags, options.pool);
}

Wiring wiring_of(const std::string& profile) {
    return profile == "platform" ? Wiring::platform : Wiring::vt;
}

Settings effective_settings(const ServerOptions& options) {
    const ConnectorOptions& connector = options.connector;
    const PoolOptions& pool = options.pool;
    const std::string threads = std::to_string(options.threads_max);
    return {
        {"profile", options.profile},
        {"executor", wiring_of(options.profile) == Wiring::platform
                         ? "platform threads: " + threads + ", first-come queue"
                         : "connection fibers (--threads-max " + threads + " has no effect)"},
        {"endpoint", options.endpoint},
        {"query", options.query},
        {"db", pool.conninfo},
        {"pool_size", std::to_string(pool.size)},
        {"pool_timeout", format_duration(pool.checkout_timeout)},
        {"pool_order", pool.barging ? "barging" : "first come, first served"},
        {"carriers", connector.carriers > 0 ? std::to_string(connector.carriers) : "one per core"},
        {"max_connections", std::to_string(connector.max_connections)},
        {"accept_count", std::to_string(connector.accept_count)},
        {"keep_alive_timeout", format_duration(connector.keep_alive_timeout)},
        {"keep_alive_requests", std::to_string(connector.keep_alive_requests)},
        {"read_timeout", format_duration(connector.read_timeout)},
        {"write_timeout", format_duration(connector.write_timeout)},
        {"management_port", std::to_string(options.management_port)},
    };
}

WorkServer::WorkServer(const ServerOptions& options, std::string program, const Settings& extra)
    : options_(options), program_(std::move(program)) {
    Settings settings = effective_settings(options_);
    settings.insert(settings.end(), extra.begin(), extra.end());
    if (options_.print_config) {
        for (const auto& [key, value] : settings)
            std::printf("%s=%s\n", key.c_str(), value.c_str());
        std::exit(0);
    }
    for (const auto& [key, value] : settings)
        std::printf("setting %s=%s\n", key.c_str(), value.c_str());
    std::fflush(stdout);

    pool_ = open_pool_or_exit(options_.pool, program_);
    work_ = std::make_unique<WorkService>(*pool_);
    count_responses(app_, metrics_);
    Connector::Executor executor;
    if (wiring_of(options_.profile) == Wiring::platform) {
        platform_ = std::make_unique<PlatformExecutor>(options_.threads_max);
        executor = on_platform_threads(*platform_, metrics_);
    } else {
        executor = on_connection_fiber(metrics_);
    }
    connector_ = std::make_unique<Connector>(app_, options_.connector, executor);
    management_ = std::make_unique<ManagementServer>(
        options_.connector.host, options_.management_port, ping_database(options_.pool.conninfo));
    add_metrics();
}

WorkServer::~WorkServer() = default;

void WorkServer::add_metrics() {
    management_->add_metrics([this](MetricsText& out) { metrics_.collect(out); });
    management_->add_metrics([this](MetricsText& out) {
        out.gauge("connector_connections_current",
                  "Open connections: in a handler, queued for a platform thread, or idle.",
                  connector_->open_connections());
        out.gauge("connector_connections_max",
                  "Open connections at most; beyond them the kernel's accept queue holds new "
                  "ones.",
                  connector_->options().max_connections);
        out.gauge("connector_accept_count",
                  "The kernel's accept queue (listen backlog) behind max connections.",
                  connector_->options().accept_count);
        out.counter("connector_idle_evictions_total",
                    "Kept-alive connections closed in their keep-alive wait to let a newcomer in "
                    "at max connections (the one idle longest each time).",
                    static_cast<double>(connector_->idle_evictions()));
        collect_refusals(*connector_, "connector_refusals_total",
                         "Requests the connector answered itself, before the application saw "
                         "them (malformed, too slow, too large), by status and reason.",
                         out);
    });
    management_->add_metrics([this](MetricsText& out) {
        const PoolStats pool = pool_->stats();
        out.gauge("pool_connections_active", "Database connections lent out.", pool.active);
        out.gauge("pool_connections_idle", "Open database connections waiting in the pool.",
                  pool.idle);
        out.gauge("pool_connections_pending", "Borrowers waiting for a database connection.",
                  pool.pending);
        out.gauge("pool_connections_max", "The pool's size.", pool.size);
        out.counter("pool_checkout_timeouts_total",
                    "Borrowers that gave up waiting (PoolTimeout, answered 500).",
                    static_cast<double>(pool.timeouts));
    });
    if (platform_)
        management_->add_metrics([this](MetricsText& out) {
            out.gauge("executor_threads_max", "Platform threads that run handlers.",
                      platform_->threads_max());
            out.gauge("executor_threads_active", "Platform threads running a handler.",
                      platform_->busy());
            out.gauge("executor_queue_size",
                      "Requests waiting for a platform thread (their connections are open).",
                      platform_->queued());
        });
}

void WorkServer::run() {
    try {
        management_->start();
    } catch (const std::exception& e) {
        fail(program_, e.what());
    }
    // No "http://" here: scripts take the first URL in the log for the application's.
    std::printf("management on %s:%d (/health, /metrics)\n", options_.connector.host.c_str(),
                management_->port());
    std::fflush(stdout);
    run_until_shutdown(*connector_, program_, {&management_->connector()});
}

// The application, assembled: GET /work (lesson 04's pool and work service) behind the
// connector (lesson 03), run by the wiring the profile names, with the management port beside
// it. A lesson's main() picks the profiles it offers and adds its routes.
//
//   WorkServer server(options, "lesson05");        // pool, app, executor, connector, management
//   add_work_route(server.app(), server.work());   // GET /work
//   server.run();                                  // until Ctrl+C or SIGTERM
//
// Everything but the wiring is the same in every profile: endpoint, query, pool size and
// timeout, connector limits. effective_settings() lists them; --print-config prints that list
// and exits, so a test can compare the profiles line by line.
#pragma once

#include "lessons/03-connector/connector.hpp"
#include "lessons/04-pool/pool_flags.hpp"
#include "lessons/04-pool/work_service.hpp"
#include "lessons/05-wirings/management_server.hpp"
#include "lessons/05-wirings/platform_executor.hpp"
#include "lessons/05-wirings/request_metrics.hpp"
#include "lessons/05-wirings/wiring.hpp"
#include "lessons/common/flags.hpp"

#include <memory>
#include <string>
#include <utility>
#include <vector>

struct ServerOptions {
    std::string profile = "platform";
    // Tomcat's maxThreads default: the platform wiring's ceiling on requests inside the app.
    int threads_max = 200;
    // Spring Boot's usual separate management port: /health and /metrics live there.
    int management_port = 8081;
    bool print_config = false;
    // What effective_settings() reports the application serves (a lesson may serve its own).
    std::string endpoint = "GET /work";
    std::string query = WorkService::query;
    ConnectorOptions connector;
    PoolOptions pool;
};

// A value of --profile and what it means, for --help.
struct Profile {
    std::string name;
    std::string meaning;
};
inline const Profile platform_profile{
    "platform", "handlers on --threads-max OS threads behind a first-come queue"};
inline const Profile vt_profile{"vt", "handlers on the connection fibers, no admission control"};

// --profile (one of `profiles`), --threads-max, --management-port, --print-config, and the
// connector's and the pool's flags.
void add_server_flags(Flags& flags, ServerOptions& options, const std::vector<Profile>& profiles);

// The "platform" profile runs handlers on platform threads; every other (vt, vt-gated) on the
// connection fibers.
Wiring wiring_of(const std::string& profile);

// key=value lines: profile, executor, then everything that must not depend on the profile.
using Settings = std::vector<std::pair<std::string, std::string>>;
Settings effective_settings(const ServerOptions& options);

class WorkServer {
public:
    // With --print-config: prints effective_settings(options) and `extra` as key=value lines
    // and exits 0, before touching the database. Otherwise prints the same lines prefixed
    // "setting ", opens the pool (or prints why it cannot and exits 1), and builds the rest;
    // nothing listens until run().
    WorkServer(const ServerOptions& options, std::string program, const Settings& extra = {});
    ~WorkServer();
    WorkServer(const WorkServer&) = delete;
    WorkServer& operator=(const WorkServer&) = delete;

    HttpApp& app() { return app_; }
    WorkService& work() { return *work_; }
    PgPool& pool() { return *pool_; } // for a lesson's own routes
    // Add a component's metrics before run().
    ManagementServer& management() { return *management_; }

    // Starts the management port ("management on 127.0.0.1:8081 (/health, /metrics)") and the
    // connector ("listening on http://127.0.0.1:8080"), waits for SIGINT or SIGTERM, stops.
    // Exits 1 with one line when a port is taken.
    void run();

private:
    void add_metrics();

    ServerOptions options_;
    std::string program_;
    // Declaration order is teardown order, reversed: the management port goes first (it reads
    // everything).
    std::unique_ptr<PgPool> pool_;
    std::unique_ptr<WorkService> work_;
    RequestMetrics metrics_;
    HttpApp app_;
    std::unique_ptr<PlatformExecutor> platform_; // only in the platform wiring
    std::unique_ptr<Connector> connector_;
    std::unique_ptr<ManagementServer> management_;
};

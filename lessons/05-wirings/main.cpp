// Lesson 05: two wirings of the same application. GET /work (lesson 04) runs either on a pool of
// --threads-max OS threads behind a first-come queue (--profile platform) or right on the
// connection's fiber (--profile vt); /health and /metrics on the management port show where
// the requests wait.
#include "lessons/05-wirings/work_server.hpp"
#include "lessons/common/process.hpp"
#include "lessons/instruments/pinning/pinning_flags.hpp"
#include "lessons/instruments/trace/trace_flags.hpp"

int main(int argc, char** argv) {
    block_shutdown_signals();
    ServerOptions options;
    Flags flags("lesson05", "GET /work (SELECT pg_sleep(0.05) on a pool of 10 PostgreSQL "
                            "connections) in the wiring --profile names; /health and /metrics "
                            "on --management-port.");
    add_server_flags(flags, options, {platform_profile, vt_profile});
    PinningFlags pinning(flags); // --detect-pinning (lesson 02)
    TraceFlags trace(flags);     // --trace FILE (lesson 02)
    flags.parse(argc, argv);

    WorkServer server(options, "lesson05");
    add_work_route(server.app(), server.work());
    server.run();
}

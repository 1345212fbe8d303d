// Lesson 06: the gate. Lesson 05's application with a concurrency limit in front of the work
// service: --profile vt-gated arms it (--gate-limit 10, --gate-policy reject), and the error
// mapping turns its rejection into 503. In the platform and vt profiles it passes all through.
#include "lessons/05-wirings/work_server.hpp"
#include "lessons/06-gate/concurrency_gate.hpp"
#include "lessons/06-gate/gate_flags.hpp"
#include "lessons/06-gate/rejection_mapping.hpp"
#include "lessons/common/process.hpp"
#include "lessons/instruments/pinning/pinning_flags.hpp"
#include "lessons/instruments/trace/trace_flags.hpp"

int main(int argc, char** argv) {
    block_shutdown_signals();
    ServerOptions options;
    GateOptions gate_options;
    std::string policy = "reject";
    bool bad_unmapped_rejection = false;
    Flags flags("lesson06", "Lesson 05's GET /work behind a concurrency gate that --profile "
                            "vt-gated arms; /health and /metrics on --management-port.");
    add_server_flags(flags, options,
                     {platform_profile, vt_profile, {"vt-gated", "vt behind the gate"}});
    add_gate_flags(flags, gate_options, policy);
    flags.add("bad-unmapped-rejection", bad_unmapped_rejection,
              "ANTI-PATTERN: leave the rejection unmapped, so it surfaces as a 500");
    PinningFlags pinning(flags); // --detect-pinning (lesson 02)
    TraceFlags trace(flags);     // --trace FILE (lesson 02)
    flags.parse(argc, argv);
    gate_options.policy = gate_policy_named(policy);
    gate_options.armed = gate_armed_by(options.profile);
    if (const std::string error = check_gate_options(gate_options); !error.empty())
        fail("lesson06", error + " (try --help)", 2);

    ConcurrencyGate gate(gate_options);
    WorkServer server(options, "lesson06", {{"gate", gate.describe()}});
    server.management().add_metrics([&gate](MetricsText& out) { gate.collect(out); });
    // Every /work passes the gate, armed or not; disarmed, enter() returns at once.
    add_work_route(server.app(), [&] {
        const ConcurrencyGate::Permit permit = gate.enter();
        return server.work().do_work();
    });
    if (!bad_unmapped_rejection) map_rejections_to_503(server.app());
    server.run();
}

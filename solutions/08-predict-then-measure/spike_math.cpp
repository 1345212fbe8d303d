#include "spike_math.hpp"

#include <algorithm>
#include <cmath>

double ceiling_per_second(const SpikePlan& plan) {
    // Each connection serves one request per query_seconds, whoever asks.
    return plan.pool_size / plan.query_seconds;
}

double deepest_queue(const SpikePlan& plan) {
    // First come, first served at the ceiling: the n-th waiter gets its turn after n / ceiling
    // seconds, so the last one to make it within the timeout is number ceiling × timeout.
    return ceiling_per_second(plan) * plan.timeout_seconds;
}

Placement where_they_wait(const SpikePlan& plan, Wiring wiring) {
    Placement at;
    const int admitted = wiring == Wiring::platform   ? plan.threads_max
                         : wiring == Wiring::vt_gated ? plan.gate_limit
                                                      : plan.workers;
    at.in_flight = std::min(plan.workers, admitted);
    at.holding_connection = std::min(at.in_flight, plan.pool_size);
    at.pool_waiters = at.in_flight - at.holding_connection;
    // The rest are not inside: queued for a thread (platform), or bouncing off the gate.
    const int outside = plan.workers - at.in_flight;
    (wiring == Wiring::vt_gated ? at.at_the_gate : at.unseen) = outside;
    return at;
}

double goodput_per_second(const SpikePlan& plan, Wiring wiring) {
    // The connections are busy whenever someone holds one: a timed-out waiter leaves the queue,
    // not the pool. So 500s cost no goodput; too few requests inside the app do.
    return where_they_wait(plan, wiring).holding_connection / plan.query_seconds;
}

Failures failures(const SpikePlan& plan, Wiring wiring) {
    Failures failed;
    const Placement at = where_they_wait(plan, wiring);
    const double depth = deepest_queue(plan);
    // The 1e-9: 1 / 0.07 s x 0.7 s is 9.999999... in binary; a borrower at the line is served.
    const double excess = at.pool_waiters - std::floor(depth + 1e-9);
    if (excess > 0) {
        failed.status = 500;
        failed.latency_seconds = plan.timeout_seconds; // they wait the whole timeout
        failed.first_at_seconds = plan.timeout_seconds;
        failed.first_wave = static_cast<int>(excess); // the back of the first queue
        // Steady state: the queue holds pool_waiters, and (nearly) each waits the timeout, so
        // by Little's law pool_waiters / timeout leave it per second; the ceiling of them served.
        failed.per_second = excess / plan.timeout_seconds;
    }
    if (at.at_the_gate > 0) { // the gate answers before anyone waits
        failed.status = 503;
        failed.latency_seconds = 0;
        failed.first_at_seconds = 0;
    }
    return failed;
}

double mean_latency_seconds(const SpikePlan& plan, Wiring wiring) {
    // Little's law for the whole closed loop: workers = answers per second × mean latency.
    return plan.workers / (goodput_per_second(plan, wiring) + failures(plan, wiring).per_second);
}

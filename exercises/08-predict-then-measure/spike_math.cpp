#include "spike_math.hpp"

// Each function starts with a placeholder that is wrong on purpose. Derive each answer on
// paper first (README.md, "Why it matters"), then write it here.

double ceiling_per_second(const SpikePlan& plan) {
    // TODO(ex8) task 1: how many requests per second can pool_size connections serve, each
    // request holding one for query_seconds?
    (void)plan;
    return 0;
}

double deepest_queue(const SpikePlan& plan) {
    // TODO(ex8) task 1: how many waiters, first come first served, all get a connection within
    // the timeout?
    (void)plan;
    return 0;
}

Placement where_they_wait(const SpikePlan& plan, Wiring wiring) {
    // TODO(ex8) task 2 (and task 5 for vt_gated): what lets a request into the app under each
    // wiring, and where does every other worker's request wait?
    (void)plan;
    (void)wiring;
    return {};
}

double goodput_per_second(const SpikePlan& plan, Wiring wiring) {
    // TODO(ex8) task 3: how busy are the connections?
    (void)plan;
    (void)wiring;
    return 0;
}

Failures failures(const SpikePlan& plan, Wiring wiring) {
    // TODO(ex8) task 3 (and task 5): is the pool's queue deeper than the timeout sustains? Then
    // who gives up, when, and how many per second once the spike is steady?
    (void)plan;
    (void)wiring;
    return {};
}

double mean_latency_seconds(const SpikePlan& plan, Wiring wiring) {
    // TODO(ex8) task 4: a closed loop keeps `workers` requests in the system at all times.
    (void)plan;
    (void)wiring;
    return 0;
}

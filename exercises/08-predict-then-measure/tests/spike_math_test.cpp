// Graded tests of exercise 08: the queueing math of a spike, checked against worked examples.
// Every expected figure below is derived in the comment beside it from the plan's inputs, the
// way the exercise's README asks you to derive it. Nothing here runs a server or measures time.
#include "lessons/common/test_support.hpp" // STEP()
#include "spike_math.hpp"

#include <catch2/catch.hpp>

#include <ostream>

namespace {

// Lesson 05's two runs: the seed-faithful one and the quick one.
SpikePlan seed() {
    return SpikePlan{10, 0.05, 30, 7000, 200, 10};
}
SpikePlan quick() {
    SpikePlan plan = seed();
    plan.timeout_seconds = 3;
    plan.workers = 2000;
    return plan;
}
SpikePlan with_workers(SpikePlan plan, int workers) {
    plan.workers = workers;
    return plan;
}

const char* name(Wiring wiring) {
    return wiring == Wiring::platform ? "platform" : wiring == Wiring::vt ? "vt" : "vt_gated";
}

} // namespace

std::ostream& operator<<(std::ostream& out, const SpikePlan& p) {
    return out << "{pool " << p.pool_size << ", query " << p.query_seconds << " s, timeout "
               << p.timeout_seconds << " s, workers " << p.workers << ", threads-max "
               << p.threads_max << ", gate limit " << p.gate_limit << "}";
}

std::ostream& operator<<(std::ostream& out, const Placement& at) {
    return out << "{in_flight " << at.in_flight << ", holding_connection " << at.holding_connection
               << ", pool_waiters " << at.pool_waiters << ", unseen " << at.unseen
               << ", at_the_gate " << at.at_the_gate << "}";
}

std::ostream& operator<<(std::ostream& out, const Failures& f) {
    return out << "{status " << f.status << ", latency_seconds " << f.latency_seconds
               << ", first_at_seconds " << f.first_at_seconds << ", first_wave " << f.first_wave
               << ", per_second " << f.per_second << "}";
}

// ---------------------------------------------------------------- task 1

TEST_CASE("the ceiling and the deepest queue follow from pool size, query time and timeout",
          "[ex8][task_1][points=2]") {
    struct Case {
        SpikePlan plan;
        double ceiling, depth;
    };
    const Case cases[] = {
        {seed(), 200, 6000},                        // 10 / 0.05 s; 200/s x 30 s
        {quick(), 200, 600},                        // the same pool, a 3 s timeout
        {{4, 0.2, 10, 100, 50, 10}, 20, 200},       // 4 / 0.2 s; 20/s x 10 s
        {{20, 0.01, 0.5, 100, 50, 10}, 2000, 1000}, // 20 / 0.01 s; 2000/s x 0.5 s
    };
    for (const Case& c : cases) {
        const double ceiling = ceiling_per_second(c.plan);
        const double depth = deepest_queue(c.plan);
        STEP("plan " << c.plan << ": ceiling_per_second " << ceiling << " (expected " << c.ceiling
                     << "), deepest_queue " << depth << " (expected " << c.depth << ")");
        CHECK(ceiling == Approx(c.ceiling));
        CHECK(depth == Approx(c.depth));
    }
}

// ---------------------------------------------------------------- task 2

TEST_CASE("platform keeps threads-max requests inside the app and the rest unseen",
          "[ex8][task_2][points=2]") {
    const Placement at = where_they_wait(seed(), Wiring::platform);
    STEP("platform, plan " << seed() << ": where_they_wait " << at);
    // 200 threads run 200 requests: 10 hold a connection, 190 wait for one; 6,800 queue in
    // front of the threads.
    CHECK(at.in_flight == 200);
    CHECK(at.holding_connection == 10);
    CHECK(at.pool_waiters == 190);
    CHECK(at.unseen == 6800);
    CHECK(at.at_the_gate == 0);
}

TEST_CASE("vt lets every worker in and the queue moves onto the pool", "[ex8][task_2][points=2]") {
    for (const SpikePlan& plan : {seed(), quick()}) {
        const Placement at = where_they_wait(plan, Wiring::vt);
        STEP("vt, plan " << plan << ": where_they_wait " << at);
        // Every request is inside; all but the 10 with a connection wait for one.
        CHECK(at.in_flight == plan.workers);
        CHECK(at.holding_connection == 10);
        CHECK(at.pool_waiters == plan.workers - 10);
        CHECK(at.unseen == 0);
        CHECK(at.at_the_gate == 0);
    }
}

TEST_CASE("a crowd smaller than the pool waits nowhere, under either wiring",
          "[ex8][task_2][points=1]") {
    for (const Wiring wiring : {Wiring::platform, Wiring::vt}) {
        const Placement at = where_they_wait(with_workers(seed(), 6), wiring);
        STEP(name(wiring) << " with 6 workers: where_they_wait " << at);
        // 6 requests, 10 connections: each holds one at once.
        CHECK(at.in_flight == 6);
        CHECK(at.holding_connection == 6);
        CHECK(at.pool_waiters == 0);
        CHECK(at.unseen == 0);
    }
}

// ---------------------------------------------------------------- task 3

TEST_CASE("goodput is the ceiling once the pool is always busy, and less before",
          "[ex8][task_3][points=1]") {
    struct Case {
        SpikePlan plan;
        Wiring wiring;
        double goodput;
    };
    const Case cases[] = {
        {seed(), Wiring::platform, 200}, // the pool is the bottleneck
        {seed(), Wiring::vt, 200},       // 500s or not: the pool still serves 200/s
        {quick(), Wiring::vt, 200},
        {with_workers(seed(), 6), Wiring::vt, 120}, // 6 connections busy: 6 / 0.05 s
        {with_workers(seed(), 6), Wiring::platform, 120},
    };
    for (const Case& c : cases) {
        const double goodput = goodput_per_second(c.plan, c.wiring);
        STEP(name(c.wiring) << ", plan " << c.plan << ": goodput_per_second " << goodput
                            << " (expected " << c.goodput << ")");
        CHECK(goodput == Approx(c.goodput));
    }
}

TEST_CASE("vt's 500s: the back of the first queue at the timeout line, then a steady stream",
          "[ex8][task_3][points=2]") {
    struct Case {
        SpikePlan plan;
        int first_wave;
        double per_second;
    };
    const Case cases[] = {
        // 6,990 waiters, 6,000 of them served within 30 s: 990 give up at 30 s. In the steady
        // state 6,990 wait about 30 s each, 233/s leave the queue, 200/s of them served.
        {seed(), 990, 33},
        // 1,990 waiters, 600 within 3 s: 1,390 give up at 3 s; 663.3/s leave, 200/s served.
        {quick(), 1390, 463.3},
    };
    for (const Case& c : cases) {
        const Failures f = failures(c.plan, Wiring::vt);
        STEP("vt, plan " << c.plan << ": failures " << f);
        CHECK(f.status == 500);
        CHECK(f.latency_seconds == Approx(c.plan.timeout_seconds));
        CHECK(f.first_at_seconds == Approx(c.plan.timeout_seconds));
        CHECK(f.first_wave == c.first_wave);
        CHECK(f.per_second == Approx(c.per_second).epsilon(0.01));
    }
}

TEST_CASE("platform fails only when its threads alone overflow what the timeout sustains",
          "[ex8][task_3][points=2]") {
    SpikePlan plan = quick(); // 600 waiters fit the 3 s timeout
    const Failures with_200 = failures(plan, Wiring::platform);
    plan.threads_max = 1000; // 990 waiters: 390 too many
    const Failures with_1000 = failures(plan, Wiring::platform);
    STEP("platform, the quick plan with threads-max 200: failures " << with_200);
    STEP("and with threads-max 1000: failures " << with_1000);
    // 190 waiters fit in 600: nothing fails, however many workers queue in front.
    CHECK(with_200.status == 0);
    CHECK(with_200.first_wave == 0);
    CHECK(with_200.per_second == 0);
    // 990 waiters: 390 give up at 3 s; then 990 / 3 s = 330/s leave the queue, 200/s served.
    CHECK(with_1000.status == 500);
    CHECK(with_1000.first_at_seconds == Approx(3));
    CHECK(with_1000.first_wave == 390);
    CHECK(with_1000.per_second == Approx(130).epsilon(0.01));
}

TEST_CASE("nothing fails while the pool's queue fits the timeout, and goodput holds",
          "[ex8][task_3][points=1]") {
    // vt with 6,010 workers: 6,000 waiters, exactly what 30 s sustain. The last one is served
    // at 30 s, on the line.
    const SpikePlan plan = with_workers(seed(), 6010);
    const Failures f = failures(plan, Wiring::vt);
    const double goodput = goodput_per_second(plan, Wiring::vt);
    STEP("vt, plan " << plan << ": failures " << f << ", goodput_per_second " << goodput);
    CHECK(f.status == 0);
    CHECK(f.first_wave == 0);
    CHECK(f.per_second == 0);
    CHECK(goodput == Approx(200));
}

// ---------------------------------------------------------------- task 4

TEST_CASE("the mean latency is the crowd divided by the answers per second",
          "[ex8][task_4][points=2]") {
    struct Case {
        SpikePlan plan;
        Wiring wiring;
        double latency;
    };
    const Case cases[] = {
        {seed(), Wiring::platform, 35},                // 7,000 / 200/s: the lesson's 35 s
        {with_workers(seed(), 6), Wiring::vt, 0.05},   // nobody waits: one query
        {with_workers(seed(), 150), Wiring::vt, 0.75}, // 150 / 200/s
        {seed(), Wiring::vt, 30.04},                   // 7,000 / (200 + 33)/s: the timeout
    };
    for (const Case& c : cases) {
        const double latency = mean_latency_seconds(c.plan, c.wiring);
        STEP(name(c.wiring) << ", plan " << c.plan << ": mean_latency_seconds " << latency
                            << " (expected " << c.latency << ")");
        CHECK(latency == Approx(c.latency).epsilon(0.01));
    }
}

// ---------------------------------------------------------------- task 5 (stretch)

TEST_CASE("vt-gated keeps the gate's limit inside and turns the rest away with 503s at once",
          "[ex8][task_5][points=2]") {
    SpikePlan plan = seed(); // gate limit 10: the pool's size
    const Placement at = where_they_wait(plan, Wiring::vt_gated);
    const Failures f = failures(plan, Wiring::vt_gated);
    const double goodput = goodput_per_second(plan, Wiring::vt_gated);
    plan.gate_limit = 50;
    const Placement at_50 = where_they_wait(plan, Wiring::vt_gated);
    STEP("vt_gated, plan " << seed() << ": where_they_wait " << at << ", failures " << f
                           << ", goodput_per_second " << goodput);
    STEP("and with gate limit 50: where_they_wait " << at_50);
    // 10 inside, each holding a connection, nobody waits for the pool; 6,990 bounce off the
    // gate. The 503 comes at once; the pool serves 200/s as before.
    CHECK(at.in_flight == 10);
    CHECK(at.holding_connection == 10);
    CHECK(at.pool_waiters == 0);
    CHECK(at.unseen == 0);
    CHECK(at.at_the_gate == 6990);
    CHECK(f.status == 503);
    CHECK(f.latency_seconds == 0);
    CHECK(f.first_at_seconds == 0);
    CHECK(f.first_wave == 0);
    CHECK(goodput == Approx(200));
    // 50 inside: 40 wait for the pool (0.2 s, far inside 30 s), 6,950 at the gate.
    CHECK(at_50.in_flight == 50);
    CHECK(at_50.pool_waiters == 40);
    CHECK(at_50.at_the_gate == 6950);
}

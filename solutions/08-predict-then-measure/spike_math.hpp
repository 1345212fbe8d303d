// Exercise 08: predict a spike before you run it.
//
// Lesson 05 drives GET /work with a closed-loop spike: `workers` clients, each sending its next
// request the moment the last one was answered, all starting at once. Every request borrows one
// of `pool_size` connections for `query_seconds` (SELECT pg_sleep(0.05)); a borrower that waits
// longer than `timeout_seconds` for one gives up (HTTP 500). What differs is the wiring in front:
//   platform  a pool of `threads_max` OS threads runs requests; the rest queue in front of it,
//             outside the app, where no metric counts them and no timeout applies;
//   vt        a fiber per request: everything the connector accepts is inside the app;
//   vt_gated  vt behind a concurrency gate (limit `gate_limit`, policy REJECT): a request that
//             finds the gate full gets a 503 at once.
// These functions are the queueing math of that experiment: what the steady state looks like,
// from the inputs alone. Assume the connector accepts every worker, the database answers each
// query in exactly `query_seconds`, and the clients cost nothing.
#pragma once

// ---- do not change (to the end of the file): the graded tests use these declarations ----

struct SpikePlan {
    int pool_size = 10;          // database connections
    double query_seconds = 0.05; // how long each request holds one
    double timeout_seconds = 30; // how long pool.borrow() waits for one before it gives up
    int workers = 7000;          // closed-loop clients
    int threads_max = 200;       // platform: OS threads that run requests
    int gate_limit = 10;         // vt_gated: requests the gate lets in at once
};

enum class Wiring { platform, vt, vt_gated };

// Task 1. The pool's ceiling: the most requests per second it can serve, whatever the wiring.
double ceiling_per_second(const SpikePlan& plan);

// Task 1. The deepest queue of waiting borrowers in which nobody times out: a borrower with
// more waiters than this ahead of it, first come first served, gives up before its turn.
double deepest_queue(const SpikePlan& plan);

// Where the workers' requests are in the steady state. Every worker has exactly one request
// somewhere (a rejected or failed one is answered at once and replaced by the next).
struct Placement {
    int in_flight = 0;          // inside the app: a handler runs it (under platform: a thread)
    int holding_connection = 0; // of those, borrowing a connection right now
    int pool_waiters = 0;       // of those, waiting in pool.borrow()
    int unseen = 0;             // not inside the app: waiting in front of the threads (platform)
    int at_the_gate = 0;        // being turned away by the gate (vt_gated), 503 after 503
};

// Task 2. Where they are, for platform and vt. (vt_gated is task 5.)
Placement where_they_wait(const SpikePlan& plan, Wiring wiring);

// Task 3. Successful responses (200s) per second in the steady state.
double goodput_per_second(const SpikePlan& plan, Wiring wiring);

// What fails, how, and when.
struct Failures {
    int status = 0;              // 0: nothing fails; 500: pool timeouts; 503: gate refusals
    double latency_seconds = 0;  // how long a failing request takes until its answer
    double first_at_seconds = 0; // when the first failure is answered (all start at 0)
    int first_wave = 0;          // 500s among the requests the workers sent at 0
    double per_second = 0;       // 500s per second in the steady state (not predicted for
                                 // 503s: they come as fast as the clients retry)
};

// Task 3. Which requests fail, for platform and vt. (vt_gated is task 5.)
Failures failures(const SpikePlan& plan, Wiring wiring);

// Task 4. The mean time from request to answer, over every answer (200s and 500s) in the steady
// state, for platform and vt: a closed loop keeps `workers` requests in the system at all times.
double mean_latency_seconds(const SpikePlan& plan, Wiring wiring);

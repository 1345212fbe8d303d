// Exercise 12: who waited longest for the pool, and behind whom — answered from a trace.
//
// Every fiber server writes a Chrome/Perfetto trace with --trace FILE (lessons/instruments/trace/).
// Two kinds of its spans are about the pool of lesson 04, each an async pair of events that
// share a name and an id, on the track (tid) of the carrier or thread that ran the fiber:
//   {"ph":"b","cat":"wait","name":"pool.borrow","id":7,"tid":1,"ts":1200.5,
//    "args":{"fiber":"conn 12 GET /work","outcome":"ok"}}        waiting for a connection
//   {"ph":"e","cat":"wait","name":"pool.borrow","id":7,"tid":1,"ts":1450.0}
// and "pool.hold" the same way, from a successful borrow to the connection's return, with
// "args":{"fiber":...,"connection":3}. ts is in microseconds since the trace began. A borrow's
// outcome is "ok" (it got a connection) or "timeout" (it gave up). A wait still open when the
// trace was written is not in the trace: the format writes a wait when it ends.
#pragma once

#include <istream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

// ---- do not change (to the end of the file): the graded tests use these declarations ----

// One pool.borrow or pool.hold span: a b event and its e.
struct PoolSpan {
    std::string name;    // "pool.borrow" or "pool.hold"
    std::string fiber;   // the b's args.fiber: the request's fiber, "conn 12 GET /work"
    int track = 0;       // the b's tid: the carrier (or platform thread) it ran on
    double begin_us = 0; // the b's ts
    double end_us = 0;   // the e's ts
    std::string outcome; // pool.borrow: args.outcome, "ok" or "timeout"; "" for a hold
    int connection = -1; // pool.hold: args.connection, which of the pool's connections; -1 else
    double duration_us() const { return end_us - begin_us; }
};

// A file that is not such a trace; what() says what is wrong: "pool.borrow id 7: an 'e' without
// its 'b'".
class TraceError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Task 1. Every pool.borrow and pool.hold span of the trace, sorted by begin_us (then track);
// every other event is skipped. A b and its e share name and id. Throws TraceError for a file
// that is not JSON, has no "traceEvents" list, or has a pool span without its b or its e.
std::vector<PoolSpan> read_pool_spans(std::istream& in);

// Task 2. The longest wait that got a connection: the pool.borrow with outcome "ok" and the
// largest duration; of equal ones, the one that began first. None when no borrow got one.
std::optional<PoolSpan> longest_wait(const std::vector<PoolSpan>& spans);

// Task 3. Who held the pool's connections when `wait` began: the pool.hold spans with
// begin_us <= wait.begin_us < end_us, sorted by connection.
std::vector<PoolSpan> holders_when_it_began(const std::vector<PoolSpan>& spans,
                                            const PoolSpan& wait);

// Task 4. Who was queued ahead of `wait`: the other pool.borrow spans that began before it and
// were still waiting when it began (begin_us < wait.begin_us < end_us), whatever their outcome,
// sorted by begin_us.
std::vector<PoolSpan> queued_ahead(const std::vector<PoolSpan>& spans, const PoolSpan& wait);

// Task 5. Who handed `wait` its connection: its own pool.hold is the first hold of the same fiber
// on the same track that began at or after the wait ended; the answer is the hold of that
// connection that ended last at or before its own began. None when either is not in the trace.
std::optional<PoolSpan> handed_over_by(const std::vector<PoolSpan>& spans, const PoolSpan& wait);

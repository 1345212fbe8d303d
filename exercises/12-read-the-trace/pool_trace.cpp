#include "pool_trace.hpp"

#include <nlohmann/json.hpp>

std::vector<PoolSpan> read_pool_spans(std::istream& in) {
    // TODO(ex12) task 1: parse the JSON (nlohmann::json::parse), pair each pool.borrow and
    // pool.hold b with its e (same name and id), and throw TraceError for anything else.
    (void)in;
    return {};
}

std::optional<PoolSpan> longest_wait(const std::vector<PoolSpan>& spans) {
    // TODO(ex12) task 2: the longest pool.borrow that got a connection; the first of equals.
    (void)spans;
    return std::nullopt;
}

std::vector<PoolSpan> holders_when_it_began(const std::vector<PoolSpan>& spans,
                                            const PoolSpan& wait) {
    // TODO(ex12) task 3: the holds in progress at the instant the wait began.
    (void)spans;
    (void)wait;
    return {};
}

std::vector<PoolSpan> queued_ahead(const std::vector<PoolSpan>& spans, const PoolSpan& wait) {
    // TODO(ex12) task 4: the borrows that began before it and were still waiting when it began.
    (void)spans;
    (void)wait;
    return {};
}

std::optional<PoolSpan> handed_over_by(const std::vector<PoolSpan>& spans, const PoolSpan& wait) {
    // TODO(ex12) task 5 (stretch): its own hold, then the hold of that connection before it.
    (void)spans;
    (void)wait;
    return std::nullopt;
}

#include "pool_trace.hpp"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>
#include <utility>

namespace {

using nlohmann::json;

bool is_pool_span(const json& event) {
    const json name = event.value("name", json());
    return name == "pool.borrow" || name == "pool.hold";
}

// "pool.borrow id 7": how an error names a span. An id may be a number or a string.
std::string span_name(const json& event) {
    return event.value("name", std::string()) + " id " + event.value("id", json()).dump();
}

// A field the span cannot do without; TraceError when it is missing or of another type.
template <typename T> T field(const json& object, const char* key, const json& event) {
    const auto found = object.find(key);
    if (found == object.end()) throw TraceError(span_name(event) + ": no \"" + key + "\"");
    try {
        return found->get<T>();
    } catch (const json::exception&) {
        throw TraceError(span_name(event) + ": \"" + key + "\" is " + found->dump());
    }
}

PoolSpan opened(const json& b) {
    PoolSpan span;
    span.name = b["name"].get<std::string>();
    span.track = field<int>(b, "tid", b);
    span.begin_us = field<double>(b, "ts", b);
    const json args = b.value("args", json::object());
    span.fiber = field<std::string>(args, "fiber", b);
    if (span.name == "pool.borrow")
        span.outcome = field<std::string>(args, "outcome", b);
    else
        span.connection = field<int>(args, "connection", b);
    return span;
}

} // namespace

std::vector<PoolSpan> read_pool_spans(std::istream& in) {
    json trace;
    try {
        trace = json::parse(in);
    } catch (const json::parse_error& e) {
        throw TraceError(std::string("not JSON: ") + e.what());
    }
    if (!trace.is_object() || !trace.contains("traceEvents") || !trace["traceEvents"].is_array())
        throw TraceError("no \"traceEvents\" list: not a Chrome/Perfetto trace");

    // A b waits here, under its name and id, for its e. The order in the file does not matter.
    std::map<std::pair<std::string, std::string>, PoolSpan> open;
    std::map<std::pair<std::string, std::string>, double> ends;
    std::vector<PoolSpan> spans;
    for (const json& event : trace["traceEvents"]) {
        if (!event.is_object() || !is_pool_span(event)) continue;
        const json phase = event.value("ph", json());
        if (phase != "b" && phase != "e") continue;
        const auto key =
            std::make_pair(event["name"].get<std::string>(), event.value("id", json()).dump());
        if (phase == "b" ? open.count(key) : ends.count(key))
            throw TraceError(span_name(event) + ": a second '" + phase.get<std::string>() + "'");
        if (phase == "b")
            open.emplace(key, opened(event));
        else
            ends.emplace(key, field<double>(event, "ts", event));
    }
    for (auto& [key, span] : open) {
        const auto end = ends.find(key);
        if (end == ends.end())
            throw TraceError(key.first + " id " + key.second + ": a 'b' without its 'e'");
        if (end->second < span.begin_us)
            throw TraceError(key.first + " id " + key.second + ": ends before it begins");
        span.end_us = end->second;
        spans.push_back(std::move(span));
        ends.erase(end);
    }
    if (!ends.empty())
        throw TraceError(ends.begin()->first.first + " id " + ends.begin()->first.second +
                         ": an 'e' without its 'b'");
    std::stable_sort(spans.begin(), spans.end(), [](const PoolSpan& a, const PoolSpan& b) {
        return std::tie(a.begin_us, a.track) < std::tie(b.begin_us, b.track);
    });
    return spans;
}

std::optional<PoolSpan> longest_wait(const std::vector<PoolSpan>& spans) {
    std::optional<PoolSpan> longest;
    for (const PoolSpan& span : spans) {
        // A timed-out borrow waited the whole timeout and got nothing: it is not a wait that
        // ended in service, and under overload it would always win.
        if (span.name != "pool.borrow" || span.outcome != "ok") continue;
        const bool longer =
            !longest || span.duration_us() > longest->duration_us() ||
            (span.duration_us() == longest->duration_us() && span.begin_us < longest->begin_us);
        if (longer) longest = span;
    }
    return longest;
}

std::vector<PoolSpan> holders_when_it_began(const std::vector<PoolSpan>& spans,
                                            const PoolSpan& wait) {
    std::vector<PoolSpan> holders;
    for (const PoolSpan& span : spans)
        if (span.name == "pool.hold" && span.begin_us <= wait.begin_us &&
            wait.begin_us < span.end_us)
            holders.push_back(span);
    std::stable_sort(holders.begin(), holders.end(), [](const PoolSpan& a, const PoolSpan& b) {
        return a.connection < b.connection;
    });
    return holders;
}

std::vector<PoolSpan> queued_ahead(const std::vector<PoolSpan>& spans, const PoolSpan& wait) {
    std::vector<PoolSpan> ahead;
    for (const PoolSpan& span : spans)
        if (span.name == "pool.borrow" && span.begin_us < wait.begin_us &&
            wait.begin_us < span.end_us)
            ahead.push_back(span);
    std::stable_sort(ahead.begin(), ahead.end(),
                     [](const PoolSpan& a, const PoolSpan& b) { return a.begin_us < b.begin_us; });
    return ahead;
}

std::optional<PoolSpan> handed_over_by(const std::vector<PoolSpan>& spans, const PoolSpan& wait) {
    // Its own hold: the same fiber, on the same track, the first to begin once the wait ended.
    const PoolSpan* own = nullptr;
    for (const PoolSpan& span : spans)
        if (span.name == "pool.hold" && span.fiber == wait.fiber && span.track == wait.track &&
            span.begin_us >= wait.end_us && (!own || span.begin_us < own->begin_us))
            own = &span;
    if (!own) return std::nullopt;
    // The connection's previous holder: the last of its holds to end before this one began.
    const PoolSpan* before = nullptr;
    for (const PoolSpan& span : spans)
        if (span.name == "pool.hold" && &span != own && span.connection == own->connection &&
            span.end_us <= own->begin_us && (!before || span.end_us > before->end_us))
            before = &span;
    if (!before) return std::nullopt;
    return *before;
}

// The trace writer on hand-made tracks: what a client may put in a label (quotes, backslashes,
// control bytes, bytes that are not UTF-8, a character cut by the label's length) comes out as
// valid JSON, each event with "ph" first, and only the last window is written.
#include "lessons/common/test_support.hpp"
#include "lessons/instruments/trace/trace_writer.hpp"

#include <catch2/catch.hpp>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

namespace {

trace::Label label(const void* fiber, std::int64_t at_ns, const char* text) {
    trace::Label out{fiber, at_ns, {}};
    std::strncpy(out.text, text, sizeof out.text - 1);
    return out;
}

nlohmann::ordered_json read_json(const std::string& path) {
    std::ifstream in(path);
    REQUIRE(in.good());
    return nlohmann::ordered_json::parse(in); // throws, and so fails the test, on invalid JSON
}

} // namespace

TEST_CASE("a label a client wrote is valid JSON in the trace, and each event starts with ph",
          "[trace][unit]") {
    const std::int64_t now = trace::now_ns();
    auto track = std::make_shared<trace::Track>(16);
    track->tid = 1;
    track->name = "carrier-0";
    track->window_ns = std::chrono::nanoseconds(std::chrono::seconds(2)).count();
    const int fiber = 0;
    // "conn 7 GET /x?q=" then a quote, a backslash, two control bytes, a byte that is not UTF-8,
    // and a two-byte character cut after its first byte by the end of the string.
    const char* hostile = "conn 7 GET /x?q=\"\\\x01\x1f\xff\xc3";
    track->add(track->labels, label(&fiber, now - 1'000'000, hostile));
    track->add(track->turns, trace::Turn{&fiber, now - 900'000, now - 800'000});
    track->add(track->turns, trace::Turn{&fiber, now - 5'000'000'000, now - 4'000'000'000});

    const std::string path = test_log_dir() + "/trace-writer-hostile.json";
    STEP("write the trace of the last 2 s");
    REQUIRE(
        trace::write_tracks({path, "writer \"test\"", std::chrono::seconds(2), now - 10}, {track}));
    const nlohmann::ordered_json trace = read_json(path);
    STEP("read back: the turn inside the window, named by the label");
    std::vector<nlohmann::ordered_json> turns;
    for (const auto& event : trace["traceEvents"]) {
        CHECK(event.begin().key() == "ph");
        if (event["ph"] == "X") turns.push_back(event);
    }
    REQUIRE(turns.size() == 1); // the turn that ended 4 s ago is outside the window
    CHECK(turns[0]["name"] == "conn 7 GET /x?q=\"\\\x01\x1f\xEF\xBF\xBD\xEF\xBF\xBD");
    CHECK(trace["otherData"]["program"] == "writer \"test\"");
    CHECK(trace["otherData"]["dropped_events"] == 0);
}

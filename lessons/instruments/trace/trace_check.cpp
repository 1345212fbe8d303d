#include "lessons/instruments/trace/trace_check.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <vector>

nlohmann::json read_trace(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("no trace at " + path);
    try {
        return nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
        throw std::runtime_error("the trace at " + path + " is not whole JSON: " + e.what());
    }
}

std::string trace_problems(const nlohmann::json& trace) {
    std::ostringstream problems;
    if (!trace.contains("traceEvents") || !trace["traceEvents"].is_array())
        return "no traceEvents array\n";
    const nlohmann::json& other = trace.value("otherData", nlohmann::json::object());
    for (const char* key : {"program", "window_s", "dropped_events"})
        if (!other.contains(key)) problems << "otherData has no " << key << "\n";
    if (trace.value("displayTimeUnit", "") != "ms") problems << "displayTimeUnit is not ms\n";

    std::set<int> named_tracks, used_tracks;
    std::map<int, std::vector<std::pair<double, double>>> slices; // tid -> (ts, end)
    std::map<long long, nlohmann::json> open;                     // id -> its "b"
    for (const nlohmann::json& event : trace["traceEvents"]) {
        const std::string ph = event.value("ph", "");
        if (!event.contains("pid")) problems << "no pid: " << event.dump() << "\n";
        if (ph == "M" && event.value("name", "") == "process_name") continue;
        if (!event.contains("tid")) {
            problems << "no tid: " << event.dump() << "\n";
            continue;
        }
        const int tid = event["tid"];
        if (ph == "M") {
            if (event.value("name", "") == "thread_name") named_tracks.insert(tid);
            continue;
        }
        used_tracks.insert(tid);
        if (ph == "X") {
            const double ts = event["ts"], dur = event["dur"];
            if (dur < 0) problems << "a slice with a negative duration: " << event.dump() << "\n";
            slices[tid].emplace_back(ts, ts + dur);
        } else if (ph == "b") {
            if (!open.emplace(event["id"].get<long long>(), event).second)
                problems << "a second begin for id " << event["id"] << "\n";
        } else if (ph == "e") {
            const auto begin = open.find(event["id"].get<long long>());
            if (begin == open.end()) {
                problems << "an end without a begin: " << event.dump() << "\n";
                continue;
            }
            const nlohmann::json& b = begin->second;
            if (b["name"] != event["name"] || b["tid"] != event["tid"] || b["cat"] != event["cat"])
                problems << "an end unlike its begin: " << b.dump() << " / " << event.dump()
                         << "\n";
            if (event["ts"].get<double>() < b["ts"].get<double>())
                problems << "an end before its begin: " << event.dump() << "\n";
            open.erase(begin);
        } else if (ph != "C") {
            problems << "an unexpected event: " << event.dump() << "\n";
        }
    }
    for (const auto& [id, b] : open)
        problems << "a begin without an end: " << b.dump() << "\n";
    for (int tid : used_tracks)
        if (named_tracks.count(tid) == 0) problems << "track " << tid << " has no thread_name\n";
    for (auto& [tid, list] : slices) {
        std::sort(list.begin(), list.end());
        // ts and dur are microseconds as doubles: an end may pass the next start by a rounding
        // error, and 2 ns are allowed.
        for (std::size_t i = 1; i < list.size(); ++i)
            if (list[i].first < list[i - 1].second - 0.002)
                problems << "track " << tid << ": a slice at " << list[i].first
                         << " us starts before the one at " << list[i - 1].first << " us ends ("
                         << list[i - 1].second << " us)\n";
    }
    return problems.str();
}

#include "spike_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>

namespace {

// The whole field must be the number: "12x" and "" are refused, not read as 12 and 0.
double number(const std::string& field, const char* what, int line) {
    char* end = nullptr;
    const double value = std::strtod(field.c_str(), &end);
    if (field.empty() || *end != '\0' || !std::isfinite(value))
        throw SpikeCsvError("line " + std::to_string(line) + ": " + what + " '" + field +
                            "' is not a number");
    return value;
}

SpikeRow parse_row(const std::string& text, int line) {
    std::vector<std::string> fields;
    std::stringstream split(text);
    for (std::string field; std::getline(split, field, ',');)
        fields.push_back(field);
    if (fields.size() != 3 || text.back() == ',')
        throw SpikeCsvError("line " + std::to_string(line) +
                            ": expected ts,status,latency_ms, got '" + text + "'");
    SpikeRow row;
    row.ts_ms = number(fields[0], "ts", line);
    const double status = number(fields[1], "status", line);
    if (status != std::floor(status))
        throw SpikeCsvError("line " + std::to_string(line) + ": status '" + fields[1] +
                            "' is not a whole number");
    row.status = static_cast<int>(status);
    row.latency_ms = number(fields[2], "latency_ms", line);
    return row;
}

// Nearest rank: the smallest value with at least p% of the values at or below it.
double percentile(const std::vector<double>& sorted, double p) {
    const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * sorted.size()));
    return sorted[std::max<std::size_t>(rank, 1) - 1];
}

} // namespace

std::vector<SpikeRow> read_spike_csv(std::istream& in) {
    std::string text;
    if (!std::getline(in, text) ||
        (text != "ts,status,latency_ms" && text != "ts,status,latency_ms\r"))
        throw SpikeCsvError("line 1: expected the header ts,status,latency_ms");
    std::vector<SpikeRow> rows;
    for (int line = 2; std::getline(in, text); ++line) {
        if (!text.empty() && text.back() == '\r') text.pop_back(); // a CSV saved on Windows
        if (text.empty()) continue;
        rows.push_back(parse_row(text, line));
    }
    return rows;
}

SpikeReport summarize(const std::vector<SpikeRow>& rows, double warmup_ms) {
    SpikeReport report;
    std::vector<double> latencies; // of the successes
    double end_ms = warmup_ms;
    for (const SpikeRow& row : rows) {
        if (row.ts_ms < warmup_ms) continue; // sent during the warmup
        ++report.attempts;
        ++report.by_status[row.status];
        end_ms = std::max(end_ms, row.ts_ms + row.latency_ms);
        if (row.status >= 200 && row.status <= 299) latencies.push_back(row.latency_ms);
    }
    report.successes = static_cast<long>(latencies.size());
    report.window_s = (end_ms - warmup_ms) / 1000.0;
    if (report.window_s > 0) report.goodput = report.successes / report.window_s;
    if (!latencies.empty()) {
        std::sort(latencies.begin(), latencies.end());
        report.p50_ms = percentile(latencies, 50);
        report.p95_ms = percentile(latencies, 95);
    }
    return report;
}

std::string status_name(int status) {
    switch (status) {
    case -1:
        return "response timeout";
    case -2:
        return "transport error";
    case -3:
        return "connect timeout";
    case -4:
        return "interrupted";
    default:
        return std::to_string(status);
    }
}

#include "lessons/instruments/spike/spike_shape.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace {

// The rows of a CSV that starts with `header`, or with `header` + `extension`.
std::vector<std::vector<double>> read_csv(const std::string& path, const std::string& header,
                                          const std::string& extension = "") {
    std::ifstream in(path);
    std::string line;
    if (!std::getline(in, line) ||
        (line != header && (extension.empty() || line != header + extension)))
        throw std::runtime_error(path + " does not start with " + header);
    std::vector<std::vector<double>> rows;
    while (std::getline(in, line)) {
        std::vector<double> row;
        std::stringstream fields(line);
        std::string field;
        while (std::getline(fields, field, ','))
            row.push_back(std::stod(field));
        rows.push_back(row);
    }
    return rows;
}

} // namespace

long SpikeShape::count(int status) const {
    const auto found = by_status.find(status);
    return found == by_status.end() ? 0 : found->second;
}

double SpikeShape::median_ms(int status) const {
    const auto found = latencies.find(status);
    if (found == latencies.end() || found->second.empty()) return -1;
    return found->second[(found->second.size() - 1) / 2];
}

std::string SpikeShape::describe() const {
    std::ostringstream text;
    text << rows << " rows:";
    for (const auto& [status, rows_with] : by_status)
        text << " " << status << "x" << rows_with << " (median " << median_ms(status) << " ms)";
    text << "; probe (" << probe_samples << " samples): max in flight " << max_inflight
         << ", max connections " << max_connections << ", max pool pending " << max_pool_pending;
    if (max_sent_late_ms >= 0) text << "; sent at most " << max_sent_late_ms << " ms late";
    return text.str();
}

SpikeShape read_spike_shape(const std::string& csv, const std::string& probe_csv, double seconds) {
    SpikeShape shape;
    shape.seconds = seconds;
    for (const auto& row : read_csv(csv, "ts,status,latency_ms", ",sent_ms")) {
        const int row_status = static_cast<int>(row.at(1));
        ++shape.rows;
        ++shape.by_status[row_status];
        shape.latencies[row_status].push_back(row.at(2));
        if (row.size() == 4 && row[3] >= 0)
            shape.max_sent_late_ms = std::max(shape.max_sent_late_ms, row[3] - row[0]);
    }
    for (auto& [row_status, values] : shape.latencies)
        std::sort(values.begin(), values.end());
    for (const auto& sample : read_csv(probe_csv, "ts,inflight,connections,pool_pending")) {
        ++shape.probe_samples;
        shape.max_inflight = std::max(shape.max_inflight, sample.at(1));
        shape.max_connections = std::max(shape.max_connections, sample.at(2));
        shape.max_pool_pending = std::max(shape.max_pool_pending, sample.at(3));
    }
    return shape;
}

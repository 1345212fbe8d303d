#include "wired_test_support.hpp"

#include <httplib.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>

#ifndef BIN_DIR
#error "BIN_DIR must name the directory of the programs"
#endif

namespace {

std::vector<std::vector<double>> read_csv(const std::string& path, const std::string& header) {
    std::ifstream in(path);
    std::string line;
    if (!std::getline(in, line) || line != header)
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

std::string seconds_text(double seconds) {
    std::ostringstream text;
    text << seconds;
    return text.str();
}

} // namespace

int management_port_of(const ServerProcess& server) {
    static const std::regex announced(R"(management on [0-9.]+:([0-9]+))");
    std::smatch match;
    const std::string log = server.log();
    if (!std::regex_search(log, match, announced))
        throw std::runtime_error("no 'management on ...' line in " + server.log_path());
    return std::stoi(match[1]);
}

std::map<std::string, std::string> print_config(const std::string& binary,
                                                const std::vector<std::string>& args) {
    std::vector<std::string> argv{binary, "--print-config"};
    argv.insert(argv.end(), args.begin(), args.end());
    std::string output;
    const int status = run_program(argv, output);
    if (status != 0)
        throw std::runtime_error(binary + " --print-config exited " + std::to_string(status) +
                                 ": " + output);
    std::map<std::string, std::string> settings;
    std::istringstream lines(output);
    std::string line;
    while (std::getline(lines, line)) {
        const auto equals = line.find('=');
        if (equals == std::string::npos)
            throw std::runtime_error("not key=value: '" + line + "' in " + output);
        settings[line.substr(0, equals)] = line.substr(equals + 1);
    }
    return settings;
}

Answer management_get(int port, const std::string& path) {
    httplib::Client client("127.0.0.1", port);
    client.set_read_timeout(10, 0);
    const auto response = client.Get(path.c_str());
    if (!response) return {};
    return {response->status, response->body};
}

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
    return text.str();
}

SpikeShape run_spike(const ServerProcess& server, const std::string& name, const SpikePlan& plan) {
    const std::string out = test_log_dir() + "/" + name + ".csv";
    const std::string probe_out = test_log_dir() + "/" + name + "-probe.csv";
    const std::string port = std::to_string(server.port());
    const std::string management = std::to_string(management_port_of(server));
    std::string output;
    const int status = run_program(
        {BIN_DIR "/spike", "--url", "http://127.0.0.1:" + port + "/work", "--workers",
         std::to_string(plan.workers), "--ramp", seconds_text(plan.ramp_s), "--hold",
         seconds_text(plan.hold_s), "--timeout", seconds_text(plan.timeout_s), "--backoff",
         seconds_text(plan.backoff_s), "--out", out, "--probe-url",
         "http://127.0.0.1:" + management + "/metrics", "--probe-out", probe_out},
        output,
        std::chrono::seconds(static_cast<long>(plan.ramp_s + plan.hold_s + plan.timeout_s) + 60));
    if (status != 0)
        throw std::runtime_error("spike exited " + std::to_string(status) + ": " + output);
    return read_spike_shape(out, probe_out, plan.ramp_s + plan.hold_s);
}

SpikeShape read_spike_shape(const std::string& csv, const std::string& probe_csv, double seconds) {
    SpikeShape shape;
    shape.seconds = seconds;
    for (const auto& row : read_csv(csv, "ts,status,latency_ms")) {
        const int row_status = static_cast<int>(row.at(1));
        ++shape.rows;
        ++shape.by_status[row_status];
        shape.latencies[row_status].push_back(row.at(2));
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

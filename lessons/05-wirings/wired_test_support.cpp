#include "lessons/05-wirings/wired_test_support.hpp"

#include <regex>
#include <sstream>
#include <stdexcept>

#ifndef BIN_DIR
#error "BIN_DIR must name the directory of the programs"
#endif

namespace {

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

SpikeShape run_spike(const ServerProcess& server, const std::string& name, const SpikePlan& plan) {
    const std::string out = test_log_dir() + "/" + name + ".csv";
    const std::string probe_out = test_log_dir() + "/" + name + "-probe.csv";
    const std::string port = std::to_string(server.port());
    const std::string management = std::to_string(management_port_of(server));
    std::string output;
    const int status = run_program(
        {BIN_DIR "/spike", "--url", "http://127.0.0.1:" + port + plan.path, "--workers",
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

// Helpers for tests that run the real server on a real PostgreSQL:
// its management port, its --print-config, and a short spike against it with its CSVs read back.
#pragma once

#include "lessons/common/test_support.hpp"
#include "lessons/instruments/spike/spike_shape.hpp"

#include <map>
#include <string>
#include <vector>

// The management port a server started with --management-port 0 announced in its log
// ("management on 127.0.0.1:P"). Throws std::runtime_error when it did not.
int management_port_of(const ServerProcess& server);

// `binary --print-config args...` as key -> value. Throws std::runtime_error when it fails.
std::map<std::string, std::string> print_config(const std::string& binary,
                                                const std::vector<std::string>& args);

struct SpikePlan {
    int workers = 1000;
    double ramp_s = 1;
    double hold_s = 6;
    double timeout_s = 30;
    double backoff_s = 2;
    std::string path = "/work"; // what every worker asks for
};

// Runs the `spike` program (lessons/instruments/spike/) against the server's GET plan.path, with
// its probe on the management port, and reads both CSVs back (kept in the test-logs directory under
// `name`).
SpikeShape run_spike(const ServerProcess& server, const std::string& name, const SpikePlan& plan);

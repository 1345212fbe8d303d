// Command-line flags for every program in this repository.
//
// Contract: `--name value` and `--name=value`; `--help` prints the usage and exits 0; anything the
// program does not understand (an unknown flag, a missing or malformed value) prints one line,
// `<program>: <what is wrong> (try --help)`, and exits with status 2. Durations take units
// (`500ms`, `30s`, `2m`); a bare number means seconds and may have a fraction (`0.5`).
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

class Flags {
public:
    Flags(std::string program, std::string summary);

    Flags& add(const std::string& name, int& value, const std::string& help);
    Flags& add(const std::string& name, double& value, const std::string& help);
    Flags& add(const std::string& name, std::string& value, const std::string& help);
    Flags& add(const std::string& name, std::chrono::milliseconds& value, const std::string& help);
    // A switch: present means true; it takes no value.
    Flags& add(const std::string& name, bool& value, const std::string& help);
    // A string restricted to `choices`.
    Flags& add(const std::string& name, std::string& value, std::vector<std::string> choices,
               const std::string& help);

    // Parses argv or exits: 0 after --help, 2 on any error.
    void parse(int argc, char** argv);

    // Parses argv; returns an error message instead of exiting ("" when all is well).
    // Used by the tests; `parse` is this plus the printing and exiting.
    std::string try_parse(const std::vector<std::string>& args);

    std::string usage() const;

private:
    struct Flag {
        std::string name;
        std::string help;
        std::string default_text;
        bool is_switch;
        std::function<std::string(const std::string&)> set; // returns "" or an error
    };
    Flags& add_flag(Flag flag);

    std::string program_;
    std::string summary_;
    std::vector<Flag> flags_;
    bool help_requested_ = false;
};

// "30s" -> 30000 ms. Throws std::invalid_argument with a readable message.
std::chrono::milliseconds parse_duration(const std::string& text);

// 30000 ms -> "30s", 1500 ms -> "1500ms": the inverse of parse_duration, for messages.
std::string format_duration(std::chrono::milliseconds value);

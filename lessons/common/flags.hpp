// Command-line flags for every program in this repository, parsed by CLI11.
//
// Contract: `--name value` and `--name=value` (the last one given wins); `--help` explains every
// flag with its default and what it accepts ("[default: 8080; 0..65535]") and exits 0;
// `--print-config` prints every flag's effective value as
// `--name=value` lines a shell accepts back, and exits 0 (a program that declares its own
// print-config flag keeps it). Anything the program does not understand (an unknown flag, a
// missing or malformed value) prints one line, `<program>: <what is wrong> (try --help)`, and
// exits 2. Every value is converted before --help is honoured: `ARGS --help` exits 0 only when
// ARGS are right.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace CLI {
class App;
}

class Flags {
public:
    Flags(std::string program, std::string summary);
    ~Flags();

    // Numbers and durations say what they accept: a value outside [min, max] is an error
    // ("--port: '70000' is not in 0..65535"), never a wrapped, truncated or silently disabled
    // setting. Where a special value means "off" or "pick one", the help says so.
    Flags& add(const std::string& name, int& value, int min, int max, const std::string& help);
    Flags& add(const std::string& name, std::chrono::milliseconds& value,
               std::chrono::milliseconds min, std::chrono::milliseconds max,
               const std::string& help);
    Flags& add(const std::string& name, std::string& value, const std::string& help);
    // A switch: present means true; `--name=false` is accepted too, as --print-config prints it.
    Flags& add(const std::string& name, bool& value, const std::string& help);
    // A string restricted to `choices`.
    Flags& add(const std::string& name, std::string& value, std::vector<std::string> choices,
               const std::string& help);

    // Runs `callback` once a parse succeeded, before parse() or try_parse() returns (not after
    // --help, the built-in --print-config or an error), callbacks in the order given: for a part
    // that acts on its own flags before the program starts. A program's own checks after parse()
    // (and a print-config flag of its own) come after the callbacks.
    Flags& on_parsed(std::function<void()> callback);

    // Parses argv or exits: 0 after --help or --print-config, 2 on any error.
    void parse(int argc, char** argv);

    // Parses argv; returns an error message instead of exiting ("" when all is well).
    // Used by the tests; `parse` is this plus the printing and exiting.
    std::string try_parse(const std::vector<std::string>& args);

    std::string usage() const;
    const std::string& program() const { return program_; } // as errors name it
    // What --print-config prints: one `--name=value` line per flag, shell-quoted.
    std::string config() const;

private:
    Flags& add_value(const std::string& name, const std::string& help,
                     std::function<void(const std::string&)> set, std::function<std::string()> show,
                     const std::string& range = "");

    std::string program_;
    std::unique_ptr<CLI::App> app_;
    std::vector<std::pair<std::string, std::function<std::string()>>> shown_; // for config()
    std::vector<std::function<void()>> on_parsed_;
    bool help_requested_ = false;
    bool print_config_ = false;
};

// "30s" -> 30000 ms; units ms, s, m, h; a bare number is seconds and may have a fraction ("0.5").
// Throws std::invalid_argument with a readable message, also for a duration longer than a year
// (which would overflow further on).
std::chrono::milliseconds parse_duration(const std::string& text);

// 30000 ms -> "30s", 1500 ms -> "1500ms", 3600000 ms -> "1h": the inverse of parse_duration,
// for messages.
std::string format_duration(std::chrono::milliseconds value);

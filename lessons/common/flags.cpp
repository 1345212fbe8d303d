#include "lessons/common/flags.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <stdexcept>

namespace {

// The whole text as a number, as strtod reads it (leading blanks, a sign, "1e3", "nan", "inf").
bool read_double(const std::string& text, double& value) {
    if (text.empty()) return false;
    char* end = nullptr;
    value = std::strtod(text.c_str(), &end);
    return end == text.c_str() + text.size();
}

// Read as a double, so that "1e30" is out of range rather than not a number.
double parse_integer(const std::string& text) {
    double value = 0;
    if (!read_double(text, value) || !std::isfinite(value))
        throw std::invalid_argument("'" + text + "' is not a number");
    if (value != std::floor(value)) throw std::invalid_argument("'" + text + "' is not an integer");
    return value;
}

// --print-config's values must survive being pasted into a shell.
std::string shell_quoted(const std::string& text) {
    if (!text.empty() && text.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVW"
                                                "XYZ0123456789-_./:,@+") == std::string::npos)
        return text;
    std::string quoted = "'";
    for (char c : text)
        quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return quoted + "'";
}

// No setting here needs more; llround and the deadlines built from a duration stay far from
// overflowing below it.
constexpr double longest_duration_ms = 365.0 * 24 * 3600 * 1000;

// Sets `value` from a flag's text: `parse` throws std::invalid_argument with what a user reads,
// and a value outside [min, max] is refused, never wrapped, truncated or clamped.
template <typename T, typename Parse, typename Show>
std::function<void(const std::string&)> in_range(T& value, T min, T max, Parse parse, Show show) {
    return [&value, min, max, parse, show](const std::string& text) {
        const auto parsed = parse(text);
        if (parsed < min || parsed > max)
            throw std::invalid_argument("'" + text + "' is not in " + show(min) + ".." + show(max));
        value = T(parsed);
    };
}

} // namespace

std::chrono::milliseconds parse_duration(const std::string& text) {
    static const std::map<std::string, double> ms_per_unit = {
        {"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}, {"", 1000}}; // bare: seconds
    const auto digits_end = std::min(text.find_first_not_of("0123456789."), text.size());
    const auto unit = ms_per_unit.find(text.substr(digits_end));
    double value = 0;
    if (unit == ms_per_unit.end() || !read_double(text.substr(0, digits_end), value))
        throw std::invalid_argument("'" + text + "' is not a duration (examples: 500ms, 30s, 2m)");
    const double ms = value * unit->second;
    if (!(ms <= longest_duration_ms))
        throw std::invalid_argument("'" + text + "' is longer than a year");
    return std::chrono::milliseconds(std::llround(ms));
}

std::string format_duration(std::chrono::milliseconds value) {
    const auto ms = value.count();
    if (ms != 0 && ms % 3'600'000 == 0) return std::to_string(ms / 3'600'000) + "h";
    if (ms != 0 && ms % 60'000 == 0) return std::to_string(ms / 60'000) + "m";
    if (ms != 0 && ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
    return std::to_string(ms) + "ms";
}

Flags::Flags(std::string program, std::string summary)
    : program_(program), app_(std::make_unique<CLI::App>(std::move(summary), std::move(program))) {
    app_->allow_extras(); // try_parse words the message about an unknown flag itself
}

Flags::~Flags() = default;

// Every flag with a value goes through here: `set` converts the text (throwing
// std::invalid_argument with what a user reads), `show` gives the value for --help's default
// and for --print-config, `range` what --help says it accepts ("0..65535").
Flags& Flags::add_value(const std::string& name, const std::string& help,
                        std::function<void(const std::string&)> set,
                        std::function<std::string()> show, const std::string& range) {
    const std::string flag = "--" + name;
    const auto convert = [flag, set](const CLI::results_t& given) {
        try {
            set(given.back());
        } catch (const std::invalid_argument& e) {
            throw CLI::ValidationError(flag, e.what());
        }
        return true;
    };
    const std::string shown = show();
    const std::string accepts = range.empty() ? "" : "; " + range;
    app_->add_option(flag, convert,
                     help + (shown.empty() ? "" : " [default: " + shown + accepts + "]"))
        ->type_name("VALUE")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast); // the last one given wins
    shown_.emplace_back(name, std::move(show));
    return *this;
}

Flags& Flags::add(const std::string& name, int& value, int min, int max, const std::string& help) {
    const auto show = [](int number) { return std::to_string(number); };
    return add_value(
        name, help, in_range(value, min, max, parse_integer, show),
        [&value, show] { return show(value); }, show(min) + ".." + show(max));
}

Flags& Flags::add(const std::string& name, std::string& value, const std::string& help) {
    return add_value(
        name, help, [&value](const std::string& text) { value = text; },
        [&value] { return value; });
}

Flags& Flags::add(const std::string& name, std::chrono::milliseconds& value,
                  std::chrono::milliseconds min, std::chrono::milliseconds max,
                  const std::string& help) {
    return add_value(
        name, help, in_range(value, min, max, parse_duration, format_duration),
        [&value] { return format_duration(value); },
        format_duration(min) + ".." + format_duration(max));
}

Flags& Flags::add(const std::string& name, bool& value, const std::string& help) {
    app_->add_flag("--" + name, value, help)->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    shown_.emplace_back(name, [&value] { return value ? "true" : "false"; });
    return *this;
}

Flags& Flags::add(const std::string& name, std::string& value, std::vector<std::string> choices,
                  const std::string& help) {
    std::string list;
    for (std::size_t i = 0; i < choices.size(); ++i)
        list += (i ? "|" : "") + choices[i];
    const auto set = [&value, choices, list](const std::string& text) {
        if (std::find(choices.begin(), choices.end(), text) == choices.end())
            throw std::invalid_argument("'" + text + "' is not one of " + list);
        value = text;
    };
    return add_value(name, help + " (" + list + ")", set, [&value] { return value; });
}

std::string Flags::try_parse(const std::vector<std::string>& args) {
    if (app_->get_option_no_throw("--print-config") == nullptr) // a program may add its own
        app_->add_flag("--print-config", print_config_,
                       "print every flag's value as --name=value lines and exit");
    try {
        app_->parse(std::vector<std::string>(args.rbegin(), args.rend())); // CLI11 pops the back
    } catch (const CLI::CallForHelp&) {
        help_requested_ = true; // CLI11 gets here only once every value has converted
    } catch (const CLI::ArgumentMismatch& e) {
        const std::string what = e.what(); // "--port: 1 required VALUE missing"
        return what.substr(0, what.find(':')) + " needs a value";
    } catch (const CLI::ParseError& e) {
        return e.what();
    }
    if (!app_->remaining().empty()) {
        const std::string first = app_->remaining().front();
        if (first[0] == '-') return "unknown flag '" + first.substr(0, first.find('=')) + "'";
        return "unexpected argument '" + first + "'";
    }
    if (!help_requested_ && !print_config_)
        for (const auto& callback : on_parsed_)
            callback();
    return "";
}

Flags& Flags::on_parsed(std::function<void()> callback) {
    on_parsed_.push_back(std::move(callback));
    return *this;
}

void Flags::parse(int argc, char** argv) {
    const std::string error = try_parse(std::vector<std::string>(argv + 1, argv + argc));
    if (!error.empty()) {
        std::fprintf(stderr, "%s: %s (try --help)\n", program_.c_str(), error.c_str());
        std::exit(2);
    }
    if (help_requested_ || print_config_) {
        std::fputs((help_requested_ ? usage() : config()).c_str(), stdout);
        std::exit(0);
    }
}

std::string Flags::usage() const {
    return app_->help();
}

std::string Flags::config() const {
    std::string lines;
    for (const auto& [name, show] : shown_)
        lines += "--" + name + "=" + shell_quoted(show()) + "\n";
    return lines;
}

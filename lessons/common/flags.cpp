#include "flags.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

namespace {

std::string error_or_empty(const std::function<void()>& fn) {
    try {
        fn();
        return "";
    } catch (const std::exception& e) {
        return e.what();
    }
}

double parse_number(const std::string& text) {
    std::size_t used = 0;
    double value = 0;
    try {
        value = std::stod(text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used == 0 || used != text.size() || !std::isfinite(value))
        throw std::invalid_argument("'" + text + "' is not a number");
    return value;
}

} // namespace

std::chrono::milliseconds parse_duration(const std::string& text) {
    struct Unit {
        const char* suffix;
        double ms;
    };
    // Longest suffixes first, so that "ms" is not read as "m" followed by garbage.
    static const Unit units[] = {{"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}};
    double factor = 1000; // a bare number means seconds
    std::string number = text;
    for (const auto& unit : units) {
        const std::string suffix = unit.suffix;
        if (text.size() > suffix.size() &&
            text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0) {
            number = text.substr(0, text.size() - suffix.size());
            factor = unit.ms;
            break;
        }
    }
    double value = 0;
    try {
        value = parse_number(number);
    } catch (const std::invalid_argument&) {
        throw std::invalid_argument("'" + text + "' is not a duration (examples: 500ms, 30s, 2m)");
    }
    if (value < 0) throw std::invalid_argument("'" + text + "' is negative");
    return std::chrono::milliseconds(static_cast<long long>(std::llround(value * factor)));
}

std::string format_duration(std::chrono::milliseconds value) {
    const auto ms = value.count();
    if (ms != 0 && ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
    return std::to_string(ms) + "ms";
}

Flags::Flags(std::string program, std::string summary)
    : program_(std::move(program)), summary_(std::move(summary)) {
}

Flags& Flags::add_flag(Flag flag) {
    flags_.push_back(std::move(flag));
    return *this;
}

Flags& Flags::add(const std::string& name, int& value, const std::string& help) {
    return add_flag({name, help, std::to_string(value), false, [&value](const std::string& text) {
                         return error_or_empty([&] {
                             const double number = parse_number(text);
                             if (number != std::floor(number) || std::fabs(number) > 2e9)
                                 throw std::invalid_argument("'" + text + "' is not an integer");
                             value = static_cast<int>(number);
                         });
                     }});
}

Flags& Flags::add(const std::string& name, double& value, const std::string& help) {
    std::ostringstream shown;
    shown << value;
    return add_flag({name, help, shown.str(), false, [&value](const std::string& text) {
                         return error_or_empty([&] { value = parse_number(text); });
                     }});
}

Flags& Flags::add(const std::string& name, std::string& value, const std::string& help) {
    return add_flag(
        {name, help, value.empty() ? "" : value, false, [&value](const std::string& text) {
             value = text;
             return std::string();
         }});
}

Flags& Flags::add(const std::string& name, std::chrono::milliseconds& value,
                  const std::string& help) {
    return add_flag({name, help, format_duration(value), false, [&value](const std::string& text) {
                         return error_or_empty([&] { value = parse_duration(text); });
                     }});
}

Flags& Flags::add(const std::string& name, bool& value, const std::string& help) {
    return add_flag({name, help, "", true, [&value](const std::string&) {
                         value = true;
                         return std::string();
                     }});
}

Flags& Flags::add(const std::string& name, std::string& value, std::vector<std::string> choices,
                  const std::string& help) {
    std::string list;
    for (const auto& choice : choices)
        list += (list.empty() ? "" : "|") + choice;
    return add_flag({name, help + " (" + list + ")", value, false,
                     [&value, choices, list](const std::string& text) {
                         for (const auto& choice : choices)
                             if (choice == text) {
                                 value = text;
                                 return std::string();
                             }
                         return "'" + text + "' is not one of " + list;
                     }});
}

std::string Flags::try_parse(const std::vector<std::string>& args) {
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& arg = args[i];
        if (arg == "--help" || arg == "-h") {
            help_requested_ = true;
            return "";
        }
        if (arg.rfind("--", 0) != 0) return "unexpected argument '" + arg + "'";
        const auto equals = arg.find('=');
        const std::string name = arg.substr(2, equals == std::string::npos ? arg.npos : equals - 2);
        Flag* flag = nullptr;
        for (auto& candidate : flags_)
            if (candidate.name == name) flag = &candidate;
        if (flag == nullptr) return "unknown flag '--" + name + "'";
        std::string value;
        if (flag->is_switch) {
            if (equals != std::string::npos) return "--" + name + " takes no value";
        } else if (equals != std::string::npos) {
            value = arg.substr(equals + 1);
        } else if (i + 1 < args.size()) {
            value = args[++i];
        } else {
            return "--" + name + " needs a value";
        }
        const std::string error = flag->set(value);
        if (!error.empty()) return "--" + name + ": " + error;
    }
    return "";
}

void Flags::parse(int argc, char** argv) {
    const std::string error = try_parse(std::vector<std::string>(argv + 1, argv + argc));
    if (help_requested_) {
        std::fputs(usage().c_str(), stdout);
        std::exit(0);
    }
    if (!error.empty()) {
        std::fprintf(stderr, "%s: %s (try --help)\n", program_.c_str(), error.c_str());
        std::exit(2);
    }
}

std::string Flags::usage() const {
    std::ostringstream out;
    out << "usage: " << program_ << " [flags]\n\n" << summary_ << "\n\nflags:\n";
    for (const auto& flag : flags_) {
        std::string left = "  --" + flag.name + (flag.is_switch ? "" : " VALUE");
        out << left;
        out << std::string(left.size() < 28 ? 28 - left.size() : 1, ' ') << flag.help;
        if (!flag.is_switch && !flag.default_text.empty())
            out << " [default: " << flag.default_text << "]";
        out << "\n";
    }
    out << "  --help                    print this and exit\n";
    return out.str();
}

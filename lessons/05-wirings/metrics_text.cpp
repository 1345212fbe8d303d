#include "lessons/05-wirings/metrics_text.hpp"

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

namespace {

// HELP text escapes backslash and newline; label values escape the double quote too.
std::string escaped(const std::string& text, bool quote) {
    std::string out;
    for (const char c : text) {
        if (c == '\\') {
            out += "\\\\";
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '"' && quote) {
            out += "\\\"";
        } else {
            out += c;
        }
    }
    return out;
}

// Whole numbers without a fraction or exponent (1000000, not 1e+06): readers grep for them.
std::string number(double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%.15g", value);
    return text;
}

// Where the labels of a series line end: just past the '}' that closes the '{' at `open`,
// skipping quoted label values (which may hold braces). npos when the line is malformed.
std::size_t end_of_labels(const std::string& line, std::size_t open) {
    bool quoted = false;
    for (std::size_t at = open + 1; at < line.size(); ++at) {
        const char c = line[at];
        if (quoted && c == '\\')
            ++at; // an escaped character inside quotes
        else if (c == '"')
            quoted = !quoted;
        else if (c == '}' && !quoted)
            return at + 1;
    }
    return std::string::npos;
}

} // namespace

MetricsText& MetricsText::family(const std::string& name, Type type, const std::string& help) {
    name_ = name;
    text_ += "# HELP " + name + " " + escaped(help, false) + "\n";
    text_ += "# TYPE " + name + (type == Type::gauge ? " gauge\n" : " counter\n");
    return *this;
}

MetricsText& MetricsText::sample(double value, const Labels& labels) {
    if (name_.empty()) throw std::logic_error("MetricsText: sample() before family()");
    text_ += name_;
    if (!labels.empty()) {
        text_ += '{';
        for (std::size_t i = 0; i < labels.size(); ++i) {
            if (i > 0) text_ += ',';
            text_ += labels[i].first + "=\"" + escaped(labels[i].second, true) + "\"";
        }
        text_ += '}';
    }
    text_ += " " + number(value) + "\n";
    return *this;
}

MetricsText& MetricsText::gauge(const std::string& name, const std::string& help, double value) {
    return family(name, Type::gauge, help).sample(value);
}

MetricsText& MetricsText::counter(const std::string& name, const std::string& help, double value) {
    return family(name, Type::counter, help).sample(value);
}

std::optional<double> metric_value(const std::string& exposition, const std::string& name) {
    std::optional<double> total;
    std::istringstream lines(exposition);
    std::string line;
    while (std::getline(lines, line)) {
        if (line.empty() || line[0] == '#') continue; // # HELP, # TYPE, comments
        if (line.compare(0, name.size(), name) != 0) continue;
        std::size_t at = name.size();
        if (at < line.size() && line[at] == '{') at = end_of_labels(line, at);
        if (at == std::string::npos || at >= line.size() || (line[at] != ' ' && line[at] != '\t'))
            continue; // another metric whose name starts with `name`, or a malformed line
        const char* begin = line.c_str() + at;
        char* end = nullptr;
        const double value = std::strtod(begin, &end);
        if (end == begin) continue;
        total = total.value_or(0) + value;
    }
    return total;
}

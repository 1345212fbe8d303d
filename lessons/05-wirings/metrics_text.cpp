#include "metrics_text.hpp"

#include <cstdio>
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

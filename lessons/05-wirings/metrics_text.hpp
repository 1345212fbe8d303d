// The body of GET /metrics: Prometheus's text exposition format (version 0.0.4), which
// Prometheus and Grafana agents read, and metric_value (below) reads back. Written by hand on
// purpose: the format is a few plain lines, and seeing them is part of the lesson.
//
//   # HELP pool_connections_pending Borrowers waiting for a database connection.
//   # TYPE pool_connections_pending gauge
//   pool_connections_pending 1990
//   # HELP http_server_requests_total Responses written, by HTTP status.
//   # TYPE http_server_requests_total counter
//   http_server_requests_total{status="200"} 18234
//   http_server_requests_total{status="500"} 1140
//
// Each metric is a family: one HELP line, one TYPE line, then its samples, one per set of
// labels. A gauge goes up and down (requests in flight); a counter only goes up, and its name
// ends in _total. Names in Micrometer's spirit: what is measured, then the unit or _total.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

class MetricsText {
public:
    enum class Type { gauge, counter };
    using Labels = std::vector<std::pair<std::string, std::string>>;

    // Starts a family: its # HELP and # TYPE lines. Samples added next belong to it.
    MetricsText& family(const std::string& name, Type type, const std::string& help);
    // One sample of the family started last, e.g. sample(18234, {{"status", "200"}}).
    MetricsText& sample(double value, const Labels& labels = {});

    // A family with one unlabelled sample.
    MetricsText& gauge(const std::string& name, const std::string& help, double value);
    MetricsText& counter(const std::string& name, const std::string& help, double value);

    const std::string& text() const { return text_; }

private:
    std::string text_;
    std::string name_; // the family samples go to
};

// The value of metric `name` in a Prometheus text exposition: the sum over its series (labels
// distinguish them), or nothing when no sample of `name` is there. `name{a="b"} 3` and `name 3`
// both count; `name_total 3` does not.
std::optional<double> metric_value(const std::string& exposition, const std::string& name);

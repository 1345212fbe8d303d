#include "lessons/08-pitfalls/query_param.hpp"

#include <nlohmann/json.hpp>
#include <stdexcept>

long whole_number_param(const httplib::Request& req, const std::string& name, long fallback,
                        long min, long max) {
    if (!req.has_param(name.c_str())) return fallback;
    const std::string text = req.get_param_value(name.c_str());
    std::size_t used = 0;
    long value = min - 1;
    try {
        value = std::stol(text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used == 0 || used != text.size() || value < min || value > max)
        throw std::invalid_argument(name + " must be a whole number from " + std::to_string(min) +
                                    " to " + std::to_string(max));
    return value;
}

void answer_bad_request(httplib::Response& res, const std::string& message) {
    res.status = 400;
    res.set_content(nlohmann::json{{"error", message}}.dump() + "\n", "application/json");
}

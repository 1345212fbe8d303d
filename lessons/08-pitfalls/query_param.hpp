// Reading a whole-number query parameter strictly: "?ms=20" is 20, "?ms=20x" is an error.
#pragma once

#include <httplib.h>
#include <string>

// The value of ?name=, or `fallback` when the request has none. Throws std::invalid_argument
// ("ms must be a whole number from 0 to 60000") when it is not a number in [min, max].
long whole_number_param(const httplib::Request& req, const std::string& name, long fallback,
                        long min, long max);

// Answers 400 with {"error": message}.
void answer_bad_request(httplib::Response& res, const std::string& message);

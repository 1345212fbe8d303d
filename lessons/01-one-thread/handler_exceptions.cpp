#include "lessons/01-one-thread/handler_exceptions.hpp"

#include <cerrno> // program_invocation_short_name (GNU)
#include <cstdio>
#include <string>
#include <utility>

namespace {

// `text` with every control character written as \xNN: a request target or an exception's text
// cannot break the log line, or forge a second one.
std::string one_line(const std::string& text) {
    std::string line;
    for (const unsigned char c : text) {
        if (c < 0x20 || c == 0x7f) {
            char escaped[5];
            std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
            line += escaped;
        } else {
            line += static_cast<char>(c);
        }
    }
    return line;
}

} // namespace

void answer_internal_error(const httplib::Request& req, httplib::Response& res,
                           std::exception_ptr error) {
    std::string what = "an exception that is not a std::exception";
    try {
        std::rethrow_exception(error);
    } catch (const std::exception& e) {
        what = e.what();
    } catch (...) {
    }
    std::fprintf(stderr, "%s: %s %s: a handler threw: %s\n", program_invocation_short_name,
                 one_line(req.method).c_str(), one_line(req.target).c_str(),
                 one_line(what).c_str());
    // Swapped out rather than overwritten: the discarded response's destructor releases what a
    // content provider the handler had set holds.
    httplib::Response discarded;
    std::swap(res, discarded);
    res.status = 500;
}

void answer_exceptions_plainly(httplib::Server& server) {
    server.set_exception_handler(answer_internal_error);
}

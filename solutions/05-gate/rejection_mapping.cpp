#include "rejection_mapping.hpp"

#include "concurrency_gate.hpp"
#include "lessons/01-one-thread/handler_exceptions.hpp"

#include <httplib.h>

void map_rejections_to_503(httplib::Server& app) {
    app.set_exception_handler(
        [](const httplib::Request& req, httplib::Response& res, std::exception_ptr error) {
            try {
                std::rethrow_exception(error);
            } catch (const ConcurrencyLimitReached& e) {
                res.status = 503; // busy, not broken: the client may try again later
                res.set_content(std::string(e.what()) + "\n", "text/plain");
            } catch (...) {
                answer_internal_error(req, res, error); // broken: a bare 500, the text on stderr
            }
        });
}

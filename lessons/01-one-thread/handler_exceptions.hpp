// What a server answers when a handler throws: a plain 500, never the exception's text.
//
// cpp-httplib 0.11.4 catches an exception that escapes a handler. Unless the server has an
// exception handler, it answers 500 and copies e.what() into an EXCEPTION_WHAT response header.
// That text is for whoever runs the server, not for the client: it can name a file, a query or
// a library's internals (lesson 08's said "[json.exception.type_error.316] invalid UTF-8
// byte..."), and it tells a prober which input reached which code. So every server installs the
// handler below.
#pragma once

#include <exception>
#include <httplib.h>

// Replaces whatever the handler had put in `res` with a bare "500 Internal Server Error" (no
// body, none of its headers) and writes one line to stderr:
//   lesson08: GET /path?query: a handler threw: <what>
// with control characters escaped, so it stays one line whatever the text holds.
void answer_internal_error(const httplib::Request& req, httplib::Response& res,
                           std::exception_ptr error);

// Makes answer_internal_error `server`'s exception handler.
void answer_exceptions_plainly(httplib::Server& server);

// Exercise 05, task 3: how the application answers a request the gate turned away.
//
// A handler's exception that nobody maps ends in cpp-httplib's default: status 500 and an empty
// body. To a client, a monitor and a load balancer that says "the server is broken", not "the
// server is busy, try again later".
#pragma once

namespace httplib {
class Server;
}

// ---- do not change: the graded tests use this declaration ----

// Installs `app`'s exception handler:
//   ConcurrencyLimitReached  -> 503 Service Unavailable, body: the message and "\n" (text/plain)
//   anything else            -> what every server here answers: a bare 500, the exception's text
//                               on stderr only (answer_internal_error, handler_exceptions.hpp)
void map_rejections_to_503(httplib::Server& app);

// The explicit error mapping: how the application answers a request the gate turned away.
//
// A handler's exception that nobody maps ends in HttpApp's default: a bare 500, the message only
// in the server's log (lesson 01's handler_exceptions.hpp). To a client, a monitor and the
// load balancer, that says "the server is broken", not "the server is busy, try again". Spring
// is the same: InvocationRejectedException surfaces as a 500 until an @ExceptionHandler maps it.
//
// map_rejections_to_503 installs the mapping as the app's exception handler:
//   ConcurrencyLimitReached  -> 503 Service Unavailable, the message as the body
//   any other exception      -> HttpApp's default: a bare 500, the message on stderr
// Lesson 06's --bad-unmapped-rejection leaves it out, to show the 500s.
#pragma once

#include <httplib.h>

void map_rejections_to_503(httplib::Server& app);

// Runs a cpp-httplib server the way every lesson server runs: bind 127.0.0.1:port (port 0 picks a
// free one), print "listening on ...", serve until SIGINT or SIGTERM, stop, return. A handler's
// exception is answered with a bare 500 (handler_exceptions.hpp). Workers still busy 5 s after
// the signal are abandoned: the process exits 0 without them.
// A port that cannot be bound ends the program: one line on stderr, exit status 1.
#pragma once

#include <httplib.h>
#include <string>

void serve_until_shutdown(httplib::Server& server, const std::string& program, int port);

// The application: routes and handlers, exactly as cpp-httplib users write them
// (app.Get("/hello", handler)), minus cpp-httplib's own socket handling.
//
// httplib::Server::process_request() parses one request from a Stream, routes it, runs the
// handler and writes the response. It is protected; this subclass makes it callable, so the
// connector can feed it our fiber-aware stream instead of the library's blocking sockets.
#pragma once

#include "lessons/01-one-thread/handler_exceptions.hpp"

#include <httplib.h>

class HttpApp : public httplib::Server {
public:
    // A handler's exception is answered with a bare 500, its text on stderr, never to the
    // client (handler_exceptions.hpp). An application may install its own mapping over it.
    HttpApp() { answer_exceptions_plainly(*this); }

    // Serves one request whose head is already buffered in `stream`. With `close_connection`
    // the response says "Connection: close". Sets `connection_closed` when the client asked to
    // close. Returns false when the client went away or the request could not be read.
    bool process(httplib::Stream& stream, bool close_connection, bool& connection_closed) {
        return process_request(stream, close_connection, connection_closed, nullptr);
    }
};

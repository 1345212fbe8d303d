// Pitfall 1: request-scoped data in a thread_local.
//
//   GET /request-id?id=7&together=10
//       keeps "7" as the request's id (see max_request_id_length for what an id may be), parks
//       until 10 requests (this one included) have kept theirs, reads its id back and answers
//       {"id":"7","read_back":"7","store":"..."}.
//
// Code written for platform threads often keeps a request's id, its user or its log context in
// a thread_local: one thread serves one request at a time, so the variable is the request's
// for as long as it runs. On fibers it is the carrier's: every fiber on the carrier shares it,
// and a fiber that waits and then reads it gets whatever the last fiber to run there wrote.
//
// The fixes: pass the context explicitly (the plain one), or keep it in a
// boost::fibers::fiber_specific_ptr, one value per fiber, when the code in between cannot be
// changed to carry it.
#pragma once

#include "lessons/08-pitfalls/meeting.hpp"

#include <cstddef>
#include <httplib.h>

// What a request id may be: 1 to max_request_id_length visible ASCII characters ('!' to '~').
// The id goes into a JSON answer and, in real code, a log line: a control character or a space
// would break the line, and bytes that are not UTF-8 make nlohmann::json's dump() throw (the
// route answered 500 to ?id=%FF before it checked). An id is a key, not a payload: 64 holds a
// UUID (36 characters) with room to spare. Anything else is answered 400.
constexpr std::size_t max_request_id_length = 64;

enum class ContextStore {
    explicit_argument, // the handler passes a RequestContext to whoever needs it
    fiber_specific,    // boost::fibers::fiber_specific_ptr<RequestContext>
    thread_local_bad,  // ANTI-PATTERN: thread_local RequestContext
};

const char* name_of(ContextStore store);

// `meeting` must outlive the server.
void add_request_id_route(httplib::Server& server, ContextStore store, Meeting& meeting);

// Pitfall 1: request-scoped data in a thread_local.
//
//   GET /request-id?id=7&together=10
//       keeps "7" as the request's id, parks until 10 requests (this one included) have kept
//       theirs, reads its id back and answers {"id":"7","read_back":"7","store":"..."}.
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

#include "meeting.hpp"

#include <httplib.h>

enum class ContextStore {
    explicit_argument, // the handler passes a RequestContext to whoever needs it
    fiber_specific,    // boost::fibers::fiber_specific_ptr<RequestContext>
    thread_local_bad,  // ANTI-PATTERN: thread_local RequestContext
};

const char* name_of(ContextStore store);

// `meeting` must outlive the server.
void add_request_id_route(httplib::Server& server, ContextStore store, Meeting& meeting);

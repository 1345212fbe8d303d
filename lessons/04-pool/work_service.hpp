// The application's one database-backed operation, and the endpoint that serves it.
//
//   GET /work  borrows a connection from the pool (waiting up to the checkout timeout), runs
//              SELECT pg_sleep(0.05) on it, and gives it back. It answers 200 with
//              {"checkout_ms":0.02,"query_ms":50.6,"backend_pid":4242,"thread":"carrier-1#77"}
//              or 500 with the error as one line of text: the pool's timeout ("Connection is
//              not available, request timed out after 30000ms (total=10, active=10, idle=0,
//              waiting=37)") or why PostgreSQL could not be reached.
//
// checkout_ms is the time spent waiting for the pool: where requests queue once they arrive
// faster than the pool serves them (lesson 05 measures exactly that).
#pragma once

#include "lessons/04-pool/pg_pool.hpp"

#include <chrono>
#include <functional>
#include <httplib.h>

struct WorkResult {
    double checkout_ms = 0; // waiting for a connection
    double query_ms = 0;    // the query itself
    int backend_pid = 0;    // which of the pool's server sessions ran it
};

class WorkService {
public:
    // The query every unit of work runs: 50 ms of server time, holding one connection.
    static constexpr const char* query = "SELECT pg_sleep(0.05)";

    explicit WorkService(PgPool& pool) : pool_(pool) {}

    // Throws PoolTimeout when no connection became free in time, PgError when the database
    // failed or cannot be reached.
    WorkResult do_work();

private:
    PgPool& pool_;
};

// What GET /work runs: WorkService::do_work, or a wrapper around it (lesson 06 puts a
// concurrency gate in front of it).
using WorkCall = std::function<WorkResult()>;

// GET /work. PoolTimeout and PgError, the failures of the work itself, become 500 with their
// message. Any other exception (lesson 06's gate rejection) is left to the server's exception
// handler: the application decides how it maps (cpp-httplib's default is a 500 without a body).
void add_work_route(httplib::Server& server, WorkCall work);
void add_work_route(httplib::Server& server, WorkService& work);

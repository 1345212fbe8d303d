// One PostgreSQL connection that never blocks a carrier.
//
// libpq's ordinary calls (PQconnectdb, PQexec) wait inside the library, in a blocking recv() or
// poll(): called on a fiber, they would hold the whole carrier thread, and every other fiber on
// it would stop (pinning, lesson 02). So this class uses only libpq's asynchronous API
// (PQconnectStart/PQconnectPoll to connect, PQsendQuery/PQconsumeInput/PQisBusy/PQgetResult to
// query, the socket in non-blocking mode) and does every wait itself with wait_ready() from
// lesson 03: on a carrier it parks the calling fiber, on a plain thread it blocks that thread.
// The same object therefore works from fibers of any carrier and from OS threads, one caller
// at a time (the pool makes sure of that).
//
// What we deliberately never call:
//  * PQreset/PQresetStart/PQresetPoll: they switch non-blocking mode off again. A broken
//    connection is replaced with a new PgConnection instead.
//  * PQcancel: it opens a second connection with blocking calls. A query that overruns its
//    timeout is abandoned with its connection (the server notices when it next writes).
//  * Host names that need DNS: PQconnectPoll resolves them with a blocking getaddrinfo().
//    The constructor refuses them: use an address (host=127.0.0.1), as pg-cluster's connection
//    strings do, or give hostaddr=.
#pragma once

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>

struct pg_conn;
struct pg_result;

// An error from PostgreSQL or from the connection to it, as one line a user can act on.
class PgError : public std::runtime_error {
public:
    PgError(const std::string& message, std::string sqlstate, bool connection_lost)
        : std::runtime_error(message), sqlstate_(std::move(sqlstate)),
          connection_lost_(connection_lost) {}

    // The server's error code ("57P01": terminated by an administrator), or "" when the error
    // happened on our side (refused, timed out, the socket died).
    const std::string& sqlstate() const { return sqlstate_; }
    // True when the connection cannot be used again.
    bool connection_lost() const { return connection_lost_; }

private:
    std::string sqlstate_;
    bool connection_lost_;
};

// The rows of one query.
class PgResult {
public:
    explicit PgResult(pg_result* result);
    int rows() const;
    // The text of one field ("" for NULL).
    std::string value(int row, int column) const;

private:
    std::shared_ptr<pg_result> result_;
};

class PgConnection {
public:
    // Connects to `conninfo` (libpq syntax, "host=127.0.0.1 port=25432 ..."; "" takes everything
    // from libpq's environment: PGHOST, PGPORT, PGUSER, PGDATABASE). Throws PgError
    // ("cannot connect to PostgreSQL: ...") when the server refuses, fails, or does not finish
    // the handshake within `timeout`.
    PgConnection(const std::string& conninfo, std::chrono::milliseconds timeout);
    ~PgConnection();
    PgConnection(const PgConnection&) = delete;
    PgConnection& operator=(const PgConnection&) = delete;

    // Runs one SQL statement and returns its result. Throws PgError on an SQL error (the
    // connection stays usable) or a lost connection; a statement still running after `timeout`
    // is abandoned and the connection marked lost.
    PgResult query(const std::string& sql, std::chrono::milliseconds timeout);

    // False once the connection is known to be unusable. Also takes in anything the server sent
    // since the last query, without waiting: a server that shut down or terminated this session
    // has sent its goodbye and closed the socket, so that is how a pool finds dead idle
    // connections before handing them out. A poll() and a read or two; no round trip.
    bool alive();

    // The server process serving this connection (what pg_terminate_backend takes).
    int backend_pid() const;

private:
    [[noreturn]] void fail(const std::string& what, const std::string& sqlstate = "");

    pg_conn* conn_ = nullptr;
    bool lost_ = false;
};

#include "lessons/04-pool/pg_connection.hpp"

#include "lessons/03-connector/fiber_io.hpp"

#include <arpa/inet.h>
#include <cstdlib>
#include <cstring>
#include <libpq-fe.h>
#include <poll.h>
#include <sstream>

namespace {

// libpq's messages end in a newline and may span lines ("...failed: Connection refused\n\tIs
// the server running...?"); ours are one line each.
std::string one_line(const char* message) {
    std::string line;
    bool space = false;
    for (const char* c = message; c != nullptr && *c != '\0'; ++c) {
        if (*c == '\n' || *c == '\t' || *c == ' ') {
            space = !line.empty();
            continue;
        }
        if (space) line += ' ';
        space = false;
        line += *c;
    }
    return line;
}

std::string field(const PGresult* result, int code) {
    const char* text = PQresultErrorField(result, code);
    return text == nullptr ? "" : text;
}

// The first host in `conninfo` (or libpq's environment) that libpq would have to look up by
// name, with a blocking getaddrinfo() inside PQconnectPoll; "" when every host is an address or
// a socket directory, or when hostaddr gives the addresses.
std::string host_needing_lookup(const std::string& conninfo) {
    char* error = nullptr;
    PQconninfoOption* options = PQconninfoParse(conninfo.c_str(), &error);
    if (options == nullptr) { // a syntax error: PQconnectStart reports it in its own words
        PQfreemem(error);
        return "";
    }
    std::string hosts, hostaddrs;
    for (const PQconninfoOption* option = options; option->keyword != nullptr; ++option) {
        if (option->val == nullptr) continue;
        if (std::strcmp(option->keyword, "host") == 0) hosts = option->val;
        if (std::strcmp(option->keyword, "hostaddr") == 0) hostaddrs = option->val;
    }
    PQconninfoFree(options);
    const char* env_host = std::getenv("PGHOST");
    const char* env_hostaddr = std::getenv("PGHOSTADDR");
    if (hosts.empty() && env_host != nullptr) hosts = env_host;
    if (hostaddrs.empty() && env_hostaddr != nullptr) hostaddrs = env_hostaddr;
    if (!hostaddrs.empty()) return "";
    std::stringstream list(hosts);
    for (std::string host; std::getline(list, host, ',');) {
        in6_addr address;
        if (host.empty() || host[0] == '/' || host[0] == '@' ||
            ::inet_pton(AF_INET, host.c_str(), &address) == 1 ||
            ::inet_pton(AF_INET6, host.c_str(), &address) == 1)
            continue;
        return host;
    }
    return "";
}

// libpq prints server notices (and the FATAL a dying server sends to an idle session) to
// stderr by default. A pool replaces such connections quietly, so we drop them.
void ignore_notice(void*, const PGresult*) {
}

} // namespace

PgResult::PgResult(pg_result* result) : result_(result, PQclear) {
}

int PgResult::rows() const {
    return PQntuples(result_.get());
}

std::string PgResult::value(int row, int column) const {
    return PQgetvalue(result_.get(), row, column);
}

PgConnection::PgConnection(const std::string& conninfo, std::chrono::milliseconds timeout) {
    if (const std::string name = host_needing_lookup(conninfo); !name.empty())
        throw PgError("cannot connect to PostgreSQL: host '" + name +
                          "' is a name, not an address: libpq would look it up with a blocking "
                          "call that holds the carrier; give its address (host=127.0.0.1) or add "
                          "hostaddr=",
                      "", true);
    const Deadline deadline = deadline_after(timeout);
    conn_ = PQconnectStart(conninfo.c_str());
    if (conn_ == nullptr) throw std::bad_alloc();
    try {
        PQsetNoticeReceiver(conn_, ignore_notice, nullptr);
        if (PQstatus(conn_) == CONNECTION_BAD)
            fail("cannot connect to PostgreSQL: " + one_line(PQerrorMessage(conn_)));
        // libpq's protocol: start as if PQconnectPoll had asked to wait until writable, then do
        // what each call asks for, on whatever socket PQsocket() names at that moment (it
        // changes when libpq moves on to the next address).
        PostgresPollingStatusType status = PGRES_POLLING_WRITING;
        while (status != PGRES_POLLING_OK) {
            if (status == PGRES_POLLING_FAILED)
                fail("cannot connect to PostgreSQL: " + one_line(PQerrorMessage(conn_)));
            const Direction direction =
                status == PGRES_POLLING_READING ? Direction::read : Direction::write;
            if (!wait_ready(PQsocket(conn_), direction, deadline))
                fail("cannot connect to PostgreSQL: no answer within " +
                     std::to_string(timeout.count()) + "ms");
            status = PQconnectPoll(conn_);
        }
        if (PQsetnonblocking(conn_, 1) != 0)
            fail("cannot make the connection non-blocking: " + one_line(PQerrorMessage(conn_)));
    } catch (...) {
        PQfinish(conn_);
        throw;
    }
}

PgConnection::~PgConnection() {
    PQfinish(conn_);
}

void PgConnection::fail(const std::string& what, const std::string& sqlstate) {
    lost_ = true;
    throw PgError(what, sqlstate, true);
}

PgResult PgConnection::query(const std::string& sql, std::chrono::milliseconds timeout) {
    if (!alive()) {
        const std::string why = one_line(PQerrorMessage(conn_));
        fail("lost the connection to PostgreSQL" + (why.empty() ? "" : ": " + why));
    }
    const Deadline deadline = deadline_after(timeout);
    auto give_up = [&] {
        // Cancelling would take PQcancel, which blocks; the pool drops this connection instead.
        fail("PostgreSQL did not answer within " + std::to_string(timeout.count()) +
             "ms; the connection was dropped");
    };

    if (!PQsendQuery(conn_, sql.c_str()))
        fail("cannot send the query to PostgreSQL: " + one_line(PQerrorMessage(conn_)));
    // In non-blocking mode the query may still sit in libpq's buffer: push it out. Reading
    // meanwhile keeps a server that talks first (a notice) from stalling both sides.
    for (int left; (left = PQflush(conn_)) != 0;) {
        if (left < 0)
            fail("cannot send the query to PostgreSQL: " + one_line(PQerrorMessage(conn_)));
        if (!wait_ready(PQsocket(conn_), Direction::write, deadline)) give_up();
        PQconsumeInput(conn_);
    }

    // Collect every result until PQgetResult says there are no more (a connection must be
    // drained before its next query). Keep the first error, else the last result.
    PGresult* kept = nullptr;
    bool kept_error = false;
    for (;;) {
        while (PQisBusy(conn_)) { // false also once libpq has seen the connection die
            if (!wait_ready(PQsocket(conn_), Direction::read, deadline)) {
                PQclear(kept);
                give_up();
            }
            // On failure libpq marks the connection bad and PQgetResult reports why.
            PQconsumeInput(conn_);
        }
        PGresult* next = PQgetResult(conn_);
        if (next == nullptr) break;
        const bool error = PQresultStatus(next) == PGRES_FATAL_ERROR;
        if (kept_error) {
            PQclear(next);
        } else {
            PQclear(kept);
            kept = next;
            kept_error = error;
        }
    }
    if (PQstatus(conn_) == CONNECTION_BAD) lost_ = true;
    if (kept == nullptr)
        fail("lost the connection to PostgreSQL: " + one_line(PQerrorMessage(conn_)));
    PgResult result(kept);
    if (kept_error) {
        // FATAL and PANIC end the session (57P01: the server is shutting down or an administrator
        // terminated it); ERROR fails only this statement.
        const std::string severity = field(kept, PG_DIAG_SEVERITY_NONLOCALIZED);
        if (severity == "FATAL" || severity == "PANIC") lost_ = true;
        throw PgError("PostgreSQL: " + one_line(PQresultErrorMessage(kept)),
                      field(kept, PG_DIAG_SQLSTATE), lost_);
    }
    return result;
}

bool PgConnection::alive() {
    if (lost_) return false;
    // Take in whatever has arrived, without waiting. A terminated session has sent an error
    // message and then closed: one read returns the message, only the next one sees the close.
    for (int reads = 0; reads < 8; ++reads) {
        pollfd pending{PQsocket(conn_), POLLIN, 0};
        if (::poll(&pending, 1, 0) <= 0) break; // nothing (more) to read
        if (!PQconsumeInput(conn_)) break;      // the close: libpq marks the connection bad
    }
    // A session left inside a transaction is not one to hand to the next borrower either.
    if (PQstatus(conn_) != CONNECTION_OK || PQtransactionStatus(conn_) != PQTRANS_IDLE)
        lost_ = true;
    return !lost_;
}

int PgConnection::backend_pid() const {
    return PQbackendPID(conn_);
}

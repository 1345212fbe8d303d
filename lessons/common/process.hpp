// What every server in this repository does around its main loop: name its threads, announce
// where it listens, and stop cleanly on Ctrl+C (SIGINT) or SIGTERM.
#pragma once

#include <chrono>
#include <string>

// Call first thing in main(), before any thread starts: SIGINT and SIGTERM are blocked in every
// thread (new threads inherit the mask) so that only wait_for_shutdown_signal() receives them,
// and SIGPIPE is ignored so that writing to a socket the client closed is an error, not a death.
// SIGUSR1 (write the trace now: lessons/instruments/trace/) is blocked too, for the tracer's thread
// to take; a server that does not trace ignores it.
void block_shutdown_signals();

// Blocks the calling thread until SIGINT or SIGTERM arrives; returns the signal number.
int wait_for_shutdown_signal();

// Prints the one line scripts and tests wait for: "listening on http://127.0.0.1:PORT".
void announce_listening(const std::string& host, int port);

// Prints "<program>: <message>" to stderr and exits with `status`.
[[noreturn]] void fail(const std::string& program, const std::string& message, int status = 1);

// Why binding host:port fails right now ("Address already in use"), found by trying it.
// For libraries (cpp-httplib) that report a failed bind only as `false`.
std::string explain_bind_failure(const std::string& host, int port);

// Raises this process's soft limit on open files to its hard limit (allowed without privileges)
// and returns the limit now in force. A server with thousands of connections needs one
// descriptor each; Debian's default soft limit is 1,024.
long raise_open_file_limit();

// Names the calling thread (at most 15 characters are kept: a Linux limit).
void name_this_thread(const std::string& name);

// "carrier-0#4242": the calling thread's name and kernel thread id, so a reader can tell
// whether ten responses came from one thread or from ten.
std::string thread_label();

// CPU time the calling thread has used (CLOCK_THREAD_CPUTIME_ID): the same work costs the same
// on a busy machine, where wall time also counts the turns the OS gave to others.
std::chrono::nanoseconds thread_cpu_time();

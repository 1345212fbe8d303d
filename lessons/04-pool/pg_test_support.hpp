// Helpers for tests that need a real PostgreSQL. Nothing here is mocked.
//
// The shared server: CTest's `postgres` fixture starts one per build directory before the tests
// that name it (lesson_test(... FIXTURES postgres)) and stops it after them; its connection
// string lands in <build>/pg/conninfo. A test program started by hand can be given one instead:
//   lessons/tools/pg-cluster run -- build/bin/pg_pool_test     (exports PG_CONNINFO)
#pragma once

#include "lessons/02-fibers/carrier.hpp"
#include "lessons/common/test_support.hpp" // eventually()

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

// PG_CONNINFO if set, else the fixture's connection string. Throws std::runtime_error saying
// how to get a server when there is neither.
std::string test_conninfo();

// The connection string of the cluster `pg-cluster start DIR` started, while it runs. Throws
// std::runtime_error saying how to get a server when none runs there.
std::string cluster_conninfo(const std::string& dir);

// A private server for a test that must stop and restart it (the shared one serves other
// tests). Started in a fresh directory under `parent` (the build's test-logs); stopped by the
// destructor, and by pg-cluster's watchdog should this test process die first.
class PrivateCluster {
public:
    explicit PrivateCluster(const std::string& name, const std::string& parent = test_log_dir());
    ~PrivateCluster();
    PrivateCluster(const PrivateCluster&) = delete;
    PrivateCluster& operator=(const PrivateCluster&) = delete;

    const std::string& dir() const { return dir_; }
    const std::string& conninfo() const { return conninfo_; }
    int port() const { return port_; }
    // Fast shutdown: sessions get 57P01 "terminating connection due to administrator command".
    void stop();
    // Starts it again on the same port, with the same data.
    void start();

private:
    void run(const std::string& what, const std::vector<std::string>& args);
    std::string dir_;
    std::string conninfo_;
    int port_ = 0;
};

// Borrowers: tasks that run as fibers on reactor carriers (lesson 03) or as plain OS threads,
// and wait() until all have ended. An exception escaping a task lands in errors(), not lost.
// Call on_thread() from the test's own thread; on_carrier() also from a task.
class Borrowers {
public:
    explicit Borrowers(int carriers);
    // Joins the threads, then waits for the carriers' fibers to end.
    ~Borrowers();
    Borrowers(const Borrowers&) = delete;
    Borrowers& operator=(const Borrowers&) = delete;

    void on_carrier(int carrier, std::function<void()> task);
    void on_thread(std::function<void()> task);
    // Spreads tasks by their number: carrier 0, carrier 1, ..., a plain thread, carrier 0, ...
    void anywhere(int i, std::function<void()> task);

    // True when every task has ended within `timeout`.
    bool wait(std::chrono::seconds timeout);
    std::vector<std::string> errors();

private:
    void started();
    void run(const std::function<void()>& task);

    std::vector<std::unique_ptr<Carrier>> carriers_;
    std::vector<std::thread> threads_;
    std::mutex mutex_;
    std::condition_variable all_done_;
    int running_ = 0;
    std::vector<std::string> errors_;
};

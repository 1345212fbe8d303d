#include "lessons/04-pool/pg_test_support.hpp"

#include "lessons/03-connector/reactor.hpp"
#include "lessons/common/test_support.hpp"

#include <boost/fiber/operations.hpp>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <unistd.h>
#include <vector>

#ifndef PG_FIXTURE_DIR
#error "PG_FIXTURE_DIR must name the directory of the postgres fixture's cluster"
#endif
#ifndef PG_CLUSTER
#error "PG_CLUSTER must name lessons/tools/pg-cluster"
#endif

namespace {

std::string first_line_of(const std::string& path) {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    return line;
}

// Where pg-cluster keeps the server's own files (data/, server.log) for a cluster in `dir`: `dir`
// itself, or, when the server's user may not enter `dir` (a checkout under /root, run as root),
// the directory `dir`/home names.
std::string server_home_of(const std::string& dir) {
    const std::string moved = first_line_of(dir + "/home");
    return moved.empty() ? dir : moved;
}

} // namespace

std::string test_conninfo() {
    if (const char* from_environment = std::getenv("PG_CONNINFO");
        from_environment && *from_environment)
        return from_environment;
    return cluster_conninfo(PG_FIXTURE_DIR);
}

std::string cluster_conninfo(const std::string& dir) {
    const std::string conninfo = first_line_of(dir + "/conninfo");
    const std::string pid_file = server_home_of(dir) + "/data/postmaster.pid";
    if (conninfo.empty() || access(pid_file.c_str(), F_OK) != 0)
        throw std::runtime_error(
            "no PostgreSQL for this test: run it through ctest (the `postgres` fixture starts "
            "one), or as `lessons/tools/pg-cluster run -- <test program>`");
    return conninfo;
}

// A private server's ports: away from pg-cluster's `--port auto` (25432 on), which the shared
// fixture and other tests' clusters take, so that the port stop() frees is not taken before
// start() needs it again; below the kernel's ephemeral range (32768 on). Each process starts at
// its own place in the range, and moves on when a port is taken.
constexpr int private_first_port = 26000;
constexpr int private_ports = 6000;
constexpr int private_port_tries = 10;

PrivateCluster::PrivateCluster(const std::string& name, const std::string& parent)
    : dir_(parent + "/pg-" + name + "." + std::to_string(::getpid())) {
    const int offset = ::getpid() % private_ports;
    for (int attempt = 0;; ++attempt) {
        const int port = private_first_port + (offset + attempt) % private_ports;
        try {
            run("start", {"start", dir_, "--port", std::to_string(port), "--stop-with",
                          std::to_string(::getpid()), "--replace"});
            break;
        } catch (const std::runtime_error&) {
            if (attempt + 1 == private_port_tries) throw;
        }
    }
    conninfo_ = first_line_of(dir_ + "/conninfo");
    port_ = std::stoi(first_line_of(dir_ + "/port"));
}

PrivateCluster::~PrivateCluster() {
    std::string output;
    // --delete: its data too, wherever pg-cluster put it.
    run_program({PG_CLUSTER, "stop", dir_, "--delete"}, output, std::chrono::seconds(60));
}

void PrivateCluster::stop() {
    run("stop", {"stop", dir_});
}

void PrivateCluster::start() {
    run("restart", {"start", dir_, "--port", std::to_string(port_), "--stop-with",
                    std::to_string(::getpid())});
}

void PrivateCluster::run(const std::string& what, const std::vector<std::string>& args) {
    std::vector<std::string> argv{PG_CLUSTER};
    argv.insert(argv.end(), args.begin(), args.end());
    std::string output;
    // Starting takes about a second (initdb included); a minute means something is wrong.
    const int status = run_program(argv, output, std::chrono::seconds(60));
    if (status != 0)
        throw std::runtime_error("pg-cluster " + what + " failed (status " +
                                 std::to_string(status) + "): " + output);
}

Borrowers::Borrowers(int carriers) {
    for (int i = 0; i < carriers; ++i)
        carriers_.push_back(std::make_unique<Carrier>("carrier-" + std::to_string(i), [] {
            boost::fibers::use_scheduling_algorithm<Reactor>();
        }));
}

Borrowers::~Borrowers() {
    for (auto& thread : threads_)
        thread.join();
    for (auto& carrier : carriers_)
        carrier->stop();
}

void Borrowers::on_carrier(int carrier, std::function<void()> task) {
    started();
    carriers_.at(static_cast<std::size_t>(carrier))->spawn([this, task] { run(task); });
}

void Borrowers::on_thread(std::function<void()> task) {
    started();
    threads_.emplace_back([this, task] { run(task); });
}

void Borrowers::anywhere(int i, std::function<void()> task) {
    const int places = static_cast<int>(carriers_.size()) + 1;
    if (i % places == places - 1) {
        on_thread(std::move(task));
    } else {
        on_carrier(i % places, std::move(task));
    }
}

bool Borrowers::wait(std::chrono::seconds timeout) {
    std::unique_lock<std::mutex> lock(mutex_);
    return all_done_.wait_for(lock, timeout, [this] { return running_ == 0; });
}

std::vector<std::string> Borrowers::errors() {
    std::lock_guard<std::mutex> lock(mutex_);
    return errors_;
}

void Borrowers::started() {
    std::lock_guard<std::mutex> lock(mutex_);
    ++running_;
}

void Borrowers::run(const std::function<void()>& task) {
    std::string error;
    try {
        task();
    } catch (const std::exception& e) {
        error = e.what();
    }
    // A std::mutex on a fiber is fine here: held for a few instructions, never across a wait.
    std::lock_guard<std::mutex> lock(mutex_);
    if (!error.empty()) errors_.push_back(error);
    if (--running_ == 0) all_done_.notify_all();
}

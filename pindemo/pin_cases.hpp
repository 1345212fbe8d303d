// The work pindemo's second fiber does, in two versions: pinned (a call that is not fiber-aware
// holds the whole carrier thread) and fixed (the same work, done the fiber-aware way).
//
//   case    pinned                                     fixed
//   sleep   std::this_thread::sleep_for                boost::this_fiber::sleep_for
//   mutex   lock a std::mutex another thread holds     the same with a boost::fibers::mutex
//   pq      PQexec("SELECT pg_sleep(...)")             lesson 04's PgConnection::query
//   cpu     compute without pausing                    compute, yielding every millisecond
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

class PinCase {
public:
    virtual ~PinCase() = default;
    // "waits 100 ms in std::this_thread::sleep_for (not fiber-aware)"
    virtual std::string describe() const = 0;
    // The name the working fiber gives itself.
    virtual std::string fiber_name() const = 0;
    // The work, on a fiber; takes about the duration the case was made with.
    virtual void run() = 0;
};

const std::vector<std::string>& pin_case_names();

// Throws std::runtime_error with a message for the user (no database given, cannot connect).
std::unique_ptr<PinCase> make_pin_case(const std::string& name, bool fixed,
                                       std::chrono::milliseconds duration, const std::string& db);

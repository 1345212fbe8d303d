// A stall alarm for carriers that stop switching fibers: a deadlock (a std::mutex held across a
// fiber wait), a blocking call, or a computation that never yields.
//
//   connection fiber --watch(executor)--> starts a heartbeat fiber on its carrier if none runs
//   heartbeat fiber  (one per busy carrier) records "now" every 100 ms, parked in between
//   alarm thread     (a plain OS thread) looks every 100 ms; a heartbeat 2 s old is reported:
//
//     stall alarm: carrier-0 has run no other fiber for 2 s: a thread-level wait (std::mutex?)
//     inside a fiber
//
// The heartbeat is a fiber like any other, so it runs only when its carrier switches fibers: a
// stale heartbeat means the carrier is held. It beats only while requests run on its carrier
// (an idle carrier is not stuck) and stops when they end, so carriers stop as before.
//
// The pinning detector (lessons/instruments/pinning/) reports a pin when the fiber's turn ends; a
// deadlocked turn never ends. That is why this one watches from outside, on its own thread.
#pragma once

#include "lessons/03-connector/connector.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

class StallAlarm {
public:
    // A carrier whose heartbeat is `stall` old is reported on `out`, once per stall.
    explicit StallAlarm(std::chrono::milliseconds stall = std::chrono::seconds(2),
                        std::FILE* out = stderr);
    ~StallAlarm();
    StallAlarm(const StallAlarm&) = delete;
    StallAlarm& operator=(const StallAlarm&) = delete;

    // The executor `inner`, with the carrier it runs on watched while it runs requests.
    Connector::Executor watch(Connector::Executor inner);

private:
    struct Heartbeat; // one per carrier, shared with the alarm thread
    Heartbeat& heartbeat_here();
    void look();

    std::chrono::milliseconds stall_;
    std::FILE* out_;
    std::mutex
        mutex_; // guards the list and stopping_; held for a push_back or a look, never a wait
    std::vector<std::unique_ptr<Heartbeat>> heartbeats_;
    bool stopping_ = false;
    std::condition_variable stop_;
    std::thread thread_;
};

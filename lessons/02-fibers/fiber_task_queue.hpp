// cpp-httplib runs each accepted connection as a task on a TaskQueue. This one turns every task
// into a fiber on a single carrier thread: the fiber analog of httplib::ThreadPool(1).
#pragma once

#include "lessons/02-fibers/carrier.hpp"

#include <httplib.h>

class FiberTaskQueue : public httplib::TaskQueue {
public:
    explicit FiberTaskQueue(std::string carrier_name) : carrier_(std::move(carrier_name)) {}

    // Called by cpp-httplib's accept thread for each connection.
    void enqueue(std::function<void()> task) override { carrier_.spawn(std::move(task)); }

    // Called when the server stops: waits for the connections' fibers to finish.
    void shutdown() override { carrier_.stop(); }

private:
    Carrier carrier_;
};

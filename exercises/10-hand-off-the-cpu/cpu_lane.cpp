#include "cpu_lane.hpp"

CpuLane::CpuLane(int threads, int max_waiting) : max_waiting_(max_waiting) {
    // TODO(ex10) task 1: start the threads that compute.
    (void)threads;
}

CpuLane::~CpuLane() {
    // TODO(ex10) task 1: let the threads finish what was handed over, then join them.
}

std::uint64_t CpuLane::compute(std::function<std::uint64_t()> work) {
    // TODO(ex10) task 1: hand `work` to a lane thread and park until it is done. This
    // placeholder computes right here, holding whatever runs it: on a fiber, the carrier.
    // Task 2: refuse with CpuBusy when max_waiting_ tasks already wait.
    return work();
}

int CpuLane::waiting() const {
    // TODO(ex10) task 2: how many tasks wait for a thread?
    return 0;
}

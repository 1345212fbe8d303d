// What boost::fibers::fiber_specific_ptr costs, beside a thread_local and a plain reference:
// the time per access (best of 5 rounds of 10 million) and the memory of 10,000 parked fibers
// with and without a value in one. Prints one line per figure: "<variant>\t<figure>".
// Figures only: nothing here is asserted, and they move with the machine.
#include "lessons/02-fibers/fiber_stack.hpp"

#include <boost/fiber/all.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

struct RequestContext {
    std::string request_id;
};

thread_local RequestContext carrier_context{"thread-local-id"};
boost::fibers::fiber_specific_ptr<RequestContext> fiber_context;

constexpr int accesses = 10'000'000;
constexpr int fibers = 10'000;

// Keeps the compiler from hoisting a read out of the loop or dropping it.
template <typename T> void keep(const T& value) {
    asm volatile("" : : "r"(&value) : "memory");
}

template <typename Read> double best_ns_per_access(Read read) {
    double best = 1e9;
    for (int round = 0; round < 5; ++round) {
        const auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < accesses; ++i)
            keep(read().request_id.size());
        const std::chrono::duration<double, std::nano> spent =
            std::chrono::steady_clock::now() - start;
        best = std::min(best, spent.count() / accesses);
    }
    return best;
}

long resident_kib() {
    std::ifstream statm("/proc/self/statm");
    long size = 0, resident = 0;
    statm >> size >> resident;
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

// Starts `fibers` fibers that park until all have started (each first keeping a context in
// fiber_context when `keep_context`); returns how much resident memory grew meanwhile.
long kib_for_parked_fibers(bool keep_context) {
    const long before = resident_kib();
    boost::fibers::mutex mutex;
    boost::fibers::condition_variable changed;
    int parked = 0;
    bool release = false;
    std::vector<boost::fibers::fiber> started;
    started.reserve(fibers);
    for (int i = 0; i < fibers; ++i)
        started.emplace_back(std::allocator_arg, FiberStack(64 * 1024), [&, i] {
            if (keep_context)
                fiber_context.reset(
                    new RequestContext{"request-" + std::to_string(i) + "-of-a-long-run"});
            std::unique_lock<boost::fibers::mutex> lock(mutex);
            ++parked;
            changed.notify_all();
            changed.wait(lock, [&] { return release; });
        });
    long grown = 0;
    {
        std::unique_lock<boost::fibers::mutex> lock(mutex);
        changed.wait(lock, [&] { return parked == fibers; });
        grown = resident_kib() - before;
        release = true;
        changed.notify_all();
    }
    for (auto& fiber : started)
        fiber.join();
    return grown;
}

} // namespace

int main() {
    // The accesses run on a fiber, where a request handler would.
    boost::fibers::fiber([] {
        fiber_context.reset(new RequestContext{"fiber-specific-id"});
        const RequestContext passed{"explicit-id"};
        std::printf("thread_local read\t%.1f ns per access\n",
                    best_ns_per_access([]() -> const RequestContext& { return carrier_context; }));
        std::printf("fiber_specific_ptr read\t%.1f ns per access\n",
                    best_ns_per_access([]() -> const RequestContext& { return *fiber_context; }));
        std::printf("explicit reference read\t%.1f ns per access\n",
                    best_ns_per_access([&]() -> const RequestContext& { return passed; }));
    }).join();

    const long plain = kib_for_parked_fibers(false);
    const long with_context = kib_for_parked_fibers(true);
    std::printf("%d fibers, parked\t%ld KiB resident (%.1f KiB each)\n", fibers, plain,
                double(plain) / fibers);
    std::printf("%d fibers + fiber_specific_ptr value\t%ld KiB resident (%+.0f bytes each)\n",
                fibers, with_context, (with_context - plain) * 1024.0 / fibers);
}

#include "lessons/08-pitfalls/stall_alarm.hpp"

#include "lessons/02-fibers/fiber_stack.hpp"

#include <boost/fiber/fiber.hpp>
#include <boost/fiber/operations.hpp>
#include <pthread.h>

namespace {

constexpr std::chrono::milliseconds beat_every{100};

using Clock = std::chrono::steady_clock;

std::int64_t now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now().time_since_epoch())
        .count();
}

std::string this_thread_name() {
    char name[16] = "?";
    pthread_getname_np(pthread_self(), name, sizeof name);
    return name;
}

} // namespace

struct StallAlarm::Heartbeat {
    std::string carrier;
    int requests = 0; // running on this carrier; touched by its fibers only
    std::atomic<bool> beating{false};
    std::atomic<std::int64_t> last_ms{0};
    bool reported = false; // touched by the alarm thread only
};

StallAlarm::StallAlarm(std::chrono::milliseconds stall, std::FILE* out)
    : stall_(stall), out_(out), thread_([this] { look(); }) {
}

StallAlarm::~StallAlarm() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    stop_.notify_all();
    thread_.join();
}

StallAlarm::Heartbeat& StallAlarm::heartbeat_here() {
    // Per carrier, which is what thread_local is for: only this carrier's fibers touch it.
    thread_local struct {
        const StallAlarm* owner = nullptr;
        Heartbeat* heartbeat = nullptr;
    } here;
    if (here.owner != this) {
        auto heartbeat = std::make_unique<Heartbeat>();
        heartbeat->carrier = this_thread_name();
        here = {this, heartbeat.get()};
        std::lock_guard<std::mutex> lock(mutex_);
        heartbeats_.push_back(std::move(heartbeat));
    }
    return *here.heartbeat;
}

Connector::Executor StallAlarm::watch(Connector::Executor inner) {
    return [this, inner = std::move(inner)](const std::function<bool()>& serve) {
        Heartbeat& heartbeat = heartbeat_here();
        struct Running {
            Heartbeat& heartbeat;
            ~Running() { --heartbeat.requests; }
        } running{heartbeat};
        if (heartbeat.requests++ == 0 && !heartbeat.beating) {
            heartbeat.last_ms = now_ms();
            heartbeat.beating = true;
            boost::fibers::fiber(std::allocator_arg, FiberStack(64 * 1024), [&heartbeat] {
                while (heartbeat.requests > 0) {
                    heartbeat.last_ms = now_ms();
                    boost::this_fiber::sleep_for(beat_every);
                }
                heartbeat.beating = false;
            }).detach();
        }
        return inner ? inner(serve) : serve();
    };
}

void StallAlarm::look() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stop_.wait_for(lock, beat_every, [this] { return stopping_; })) {
        for (auto& heartbeat : heartbeats_) {
            const std::int64_t age = now_ms() - heartbeat->last_ms;
            const bool stalled = heartbeat->beating && age >= stall_.count();
            if (stalled && !heartbeat->reported) {
                // The threshold, not the age: the line reads the same however late we look.
                std::fprintf(out_,
                             "stall alarm: %s has run no other fiber for %g s: a thread-level "
                             "wait (std::mutex?) inside a fiber\n",
                             heartbeat->carrier.c_str(), stall_.count() / 1000.0);
            } else if (!stalled && heartbeat->reported) {
                std::fprintf(out_, "stall alarm: %s runs other fibers again\n",
                             heartbeat->carrier.c_str());
            }
            std::fflush(out_);
            heartbeat->reported = stalled;
        }
    }
}

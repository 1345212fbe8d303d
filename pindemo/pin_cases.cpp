#include "pin_cases.hpp"

#include <boost/fiber/future.hpp>
#include <boost/fiber/mutex.hpp>
#include <boost/fiber/operations.hpp>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <type_traits>

namespace {

using Clock = std::chrono::steady_clock;

std::string ms(std::chrono::milliseconds duration) {
    return std::to_string(duration.count()) + " ms";
}

class SleepCase : public PinCase {
public:
    SleepCase(bool fixed, std::chrono::milliseconds duration)
        : fixed_(fixed), duration_(duration) {}
    std::string describe() const override {
        return "waits " + ms(duration_) +
               (fixed_ ? " in boost::this_fiber::sleep_for (fiber-aware)"
                       : " in std::this_thread::sleep_for (not fiber-aware)");
    }
    std::string fiber_name() const override { return "sleeper"; }
    void run() override {
        if (fixed_) {
            boost::this_fiber::sleep_for(duration_);
        } else {
            std::this_thread::sleep_for(duration_); // ANTI-PATTERN: the carrier sleeps with us
        }
    }

private:
    bool fixed_;
    std::chrono::milliseconds duration_;
};

// Another OS thread takes the lock first and holds it for `duration`; then our fiber asks for it.
template <typename Mutex> class MutexCase : public PinCase {
public:
    explicit MutexCase(std::chrono::milliseconds duration) : duration_(duration) {}
    ~MutexCase() override {
        if (holder_.joinable()) holder_.join();
    }
    std::string describe() const override {
        return std::is_same<Mutex, std::mutex>::value
                   ? "waits " + ms(duration_) +
                         " for a std::mutex another thread holds (not fiber-aware)"
                   : "waits " + ms(duration_) +
                         " for a boost::fibers::mutex another thread holds (fiber-aware)";
    }
    std::string fiber_name() const override { return "locker"; }
    void run() override {
        // boost::fibers futures park a fiber and block a plain thread: both sides may use them.
        boost::fibers::future<void> lock_is_held = held_.get_future();
        holder_ = std::thread([this] {
            std::lock_guard<Mutex> lock(mutex_);
            held_.set_value();
            std::this_thread::sleep_for(duration_); // a plain thread: nobody else to run here
        });
        lock_is_held.get();
        std::lock_guard<Mutex> lock(mutex_); // std::mutex: ANTI-PATTERN, the carrier waits too
    }

private:
    std::chrono::milliseconds duration_;
    Mutex mutex_;
    boost::fibers::promise<void> held_; // the other thread has the lock
    std::thread holder_;
};

// Something to compute that the optimizer cannot remove: a few rounds of a 64-bit mix.
[[gnu::noinline]] std::uint64_t crunch(std::uint64_t x, int rounds) {
    for (int i = 0; i < rounds; ++i) {
        x ^= x >> 33;
        x *= 0xff51afd7ed558ccdULL;
        x ^= x >> 29;
    }
    return x;
}

class CpuCase : public PinCase {
public:
    CpuCase(bool fixed, std::chrono::milliseconds duration) : fixed_(fixed), duration_(duration) {}
    std::string describe() const override {
        return "computes for " + ms(duration_) +
               (fixed_ ? ", yielding every millisecond" : " without pausing (it never yields)");
    }
    std::string fiber_name() const override { return "cruncher"; }
    void run() override {
        // How long a fiber may compute before it lets the others run: far below the detector's
        // threshold, and long enough that switching costs nothing next to the work.
        constexpr auto slice = std::chrono::milliseconds(1);
        const auto end = Clock::now() + duration_;
        auto next_yield = Clock::now() + slice;
        std::uint64_t x = 42;
        for (auto now = Clock::now(); now < end; now = Clock::now()) {
            x = crunch(x, 20000);
            if (fixed_ && now >= next_yield) {
                boost::this_fiber::yield();
                next_yield = Clock::now() + slice;
            }
        }
        result_ = x;
    }

private:
    bool fixed_;
    std::chrono::milliseconds duration_;
    volatile std::uint64_t result_ = 0;
};

} // namespace

const std::vector<std::string>& pin_case_names() {
    static const std::vector<std::string> names = {"sleep", "mutex", "cpu"};
    return names;
}

std::unique_ptr<PinCase> make_pin_case(const std::string& name, bool fixed,
                                       std::chrono::milliseconds duration, const std::string&) {
    if (name == "sleep") return std::make_unique<SleepCase>(fixed, duration);
    if (name == "mutex") {
        if (fixed) return std::make_unique<MutexCase<boost::fibers::mutex>>(duration);
        return std::make_unique<MutexCase<std::mutex>>(duration);
    }
    if (name == "cpu") return std::make_unique<CpuCase>(fixed, duration);
    throw std::runtime_error("unknown case '" + name + "'");
}

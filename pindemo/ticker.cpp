#include "pindemo/ticker.hpp"

#include <algorithm>
#include <boost/fiber/operations.hpp>

void Ticker::run() {
    using Clock = std::chrono::steady_clock;
    const auto start = Clock::now();
    const auto end = start + run_for_;
    auto last_tick = start;
    int slot = 1; // the next tick is due at start + slot * period
    while (start + slot * period <= end) {
        boost::this_fiber::sleep_until(start + slot * period);
        const auto now = Clock::now();
        ++report_.ticked;
        report_.longest_gap_ms =
            std::max(report_.longest_gap_ms,
                     std::chrono::duration<double, std::milli>(now - last_tick).count());
        last_tick = now;
        // Ticks whose time passed while we could not run are skipped, not made up.
        const int late_slots = static_cast<int>((now - start) / period);
        slot = std::max(slot + 1, late_slots + 1);
    }
    report_.due = static_cast<int>(run_for_ / period);
    report_.missed = report_.due - report_.ticked;
}

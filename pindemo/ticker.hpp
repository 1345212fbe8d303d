// A fiber that wants to run every `period`, and counts how often it could not: the victim in
// pindemo. It sleeps until fixed points in time (start + k * period), so a late tick does not
// shift the ones after it; a tick more than a whole period late is a missed tick.
#pragma once

#include <chrono>

struct TickerReport {
    int due = 0;    // ticks that fell due while it ran
    int ticked = 0; // ticks it made
    int missed = 0; // due - ticked: the carrier was not free when they fell due
    double longest_gap_ms = 0;
};

class Ticker {
public:
    // Every 10 ms: ten times finer than the 100 ms pin pindemo shows, and coarse enough that an
    // unloaded machine keeps the beat exactly.
    static constexpr std::chrono::milliseconds period{10};

    explicit Ticker(std::chrono::milliseconds run_for) : run_for_(run_for) {}
    void run(); // on a fiber; returns after run_for
    TickerReport report() const { return report_; }

private:
    std::chrono::milliseconds run_for_;
    TickerReport report_;
};

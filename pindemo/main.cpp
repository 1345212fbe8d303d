// pindemo: one carrier thread, two fibers, and one fiber that pins the carrier.
//
// "ticker" wants to run every 10 ms. After 50 ms a second fiber does about 100 ms of work. Done
// the pinned way (a call that is not fiber-aware) the carrier thread is stuck with it and the
// ticker misses its ticks; the pinning detector reports exactly that, with a stack sample taken
// during the pin. With --fixed the same work is done the fiber-aware way: the ticker keeps its
// beat and nothing is reported.
#include "lessons/02-fibers/carrier.hpp"
#include "lessons/03-connector/reactor.hpp"
#include "lessons/common/flags.hpp"
#include "lessons/common/process.hpp"
#include "lessons/instruments/pinning/fiber_name.hpp"
#include "lessons/instruments/pinning/pinning_detector.hpp"
#include "pindemo/pin_cases.hpp"
#include "pindemo/ticker.hpp"

#include <boost/fiber/operations.hpp>
#include <cstdio>

int main(int argc, char** argv) {
    bool fixed = false;
    std::string events_path;
    std::string case_name = "sleep";
    std::string db;
    PinningDetector::Options detector_options;
    std::chrono::milliseconds work{100};
    Flags flags("pindemo", "A fiber pins its carrier thread while a ticker fiber on the same "
                           "carrier misses its ticks; the pinning detector reports it.");
    flags.add("fixed", fixed, "do the same work the fiber-aware way: nothing to report")
        .add("case", case_name, pin_case_names(), "what the second fiber does")
        .add("events", events_path, "also write each event to this file as one JSON line")
        .add("db", db,
             "libpq connection string for --case pq, e.g. what lessons/tools/pg-cluster prints")
        .add("threshold", detector_options.threshold, std::chrono::milliseconds(1),
             std::chrono::hours(1), "the shortest pin the detector reports")
        .add("work", work, std::chrono::milliseconds(1), std::chrono::hours(1),
             "how long the second fiber's work takes");
    flags.parse(argc, argv);

    std::unique_ptr<PinCase> pin_case;
    try {
        pin_case = make_pin_case(case_name, fixed, work, db);
    } catch (const std::invalid_argument& e) {
        fail("pindemo", e.what(), 2); // a flag is missing: as for any bad flag
    } catch (const std::exception& e) {
        fail("pindemo", e.what());
    }
    detector_options.events_path = events_path;
    std::unique_ptr<PinningDetector> detector;
    try {
        detector = std::make_unique<PinningDetector>(detector_options);
    } catch (const std::exception& e) {
        fail("pindemo", e.what(), 2);
    }

    // How long the ticker runs, and when the second fiber starts: the ticker first shows its
    // beat, then the work comes, then the ticker shows whether it got its beat back.
    const auto work_starts = std::chrono::milliseconds(50);
    const auto run_for = work_starts + work + std::chrono::milliseconds(150);
    std::printf("pindemo: fiber \"ticker\" ticks every %lld ms; after %lld ms fiber \"%s\" %s\n",
                static_cast<long long>(Ticker::period.count()),
                static_cast<long long>(work_starts.count()), pin_case->fiber_name().c_str(),
                pin_case->describe().c_str());
    std::fflush(stdout);

    Ticker ticker(run_for);
    std::string failure; // what went wrong in the working fiber, if anything
    {
        Carrier carrier("carrier-0", [] { use_carrier_algorithm<Reactor>(); });
        carrier.spawn([&] {
            name_this_fiber("ticker");
            ticker.run();
        });
        carrier.spawn([&] {
            name_this_fiber(pin_case->fiber_name());
            boost::this_fiber::sleep_for(work_starts);
            try {
                pin_case->run();
            } catch (const std::exception& e) {
                failure = e.what();
            }
        });
        carrier.stop(); // waits for both fibers
    }
    detector.reset(); // reports what is left, prints its summary on stderr
    std::fflush(stderr);
    if (!failure.empty()) fail("pindemo", failure);

    const TickerReport report = ticker.report();
    std::printf("ticker: %d ticks due, %d on time, %d missed; longest gap between ticks %.0f ms\n",
                report.due, report.ticked, report.missed, report.longest_gap_ms);
    return 0;
}

// The pinning detector as three flags of a fiber server, opted into by one line of its main():
//
//   PinningFlags pinning(flags); // before flags.parse()
//
//   --detect-pinning            report fibers that pin their carrier, on stderr
//   --pinning-threshold 20ms    ... that hold it at least this long while others wait
//   --pinning-events FILE       ... and write each event to FILE as one JSON line
//
// Once the flags are parsed (Flags::on_parsed), before the server starts any carrier, it starts
// the detector; the detector runs until the program exits, after main() has stopped its carriers,
// and prints its last report then.
#pragma once

#include "lessons/common/flags.hpp"
#include "lessons/instruments/pinning/pinning_detector.hpp"

class PinningFlags {
public:
    explicit PinningFlags(Flags& flags);
    PinningFlags(const PinningFlags&) = delete;
    PinningFlags& operator=(const PinningFlags&) = delete;

private:
    void start();

    std::string program_; // for the one-line error, as Flags words its own
    bool detect_ = false;
    PinningDetector::Options options_;
};

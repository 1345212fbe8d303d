// The tracer (recorder.hpp) as two flags of a fiber server, opted into by one line of its main():
//
//   TraceFlags trace(flags); // before flags.parse()
//
//   --trace FILE            write a trace of the last --trace-window to FILE whenever the server
//                           gets SIGUSR1 (kill -USR1 PID) while it runs, and at exit (then the
//                           window before the stop began, and all since). FILE: absent or a
//                           regular file, never a device, FIFO or link
//   --trace-window 2s       ... of this much time
//
// Once the flags are parsed, before the server starts any carrier, it starts tracing (or says in
// one line that FILE cannot be written, and exits 2). The trace is written at exit, after main()
// has stopped its carriers, and on SIGUSR1 by a thread that waits for it (block_shutdown_signals()
// has blocked it in every thread).
#pragma once

#include "lessons/common/flags.hpp"
#include "lessons/instruments/trace/recorder.hpp"

class TraceFlags {
public:
    explicit TraceFlags(Flags& flags);
    TraceFlags(const TraceFlags&) = delete;
    TraceFlags& operator=(const TraceFlags&) = delete;

private:
    void start();

    TraceOptions options_;
};

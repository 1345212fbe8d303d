// Turns the return addresses of a stack sample into readable frames, on the detector's reporting
// thread.
//
// For each address: which loaded file it is in (dladdr), then its function, source file and
// line from that file's debug information, asking binutils' addr2line (installed with g++; the
// build keeps debug information: RelWithDebInfo). addr2line also reports the functions the
// compiler inlined at that point, each as a frame of its own. For files without debug
// information (Debian's libc, libpq) the dynamic symbol table names the exported functions
// (clock_nanosleep, poll, PQexec); anything else is shown as "file+offset". Without addr2line
// everything still works, with fewer names. Results are cached per address, so a pin that
// repeats costs no second lookup.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

struct Frame {
    std::string function; // demangled; "??" when unknown
    std::string file;     // source file (relative to the repository when inside it), or ""
    int line = 0;
    std::string object;      // the loaded file: "libc.so.6", or the program's name
    bool in_program = false; // in the executable, not in a shared library
    bool in_project = false; // the source file is part of this repository
    // A function a shared library exports under this name: what a program calls (poll,
    // pthread_mutex_lock, PQexec), as opposed to the library's internals.
    bool exported = false;

    // "clock_nanosleep (libc.so.6)" or "run_case at pindemo/pin_cases.cpp:41"
    std::string text() const;
};

class Symbolizer {
public:
    // `first_is_exact`: addresses[0] is the interrupted instruction; all others are return
    // addresses (the instruction after a call), looked up one byte earlier to name the call.
    std::vector<Frame> frames(void* const* addresses, int count, bool first_is_exact);

private:
    std::map<std::uintptr_t, std::vector<Frame>> cache_;
};

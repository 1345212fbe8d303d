// Turns the return addresses of a stack sample into readable frames, with libbacktrace (GCC's
// library, the one Boost.Stacktrace's backend uses; it reads the debug information the build
// keeps). Unlike Boost.Stacktrace's frame, it also names the functions the compiler inlined at
// an address, such as a handler's lambda inside std::function: each becomes a frame of its own.
//
//   "clock_nanosleep (libc.so.6)"   a shared library: the name it exports
//   "run at pindemo/pin_cases.cpp:39"   a function of this repository, relative to its root
#pragma once

#include <string>
#include <vector>

struct Frame {
    std::string function; // demangled; "??" when unknown
    std::string file;     // source file, relative to the repository when inside it; or ""
    int line = 0;
    std::string object;      // the loaded file it is in: "libc.so.6", "pindemo"
    bool in_project = false; // the source file is part of this repository
    bool in_program = false; // in the executable itself, not in a shared library

    std::string text() const;
};

// `first_is_exact`: addresses[0] is the interrupted instruction; every other one is a return
// address (the instruction after a call), looked up one byte earlier to name the call itself.
std::vector<Frame> name_frames(void* const* addresses, int count, bool first_is_exact);

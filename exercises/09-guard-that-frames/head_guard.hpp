// Exercise 09: a request-head guard that must frame exactly like the parser behind it.
//
// The guard sees a request head before cpp-httplib does (the connector cuts the head at the
// first CRLF CRLF and hands it here), and refuses what the parser must never get: a request
// body, a Range header long enough to send cpp-httplib's std::regex deep into the stack, a
// second Host. It protects the parser only if both split the bytes into the same lines: a
// header the guard reads as part of another line, the parser may read as a header of its own.
#pragma once

#include <string>
#include <string_view>

// ---- do not change: the graded tests use these declarations ----

struct HeadVerdict {
    bool admitted = true;
    int status = 0;     // when refused: 400, 413, 416 or 431
    std::string reason; // when refused: one line for the response body
};

// Checks a complete request head: the request line, the header lines and the empty line that
// ends it, with nothing after it.
HeadVerdict guard_head(std::string_view head);

// Task 1. A head that this file's guard, as you found it, admits, and that cpp-httplib reads
// with a header the guard never saw: your fuzz target's finding, kept as a regression test.
std::string smuggling_head();

// ---- end of do not change ----

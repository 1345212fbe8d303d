# Labels a graded test program's CTest tests by their Catch2 tags (run after each build by
# exercises/CMakeLists.txt, beside catch_discover_tests, which gives the tests names only):
#   [task_K][points=P]  ->  LABELS task_K;points=P;core|stretch, and on every test exNN (its
#                           exercise: the folder's number, which the tag [exN] repeats) and the
#                           LABELS given
#
#   cmake -D PROGRAM=<test program> -D PREFIX=<CTest name prefix> -D EXERCISE=<NN>
#         -D STRETCH=<stretch tasks> -D LABELS=<more labels> -D OUTPUT=<file>
#         -P label_graded_tests.cmake
#
# Each tag's tests come from the program itself (`PROGRAM "[tag]" --list-test-names-only`, the
# listing catch_discover_tests reads), so the names match the discovered tests exactly.

cmake_minimum_required(VERSION 3.25) # a script run with -P sets its own policies

# tests_tagged(<out> [tag]): the names of the program's tests with this tag (all without one).
function(tests_tagged out)
    execute_process(COMMAND ${PROGRAM} ${ARGN} --list-test-names-only
                    OUTPUT_VARIABLE listing RESULT_VARIABLE status)
    # Catch2 exits with the number of tests it listed; anything else is a crash.
    if(NOT status MATCHES "^[0-9]+$")
        message(FATAL_ERROR "${PROGRAM} could not list its tests ${ARGN}: ${status}")
    endif()
    string(REGEX REPLACE "\n$" "" listing "${listing}")
    string(REPLACE "\n" ";" listing "${listing}")
    set(${out} "${listing}" PARENT_SCOPE)
endfunction()

execute_process(COMMAND ${PROGRAM} --list-tags OUTPUT_VARIABLE listing)
string(REGEX MATCHALL "\\[(task_[0-9]+|points=[0-9]+)\\]" tags "${listing}")
list(REMOVE_DUPLICATES tags)

# Each test's labels, kept in a variable named after a hash of its name.
tests_tagged(all)
foreach(name IN LISTS all)
    string(MD5 key "${name}")
    set(labels_${key} ex${EXERCISE} ${LABELS})
endforeach()
foreach(tag IN LISTS tags)
    string(REGEX REPLACE "^\\[(.*)\\]$" "\\1" label "${tag}")
    if(label MATCHES "^task_([0-9]+)$")
        if(CMAKE_MATCH_1 IN_LIST STRETCH)
            list(APPEND label stretch)
        else()
            list(APPEND label core)
        endif()
    endif()
    tests_tagged(names "${tag}")
    foreach(name IN LISTS names)
        string(MD5 key "${name}")
        list(APPEND labels_${key} ${label})
    endforeach()
endforeach()

# A test without a tag shows by the label it lacks (common/grader_test.py checks every test has
# task_K and points=P).
set(script "")
foreach(name IN LISTS all)
    string(MD5 key "${name}")
    string(APPEND script "set_tests_properties([==[${PREFIX}${name}]==] PROPERTIES LABELS "
                         "\"${labels_${key}}\")\n")
endforeach()
file(WRITE ${OUTPUT} "${script}")

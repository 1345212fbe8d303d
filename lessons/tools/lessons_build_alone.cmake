# The test lessons_build_alone (cmake -DSOURCE=<repo> -DBUILD=<build> [-DLAUNCHER=ccache] -P ...):
#  1. in the build at BUILD, no lesson target links or needs a target from outside the lessons or
#     from a later lesson (BUILD/lesson-dependencies.txt, written by check_lessons_stand_alone in
#     lessons/); with -DONLY_CHECK=ON (the test lessons_depend_one_way) only this;
#  2. a fresh tree with COURSE_ONLY=ON, BUILD/course-only, configures without such a dependency;
#  3. it builds, and its unit and docs tests pass (the docs tests run the lessons' programs as
#     their READMEs show them: a flag another folder injected would be missing).
# With -DPLANT=ON (the test lessons_rank_check_catches_planted_links) instead: a tree configured
# with links that break the ranks, BUILD/planted-links, whose check must name each of them and
# nothing else (a link within the ranks is planted too).
cmake_minimum_required(VERSION 3.25)

function(no_lesson_dependencies build)
    file(READ ${build}/lesson-dependencies.txt wrong)
    if(wrong)
        message(FATAL_ERROR "in ${build}:\n${wrong}")
    endif()
endfunction()

function(run what)
    execute_process(COMMAND ${ARGN} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE out)
    if(NOT status EQUAL 0)
        message(FATAL_ERROR "${out}\nCOURSE_ONLY=ON: ${what} failed (${status})")
    endif()
endfunction()

if(PLANT)
    # target=dependency: what each plant breaks.
    set(wrong_links
        "lesson03_parts=spike_parts"                 # a lesson links an instrument taught later
        "http_client=lesson04_parts"                 # an instrument (03) uses a later lesson
        "lesson02_parts=lesson03_parts"              # a lesson uses a later lesson
        "common=lesson01_parts"                      # lessons/common (00) uses a lesson
        "lesson04_parts=INTERFACE:lesson06_parts"    # ...passed on to the lesson's users
        "lesson01_parts=$<$<BOOL:1>:lesson05_parts>") # ...behind a generator expression
    set(fine_links "lesson05_parts=pinning" "crowd=lesson03_parts") # within the ranks
    set(tree ${BUILD}/planted-links)
    file(REMOVE_RECURSE ${tree})
    list(JOIN wrong_links "\\;" planted)
    list(JOIN fine_links "\\;" fine)
    run("configure with planted links" ${CMAKE_COMMAND} -S ${SOURCE} -B ${tree} -DCOURSE_ONLY=ON
        "-DPLANT_LINKS=${planted}\\;${fine}")
    file(READ ${tree}/lesson-dependencies.txt found)
    foreach(link IN LISTS wrong_links)
        string(FIND "${link}" "=" at)
        string(SUBSTRING "${link}" 0 ${at} target)
        math(EXPR at "${at} + 1")
        string(SUBSTRING "${link}" ${at} -1 dep)
        string(REGEX REPLACE "^INTERFACE:" "" dep "${dep}")
        # Each report is a line "TARGET (rank NN) links [or needs] DEP...".
        set(seen FALSE)
        string(REGEX MATCHALL "[^\n]+" lines "${found}")
        foreach(line IN LISTS lines)
            string(FIND "${line}" "${target} (rank " starts)
            string(FIND "${line}" " ${dep}" names)
            if(starts EQUAL 0 AND names GREATER 0)
                set(seen TRUE)
            endif()
        endforeach()
        if(NOT seen)
            message(FATAL_ERROR "the rank check missed the planted link ${target} -> ${dep}; it "
                                "found:\n${found}")
        endif()
    endforeach()
    list(LENGTH lines count)
    list(LENGTH wrong_links expected)
    if(NOT count EQUAL expected)
        message(FATAL_ERROR "the rank check reported ${count} links, not the ${expected} planted "
                            "wrong ones:\n${found}")
    endif()
    message(STATUS "the rank check named each of the ${expected} planted wrong links, and no "
                   "link within the ranks")
    return()
endif()
no_lesson_dependencies(${BUILD})
if(ONLY_CHECK) # the test lessons_depend_one_way: step 1 only
    return()
endif()
set(tree ${BUILD}/course-only)
# A fresh configuration (the cache goes), but the objects stay for the next run's build to reuse.
file(REMOVE_RECURSE ${tree}/CMakeCache.txt ${tree}/CMakeFiles)
# -O0 without debug information: this build checks what builds and passes, not how fast.
run("configure" ${CMAKE_COMMAND} -S ${SOURCE} -B ${tree} -DCOURSE_ONLY=ON -DCMAKE_BUILD_TYPE=None
                -DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER})
no_lesson_dependencies(${tree})
run("the build" ${CMAKE_COMMAND} --build ${tree} -j2)
run("the unit and docs tests" ${CMAKE_CTEST_COMMAND} --test-dir ${tree} -L "^(unit|docs)$" -j2
                                   --output-on-failure)
message(STATUS "COURSE_ONLY=ON: the lessons build and pass their unit and docs tests alone")

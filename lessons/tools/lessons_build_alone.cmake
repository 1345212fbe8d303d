# The test lessons_build_alone (cmake -DSOURCE=<repo> -DBUILD=<build> [-DLAUNCHER=ccache] -P ...):
#  1. in the build at BUILD, no lesson target links or needs a target from outside the lessons or
#     from a later lesson (BUILD/lesson-dependencies.txt, written by check_lessons_stand_alone in
#     lessons/); with -DONLY_CHECK=ON (the test lessons_depend_one_way) only this;
#  2. a fresh tree with COURSE_ONLY=ON, BUILD/course-only, configures without such a dependency;
#  3. it builds, and its unit and docs tests pass (the docs tests run the lessons' programs as
#     their READMEs show them: a flag another folder injected would be missing).
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

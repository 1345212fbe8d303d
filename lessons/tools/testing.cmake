# The test helpers every folder uses (included by the top-level CMakeLists.txt):
#   lesson_test()         a Catch2 test program whose cases become labelled CTest tests
#   lesson_readme_test()  a lesson text's quoted code and commands still match the repository
#   commands_test()       the commands in some markdown texts work when pasted
#   the `postgres` fixture: a throwaway PostgreSQL for the tests that name it
# lesson_test() links `catch_main` and `test_support`, defined in lessons/CMakeLists.txt.

# lesson_test(<target> LESSON <NN> SOURCES <files...> [UNIT] [LIBS <libs...>] [NEEDS <targets...>]
#             [FIXTURES <names...>] [LABELS <labels...>])
# A Catch2 test program whose test cases become CTest tests labelled lessonNN (and `unit` when
# UNIT is given: the sanitizer build runs those; and any LABELS, e.g. `pindemo`; a part outside
# the lessons may leave LESSON out). NEEDS names the programs the tests start; the
# tests find them in BIN_DIR. FIXTURES names CTest fixtures the tests need: `postgres` (below)
# makes CTest start a throwaway PostgreSQL before them and stop it after them.
function(lesson_test target)
    cmake_parse_arguments(T "UNIT" "LESSON" "SOURCES;LIBS;NEEDS;FIXTURES;LABELS" ${ARGN})
    add_executable(${target} ${T_SOURCES} $<TARGET_OBJECTS:catch_main>)
    set_property(GLOBAL APPEND PROPERTY TEST_PROGRAMS ${target})
    if(T_UNIT)
        set_property(GLOBAL APPEND PROPERTY UNIT_TEST_PROGRAMS ${target}) # the target unit_tests
    endif()
    target_link_libraries(${target} PRIVATE test_support Catch2::Catch2 ${T_LIBS})
    target_compile_definitions(${target} PRIVATE BIN_DIR="${CMAKE_RUNTIME_OUTPUT_DIRECTORY}")
    if(T_NEEDS)
        add_dependencies(${target} ${T_NEEDS})
    endif()
    set(labels ${T_LABELS})
    if(T_LESSON)
        list(APPEND labels lesson${T_LESSON})
    endif()
    if(T_UNIT)
        list(APPEND labels unit)
    endif()
    # --warn NoTests: a test whose name CTest mangled (a ';' splits it) matches nothing and
    # would pass without running; this way it fails.
    catch_discover_tests(${target} TEST_PREFIX "${target}: " TEST_LIST ${target}_TESTS
                         EXTRA_ARGS --warn NoTests PROPERTIES TIMEOUT 300)
    # Labels are set by a script CTest runs after discovery: catch_discover_tests's own
    # PROPERTIES cannot carry a list such as "lesson03;unit".
    set(labels_script ${CMAKE_CURRENT_BINARY_DIR}/${target}_labels.cmake)
    file(WRITE ${labels_script}
         "set_tests_properties(\${${target}_TESTS} PROPERTIES LABELS \"${labels}\")\n")
    if(T_FIXTURES)
        file(APPEND ${labels_script} "set_tests_properties(\${${target}_TESTS} PROPERTIES "
                                     "FIXTURES_REQUIRED \"${T_FIXTURES}\")\n")
    endif()
    set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${labels_script})
endfunction()

# lesson_readme_test(<NN>): the code blocks in this lesson's README.md still match the sources
# they quote (lessons/tools/check-snippets), and its commands work when pasted into a shell at the
# repository's root (lessons/tools/check-commands), so the lesson text cannot drift from the code.
function(lesson_readme_test lesson)
    add_test(NAME lesson${lesson}_readme
             COMMAND ${PROJECT_SOURCE_DIR}/lessons/tools/check-snippets
                     ${CMAKE_CURRENT_SOURCE_DIR}/README.md)
    commands_test(lesson${lesson}_commands "lesson${lesson};docs" ${CMAKE_CURRENT_SOURCE_DIR}/README.md)
    set_tests_properties(lesson${lesson}_readme PROPERTIES LABELS "lesson${lesson};docs")
endfunction()

# commands_test(<name> <labels> <texts...>): the shell commands in these markdown texts work when
# pasted at the repository's root (lessons/tools/check-commands), against this build's programs.
function(commands_test name labels)
    add_test(NAME ${name} COMMAND ${PROJECT_SOURCE_DIR}/lessons/tools/check-commands
                                  --build ${CMAKE_BINARY_DIR} ${ARGN})
    set_tests_properties(${name} PROPERTIES LABELS "${labels}")
endfunction()

# The `postgres` fixture: CTest starts a throwaway PostgreSQL (lessons/tools/pg-cluster) in
# <build>/pg before the first test that names it (lesson_test(... FIXTURES postgres)) and stops it
# after the last, whether the tests passed or not. Should ctest itself be interrupted, the
# cluster's watchdog (--stop-with parent: ctest) stops it. Tests read <build>/pg/conninfo.
set(PG_CLUSTER ${PROJECT_SOURCE_DIR}/lessons/tools/pg-cluster) # also read by lessons/04-pool
add_test(NAME postgres_start
         COMMAND ${PG_CLUSTER} start ${CMAKE_BINARY_DIR}/pg --port auto --stop-with parent --replace)
set_tests_properties(postgres_start PROPERTIES FIXTURES_SETUP postgres LABELS postgres TIMEOUT 120)
add_test(NAME postgres_stop COMMAND ${PG_CLUSTER} stop ${CMAKE_BINARY_DIR}/pg)
set_tests_properties(postgres_stop PROPERTIES FIXTURES_CLEANUP postgres LABELS postgres TIMEOUT 120)

# Sanitizer and fuzzing switches (docs/testing.md#sanitizers-and-fuzzing). Included by the top-level
# CMakeLists.txt before any target is defined, so the flags reach every project target, the
# shared precompiled header included (it must be built with the same flags as its users).
#
# CAFMESH_SANITIZE: empty (default), `address,undefined` or `thread`. Adds
# -fsanitize=<value> -fno-omit-frame-pointer (and -fno-sanitize-recover=undefined, so that
# undefined behaviour fails the test that hits it) to every compilation and link, and gives
# every ctest test the runtime options below (cafmesh_sanitizer_test_environment).
#
# CAFMESH_FUZZ: builds the libFuzzer targets of tests/fuzz and examples/mainjob/fuzz (clang
# only): every project target is compiled with -fsanitize=fuzzer-no-link (coverage feedback
# from the libraries too), the fuzz executables link -fsanitize=fuzzer.
#
# libcaf is Debian's build, not instrumented: memory errors inside libcaf's own code, data
# races between two of libcaf's own accesses and undefined behaviour in its compiled code go
# unseen (CAF's header code compiled into our objects is instrumented); ASan still replaces
# malloc and free for libcaf, so our use of memory that CAF freed is caught.

set(CAFMESH_SANITIZE "" CACHE STRING
    "Sanitizers for every project target: empty, address,undefined or thread")
set_property(CACHE CAFMESH_SANITIZE PROPERTY STRINGS "" "address,undefined" "thread")
option(CAFMESH_FUZZ "Build the libFuzzer targets of tests/fuzz and examples/mainjob/fuzz (needs clang)" OFF)

# CAFMESH_LIVE_TIME_SCALE: the --time-scale the demo live runs of the integration label pass
# (those without faults or bursts; tests/integration/example_runs.cmake). A ThreadSanitizer build's
# processes run 5 to 15 times slower than the machine the short scenarios were written for,
# so that build stretches them 4 times (times x 4, rate / 4: the same deliveries); an
# ASan+UBSan build passes them unstretched. -DCAFMESH_LIVE_TIME_SCALE=N sets it for a slow
# machine.
if(NOT DEFINED CAFMESH_LIVE_TIME_SCALE)
  if(CAFMESH_SANITIZE STREQUAL "thread")
    set(CAFMESH_LIVE_TIME_SCALE 4)
  else()
    set(CAFMESH_LIVE_TIME_SCALE 1)
  endif()
endif()
if(NOT CAFMESH_LIVE_TIME_SCALE MATCHES "^[1-9][0-9]?$|^100$")
  message(FATAL_ERROR "CAFMESH_LIVE_TIME_SCALE: expected an integer from 1 to 100, got "
                      "\"${CAFMESH_LIVE_TIME_SCALE}\"")
endif()

set(CAFMESH_SANITIZER_DIR "${CMAKE_CURRENT_LIST_DIR}/sanitizers")

if(NOT CAFMESH_SANITIZE STREQUAL "" AND NOT CAFMESH_SANITIZE MATCHES "^(address,undefined|thread)$")
  message(FATAL_ERROR
          "CAFMESH_SANITIZE: expected empty, address,undefined or thread, got \"${CAFMESH_SANITIZE}\"")
endif()
if(CAFMESH_FUZZ AND NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "CAFMESH_FUZZ needs clang (libFuzzer): configure a separate build "
                      "directory with -DCMAKE_CXX_COMPILER=clang++-16")
endif()

set(cafmesh_sanitize_flags "")
if(CAFMESH_SANITIZE)
  list(APPEND cafmesh_sanitize_flags -fsanitize=${CAFMESH_SANITIZE} -fno-omit-frame-pointer)
  if(CAFMESH_SANITIZE MATCHES "undefined")
    # Undefined behaviour fails its test. The null check alone stays recoverable, so that
    # cmake/sanitizers/ubsan.supp can name the one report inside CAF's header code that is
    # known and harmless (UBSan suppresses recoverable checks only); halt_on_error=1 in
    # UBSAN_OPTIONS still makes every other null report fatal.
    list(APPEND cafmesh_sanitize_flags -fno-sanitize-recover=undefined -fsanitize-recover=null)
  endif()
endif()
if(cafmesh_sanitize_flags OR CAFMESH_FUZZ)
  # Line tables only: file and line in every report at a small cost in compile time.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    add_compile_options(-gline-tables-only)
  else()
    add_compile_options(-g1)
  endif()
endif()
add_compile_options(${cafmesh_sanitize_flags})
add_link_options(${cafmesh_sanitize_flags})
if(CAFMESH_FUZZ)
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()

# cafmesh_sanitizer_link_interface(<target>): an instrumented static library needs the
# sanitizer runtime wherever it is linked, in an application that installed it too.
function(cafmesh_sanitizer_link_interface tgt)
  if(cafmesh_sanitize_flags)
    target_link_options(${tgt} INTERFACE $<INSTALL_INTERFACE:${cafmesh_sanitize_flags}>)
  endif()
endfunction()

# The runtime options every test gets (ctest ENVIRONMENT). Reports abort the test (exit code
# non-zero); suppression files under cmake/sanitizers/, every entry with its reason.
set(cafmesh_sanitizer_env "")
if(CAFMESH_SANITIZE MATCHES "address")
  list(APPEND cafmesh_sanitizer_env
       "ASAN_OPTIONS=detect_leaks=1:check_initialization_order=1:detect_stack_use_after_return=0"
       "LSAN_OPTIONS=suppressions=${CAFMESH_SANITIZER_DIR}/lsan.supp:print_suppressions=0")
endif()
if(CAFMESH_SANITIZE MATCHES "undefined")
  list(APPEND cafmesh_sanitizer_env
       "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:suppressions=${CAFMESH_SANITIZER_DIR}/ubsan.supp")
endif()
if(CAFMESH_SANITIZE STREQUAL "thread")
  list(APPEND cafmesh_sanitizer_env
       "TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=${CAFMESH_SANITIZER_DIR}/tsan.supp")
endif()

# cafmesh_sanitizer_test_environment(): called at the end of every CMakeLists.txt that adds
# tests; gives each test of that directory the options above. Tests added with add_test get
# them now; doctest's cases are discovered only at build time, so a ctest include file,
# read after doctest's own, sets them on every `<target>_TESTS` list doctest defined.
function(cafmesh_sanitizer_test_environment)
  if(NOT cafmesh_sanitizer_env)
    return()
  endif()
  # The TESTS list splits a name holding ';' into parts: rejoin them until a test is known.
  get_property(tests DIRECTORY PROPERTY TESTS)
  set(pending "")
  foreach(part IN LISTS tests)
    if(pending STREQUAL "")
      set(name "${part}")
    else()
      set(name "${pending};${part}")
    endif()
    if(TEST "${name}")
      set_property(TEST "${name}" PROPERTY ENVIRONMENT "${cafmesh_sanitizer_env}")
      set(pending "")
    else()
      set(pending "${name}")
    endif()
  endforeach()
  if(NOT pending STREQUAL "")
    message(FATAL_ERROR "cafmesh_sanitizer_test_environment: no test named \"${pending}\"")
  endif()
  get_property(targets DIRECTORY PROPERTY BUILDSYSTEM_TARGETS)
  set(script "")
  foreach(t IN LISTS targets)
    string(APPEND script "if(DEFINED ${t}_TESTS)\n"
                         "  set_tests_properties(\${${t}_TESTS} PROPERTIES ENVIRONMENT\n"
                         "    [==[${cafmesh_sanitizer_env}]==])\n"
                         "endif()\n")
  endforeach()
  set(file "${CMAKE_CURRENT_BINARY_DIR}/cafmesh_sanitizer_environment.cmake")
  file(WRITE "${file}" "${script}")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${file}")
endfunction()

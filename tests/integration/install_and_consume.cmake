# cmake -P driver of the `install_and_consume` integration test (see tests.cmake).
# Inputs: CAFMESH_BUILD_DIR, CAFMESH_CONFIG, CAFMESH_LIBDIR, CONSUMER_SOURCE_DIR, HELLO_SOURCE_DIR, WORK_DIR,
# GENERATOR, CXX_COMPILER, and optionally CAF_INCLUDE_DIR, CAF_core_LIBRARY, CAF_io_LIBRARY.
cmake_minimum_required(VERSION 3.25)

foreach(var IN ITEMS CAFMESH_BUILD_DIR CAFMESH_LIBDIR CONSUMER_SOURCE_DIR HELLO_SOURCE_DIR WORK_DIR
                    GENERATOR)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "install_and_consume: ${var} not set")
  endif()
endforeach()
if("${CAFMESH_CONFIG}" STREQUAL "")
  set(CAFMESH_CONFIG Release)
endif()

set(prefix "${WORK_DIR}/prefix")
set(consumer_build "${WORK_DIR}/consumer-build")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

# Runs a command; fails the test with its output unless it exits 0. Output in `<out_var>`.
function(run_step what out_var)
  execute_process(COMMAND ${ARGN}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install_and_consume: ${what} failed (${rc})\n${out}\n${err}")
  endif()
  set(${out_var} "${out}${err}" PARENT_SCOPE)
endfunction()

# 1. Install.
run_step("cmake --install" install_log
  "${CMAKE_COMMAND}" --install "${CAFMESH_BUILD_DIR}" --prefix "${prefix}"
  --config "${CAFMESH_CONFIG}")
set(pkg_dir "${prefix}/${CAFMESH_LIBDIR}/cmake/cafmesh")
foreach(f IN ITEMS
    "${pkg_dir}/cafmeshConfig.cmake"
    "${pkg_dir}/cafmeshConfigVersion.cmake"
    "${pkg_dir}/cafmeshTargets.cmake"
    "${pkg_dir}/FindCAF.cmake"
    "${prefix}/${CAFMESH_LIBDIR}/libcafmesh_config.a"
    "${prefix}/${CAFMESH_LIBDIR}/libcafmesh_actors.a"
    "${prefix}/${CAFMESH_LIBDIR}/libcafmesh_lifecycle.a"
    "${prefix}/${CAFMESH_LIBDIR}/libcafmesh_routing.a"
    "${prefix}/include/cafmesh/config/mesh_config.hpp"
    "${prefix}/include/cafmesh/actors/fault.hpp"
    "${prefix}/include/cafmesh/actors/ids.hpp"
    "${prefix}/include/cafmesh/actors/stage.hpp"
    "${prefix}/include/cafmesh/lifecycle/hosting.hpp"
    "${prefix}/include/cafmesh/routing/envelope.hpp"
    "${prefix}/include/cafmesh/routing/register_types.hpp")
  if(NOT EXISTS "${f}")
    message(FATAL_ERROR "install_and_consume: not installed: ${f}\n${install_log}")
  endif()
endforeach()
# The test bed is part of the package (cafmesh::testing): fixture and simulated worlds.
foreach(f
    "${prefix}/${CAFMESH_LIBDIR}/libcafmesh_testing.a"
    "${prefix}/include/cafmesh/testing/fixture.hpp"
    "${prefix}/include/cafmesh/testing/silo_world.hpp"
    "${prefix}/include/cafmesh/testing/test_cluster.hpp"
    "${prefix}/include/cafmesh/testing/service_chaos.hpp")
  if(NOT EXISTS "${f}")
    message(FATAL_ERROR "install_and_consume: not installed: ${f}\n${install_log}")
  endif()
endforeach()

# 2. The version file: 0.1 and 0.1.0 accepted; another minor or major refused.
function(check_version requested expect)
  set(PACKAGE_FIND_VERSION "${requested}")
  string(REPLACE "." ";" parts "${requested}.0.0")
  list(GET parts 0 PACKAGE_FIND_VERSION_MAJOR)
  list(GET parts 1 PACKAGE_FIND_VERSION_MINOR)
  list(GET parts 2 PACKAGE_FIND_VERSION_PATCH)
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
  include("${pkg_dir}/cafmeshConfigVersion.cmake")
  if(NOT "${PACKAGE_VERSION_COMPATIBLE}" STREQUAL "${expect}")
    message(FATAL_ERROR "install_and_consume: version ${PACKAGE_VERSION} compatible with "
                        "${requested}: ${PACKAGE_VERSION_COMPATIBLE}, expected ${expect}")
  endif()
endfunction()
check_version(0.1 TRUE)
check_version(0.1.0 TRUE)
check_version(0.2 FALSE)
check_version(1.0 FALSE)

# 3. Configure the consumer against the installed tree only.
set(consumer_args "")
if(NOT "${CXX_COMPILER}" STREQUAL "")
  set(consumer_args "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}")
endif()
# The CAF this build links, handed to every consumer so that it links the same one (a
# sanitizer build against a CAF of its own: docs/testing.md#threadsanitizer-needs-an-instrumented-caf); with Debian's
# CAF these are the paths the consumer's FindCAF finds anyway.
foreach(v IN ITEMS CAF_INCLUDE_DIR CAF_core_LIBRARY CAF_io_LIBRARY)
  if(NOT "${${v}}" STREQUAL "")
    list(APPEND consumer_args "-D${v}=${${v}}")
  endif()
endforeach()
run_step("configuring the consumer" configure_log
  "${CMAKE_COMMAND}" -S "${CONSUMER_SOURCE_DIR}" -B "${consumer_build}" -G "${GENERATOR}"
  -DCMAKE_BUILD_TYPE=Release "-DCMAKE_PREFIX_PATH=${prefix}" ${consumer_args}
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
string(FIND "${configure_log}" "consumer: cafmesh_DIR=${pkg_dir}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "install_and_consume: cafmesh was not found in ${pkg_dir}\n${configure_log}")
endif()
string(FIND "${configure_log}" "consumer: cafmesh_VERSION=0.1.0" at)
if(at EQUAL -1)
  message(FATAL_ERROR "install_and_consume: wrong cafmesh version\n${configure_log}")
endif()
string(REGEX MATCH "consumer: CAF_VERSION=0\\.17\\.[0-9]+" caf_line "${configure_log}")
if(caf_line STREQUAL "")
  message(FATAL_ERROR "install_and_consume: CAF 0.17 not found via FindCAF\n${configure_log}")
endif()

# 4. Build and run it.
run_step("building the consumer" build_log
  "${CMAKE_COMMAND}" --build "${consumer_build}" --config Release)
run_step("running the consumer" run_log "${consumer_build}/cafmesh_consumer")
# The chaos test of docs/hosting.md#chaos-for-your-own-grains, on the installed
# cafmesh::testing: its seeds pass.
run_step("running the consumer's chaos test" chaos_log "${consumer_build}/cafmesh_consumer_chaos")
if(NOT chaos_log MATCHES "Status: SUCCESS!")
  message(FATAL_ERROR "install_and_consume: the consumer's chaos test did not pass\n${chaos_log}")
endif()
set(expected
"envelope cafmesh.envelope(\"consumer-1\", client/7f3a~portal/alice, node/Org/Acme, forwarded, {\"count\" = \"3\"}, none, [mesh/m1], \"ping\", \"{}\", *\"s-1\", false, none)
host portal/alice
error mesh_error(departed_silo, connect failed <- socket closed)
roundtrip equal
")
if(NOT run_log STREQUAL expected)
  message(FATAL_ERROR "install_and_consume: unexpected consumer output\n--- got\n${run_log}"
                      "--- expected\n${expected}")
endif()

# 5. examples/hello, built against the installed tree only, runs and prints its greeting.
set(hello_build "${WORK_DIR}/hello-build")
run_step("configuring examples/hello" hello_configure_log
  "${CMAKE_COMMAND}" -S "${HELLO_SOURCE_DIR}" -B "${hello_build}" -G "${GENERATOR}"
  -DCMAKE_BUILD_TYPE=Release "-DCMAKE_PREFIX_PATH=${prefix}" ${consumer_args}
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
run_step("building examples/hello" hello_build_log
  "${CMAKE_COMMAND}" --build "${hello_build}" --config Release)
run_step("running examples/hello" hello_log "${hello_build}/cafmesh-hello")
if(NOT hello_log STREQUAL "hello you, from grain world\n")
  message(FATAL_ERROR "install_and_consume: unexpected hello output\n--- got\n${hello_log}")
endif()
# examples/counter_service builds against the installed tree as well (its roll runs in-tree).
set(counter_build "${WORK_DIR}/counter-build")
run_step("configuring examples/counter_service" counter_configure_log
  "${CMAKE_COMMAND}" -S "${HELLO_SOURCE_DIR}/../counter_service" -B "${counter_build}"
  -G "${GENERATOR}" -DCMAKE_BUILD_TYPE=Release "-DCMAKE_PREFIX_PATH=${prefix}" ${consumer_args}
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
run_step("building examples/counter_service" counter_build_log
  "${CMAKE_COMMAND}" --build "${counter_build}" --config Release)
# examples/orders too (a grain calling a grain through its grain_context; its roll runs in-tree).
set(orders_build "${WORK_DIR}/orders-build")
run_step("configuring examples/orders" orders_configure_log
  "${CMAKE_COMMAND}" -S "${HELLO_SOURCE_DIR}/../orders" -B "${orders_build}"
  -G "${GENERATOR}" -DCMAKE_BUILD_TYPE=Release "-DCMAKE_PREFIX_PATH=${prefix}" ${consumer_args}
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
run_step("building examples/orders" orders_build_log
  "${CMAKE_COMMAND}" --build "${orders_build}" --config Release)
# The installed package asks for what it uses: no CAF openssl component before TLS exists.
file(READ "${pkg_dir}/cafmeshConfig.cmake" pkg_config_text)
if(pkg_config_text MATCHES "openssl")
  message(FATAL_ERROR "install_and_consume: cafmeshConfig.cmake still requires CAF openssl")
endif()
message(STATUS "install_and_consume: installed to ${prefix}, consumer built and ran:\n${run_log}"
               "its chaos test:\n${chaos_log}examples/hello built and ran:\n${hello_log}")

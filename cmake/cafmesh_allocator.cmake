# The malloc of the project's own executables (docs/building.md#the-allocator).
#
# CAF 0.17 allocates every message, and a delivery's envelope, leg and call allocate too, so
# the allocator is on every hop of a delivery. cafmesh-bench measured Debian's mimalloc
# against glibc's malloc in the same sitting (examples/bench/README.md): the executables that
# carry traffic (cafmesh-node, cafmesh-client, cafmesh-demo, cafmesh-bench) link it when it
# is installed. The libraries never link an allocator: an application that embeds cafmesh
# chooses its own (link -lmimalloc into its executable for the same effect).
#
# CAFMESH_ALLOCATOR: `auto` (default: mimalloc when Debian's libmimalloc-dev is installed,
# else the system's), `mimalloc`, `jemalloc` (libjemalloc-dev) or `system`. A sanitizer
# build always uses the system's (the sanitizer replaces malloc itself).

set(CAFMESH_ALLOCATOR "auto" CACHE STRING
    "malloc of cafmesh's own executables: auto, mimalloc, jemalloc or system")
set_property(CACHE CAFMESH_ALLOCATOR PROPERTY STRINGS auto mimalloc jemalloc system)

set(cafmesh_allocator_lib "")
set(cafmesh_allocator_name "system")
if(CAFMESH_SANITIZE OR CAFMESH_FUZZ)
  if(NOT CAFMESH_ALLOCATOR MATCHES "^(auto|system)$")
    message(STATUS "cafmesh: CAFMESH_ALLOCATOR=${CAFMESH_ALLOCATOR} ignored in a sanitizer build")
  endif()
elseif(CAFMESH_ALLOCATOR STREQUAL "auto" OR CAFMESH_ALLOCATOR STREQUAL "mimalloc")
  find_library(CAFMESH_MIMALLOC_LIBRARY NAMES mimalloc)
  if(CAFMESH_MIMALLOC_LIBRARY)
    set(cafmesh_allocator_lib "${CAFMESH_MIMALLOC_LIBRARY}")
    set(cafmesh_allocator_name "mimalloc")
  elseif(CAFMESH_ALLOCATOR STREQUAL "mimalloc")
    message(FATAL_ERROR "CAFMESH_ALLOCATOR=mimalloc: libmimalloc not found (Debian: libmimalloc-dev)")
  endif()
elseif(CAFMESH_ALLOCATOR STREQUAL "jemalloc")
  find_library(CAFMESH_JEMALLOC_LIBRARY NAMES jemalloc)
  if(NOT CAFMESH_JEMALLOC_LIBRARY)
    message(FATAL_ERROR "CAFMESH_ALLOCATOR=jemalloc: libjemalloc not found (Debian: libjemalloc-dev)")
  endif()
  set(cafmesh_allocator_lib "${CAFMESH_JEMALLOC_LIBRARY}")
  set(cafmesh_allocator_name "jemalloc")
elseif(NOT CAFMESH_ALLOCATOR STREQUAL "system")
  message(FATAL_ERROR "CAFMESH_ALLOCATOR: expected auto, mimalloc, jemalloc or system, got "
                      "\"${CAFMESH_ALLOCATOR}\"")
endif()
message(STATUS "cafmesh: executables use the ${cafmesh_allocator_name} allocator")

# cafmesh_link_allocator(<executable>): links the chosen allocator, which then replaces
# malloc and operator new for the whole process (the dynamic linker finds its malloc before
# libc's, as with LD_PRELOAD).
function(cafmesh_link_allocator tgt)
  if(cafmesh_allocator_lib)
    target_link_libraries(${tgt} PRIVATE "${cafmesh_allocator_lib}")
  endif()
endfunction()

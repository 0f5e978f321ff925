# FindCAF.cmake: locate the C++ Actor Framework 0.17 as Debian's libcaf-dev ships it
# (headers + shared libraries, no CMake package, no pkg-config file).
#
# Components: core io openssl. Defines imported targets CAF::core, CAF::io, CAF::openssl,
# CAF_INCLUDE_DIR, CAF_LIBRARIES and CAF_VERSION (e.g. 0.17.6).
include(FindPackageHandleStandardArgs)
find_package(Threads REQUIRED)

find_path(CAF_INCLUDE_DIR NAMES caf/all.hpp caf/detail/build_config.hpp)

if(NOT CAF_FIND_COMPONENTS)
  set(CAF_FIND_COMPONENTS core)
endif()
if("openssl" IN_LIST CAF_FIND_COMPONENTS AND NOT "io" IN_LIST CAF_FIND_COMPONENTS)
  list(APPEND CAF_FIND_COMPONENTS io)
endif()
if(("io" IN_LIST CAF_FIND_COMPONENTS) AND NOT ("core" IN_LIST CAF_FIND_COMPONENTS))
  list(APPEND CAF_FIND_COMPONENTS core)
endif()

set(CAF_LIBRARIES "")
foreach(comp IN ITEMS core io openssl)
  if(NOT comp IN_LIST CAF_FIND_COMPONENTS)
    continue()
  endif()
  find_library(CAF_${comp}_LIBRARY NAMES caf_${comp})
  if(CAF_${comp}_LIBRARY AND CAF_INCLUDE_DIR)
    set(CAF_${comp}_FOUND TRUE)
    list(APPEND CAF_LIBRARIES ${CAF_${comp}_LIBRARY})
    if(NOT TARGET CAF::${comp})
      add_library(CAF::${comp} UNKNOWN IMPORTED)
      set_target_properties(CAF::${comp} PROPERTIES
        IMPORTED_LOCATION "${CAF_${comp}_LIBRARY}"
        INTERFACE_INCLUDE_DIRECTORIES "${CAF_INCLUDE_DIR}")
      if(comp STREQUAL "core")
        set_property(TARGET CAF::core PROPERTY INTERFACE_LINK_LIBRARIES Threads::Threads)
      elseif(comp STREQUAL "io")
        set_property(TARGET CAF::io PROPERTY INTERFACE_LINK_LIBRARIES CAF::core)
      elseif(comp STREQUAL "openssl")
        set_property(TARGET CAF::openssl PROPERTY INTERFACE_LINK_LIBRARIES CAF::io)
      endif()
    endif()
  else()
    set(CAF_${comp}_FOUND FALSE)
  endif()
endforeach()

if(CAF_INCLUDE_DIR AND EXISTS "${CAF_INCLUDE_DIR}/caf/config.hpp")
  file(STRINGS "${CAF_INCLUDE_DIR}/caf/config.hpp" _caf_ver REGEX "^#define CAF_VERSION [0-9]+")
  string(REGEX REPLACE "^#define CAF_VERSION ([0-9]+).*" "\\1" _caf_ver "${_caf_ver}")
  math(EXPR _caf_major "${_caf_ver} / 10000")
  math(EXPR _caf_minor "(${_caf_ver} / 100) % 100")
  math(EXPR _caf_patch "${_caf_ver} % 100")
  set(CAF_VERSION "${_caf_major}.${_caf_minor}.${_caf_patch}")
endif()

find_package_handle_standard_args(CAF
  REQUIRED_VARS CAF_INCLUDE_DIR CAF_LIBRARIES
  VERSION_VAR CAF_VERSION
  HANDLE_COMPONENTS)
mark_as_advanced(CAF_INCLUDE_DIR CAF_core_LIBRARY CAF_io_LIBRARY CAF_openssl_LIBRARY)

# Version check of find_package(elfkit <version> CONFIG): the version is the
# package's own (elfkit/_version.py, two directories above share/); a request
# is met by the same major version, at least as new (for 0.x: the same minor
# when the request names one).
file(STRINGS "${CMAKE_CURRENT_LIST_DIR}/../../../_version.py" _elfkit_version_line
     REGEX "^__version__ *= *['\"]")
string(REGEX REPLACE "^__version__ *= *['\"]([^'\"]*)['\"].*" "\\1" PACKAGE_VERSION
       "${_elfkit_version_line}")
unset(_elfkit_version_line)

set(PACKAGE_VERSION_COMPATIBLE FALSE)
set(PACKAGE_VERSION_EXACT FALSE)
if(NOT PACKAGE_VERSION)
  set(PACKAGE_VERSION_UNSUITABLE TRUE)
elseif(NOT PACKAGE_FIND_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
elseif(NOT PACKAGE_VERSION VERSION_LESS PACKAGE_FIND_VERSION)
  string(REGEX MATCH "^[0-9]+" _elfkit_major "${PACKAGE_VERSION}")
  string(REGEX MATCH "^[0-9]+\\.[0-9]+" _elfkit_minor "${PACKAGE_VERSION}")
  if(_elfkit_major STREQUAL "0" AND PACKAGE_FIND_VERSION_COUNT GREATER 1)
    set(_elfkit_want "${PACKAGE_FIND_VERSION_MAJOR}.${PACKAGE_FIND_VERSION_MINOR}")
    if(_elfkit_minor VERSION_EQUAL _elfkit_want)
      set(PACKAGE_VERSION_COMPATIBLE TRUE)
    endif()
  elseif(_elfkit_major STREQUAL PACKAGE_FIND_VERSION_MAJOR)
    set(PACKAGE_VERSION_COMPATIBLE TRUE)
  endif()
  if(PACKAGE_VERSION VERSION_EQUAL PACKAGE_FIND_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
  unset(_elfkit_major)
  unset(_elfkit_minor)
  unset(_elfkit_want)
endif()

# Install test, run by ctest as `cmake -D... -P InstallTest.cmake`:
#  1. installs the build in BUILD_DIR into WORK_DIR/prefix (the prefix
#     PkgConfigTest.cmake then uses),
#  2. checks find_package(DistReshape) alone probes no mpiexec and sets none of
#     the helpers' variables (a tiny project, configured only),
#  3. configures EXAMPLES_DIR standalone against it (find_package(DistReshape)),
#  4. builds the examples (one linked with the static library), runs their tests
#     (1-4 ranks) with ctest,
#  5. installs them too and runs the installed C and C++ seed examples, which
#     must find libdistreshape.so through their RPATH alone.
cmake_minimum_required(VERSION 3.22)
set(DR_TEST "install test")
include("${CMAKE_CURRENT_LIST_DIR}/TestScriptHelpers.cmake")
dr_require(BUILD_DIR EXAMPLES_DIR WORK_DIR GENERATOR CTEST_COMMAND MPIEXEC_EXECUTABLE
           MPIEXEC_NUMPROC_FLAG)

set(prefix "${WORK_DIR}/prefix")
set(build "${WORK_DIR}/examples")
file(REMOVE_RECURSE "${WORK_DIR}")

dr_run("${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${prefix}")

# The shared library: one file libdistreshape.so.X.Y.Z whose SONAME is
# libdistreshape.so.X, and both shorter names as symbolic links to it.
file(GLOB installed_so "${prefix}/lib/libdistreshape.so.*.*.*")
list(LENGTH installed_so count)
if(NOT count EQUAL 1 OR IS_SYMLINK "${installed_so}")
  message(FATAL_ERROR "install test: expected one libdistreshape.so.X.Y.Z file, found '${installed_so}'")
endif()
string(REGEX MATCH "[0-9]+\\.[0-9]+\\.[0-9]+$" version "${installed_so}")
string(REGEX MATCH "^[0-9]+" major "${version}")
if(major EQUAL 0)
  string(REGEX MATCH "^0\\.[0-9]+" major "${version}")
endif()
foreach(link "libdistreshape.so.${major}" "libdistreshape.so")
  file(REAL_PATH "${prefix}/lib/${link}" target)
  if(NOT IS_SYMLINK "${prefix}/lib/${link}" OR NOT target STREQUAL installed_so)
    message(FATAL_ERROR "install test: ${link} is not a symbolic link to ${installed_so}")
  endif()
endforeach()
find_program(READELF readelf)
if(READELF)
  execute_process(COMMAND "${READELF}" -d "${installed_so}" OUTPUT_VARIABLE dynamic COMMAND_ERROR_IS_FATAL ANY)
  if(NOT dynamic MATCHES "Library soname: \\[libdistreshape\\.so\\.${major}\\]")
    message(FATAL_ERROR "install test: the SONAME of ${installed_so} is not libdistreshape.so.${major}")
  endif()
endif()

# The Fortran module file sits in a compiler-specific directory, not in include/.
if(FORTRAN)
  file(GLOB_RECURSE mods RELATIVE "${prefix}/include" "${prefix}/include/*.mod")
  if(NOT mods MATCHES "^distreshape/[^/]+-[0-9][^/]*/distreshape\\.mod$")
    message(FATAL_ERROR "install test: expected include/distreshape/<id>-<version>/distreshape.mod, found '${mods}'")
  endif()
endif()

# The test hooks stay out of what users get: the header and the library.
file(READ "${prefix}/include/distreshape.h" header)
if(header MATCHES "dr_test_")
  message(FATAL_ERROR "install test: the installed header declares test hooks")
endif()
find_program(NM nm)
if(NM)
  execute_process(COMMAND "${NM}" -D "${installed_so}" OUTPUT_VARIABLE symbols COMMAND_ERROR_IS_FATAL ANY)
  if(symbols MATCHES "dr_test_")
    message(FATAL_ERROR "install test: the installed library exports test hooks")
  endif()
endif()

set(configure_args -G "${GENERATOR}" -S "${EXAMPLES_DIR}" -B "${build}"
    "-DCMAKE_PREFIX_PATH=${prefix}" "-DCMAKE_INSTALL_PREFIX=${prefix}"
    "-DMPIEXEC_EXECUTABLE=${MPIEXEC_EXECUTABLE}" "-DMPIEXEC_PREFLAGS=${MPIEXEC_PREFLAGS}")
# The Fortran examples when the package was built with its Fortran component.
if(DEFINED FORTRAN)
  if(FORTRAN)
    list(APPEND configure_args -DDISTRESHAPE_EXAMPLES_FORTRAN=ON)
  else()
    list(APPEND configure_args -DDISTRESHAPE_EXAMPLES_FORTRAN=OFF)
    set(Fortran_COMPILER "")
    set(MPI_Fortran_COMPILER "")
  endif()
endif()
foreach(var C_COMPILER CXX_COMPILER Fortran_COMPILER)
  if(${var})
    list(APPEND configure_args "-DCMAKE_${var}=${${var}}")
  endif()
endforeach()
foreach(var MPI_C_COMPILER MPI_Fortran_COMPILER)
  if(${var})
    list(APPEND configure_args "-D${var}=${${var}}")
  endif()
endforeach()
# find_package(DistReshape) runs no program and sets none of the helpers'
# variables; the helpers probe mpiexec when first called.
file(WRITE "${WORK_DIR}/find_package/CMakeLists.txt" [=[
cmake_minimum_required(VERSION 3.22)
project(DistReshapeFindPackage LANGUAGES C)
find_package(DistReshape CONFIG REQUIRED)
get_property(probed GLOBAL PROPERTY _DISTRESHAPE_MPIEXEC_PROBED SET)
if(probed OR DEFINED DISTRESHAPE_MPIEXEC_PREFLAGS OR DEFINED DISTRESHAPE_MPI_TEST_ENV)
  message(FATAL_ERROR "find_package(DistReshape) probed mpiexec or set the helpers' variables")
endif()
distreshape_mpiexec_command(launch 2)
get_property(probed GLOBAL PROPERTY _DISTRESHAPE_MPIEXEC_PROBED SET)
if(NOT probed OR NOT launch OR NOT DEFINED DISTRESHAPE_MPI_TEST_ENV)
  message(FATAL_ERROR "distreshape_mpiexec_command did not probe mpiexec: '${launch}'")
endif()
]=])
set(find_package_args -G "${GENERATOR}" -S "${WORK_DIR}/find_package" -B "${WORK_DIR}/find_package/build"
    "-DCMAKE_PREFIX_PATH=${prefix}" "-DMPIEXEC_EXECUTABLE=${MPIEXEC_EXECUTABLE}")
if(C_COMPILER)
  list(APPEND find_package_args "-DCMAKE_C_COMPILER=${C_COMPILER}")
endif()
if(MPI_C_COMPILER)
  list(APPEND find_package_args "-DMPI_C_COMPILER=${MPI_C_COMPILER}")
endif()
dr_run("${CMAKE_COMMAND}" ${find_package_args})
# Without the Fortran component installed, requiring it fails with a message.
if(DEFINED FORTRAN AND NOT FORTRAN)
  file(WRITE "${WORK_DIR}/find_fortran/CMakeLists.txt" [=[
cmake_minimum_required(VERSION 3.22)
project(DistReshapeFindFortran LANGUAGES C)
find_package(DistReshape CONFIG REQUIRED COMPONENTS Fortran)
]=])
  list(TRANSFORM find_package_args REPLACE "/find_package" "/find_fortran")
  execute_process(COMMAND "${CMAKE_COMMAND}" ${find_package_args}
                  RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE output)
  if(result EQUAL 0 OR NOT output MATCHES "Fortran component was not installed")
    message(FATAL_ERROR "install test: COMPONENTS Fortran did not fail as expected:\n${output}")
  endif()
endif()

dr_run("${CMAKE_COMMAND}" ${configure_args})
dr_run("${CMAKE_COMMAND}" --build "${build}")
dr_run("${CTEST_COMMAND}" --test-dir "${build}" --output-on-failure)

# Installed executables must run from the prefix, without LD_LIBRARY_PATH.
dr_run("${CMAKE_COMMAND}" --install "${build}")
unset(ENV{LD_LIBRARY_PATH})
foreach(seed seed_c seed_cxx)
  dr_mpi_run(NPROCS 2 COMMAND "${prefix}/bin/${seed}" 1000)
endforeach()

# Consumer test, run by ctest as `cmake -D... -P ConsumerTest.cmake`: configures
# tests/consumer (which pulls in the source tree SOURCE_DIR with add_subdirectory
# or FetchContent, per MODE) with GENERATOR; then, for each configuration in
# CONFIGS (comma-separated: with a multi-config generator, MULTI_CONFIG, some of
# its default ones; else one, the build type, possibly empty), builds it, checks
# that its program finds the crate's library of that configuration through its
# RPATH (DISTRESHAPE_CARGO_TARGET_DIR/debug for Debug, /release otherwise), and
# runs it and its statically linked twin at 2 ranks.
cmake_minimum_required(VERSION 3.22)
set(DR_TEST "consumer test (${MODE})")
include("${CMAKE_CURRENT_LIST_DIR}/TestScriptHelpers.cmake")
dr_require(MODE SOURCE_DIR WORK_DIR GENERATOR MULTI_CONFIG CONFIGS DISTRESHAPE_CARGO_TARGET_DIR
           MPIEXEC_EXECUTABLE MPIEXEC_NUMPROC_FLAG)
find_program(READELF NAMES readelf llvm-readelf REQUIRED)

string(REPLACE "," ";" configs "${CONFIGS}")
file(REMOVE_RECURSE "${WORK_DIR}")
set(configure_args -G "${GENERATOR}" -S "${SOURCE_DIR}/tests/consumer" -B "${WORK_DIR}"
    "-DDISTRESHAPE_CONSUME=${MODE}" "-DDISTRESHAPE_SOURCE_DIR=${SOURCE_DIR}"
    "-DDISTRESHAPE_CARGO_TARGET_DIR=${DISTRESHAPE_CARGO_TARGET_DIR}"
    "-DMPIEXEC_EXECUTABLE=${MPIEXEC_EXECUTABLE}" "-DMPIEXEC_PREFLAGS=${MPIEXEC_PREFLAGS}")
if(NOT MULTI_CONFIG)
  list(APPEND configure_args "-DCMAKE_BUILD_TYPE=${configs}")
endif()
foreach(var CMAKE_MAKE_PROGRAM CMAKE_C_COMPILER CMAKE_Fortran_COMPILER MPI_C_COMPILER
            MPI_Fortran_COMPILER)
  if(${var})
    list(APPEND configure_args "-D${var}=${${var}}")
  endif()
endforeach()
if(MPICC)
  set(ENV{MPICC} "${MPICC}")
endif()
dr_run("${CMAKE_COMMAND}" ${configure_args})

foreach(config IN LISTS configs)
  if(MULTI_CONFIG)
    dr_run("${CMAKE_COMMAND}" --build "${WORK_DIR}" --config "${config}")
  else()
    dr_run("${CMAKE_COMMAND}" --build "${WORK_DIR}")
  endif()
  set(bin "${WORK_DIR}/bin/${config}")
  string(TOUPPER "${config}" upper)
  if(upper STREQUAL "DEBUG")
    set(libdir "${DISTRESHAPE_CARGO_TARGET_DIR}/debug")
  else()
    set(libdir "${DISTRESHAPE_CARGO_TARGET_DIR}/release")
  endif()
  execute_process(COMMAND "${READELF}" -d "${bin}/consumer_seed" OUTPUT_VARIABLE dynamic
                  COMMAND_ERROR_IS_FATAL ANY)
  string(REGEX MATCH "\\((RPATH|RUNPATH)\\)[^[\n]*\\[([^]\n]*)\\]" rpath "${dynamic}")
  string(REPLACE ":" ";" rpath "${CMAKE_MATCH_2}")
  if(NOT libdir IN_LIST rpath)
    message(FATAL_ERROR "${DR_TEST}: ${config}'s consumer_seed does not look in ${libdir}:\n${dynamic}")
  endif()
  dr_mpi_run(NPROCS 2 COMMAND "${bin}/consumer_seed")
  dr_mpi_run(NPROCS 2 COMMAND "${bin}/consumer_seed_static")
endforeach()

# Consumer test, run by ctest as `cmake -D... -P ConsumerTest.cmake`: configures
# tests/consumer (which pulls in the source tree SOURCE_DIR with add_subdirectory
# or FetchContent, per MODE), builds it and runs its program at 2 ranks.
foreach(var MODE SOURCE_DIR WORK_DIR GENERATOR MPIEXEC_EXECUTABLE MPIEXEC_NUMPROC_FLAG)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "ConsumerTest.cmake: -D ${var}=... is required")
  endif()
endforeach()

function(run)
  string(REPLACE ";" " " shown "${ARGN}")
  message(STATUS "consumer test (${MODE}): ${shown}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE result)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "consumer test (${MODE}): command failed (${result}): ${shown}")
  endif()
endfunction()

file(REMOVE_RECURSE "${WORK_DIR}")
set(configure_args -G "${GENERATOR}" -S "${SOURCE_DIR}/tests/consumer" -B "${WORK_DIR}"
    "-DDISTRESHAPE_CONSUME=${MODE}" "-DDISTRESHAPE_SOURCE_DIR=${SOURCE_DIR}"
    "-DCMAKE_BUILD_TYPE=${BUILD_TYPE}"
    "-DMPIEXEC_EXECUTABLE=${MPIEXEC_EXECUTABLE}" "-DMPIEXEC_PREFLAGS=${MPIEXEC_PREFLAGS}")
foreach(var CMAKE_C_COMPILER CMAKE_Fortran_COMPILER MPI_C_COMPILER MPI_Fortran_COMPILER
            DISTRESHAPE_CARGO_TARGET_DIR)
  if(${var})
    list(APPEND configure_args "-D${var}=${${var}}")
  endif()
endforeach()
if(MPICC)
  set(ENV{MPICC} "${MPICC}")
endif()
run("${CMAKE_COMMAND}" ${configure_args})
run("${CMAKE_COMMAND}" --build "${WORK_DIR}")
separate_arguments(preflags NATIVE_COMMAND "${MPIEXEC_PREFLAGS}")
run("${CMAKE_COMMAND}" -E env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    "${MPIEXEC_EXECUTABLE}" ${MPIEXEC_NUMPROC_FLAG} 2 ${preflags} "${WORK_DIR}/consumer_seed")

# Helpers of the test scripts ctest runs as `cmake -D... -P <script>`
# (InstallTest.cmake, PkgConfigTest.cmake, ConsumerTest.cmake). A script sets
# DR_TEST (its name in messages) and includes this file.
#
#   dr_require(<var>...)
#     Fails unless every -D <var>=... was given.
#   dr_run(<command> [args...])
#     Runs the command, failing the test when it fails.
#   dr_mpi_run(NPROCS <n> [ENV <NAME=VALUE>...] COMMAND <program> [args...])
#     Runs the program on n ranks with MPIEXEC_EXECUTABLE, MPIEXEC_NUMPROC_FLAG
#     and MPIEXEC_PREFLAGS/POSTFLAGS, as distreshape_add_mpi_test does (with Open
#     MPI, --oversubscribe and leave to run as root), in the environment ENV.
include("${CMAKE_CURRENT_LIST_DIR}/DistReshapeMpiTest.cmake")

function(dr_require)
  foreach(var IN LISTS ARGN)
    if(NOT DEFINED ${var})
      message(FATAL_ERROR "${DR_TEST}: -D ${var}=... is required")
    endif()
  endforeach()
endfunction()

function(dr_run)
  string(REPLACE ";" " " shown "${ARGN}")
  message(STATUS "${DR_TEST}: ${shown}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE result)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "${DR_TEST}: command failed (${result}): ${shown}")
  endif()
endfunction()

function(dr_mpi_run)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "NPROCS" "ENV;COMMAND")
  distreshape_mpiexec_command(launch ${arg_NPROCS})
  list(POP_FRONT arg_COMMAND program)
  dr_run("${CMAKE_COMMAND}" -E env ${DISTRESHAPE_MPI_TEST_ENV} ${arg_ENV}
         ${launch} "${program}" ${DISTRESHAPE_MPIEXEC_POSTFLAGS} ${arg_COMMAND})
endfunction()

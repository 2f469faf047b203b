# Helpers to launch MPI programs with FindMPI's mpiexec, used by the test
# suite and installed with the package for consumers' own tests.
#
#   distreshape_mpiexec_command(<out-var> <nprocs>)
#     Sets <out-var> to the launch prefix: MPIEXEC_EXECUTABLE
#     MPIEXEC_NUMPROC_FLAG <nprocs> MPIEXEC_PREFLAGS (a list). Append the
#     program, then MPIEXEC_POSTFLAGS (variable DISTRESHAPE_MPIEXEC_POSTFLAGS).
#
#   distreshape_add_mpi_test(NAME <name> COMMAND <target|exe> [args...]
#                            [RANKS <n>...] [TIMEOUT <seconds>])
#     Adds one ctest test <name>_np<n> per rank count (default:
#     DISTRESHAPE_TEST_RANKS if set, else 1 2 3 4), with
#     a timeout (default 300 s) so a hang fails instead of blocking the suite.
#
# Open MPI refuses to oversubscribe cores or run as root unless told so: with
# Open MPI's mpiexec, --oversubscribe is added to the preflags, and the tests'
# environment allows running as root (harmless for other MPIs).
include_guard(GLOBAL)

separate_arguments(DISTRESHAPE_MPIEXEC_PREFLAGS NATIVE_COMMAND "${MPIEXEC_PREFLAGS}")
separate_arguments(DISTRESHAPE_MPIEXEC_POSTFLAGS NATIVE_COMMAND "${MPIEXEC_POSTFLAGS}")
set(_dr_mpiexec_version "")
if(MPIEXEC_EXECUTABLE)
  execute_process(COMMAND "${MPIEXEC_EXECUTABLE}" --version
    OUTPUT_VARIABLE _dr_mpiexec_version ERROR_VARIABLE _dr_mpiexec_version TIMEOUT 20)
endif()
if(_dr_mpiexec_version MATCHES "Open MPI|OpenRTE"
   AND NOT "--oversubscribe" IN_LIST DISTRESHAPE_MPIEXEC_PREFLAGS)
  list(APPEND DISTRESHAPE_MPIEXEC_PREFLAGS --oversubscribe)
endif()
set(DISTRESHAPE_MPI_TEST_ENV OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1)

function(distreshape_mpiexec_command out_var nprocs)
  if(NOT MPIEXEC_EXECUTABLE)
    message(FATAL_ERROR "distreshape_mpiexec_command: no mpiexec (find_package(MPI) left "
                        "MPIEXEC_EXECUTABLE unset; pass -DMPIEXEC_EXECUTABLE=...)")
  endif()
  set(${out_var} "${MPIEXEC_EXECUTABLE}" ${MPIEXEC_NUMPROC_FLAG} ${nprocs}
      ${DISTRESHAPE_MPIEXEC_PREFLAGS} PARENT_SCOPE)
endfunction()

function(distreshape_add_mpi_test)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "NAME;TIMEOUT" "COMMAND;RANKS")
  if(NOT arg_RANKS)
    set(arg_RANKS 1 2 3 4)
    if(DISTRESHAPE_TEST_RANKS)
      set(arg_RANKS ${DISTRESHAPE_TEST_RANKS})
    endif()
  endif()
  if(NOT arg_TIMEOUT)
    set(arg_TIMEOUT 300)
  endif()
  list(POP_FRONT arg_COMMAND program)
  if(TARGET ${program})
    set(program "$<TARGET_FILE:${program}>")
  endif()
  foreach(n IN LISTS arg_RANKS)
    distreshape_mpiexec_command(launch ${n})
    add_test(NAME ${arg_NAME}_np${n}
             COMMAND ${launch} ${program} ${DISTRESHAPE_MPIEXEC_POSTFLAGS} ${arg_COMMAND})
    set_tests_properties(${arg_NAME}_np${n} PROPERTIES
      TIMEOUT ${arg_TIMEOUT} PROCESSORS ${n}
      ENVIRONMENT "${DISTRESHAPE_MPI_TEST_ENV}")
  endforeach()
endfunction()

# Helpers to launch MPI programs with FindMPI's mpiexec, used by the test
# suite and installed with the package for consumers' own tests. Including this
# file (find_package(DistReshape) does) only defines the functions: nothing runs
# and no variable is set until one of them is called.
#
#   distreshape_mpiexec_command(<out-var> <nprocs>)
#     Sets <out-var> to the launch prefix: MPIEXEC_EXECUTABLE
#     MPIEXEC_NUMPROC_FLAG <nprocs> MPIEXEC_PREFLAGS (a list). Append the
#     program, then MPIEXEC_POSTFLAGS. Also sets, in the caller's scope,
#     DISTRESHAPE_MPIEXEC_PREFLAGS and DISTRESHAPE_MPIEXEC_POSTFLAGS (the flags
#     as lists) and DISTRESHAPE_MPI_TEST_ENV (NAME=VALUE entries for the tests'
#     ENVIRONMENT property, or for `cmake -E env`).
#
#   distreshape_add_mpi_test(NAME <name> COMMAND <target|exe> [args...]
#                            [RANKS <n>...] [TIMEOUT <seconds>])
#     Adds one ctest test <name>_np<n> per rank count (default:
#     DISTRESHAPE_TEST_RANKS if set, else 1 2 3 4), with
#     a timeout (default 300 s) so a hang fails instead of blocking the suite.
#
# Both need find_package(MPI) to have set MPIEXEC_EXECUTABLE (find_package(DistReshape)
# finds MPI). Open MPI refuses to oversubscribe cores or run as root unless told
# so: the first call runs `mpiexec --version` once (the result is kept for the
# configure run); with Open MPI's mpiexec, --oversubscribe is added to the
# preflags, and the tests' environment allows running as root (harmless for
# other MPIs). The environment of the configure process itself is never changed.
include_guard(GLOBAL)

# Probes MPIEXEC_EXECUTABLE once per executable, keeping the result in global
# properties; sets DISTRESHAPE_MPIEXEC_PREFLAGS/POSTFLAGS and
# DISTRESHAPE_MPI_TEST_ENV in the caller's scope.
function(_distreshape_mpiexec_probe)
  get_property(probed GLOBAL PROPERTY _DISTRESHAPE_MPIEXEC_PROBED)
  if(NOT probed STREQUAL "${MPIEXEC_EXECUTABLE}")
    set(version "")
    if(MPIEXEC_EXECUTABLE)
      execute_process(COMMAND "${MPIEXEC_EXECUTABLE}" --version
        OUTPUT_VARIABLE version ERROR_VARIABLE version TIMEOUT 20)
    endif()
    set(open_mpi FALSE)
    if(version MATCHES "Open MPI|OpenRTE")
      set(open_mpi TRUE)
    endif()
    set_property(GLOBAL PROPERTY _DISTRESHAPE_MPIEXEC_OPEN_MPI ${open_mpi})
    set_property(GLOBAL PROPERTY _DISTRESHAPE_MPIEXEC_PROBED "${MPIEXEC_EXECUTABLE}")
  endif()
  get_property(open_mpi GLOBAL PROPERTY _DISTRESHAPE_MPIEXEC_OPEN_MPI)
  separate_arguments(preflags NATIVE_COMMAND "${MPIEXEC_PREFLAGS}")
  separate_arguments(postflags NATIVE_COMMAND "${MPIEXEC_POSTFLAGS}")
  if(open_mpi AND NOT "--oversubscribe" IN_LIST preflags)
    list(APPEND preflags --oversubscribe)
  endif()
  set(DISTRESHAPE_MPIEXEC_PREFLAGS "${preflags}" PARENT_SCOPE)
  set(DISTRESHAPE_MPIEXEC_POSTFLAGS "${postflags}" PARENT_SCOPE)
  set(DISTRESHAPE_MPI_TEST_ENV OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
      PARENT_SCOPE)
endfunction()

function(distreshape_mpiexec_command out_var nprocs)
  if(NOT MPIEXEC_EXECUTABLE)
    message(FATAL_ERROR "distreshape_mpiexec_command: no mpiexec (find_package(MPI) left "
                        "MPIEXEC_EXECUTABLE unset; pass -DMPIEXEC_EXECUTABLE=...)")
  endif()
  _distreshape_mpiexec_probe()
  set(${out_var} "${MPIEXEC_EXECUTABLE}" ${MPIEXEC_NUMPROC_FLAG} ${nprocs}
      ${DISTRESHAPE_MPIEXEC_PREFLAGS} PARENT_SCOPE)
  set(DISTRESHAPE_MPIEXEC_PREFLAGS "${DISTRESHAPE_MPIEXEC_PREFLAGS}" PARENT_SCOPE)
  set(DISTRESHAPE_MPIEXEC_POSTFLAGS "${DISTRESHAPE_MPIEXEC_POSTFLAGS}" PARENT_SCOPE)
  set(DISTRESHAPE_MPI_TEST_ENV "${DISTRESHAPE_MPI_TEST_ENV}" PARENT_SCOPE)
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

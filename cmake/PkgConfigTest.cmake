# pkg-config test, run by ctest as `cmake -D... -P PkgConfigTest.cmake` on the
# prefix InstallTest.cmake installed (PREFIX), with the flags of
# `PKG_CONFIG distreshape` alone:
#  1. distreshape.pc sets no RPATH; when it requires MPI's own pkg-config module
#     (Requires:), its Cflags and Libs name no directory of their own but the
#     installation's,
#  2. the C split example and the C++ seed example (with C++17 and the MPI C++
#     bindings kept out, as DistReshape::distreshape_cxx has them) are built with
#     `--cflags --libs`, record no RPATH and run with LD_LIBRARY_PATH set to the
#     .pc's libdir, as pkg-config users run them,
#  3. `--static --libs` has every flag of LIBS_PRIVATE (Libs.private: rustc's
#     native-static-libs), and the C split example linked with libdistreshape.a
#     (-ldistreshape made -l:libdistreshape.a) and those flags needs no
#     libdistreshape.so and runs without LD_LIBRARY_PATH,
#  4. with the Fortran module (FORTRAN), the fmoddir variable points at
#     distreshape.mod.
cmake_minimum_required(VERSION 3.22)
set(DR_TEST "pkg-config test")
include("${CMAKE_CURRENT_LIST_DIR}/TestScriptHelpers.cmake")
dr_require(PREFIX EXAMPLES_DIR WORK_DIR PKG_CONFIG C_COMPILER CXX_COMPILER LIBS_PRIVATE
           MPIEXEC_EXECUTABLE MPIEXEC_NUMPROC_FLAG)
find_program(READELF NAMES readelf llvm-readelf REQUIRED)

set(ENV{PKG_CONFIG_PATH} "${PREFIX}/lib/pkgconfig")
unset(ENV{LD_LIBRARY_PATH})
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

# <out-var>: the output of `pkg-config <args...> distreshape`, as a list.
function(pkg_config out_var)
  execute_process(COMMAND "${PKG_CONFIG}" ${ARGN} distreshape
                  OUTPUT_VARIABLE output OUTPUT_STRIP_TRAILING_WHITESPACE COMMAND_ERROR_IS_FATAL ANY)
  separate_arguments(output UNIX_COMMAND "${output}")
  set(${out_var} "${output}" PARENT_SCOPE)
endfunction()

# <out-var>: the dynamic section of <file> (readelf -d).
function(dynamic_section out_var file)
  execute_process(COMMAND "${READELF}" -d "${file}" OUTPUT_VARIABLE output COMMAND_ERROR_IS_FATAL ANY)
  set(${out_var} "${output}" PARENT_SCOPE)
endfunction()

# 1. The .pc file itself.
file(STRINGS "${PREFIX}/lib/pkgconfig/distreshape.pc" pc_lines)
pkg_config(requires --print-requires)
foreach(line IN LISTS pc_lines)
  if(line MATCHES "rpath")
    message(FATAL_ERROR "${DR_TEST}: distreshape.pc sets an RPATH: ${line}")
  endif()
  # With MPI's module, every directory comes from a ${variable}.
  string(REGEX REPLACE "\\\${[^}]*}[^ ]*" "" own "${line}")
  if(requires AND line MATCHES "^(Cflags|Libs|Libs.private):" AND own MATCHES "/")
    message(FATAL_ERROR "${DR_TEST}: distreshape.pc requires ${requires} but names a directory: ${line}")
  endif()
endforeach()
message(STATUS "${DR_TEST}: distreshape.pc requires '${requires}'")

# 2. Shared library: LD_LIBRARY_PATH finds it.
pkg_config(flags --cflags --libs)
pkg_config(libdir --variable=libdir)
dr_run("${C_COMPILER}" "${EXAMPLES_DIR}/c/split.c" -o "${WORK_DIR}/split_pkgconfig" ${flags})
dr_run("${CXX_COMPILER}" -std=c++17 -DOMPI_SKIP_MPICXX -DMPICH_SKIP_MPICXX
       "${EXAMPLES_DIR}/cxx/seed.cpp" -o "${WORK_DIR}/seed_cxx_pkgconfig" ${flags})
foreach(program split_pkgconfig seed_cxx_pkgconfig)
  dynamic_section(dynamic "${WORK_DIR}/${program}")
  if(dynamic MATCHES "\\((RPATH|RUNPATH)\\)")
    message(FATAL_ERROR "${DR_TEST}: ${program} records an RPATH:\n${dynamic}")
  endif()
endforeach()
dr_mpi_run(NPROCS 2 ENV "LD_LIBRARY_PATH=${libdir}" COMMAND "${WORK_DIR}/split_pkgconfig")
dr_mpi_run(NPROCS 2 ENV "LD_LIBRARY_PATH=${libdir}" COMMAND "${WORK_DIR}/seed_cxx_pkgconfig" 1000)

# 3. Static library: Libs.private has what it needs.
pkg_config(static_flags --cflags --static --libs)
separate_arguments(libs_private UNIX_COMMAND "${LIBS_PRIVATE}")
foreach(flag IN LISTS libs_private)
  if(NOT flag IN_LIST static_flags)
    message(FATAL_ERROR "${DR_TEST}: `pkg-config --static --libs distreshape` lacks ${flag}: ${static_flags}")
  endif()
endforeach()
list(TRANSFORM static_flags REPLACE "^-ldistreshape$" "-l:libdistreshape.a")
dr_run("${C_COMPILER}" "${EXAMPLES_DIR}/c/split.c" -o "${WORK_DIR}/split_pkgconfig_static" ${static_flags})
dynamic_section(dynamic "${WORK_DIR}/split_pkgconfig_static")
if(dynamic MATCHES "libdistreshape")
  message(FATAL_ERROR "${DR_TEST}: split_pkgconfig_static needs libdistreshape.so:\n${dynamic}")
endif()
dr_mpi_run(NPROCS 2 COMMAND "${WORK_DIR}/split_pkgconfig_static")

# 4. Fortran users add -I$(pkg-config --variable=fmoddir distreshape).
if(FORTRAN)
  pkg_config(fmoddir --variable=fmoddir)
  if(NOT EXISTS "${fmoddir}/distreshape.mod")
    message(FATAL_ERROR "${DR_TEST}: pkg-config's fmoddir '${fmoddir}' has no distreshape.mod")
  endif()
endif()

# Builds one Rust program of the docs with rustc against the crate cargo built
# (cmake -P, from docs/CMakeLists.txt), as rustdoc builds doc tests:
#   -D RUSTC=<rustc> -D SOURCE=<file.rs> -D OUTPUT=<binary>
#   -D LIB_DIR=<cargo target dir>/<profile>   holds libdistreshape.rlib and deps/
#   -D EXTERNS=<crate;...>                    the dependencies a program may use
#                                             by name besides distreshape (mpi, ndarray)
#   -D NATIVE_DIRS=<dir;...>                  where MPI's libraries are
#   -D RELEASE=<ON|OFF>                       optimize like the crate's profile
# An extern is the deps/lib<crate>-<hash>.rlib the crate was built against: of the
# candidates there, the one rustc accepts (cargo may have left several).
foreach(var RUSTC SOURCE OUTPUT LIB_DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "DocRustBuild: -D ${var}=... is required")
  endif()
endforeach()
set(flags --edition 2024 --crate-type bin -o "${OUTPUT}"
    --extern "distreshape=${LIB_DIR}/libdistreshape.rlib" -L "dependency=${LIB_DIR}/deps")
if(RELEASE)
  list(APPEND flags -C opt-level=3)
endif()
foreach(dir IN LISTS NATIVE_DIRS)
  list(APPEND flags -L "native=${dir}")
endforeach()
# Every combination is tried only when a crate has several candidates.
set(choices "")
foreach(crate IN LISTS EXTERNS)
  file(GLOB candidates "${LIB_DIR}/deps/lib${crate}-*.rlib")
  if(NOT candidates)
    message(FATAL_ERROR "DocRustBuild: no lib${crate}-*.rlib in ${LIB_DIR}/deps")
  endif()
  list(APPEND choices "${crate}")
  set(candidates_${crate} ${candidates})
endforeach()
function(try_build chosen remaining)
  if(NOT remaining)
    execute_process(COMMAND "${RUSTC}" ${flags} ${chosen} "${SOURCE}"
      RESULT_VARIABLE result ERROR_VARIABLE err)
    if(result EQUAL 0)
      set(built TRUE PARENT_SCOPE)
    else()
      set(last_error "${err}" PARENT_SCOPE)
    endif()
    return()
  endif()
  list(POP_FRONT remaining crate)
  foreach(candidate IN LISTS candidates_${crate})
    try_build("${chosen};--extern;${crate}=${candidate}" "${remaining}")
    if(built)
      set(built TRUE PARENT_SCOPE)
      return()
    endif()
  endforeach()
  set(last_error "${last_error}" PARENT_SCOPE)
endfunction()
set(built FALSE)
try_build("" "${choices}")
if(NOT built)
  message(FATAL_ERROR "DocRustBuild: rustc failed on ${SOURCE}:\n${last_error}")
endif()

# Runs one program of the docs and checks it (from docs/CMakeLists.txt):
#   cmake [-D EXPECTED=<file>] -P DocExampleRun.cmake <launch> <program> [args...]
# EXPECTED, when not empty, is what the program must print on stdout, compared
# line by line, trailing blanks aside. The output is shown either way; a
# non-zero exit fails the test.
# CMAKE_ARGV<i>: cmake, the -D options, -P, the script, then the command.
set(COMMAND "")
set(script_index -1)
math(EXPR last "${CMAKE_ARGC} - 1")
foreach(i RANGE 1 ${last})
  if(script_index GREATER -1 AND i GREATER script_index)
    list(APPEND COMMAND "${CMAKE_ARGV${i}}")
  elseif(script_index EQUAL -1 AND CMAKE_ARGV${i} STREQUAL "-P")
    math(EXPR script_index "${i} + 1")
  endif()
endforeach()
if(NOT COMMAND)
  message(FATAL_ERROR "DocExampleRun: no command after the script")
endif()
execute_process(COMMAND ${COMMAND} OUTPUT_VARIABLE out RESULT_VARIABLE result)
message("${out}")
if(NOT result EQUAL 0)
  message(FATAL_ERROR "DocExampleRun: the program failed (${result})")
endif()
if(EXPECTED)
  file(READ "${EXPECTED}" want)
  foreach(var out want)
    string(REGEX REPLACE "[ \t\r]+\n" "\n" ${var} "${${var}}")
    string(REGEX REPLACE "[ \t\r\n]+$" "" ${var} "${${var}}")
  endforeach()
  if(NOT out STREQUAL want)
    message(FATAL_ERROR "DocExampleRun: the output differs from the docs' (${EXPECTED}):\n"
                        "--- documented\n${want}\n--- printed\n${out}")
  endif()
endif()

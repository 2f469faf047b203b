# Python wheel test, run by ctest as `cmake -D... -P PythonWheelTest.cmake`: a
# wheel built with `maturin build` (python/pyproject.toml's settings) links the
# system's MPI, as `pip install ./python` does, instead of carrying a copy:
#  1. maturin builds the wheel (CARGO_ENV: the cargo directory python_package
#     built in, so only the wheel is written),
#  2. a fresh virtual environment gets mpi4py from MPI4PY_WHEELS (built against
#     the same MPI), the wheel, and numpy from the index (pip's cache),
#  3. python/tests/wheel_check.py runs there at 2 ranks: no MPI library in the
#     wheel, one MPI library loaded (the system's), a reshape checked element by
#     element.
cmake_minimum_required(VERSION 3.22)
set(DR_TEST "Python wheel test")
include("${CMAKE_CURRENT_LIST_DIR}/TestScriptHelpers.cmake")
dr_require(PYTHON SOURCE_DIR WORK_DIR MPI4PY_WHEELS CARGO_ENV MPIEXEC_EXECUTABLE MPIEXEC_NUMPROC_FLAG)

file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
dr_run("${CMAKE_COMMAND}" -E env ${CARGO_ENV}
       "${PYTHON}" -m maturin build --release --quiet --out "${WORK_DIR}/dist"
       --manifest-path "${SOURCE_DIR}/python/Cargo.toml")
file(GLOB wheel "${WORK_DIR}/dist/distreshape-*.whl")
list(LENGTH wheel count)
if(NOT count EQUAL 1)
  message(FATAL_ERROR "${DR_TEST}: expected one wheel in ${WORK_DIR}/dist, found '${wheel}'")
endif()

set(venv_python "${WORK_DIR}/venv/bin/python")
dr_run("${PYTHON}" -m venv "${WORK_DIR}/venv")
dr_run("${venv_python}" -m pip install -q --no-index --find-links "${MPI4PY_WHEELS}" mpi4py)
dr_run("${venv_python}" -m pip install -q "${wheel}")
# The script's directory (python/tests) holds no package: `import distreshape` finds the wheel's.
dr_mpi_run(NPROCS 2 COMMAND "${venv_python}" "${SOURCE_DIR}/python/tests/wheel_check.py" "${wheel}")

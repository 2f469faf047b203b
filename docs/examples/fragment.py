# The wrapper of the docs' Python fragments (```python fragment): the names a
# fragment uses without defining them, then the fragment, compiled (not run).
import numpy as np
from mpi4py import MPI
import distreshape as dr

comm = MPI.COMM_WORLD
plan = local = out = None

@FRAGMENT@

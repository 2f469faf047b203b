"""DistReshape for Python: reshapes of distributed N-d NumPy arrays over mpi4py.

>>> import numpy as np, distreshape as dr
>>> from mpi4py import MPI
>>> # (10, 1000, 10) split along axis 1 -> (10, 10000) split along axis 1
>>> rows = dr.balanced_slab(1000, MPI.COMM_WORLD.size, MPI.COMM_WORLD.rank)
>>> local = np.zeros((10, rows.stop - rows.start, 10))
>>> out = dr.reshape(local, (10, 1000, 10), 1, (10, -1), 1)

Import mpi4py's ``MPI`` (which initializes MPI) before calling anything here; the
library and mpi4py must use the same MPI. Heat arrays: :mod:`distreshape.heat`.
"""

from ._errors import STATUS, Error
from ._plan import Plan, Request, Stats, balanced_slab, reshape

__all__ = ["Error", "Plan", "Request", "STATUS", "Stats", "balanced_slab", "reshape"]

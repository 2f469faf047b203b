"""DistReshape for Python: reshapes of distributed N-d NumPy arrays over mpi4py.

>>> import numpy as np, distreshape as dr
>>> from mpi4py import MPI
>>> # (10, 1000, 10) split along axis 1 -> (10, 10000) split along axis 1
>>> rows = dr.balanced_slab(1000, MPI.COMM_WORLD.size, MPI.COMM_WORLD.rank)
>>> local = np.zeros((10, rows.stop - rows.start, 10))
>>> out = dr.reshape(local, (10, 1000, 10), 1, (10, -1), 1)

Arrays on a process grid (pencils, bricks, 2-d blocks) are :class:`Layout` values,
redistributed by :func:`redistribute` or a :meth:`Plan.from_layouts` plan:

>>> cart = MPI.COMM_WORLD.Create_cart(MPI.Compute_dims(MPI.COMM_WORLD.size, 2))
>>> x_pencils = dr.Layout.for_cart((64, 64, 64), cart, (None, 0, 1))
>>> y_pencils = dr.Layout.for_cart((64, 64, 64), cart, (0, None, 1))
>>> local = np.zeros(x_pencils.local_shape(cart))
>>> out = dr.redistribute(local, x_pencils, y_pencils, cart)

Several plans of one communicator run together, in one round, as a :class:`Fused`:

>>> fused = dr.Fused([velocity, velocity, velocity, scalar])
>>> u_y, v_y, w_y, t_x = fused.execute([u, v, w, t])

Import mpi4py's ``MPI`` (which initializes MPI) before calling anything here; the
library and mpi4py must use the same MPI. Heat arrays: :mod:`distreshape.heat`.
"""

from ._errors import STATUS, Error
from ._fused import Fused
from ._layout import Layout
from ._plan import OPTIONS, Plan, Request, Stats, balanced_slab, redistribute, reshape

__all__ = [
    "Error", "Fused", "Layout", "OPTIONS", "Plan", "Request", "STATUS", "Stats",
    "balanced_slab", "redistribute", "reshape",
]

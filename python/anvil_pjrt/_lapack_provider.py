"""The LAPACK routines anvil's linear algebra calls, taken from scipy as jaxlib takes them.

JAX's CPU backend runs scipy's LAPACK: jaxlib reads the function pointers that
``scipy.linalg.cython_lapack`` and ``cython_blas`` export (``__pyx_capi__``). anvil links the
system's OpenBLAS, whose LAPACK may be another version: where the answer is not unique (the
Schur form of a 100x100 matrix, eigenvector signs...) the two give different, equally valid
results, and JAX's tests compare against scipy. The client create option ``lapack_functions``
hands the same routines to anvil: the address of a list of {name, address} pairs ending with a
NULL name. Without scipy, anvil uses its own linked routines.
"""

import ctypes
import logging

logger = logging.getLogger(__name__)

# What anvil's LAPACK custom calls use (src/runtime/kernels/lapack_fns.h).
_ALL4 = ("potrf", "getrf", "geqrf", "geqp3", "gtsv", "gesdd", "gesvd", "geev", "gees", "gehrd")
ROUTINES = (
    [t + n for t in "sdcz" for n in _ALL4]
    + [t + n for t in "sd" for n in ("orgqr", "ormqr", "syevd", "sytrd")]
    + [t + n for t in "cz" for n in ("ungqr", "unmqr", "heevd", "hetrd")]
)
BLAS_ROUTINES = tuple(t + "trsm" for t in "sdcz")


class _Entry(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("fn", ctypes.c_void_p)]


_table = None  # kept for the life of the process: clients read it when they are created


def _capsule_address(capsule):
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype = ctypes.c_char_p
    get_name.argtypes = [ctypes.py_object]
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype = ctypes.c_void_p
    get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    return get_pointer(capsule, get_name(capsule))


def table_address():
    """Address for the create option ``lapack_functions``, or None without scipy."""
    global _table
    if _table is not None:
        return ctypes.addressof(_table)
    try:
        from scipy.linalg import cython_blas, cython_lapack
    except ImportError:
        logger.debug("anvil: no scipy, LAPACK custom calls use the linked OpenBLAS")
        return None
    entries = []
    try:
        for names, module in ((ROUTINES, cython_lapack), (BLAS_ROUTINES, cython_blas)):
            for name in names:
                entries.append((name.encode(), _capsule_address(module.__pyx_capi__[name])))
    except (AttributeError, KeyError, ValueError) as e:  # pragma: no cover - scipy version
        logger.debug("anvil: scipy's LAPACK is incomplete (%s), using the linked OpenBLAS", e)
        return None
    table = (_Entry * (len(entries) + 1))()
    for i, (name, fn) in enumerate(entries):
        table[i].name, table[i].fn = name, fn
    table[len(entries)].name = None
    _table = table
    return ctypes.addressof(_table)

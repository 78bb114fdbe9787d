# Augments elementwise.py in the compiled build (tensorlab/_build.py HOT_PATH): the row record _Op
# as an extension type, and the straight-line fast paths with C-typed locals, so `d._ok`,
# `a._meta`, `p._pin` ... are struct member reads. The .py stays the one source and the
# interpreted fallback; every local typed here holds exactly that type on every path there.
import cython
from tensorlab.tensor cimport _TensorBase

cdef class _Op:
    cdef public object name
    cdef public object iname
    cdef public object kernel
    cdef public object prim
    cdef public object promotion
    cdef public object accepts
    cdef public object bool_error
    cdef public object bool_to
    cdef public object scalar_other
    cdef public object scalar_input
    cdef public dict _types
    cdef public dict _ok

@cython.locals(tx=_TensorBase, p=_TensorBase)
cpdef _pin(x)

@cython.locals(tx=_TensorBase, p=_TensorBase)
cpdef _pin_of(x, meta)

@cython.locals(ta=_TensorBase, tb=_TensorBase, pa=_TensorBase, qb=_TensorBase, t=_TensorBase, same=bint,
               number=bint)
cpdef _binary(_Op d, a, b, out, params=*, check=*, reflected=*)

@cython.locals(ts=_TensorBase, t=_TensorBase)
cpdef _binary_(_Op d, self, other, params=*, check=*)

@cython.locals(tx=_TensorBase, px=_TensorBase, t=_TensorBase)
cpdef _unary(_Op d, x, out, params=*, check=*, inplace=*)

# Augments tensor.py in the compiled build (tensorlab/_build.py HOT_PATH): _TensorBase becomes an
# extension type, so compiled modules that cimport it and declare a local `_TensorBase` read and
# write these fields as C struct members. Every field stays a Python object (the .py semantics
# exactly: `_requires_grad` holds whatever bool was stored, `_base` None or a tensor).
import cython

cdef class _TensorBase:
    cdef public object _meta
    cdef public object _dtype
    cdef public object _vc
    cdef public object _requires_grad
    cdef public object _base
    cdef public object _hview
    cdef public object _pin

@cython.locals(t=_TensorBase)
cpdef _new(cls, meta, dtype, vc, requires_grad)

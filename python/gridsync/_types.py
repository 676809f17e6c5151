"""gridsync's dtypes and ops, and how every array protocol and framework spells them."""

import enum


class DType(enum.IntEnum):
    """gs_dtype (values fixed by api/gridsync.h)."""

    INT32 = 0
    UINT32 = 1
    INT64 = 2
    UINT64 = 3
    FLOAT32 = 4
    FLOAT64 = 5
    FLOAT16 = 6
    BFLOAT16 = 7
    INT8 = 8
    UINT8 = 9

    @property
    def itemsize(self):
        return _ITEMSIZE[self]

    @property
    def is_float(self):
        return self in (DType.FLOAT32, DType.FLOAT64, DType.FLOAT16, DType.BFLOAT16)

    @property
    def type_name(self):
        """The name numpy, PyTorch and CuPy give the type ("float32", "bfloat16")."""
        return self.name.lower()


class Op(enum.IntEnum):
    """gs_op (values fixed by api/gridsync.h)."""

    SUM = 0
    PROD = 1
    MIN = 2
    MAX = 3
    ARGMIN = 4
    ARGMAX = 5
    BIT_AND = 6
    BIT_OR = 7
    BIT_XOR = 8


_ITEMSIZE = {
    DType.INT32: 4, DType.UINT32: 4, DType.INT64: 8, DType.UINT64: 8, DType.FLOAT32: 4,
    DType.FLOAT64: 8, DType.FLOAT16: 2, DType.BFLOAT16: 2, DType.INT8: 1, DType.UINT8: 1,
}

# Names accepted for op=: the enum's own, the gridsync command's, and numpy's ufunc names.
_OP_NAMES = {
    "sum": Op.SUM, "add": Op.SUM,
    "prod": Op.PROD, "product": Op.PROD, "multiply": Op.PROD,
    "min": Op.MIN, "amin": Op.MIN, "minimum": Op.MIN,
    "max": Op.MAX, "amax": Op.MAX, "maximum": Op.MAX,
    "argmin": Op.ARGMIN, "argmax": Op.ARGMAX,
    "and": Op.BIT_AND, "bit_and": Op.BIT_AND, "bitwise_and": Op.BIT_AND,
    "or": Op.BIT_OR, "bit_or": Op.BIT_OR, "bitwise_or": Op.BIT_OR,
    "xor": Op.BIT_XOR, "bit_xor": Op.BIT_XOR, "bitwise_xor": Op.BIT_XOR,
}

# Names accepted for out_dtype=: numpy/PyTorch names and the gridsync command's short ones.
_DTYPE_NAMES = {d.type_name: d for d in DType}
_DTYPE_NAMES.update({
    "i32": DType.INT32, "u32": DType.UINT32, "i64": DType.INT64, "u64": DType.UINT64,
    "f32": DType.FLOAT32, "f64": DType.FLOAT64, "f16": DType.FLOAT16, "bf16": DType.BFLOAT16,
    "i8": DType.INT8, "u8": DType.UINT8, "half": DType.FLOAT16, "float": DType.FLOAT32,
    "double": DType.FLOAT64,
})

# DLPack's DLDataType (code, bits) with lanes == 1. Codes: kDLInt 0, kDLUInt 1, kDLFloat 2,
# kDLBfloat 4 (dlpack.h).
_DLPACK = {
    (0, 8): DType.INT8, (0, 32): DType.INT32, (0, 64): DType.INT64,
    (1, 8): DType.UINT8, (1, 32): DType.UINT32, (1, 64): DType.UINT64,
    (2, 16): DType.FLOAT16, (2, 32): DType.FLOAT32, (2, 64): DType.FLOAT64,
    (4, 16): DType.BFLOAT16,
}
DLPACK_CODE = {v: k for k, v in _DLPACK.items()}
_DLPACK_CODE_NAMES = {0: "int", 1: "uint", 2: "float", 3: "opaque handle", 4: "bfloat", 5: "complex", 6: "bool"}

# __cuda_array_interface__ typestr: byte order, kind, size. numpy has no bfloat16, so a
# bfloat16 array's typestr is '<V2' (ml_dtypes): see dtype_from_typestr.
_TYPESTR = {
    ("i", 1): DType.INT8, ("i", 4): DType.INT32, ("i", 8): DType.INT64,
    ("u", 1): DType.UINT8, ("u", 4): DType.UINT32, ("u", 8): DType.UINT64,
    ("f", 2): DType.FLOAT16, ("f", 4): DType.FLOAT32, ("f", 8): DType.FLOAT64,
}
TYPESTR = {v: "<%s%d" % k if k[1] > 1 else "|%s1" % k[0] for k, v in _TYPESTR.items()}
TYPESTR[DType.BFLOAT16] = "<V2"

SUPPORTED = "int8, uint8, int32, uint32, int64, uint64, float16, bfloat16, float32, float64"


def op_from(op):
    if isinstance(op, Op):
        return op
    if isinstance(op, str):
        o = _OP_NAMES.get(op.lower())
        if o is not None:
            return o
        raise ValueError("gridsync: unknown op %r: use one of %s" % (op, ", ".join(
            ["sum", "prod", "min", "max", "argmin", "argmax", "and", "or", "xor"])))
    if isinstance(op, int) and not isinstance(op, bool) and op in Op._value2member_map_:
        return Op(op)
    raise TypeError("gridsync: op must be a name such as 'sum' or a gridsync.Op, not %r" % (op,))


def dtype_from(obj):
    """A gridsync DType for out_dtype=: a DType, a name ("float64", "f64"), or a numpy, CuPy,
    PyTorch, JAX or ml_dtypes dtype or type object of a gridsync type."""
    if isinstance(obj, DType):
        return obj
    if isinstance(obj, str):
        name = obj
    elif isinstance(obj, int) and not isinstance(obj, bool):
        if obj in DType._value2member_map_:
            return DType(obj)
        raise ValueError("gridsync: %d is not a gs_dtype value (0..9)" % obj)
    else:
        # torch.float32 prints as 'torch.float32'; numpy's dtype has .name, its scalar types
        # (numpy.float32, ml_dtypes.bfloat16) have __name__.
        name = getattr(obj, "name", None)
        if not isinstance(name, str):
            name = getattr(obj, "__name__", None)
        if not isinstance(name, str):
            name = str(obj)
        if name.startswith("torch."):
            name = name[len("torch."):]
    d = _DTYPE_NAMES.get(name.lower())
    if d is None:
        raise TypeError("gridsync: %r is not a gridsync dtype (supported: %s)" % (obj, SUPPORTED))
    return d


def dtype_from_dlpack(code, bits, lanes):
    d = _DLPACK.get((code, bits)) if lanes == 1 else None
    if d is None:
        what = "%s%d" % (_DLPACK_CODE_NAMES.get(code, "type code %d " % code), bits)
        if lanes != 1:
            what += " x%d lanes" % lanes
        raise TypeError("gridsync: DLPack dtype %s is not supported (supported: %s); cast the array "
                        "first, e.g. bool to uint8" % (what, SUPPORTED))
    return d


def dtype_from_typestr(typestr, obj=None):
    if not isinstance(typestr, str) or len(typestr) < 3:
        raise TypeError("gridsync: __cuda_array_interface__ typestr %r is malformed" % (typestr,))
    order, kind = typestr[0], typestr[1]
    try:
        size = int(typestr[2:])
    except ValueError:
        raise TypeError("gridsync: __cuda_array_interface__ typestr %r is malformed" % (typestr,)) from None
    if order == ">" and size > 1:
        raise TypeError("gridsync: typestr %r is big-endian; CUDA devices hold little-endian data: "
                        "byte-swap the array first" % typestr)
    if kind == "V" and size == 2:
        # numpy has no bfloat16: an ml_dtypes.bfloat16 array says '<V2'. Only the array's own
        # dtype (CuPy, Numba) tells it from any other 2-byte record.
        dt = getattr(obj, "dtype", None)
        if getattr(dt, "name", None) == "bfloat16":
            return DType.BFLOAT16
        raise TypeError("gridsync: __cuda_array_interface__ typestr '<V2' does not say which 2-byte type "
                        "it is; for bfloat16 pass the array through DLPack (x.__dlpack__), which does")
    d = _TYPESTR.get((kind, size))
    if d is None:
        raise TypeError("gridsync: __cuda_array_interface__ typestr %r is not a gridsync dtype "
                        "(supported: %s); cast the array first" % (typestr, SUPPORTED))
    return d


def default_out(dtype, op):
    """gs_reduce's default output type (docs/semantics.md §2)."""
    return DType.INT64 if op in (Op.ARGMIN, Op.ARGMAX) else dtype

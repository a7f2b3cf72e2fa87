"""Software prefetches for Numba kernels (LLVM's ``llvm.prefetch``).

Gathering an event's row of codes through the partition touches a new cache line per
event once a node's events are sparse; asking for the row a few events ahead hides most
of that latency (as XGBoost's histogram builder does). ``prefetch_far`` asks for a line
into the outer caches only (T2), for requests made further ahead.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["prefetch", "prefetch_far"]


def _prefetch_codegen(locality: int):
    """The code of a read prefetch of ``array[index]`` with LLVM's ``locality`` (3: into
    every cache level, T0; 1: the outer ones, T2)."""

    def codegen(context, builder, signature, args):
        array_type = signature.args[0]
        ary = context.make_array(array_type)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, array_type, ary, [args[1]],
                                       wraparound=False)
        i8_ptr = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fn_type = ir.FunctionType(ir.VoidType(), [i8_ptr, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fn_type, "llvm.prefetch.p0i8")
        # read (0), the locality, data cache (1)
        builder.call(fn, [builder.bitcast(ptr, i8_ptr), i32(0), i32(locality), i32(1)])
        return context.get_dummy_value()

    return codegen


@intrinsic
def prefetch(typingctx, array, index):
    """Hint that ``array[index]`` (a 1-d array, an integer index) will be read soon."""
    if not isinstance(array, types.Array) or not isinstance(index, types.Integer):
        return None
    return types.void(array, index), _prefetch_codegen(3)


@intrinsic
def prefetch_far(typingctx, array, index):
    """Hint that ``array[index]`` will be read later: into the outer caches (T2)."""
    if not isinstance(array, types.Array) or not isinstance(index, types.Integer):
        return None
    return types.void(array, index), _prefetch_codegen(1)

"""One exact draw of an OpenDP index-valued measurement, passed through OpenDP's C entry point.

Why this exists.  Calling ``measurement(values)`` goes through OpenDP's Python
layer, which parses type strings and converts the argument and the result on
every call: about 0.13 ms, while the exact draw itself takes a few
microseconds.  A forest makes thousands of selections (2,205 in the speed
benchmark), so that layer was most of a production fit.

What it does.  :class:`IndexDraw` makes the same call OpenDP's Python layer
makes, ``opendp_core__measurement_invoke(measurement, AnyObject<Vec<i64>>)``,
through the same function object of OpenDP's library handle
(``opendp._lib.lib.opendp_core__measurement_invoke``, looked up on every
call), and reads the ``usize`` index back.  The measurement is OpenDP's own
``make_noisy_max``, built as before, so the sampler, the noise scale, the
arbitrary-precision arithmetic and the operating-system randomness are
unchanged: this changes how the argument is passed, not what is drawn.

Privacy.  Nothing here computes, compares or rounds a noisy value; the only
value returned is the index OpenDP released.  A failure raises OpenDP's own
error (as the Python layer would); the argument is always a finite int64
vector of the measurement's input domain, so no dataset makes it fail where
a neighbour would not.

Observation.  Because every OpenDP invocation, from the Python layer or from
here, passes through that one C entry point, the privacy gate records draws
there (``tests/privacy/_instrumentation.py``): a draw made any other way
would be missing from its record and fail the gate.

Compatibility.  The C interface is OpenDP's, stable within the pinned
``opendp==0.16.*``.  :func:`index_draw` checks, once per measurement and
without drawing, that its input carrier is ``Vec<i64>`` (refusing anything
else) and falls back to the public call when the C functions are missing.
The output is ``usize`` by construction (``make_noisy_max``).
"""

from __future__ import annotations

import ctypes
import logging

import numpy as np
from numpy.typing import NDArray

__all__ = ["IndexDraw", "index_draw"]

_log = logging.getLogger(__name__)


class IndexDraw:
    """``values -> index``: one invocation of an OpenDP measurement from ``Vec<i64>`` to ``usize``.

    Parameters
    ----------
    measurement : opendp.mod.Measurement
        The measurement to invoke (kept alive as long as this object).

    Notes
    -----
    Privacy cost: that of one invocation of ``measurement`` (its privacy map);
    this class adds no randomness and no computation on the draw.
    """

    def __init__(self, measurement: object) -> None:
        from opendp._lib import AnyObject, AnyObjectPtr, FfiResult, FfiSlice, lib, unwrap
        from opendp.mod import Measurement

        self._measurement = measurement
        self._lib = lib
        self._argtypes = [Measurement, AnyObjectPtr]  # exactly what OpenDP's own measurement_invoke declares
        self._result_type = FfiResult
        self._slice_type = FfiSlice
        self._object_pointer = ctypes.POINTER(AnyObject)  # a plain pointer: its lifetime is managed here
        self._unwrap = unwrap

        def helper(name: str, *argtypes: object):
            function = lib[name]  # a fresh function object: OpenDP's own are left as they are
            function.argtypes = list(argtypes)
            function.restype = FfiResult
            return function

        void_p = ctypes.c_void_p
        self._slice_as_object = helper("opendp_data__slice_as_object", void_p, ctypes.c_char_p)
        self._object_as_slice = helper("opendp_data__object_as_slice", void_p)
        self._object_free = helper("opendp_data__object_free", void_p)
        self._slice_free = helper("opendp_data__slice_free", void_p)

    def _ok(self, result: object) -> int:
        if result.tag != 0:
            self._unwrap(result, ctypes.c_void_p)  # raises OpenDP's own error (and frees it)
            raise RuntimeError("OpenDP returned an error without a message")  # pragma: no cover
        return result.payload.Ok

    def _invoke(self, data: int) -> int:
        # the shared entry point, looked up on each call (the privacy gate observes it there)
        entry = self._lib.opendp_core__measurement_invoke
        entry.argtypes = self._argtypes
        entry.restype = self._result_type
        return self._ok(entry(self._measurement, ctypes.cast(data, self._object_pointer)))

    def __call__(self, values: NDArray[np.int64]) -> int:
        """The index OpenDP releases for ``values`` (an int64 vector)."""
        values = np.ascontiguousarray(values, dtype=np.int64)
        raw = self._slice_type(values.ctypes.data, values.size)
        data = self._ok(self._slice_as_object(ctypes.byref(raw), b"Vec<i64>"))  # OpenDP copies the vector
        try:
            release = self._invoke(data)
        finally:
            self._ok(self._object_free(data))
        try:
            view = self._ok(self._object_as_slice(release))
            try:
                address = self._slice_type.from_address(view).ptr
                return int(ctypes.c_size_t.from_address(address).value)
            finally:
                self._ok(self._slice_free(view))
        finally:
            self._ok(self._object_free(release))


def index_draw(measurement: object):
    """A callable ``int64 vector -> index`` invoking ``measurement``, through :class:`IndexDraw` when it can.

    ``measurement`` must be index-valued on ``Vec<i64>`` (``make_noisy_max``
    over ``atom_domain(T="i64")``); anything else is refused with a
    ``TypeError``.  The direct call is used when OpenDP's C functions are
    there; otherwise (an OpenDP whose interface differs) the public call is
    returned, with a warning.  Both invoke the same measurement through the
    same C entry point.
    """
    from opendp.core import measurement_input_carrier_type

    carrier = str(measurement_input_carrier_type(measurement))
    if carrier != "Vec<i64>":
        raise TypeError(f"expected a measurement on Vec<i64>, got one on {carrier}")
    try:
        return IndexDraw(measurement)
    except (ImportError, AttributeError) as exc:  # pragma: no cover - depends on OpenDP's build
        _log.warning("OpenDP's C interface is not as expected (%s); using its Python layer", exc)
        return lambda values: int(measurement(np.ascontiguousarray(values, dtype=np.int64)))

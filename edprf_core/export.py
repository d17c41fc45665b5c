"""Export of a released forest for serving: an ONNX graph and the encoding it expects."""

from ._onnx_export import encoding_spec, forest_to_onnx

__all__ = ["encoding_spec", "forest_to_onnx"]

"""Export of a released forest for serving: an ONNX graph, the encoding it expects, and its input feed."""

from ._onnx_export import ENCODING_FORMATS, encoding_spec, forest_to_onnx, onnx_inputs

__all__ = ["ENCODING_FORMATS", "encoding_spec", "forest_to_onnx", "onnx_inputs"]

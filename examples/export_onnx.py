"""Export a DP forest to ONNX and serve it with onnxruntime: the same probabilities as predict_proba.

The graph's input is the schema's codes of each row; its public encoding (bounds, bin edges, categories,
missing rules) travels beside it as JSON.  Run: python examples/export_onnx.py  (onnxruntime to run the graph)
"""

import json
import tempfile
from pathlib import Path

import numpy as np
import onnx

from edprf_core import EDPRFClassifier, Schema, load_embedded
from edprf_core.encoding import FeatureGrid, encode_features
from edprf_core.export import encoding_spec, forest_to_onnx

X, y, schema = load_embedded("wall_robot_navigation")
forest = EDPRFClassifier(schema, epsilon=1.0).fit(X, y).forest_

with tempfile.TemporaryDirectory() as tmp:
    onnx.save(forest_to_onnx(forest), Path(tmp) / "model.onnx")  # post-processing of the release: no epsilon
    (Path(tmp) / "model.encoding.json").write_text(json.dumps(encoding_spec(forest)), encoding="utf-8")

    # On the serving side: only the two files.
    spec = json.loads((Path(tmp) / "model.encoding.json").read_text(encoding="utf-8"))
    served_schema = Schema.from_toml(spec["schema_toml"])
    rows = X.head(100)
    codes = encode_features(rows, served_schema, FeatureGrid.from_schema(served_schema, spec["n_bins"]))
    try:
        import onnxruntime as ort
    except ImportError:
        print("onnxruntime is not installed: the graph was written but not run")
    else:
        session = ort.InferenceSession(str(Path(tmp) / "model.onnx"))
        proba = session.run(["probabilities"], {"codes": codes.astype("float64")})[0]
        gap = np.abs(proba - forest.predict_proba(rows)).max()
        print(f"classes {spec['classes']}; largest difference to predict_proba on 100 rows: {gap:.1e}")

"""Check a data file against a public schema before training on it: what its rules keep, drop and clip.

Run: python examples/check_your_data.py  (writes a small CSV with a few flawed lines to a temporary directory)
"""

import tempfile
from pathlib import Path

from edprf_core import EDPRFClassifier, check_data, example_schema, load_embedded
from edprf_core.encoding import conforming_rows
from edprf_core.tables import read_table

schema = example_schema("bank_marketing")  # the public schema: bounds, categories, classes, missing-value rules
X, y, _ = load_embedded("bank_marketing")
frame = X.iloc[:2000].astype(object).assign(**{schema.label.column: y.iloc[:2000].to_numpy()})
frame.loc[frame.index[:3], "age"] = [150, 200, 7]  # outside the declared bounds: clipped
frame.loc[frame.index[3], "balance"] = "1e309"  # not a finite number: that row is dropped, alone

with tempfile.TemporaryDirectory() as tmp:
    path = Path(tmp) / "my-data.csv"
    frame.to_csv(path, index=False)
    with path.open("a", encoding="utf-8") as f:
        f.write("a line,with too few fields\n")  # left out, without touching any other line

    # Nothing is trained or sent: an exact report of the file, for its owner's eyes.
    print("\n".join(check_data(path, schema).lines()))

    # Train on exactly the rows a party would keep: each line and each cell is read by the schema alone.
    table = read_table(path, schema)
    keep, _ = conforming_rows(table.X, table.y, schema)
    clf = EDPRFClassifier(schema, epsilon=1.0).fit(table.X[keep], table.y[keep])
    print(f"trained on {int(keep.sum())} rows; guarantee: {clf.forest_.guarantee().split(' (')[0]}")

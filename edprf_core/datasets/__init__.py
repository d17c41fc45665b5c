"""Example schemas and the public datasets shipped with the package (this folder holds their files).

``load_embedded()`` returns a shipped dataset as ``(X, y, schema)``; ``example_schema(name)`` the public
schema of a known dataset (for :func:`available_schemas`; the data of some are not shipped: bring your own
copy and read it with :func:`read_csv`).  See ``NOTICE.md`` here for each dataset's source and licence.
"""

from .._datasets import available_schemas, embedded_datasets, example_schema, load_embedded, read_csv

__all__ = ["available_schemas", "embedded_datasets", "example_schema", "load_embedded", "read_csv"]

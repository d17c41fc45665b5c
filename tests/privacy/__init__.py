"""The privacy gate: ``./test.sh -m privacy``."""

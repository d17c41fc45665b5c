"""Fixtures: small signed global models (binary bank marketing, four-class wall robot) and their keys."""

from __future__ import annotations

import pytest

from .model_files import write_model_files


@pytest.fixture(scope="session")
def bank_model(tmp_path_factory) -> dict:
    return write_model_files(tmp_path_factory.mktemp("bank-model"), "bank_marketing")


@pytest.fixture(scope="session")
def wall_model(tmp_path_factory) -> dict:
    return write_model_files(tmp_path_factory.mktemp("wall-model"), "wall_robot_navigation")

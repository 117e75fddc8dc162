"""Fixtures for the evidence tests: an isolated check registry and fake project trees."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest


from tests.evidence.evidence_fakeproject import FAKE_CHECKS, FakeProject, isolated_registry


@pytest.fixture
def registry() -> Iterator[None]:
    """The fake checks plus the evidence checks, restored afterwards."""
    with isolated_registry(FAKE_CHECKS):
        yield


@pytest.fixture
def project(tmp_path: Path, registry: None) -> FakeProject:
    """A project with the real requirement set and two models whose fake checks all pass."""
    fake = FakeProject(tmp_path)
    fake.add_model("alpha")
    fake.add_model("beta")
    return fake

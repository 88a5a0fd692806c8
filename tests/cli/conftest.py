"""CLI tests: the service tests' process backend fixture, for doctor and uninstall."""

from tests.service.conftest import process_service  # noqa: F401 - fixture

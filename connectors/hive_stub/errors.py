"""The stub's error answer."""

from __future__ import annotations


class StubError(Exception):
    """A metastore answer other than success: HTTP status, error name, message."""

    def __init__(self, status: int, error: str, message: str):
        super().__init__(message)
        self.status, self.error, self.message = status, error, message

"""Exponential backoff with full jitter for claim waiters (lease and advisory backends)."""

from __future__ import annotations

import random
import time


class Backoff:
    """Exponential backoff with full jitter, capped, never sleeping past the deadline."""

    def __init__(self, first_s: float = 0.002, cap_s: float = 0.1):
        self.next_s, self.cap_s = first_s, cap_s

    def sleep(self, deadline: float, cap_s: float | None = None) -> None:
        """Sleep up to the current step (or `cap_s`, if smaller), then double the step."""
        step = self.next_s if cap_s is None else min(self.next_s, cap_s)
        delay = min(random.uniform(0, step), max(0.0, deadline - time.monotonic()))
        self.next_s = min(self.cap_s, self.next_s * 2)
        time.sleep(delay)

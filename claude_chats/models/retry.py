"""Retry with exponential backoff and full jitter, for throttled network providers."""

import random
import time


def delays(retries, base=0.5, cap=20.0, rng=random):
    """Sleep before each retry: uniform in [0, min(cap, base * 2**attempt)] ("full jitter")."""
    for attempt in range(retries):
        yield rng.uniform(0, min(cap, base * (2 ** attempt)))


def call(fn, retryable, retries=6, base=0.5, cap=20.0, sleep=time.sleep):
    """``fn()``, retried while ``retryable(exc)`` holds, at most ``retries`` more times."""
    waits = delays(retries, base, cap)
    while True:
        try:
            return fn()
        except Exception as exc:
            if not retryable(exc):
                raise
            wait = next(waits, None)
            if wait is None:
                raise
            sleep(wait)

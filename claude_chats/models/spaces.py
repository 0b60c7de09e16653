"""Embedding spaces and the canary that tells whether a model reproduces one.

The canary is the embedding of a fixed sentence, stored with the space when its
first vectors are written. A reader re-embeds the sentence with its configured
model; below ``CANARY_MIN_COSINE`` the stored vectors are not in its space and
semantic search is refused with an error naming both models, rather than
returning near-zero scores that look like "no results".
"""

import json
import re

import numpy as np

from ..errors import SpaceMismatchError
from .base import Space

CANARY_TEXT = "claude-chats canary: a recorded conversation about fixing a flaky database migration test."
CANARY_MIN_COSINE = 0.99


def canary_vector(provider):
    """The provider's embedding of ``CANARY_TEXT`` (float32, normalised)."""
    return provider.embed_documents([CANARY_TEXT])[0]


def cosine(a, b):
    a, b = np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32)
    if a.shape != b.shape:
        return 0.0
    denom = float(np.linalg.norm(a) * np.linalg.norm(b))
    return float(a @ b) / denom if denom else 0.0


def canary_from_blob(blob):
    return np.frombuffer(blob, dtype=np.float32) if blob else None


def check_canary(stored_space, stored_canary, provider, threshold=CANARY_MIN_COSINE):
    """Cosine of the stored canary and the provider's; SpaceMismatchError below ``threshold``.

    ``stored_space`` is the Space the vectors were written in.
    """
    if stored_canary is None:
        return None
    score = cosine(stored_canary, canary_vector(provider))
    if score < threshold:
        configured = provider.space
        where = f" from {provider.path}" if getattr(provider, "path", None) else ""
        if configured.key == stored_space.key:
            raise SpaceMismatchError(
                f"the configured embedding model {configured.describe()}{where} does not reproduce the canary "
                f"stored with the vectors of {stored_space.describe()} (cosine {score:.3f} < {threshold}): "
                f"the model behind this name changed since they were written. Configure the model they were "
                f"made with, or re-embed.")
        raise mismatch_error([stored_space], configured, f"the canary does not match (cosine {score:.3f})")
    return score


def mismatch_error(stored_spaces, configured, detail=None):
    """A SpaceMismatchError naming the stored model(s) and the configured one."""
    stored = "; ".join(s.describe() for s in stored_spaces)
    why = f": {detail}" if detail else ""
    return SpaceMismatchError(
        f"stored vectors were made by {stored}, but the configured embedding model is "
        f"{configured.describe()}{why}. Vectors of different models cannot be compared: configure "
        f"the stored model (CLAUDE_CHATS_PROVIDER / CLAUDE_CHATS_MODEL / CLAUDE_CHATS_DIMENSIONS) "
        f"or re-embed with the new one.")


def space_of_key(key):
    """The ``Space`` of a stored key ("provider/model/dimensions/options"); None when it is not one."""
    match = re.fullmatch(r"([^/]+)/(.+)/(\d+)/(\{.*\})", key or "")
    if not match:
        return None
    try:
        options = json.loads(match[4])
    except ValueError:
        return None
    return Space(match[1], match[2], int(match[3]), options)

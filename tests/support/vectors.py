"""Embeddings compared as search uses them: what the product promises, not one machine's rounding.

llama.cpp sums in an order that follows the batch's shape and the thread count (and a provider
without a fixed ``threads`` follows the machine's load): the same text's vector from two runs
differs in the fourth decimal (1.1e-4 seen at a load average of 4-6), which an element-wise
``atol=1e-4`` turned into failures. Search promises the same neighbours: ``assert_same_vectors``
checks each pair of vectors by cosine and that every query ranks the vectors alike.
"""

import numpy as np

MIN_COSINE = 0.9999   # the noise is ~1e-6 below 1; variants of one sentence are 0.97-0.98 apart
TIE = 1e-3            # two scores closer than this may change places (seen: 1.2e-4 apart from run to run)


def assert_same_vectors(actual, expected, queries=None, min_cosine=MIN_COSINE, tie=TIE):
    """``actual`` and ``expected`` (one vector, or one a row) are the same embeddings: each pair's cosine
    at least ``min_cosine``, and each of ``queries`` (default: the expected vectors) ranks the actual
    vectors as it ranks the expected ones, but for scores closer than ``tie``."""
    a = np.atleast_2d(np.asarray(actual, dtype=np.float64))
    b = np.atleast_2d(np.asarray(expected, dtype=np.float64))
    assert a.shape == b.shape, (a.shape, b.shape)
    cosines = (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    worst = int(np.argmin(cosines))
    assert cosines[worst] >= min_cosine, f"vector {worst}: cosine {cosines[worst]:.7f} < {min_cosine}"
    q = b if queries is None else np.atleast_2d(np.asarray(queries, dtype=np.float64))
    got, want = a @ q.T, b @ q.T                           # [vector, query]
    d_got = got[:, None, :] - got[None, :, :]              # [vector i, vector k, query]
    d_want = want[:, None, :] - want[None, :, :]
    swapped = (np.sign(d_got) != np.sign(d_want)) & (np.maximum(abs(d_got), abs(d_want)) > tie)
    if swapped.any():
        i, k, j = (int(x[0]) for x in np.nonzero(swapped))
        raise AssertionError(f"query {j} ranks vectors {i} and {k} the other way round: "
                             f"{got[i, j]:.6f} vs {got[k, j]:.6f}, expected {want[i, j]:.6f} vs {want[k, j]:.6f}")


def stored_codes(conn, space_id, chunk_ids, fine=True):
    """The bytes the journal's index keeps of each chunk's vector (its coarse and, with ``fine``, fine
    codes, as they lie in the file), to look for in the journal's bytes after a purge or a
    redaction. (Fine codes of vectors with few distinct values repeat between vectors.)"""
    from claude_chats.localstore import ivf

    names, form, out = ivf.names(space_id), ivf.codec(conn, space_id), []
    wanted = {int(i) for i in chunk_ids}
    for i, codes, fine_codes in conn.execute(f"SELECT id, codes, fine FROM {names['tail']}"):
        if i in wanted:
            out += [bytes(codes), bytes(fine_codes)][:2 if fine else 1]
    for (lst,) in conn.execute(f"SELECT list FROM {names['lists']}").fetchall():
        ids, _scales, codes, fine_codes = ivf.list_row(conn, names, lst)   # the fine codes where they are
        for slot, i in enumerate(np.frombuffer(ids, np.int64).tolist()):
            if i in wanted:
                out += [bytes(codes[slot * form.dims:(slot + 1) * form.dims]),
                        bytes(fine_codes[slot * form.fine_width:(slot + 1) * form.fine_width])][:2 if fine else 1]
    return out


def assert_decoded(conn, space_id, got, want):
    """``got`` is the vector ``want`` as the space's index gives it back: within its codes' bound
    (``codes.Codec.bound``: 1/32 of the scale for 4-bit fine codes, 1/508 for 8-bit ones)."""
    from claude_chats.localstore import ivf

    want = np.asarray(want, np.float32)
    top = float(np.abs(want).max())
    bound = float(ivf.codec(conn, space_id).bound(top / 127)) + 1e-6 * top   # and float32's rounding
    np.testing.assert_allclose(got, want, rtol=0, atol=bound)


def similarity_slack(conn, space_id, vectors):
    """The most a cosine computed from the index's codes may differ from the stored vectors' (the
    largest of ``vectors``' scales)."""
    from claude_chats.localstore import ivf

    top = float(np.abs(np.asarray(vectors, np.float32)).max()) / 127
    return float(ivf.codec(conn, space_id).similarity_bound(top)) * 1.001 + 1e-6

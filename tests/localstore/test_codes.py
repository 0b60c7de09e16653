"""The vector index's codes (``localstore.codes``): each format gives back what it stored within its
bound, for any dimensions and any vector (zeros, one large component, negatives), and a format this
version does not know is refused by name."""

import numpy as np
import pytest
from hypothesis import given, seed, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from claude_chats.localstore.codes import FINE_BITS, Codec


def vectors(dims):
    return hnp.arrays(np.float32, st.tuples(st.integers(1, 6), st.just(dims)),
                      elements=st.floats(-4, 4, width=32, allow_nan=False, allow_infinity=False))


@seed(22)
@settings(max_examples=300, deadline=None)
@given(st.sampled_from([1, 2, 3, 31, 32, 384]).flatmap(lambda d: st.tuples(st.just(d), vectors(d))),
       st.sampled_from([4, 8]))
def test_every_vector_comes_back_within_its_formats_bound(case, bits):
    dims, x = case
    form = Codec(dims, bits)
    scales, codes, fine = form.encode(x)
    assert codes.shape == (len(x), dims) and fine.shape == (len(x), form.fine_width)
    back = form.decode(scales, codes, fine.tobytes())
    bound = form.bound(scales)[:, None] + 1e-6 * np.abs(x).max(axis=1, keepdims=True)   # + float32's rounding
    assert np.all(np.abs(back - x) <= bound)
    assert np.all(np.abs(codes.astype(int)) <= 127)


def test_four_bit_codes_take_half_the_bytes_and_swap_only_neighbours_closer_than_their_bound():
    rng = np.random.default_rng(5)
    centre = rng.standard_normal(384)
    x = centre + 0.05 * rng.standard_normal((2000, 384))    # near ties, as real chunk vectors have
    x = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
    q = centre + 0.05 * rng.standard_normal(384)
    q = (q / np.linalg.norm(q)).astype(np.float32)
    four, eight = Codec(384, 4), Codec(384, 8)
    assert (four.fine_width, eight.fine_width) == (192, 384)
    assert (four.per_vector, eight.per_vector) == (588, 780)
    exact = x @ q
    for form in (four, eight):
        scales, codes, fine = form.encode(x)
        got = form.decode(scales, codes, fine) @ q
        slack = float(form.similarity_bound(scales.max()))
        assert np.max(np.abs(got - exact)) <= slack
        tenth = np.sort(exact)[-10]
        assert np.all(exact[np.argsort(-got)[:10]] >= tenth - 2 * slack)   # a swap is a near tie
        assert len(set(np.argsort(-got)[:10].tolist()) & set(np.argsort(-exact)[:10].tolist())) >= 7
    coarse = (codes.astype(np.float32) * scales[:, None]) @ q   # the coarse codes alone move further
    assert np.max(np.abs(coarse - exact)) > 4 * np.max(np.abs(four.decode(*four.encode(x)) @ q - exact))


def test_a_zero_vector_and_the_default_format():
    assert FINE_BITS == 4
    form = Codec(5, FINE_BITS)
    scales, codes, fine = form.encode(np.zeros((1, 5), np.float32))
    assert np.all(np.abs(form.decode(scales, codes, fine)) <= form.bound(scales)[0])


def test_a_format_this_version_does_not_read_is_refused_by_name():
    with pytest.raises(ValueError, match="16 bits: this version reads 4 or 8"):
        Codec(384, 16)

"""Redaction: every secret of the corpus caught, every look-alike left alone, and properties.

The corpus (tests/redaction_corpus.py) is synthetic: correctly formatted secrets
built from fixed fake parts and the look-alikes code is full of. Properties
run with hypothesis on a fixed seed; CLAUDE_CHATS_LONG_TESTS=1 runs many more
examples.
"""

import subprocess
import sys
import time

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from claude_chats import redact
from tests.support import redaction_corpus as corpus
from tests.support.fuzzing import LONG

EXAMPLES = 2000 if LONG else 150
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))


def test_the_corpus_is_big_enough():
    assert len(corpus.SECRETS) >= 40 and len(corpus.NON_SECRETS) >= 40
    assert len({s.name for s in corpus.SECRETS + corpus.NON_SECRETS}) == len(corpus.SECRETS) + len(corpus.NON_SECRETS)
    assert all(s.secret in s.text for s in corpus.SECRETS)
    assert {s.kind for s in corpus.SECRETS} <= set(redact.kinds())


@pytest.mark.parametrize("sample", corpus.SECRETS, ids=lambda s: s.name)
def test_secret_is_replaced_by_its_typed_placeholder(sample):
    out = redact.redact(sample.text)
    assert sample.secret not in out
    assert redact.placeholder(sample.kind) in out
    # Exactly the secret is replaced: not its name, not the rest of the line.
    assert redact.redact(sample.text.replace(sample.secret, redact.placeholder(sample.kind))) == out


@pytest.mark.parametrize("sample", corpus.NON_SECRETS, ids=lambda s: s.name)
def test_look_alike_is_left_alone(sample):
    assert redact.redact(sample.text) == sample.text
    assert redact.scan(sample.text) == []


def test_recall_and_precision_figures():
    score = corpus.evaluate(redact.redact)
    print(f"\nredaction corpus: recall {score.recall:.1%} ({score.caught}/{score.secrets}), "
          f"precision {score.precision:.1%} ({len(score.false_positives)} false positives of {score.non_secrets})")
    assert score.recall == 1.0, score.missed
    assert score.precision == 1.0, score.false_positives
    assert score.typed == score.secrets


FRAGMENTS = [
    "=", ": ", '"', "'", " ", "\n", "--", "@", "/", "://", "Bearer ", "Authorization: ", "curl -u bob:", "https",
    "api_key", "PASSWORD=", "secret", "token", "pwd", "credentials", "passphrase", "Zx81kq0pLm4Tq",
    "aB3dE5gH7jK9mN1pQ3sT5vX7", "eyJhbGciOiJIUzI1NiJ9", ".", "-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE "
    "KEY-----", "hooks.slack.com/services/", "my password is ", "AKIA", "sk-", "ghp_", "xoxb-", "hf_", "SG."] + \
    [s.secret for s in corpus.SECRETS]


@seed(20261205)
@SETTINGS
@given(st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=12)), max_size=14), st.booleans())
def test_a_text_the_screen_clears_holds_no_finding(parts, tokens):
    """``redact.may_hold`` clears a text holding no literal a token rule starts with and no keyword a
    context rule starts at; ``scan`` finds nothing in such a text, and ``screened`` is ``redact``."""
    text = "".join(parts)
    assert redact.may_hold(text, tokens) or redact.scan(text, tokens) == []
    assert redact.screened(text) == redact.redact(text)


@pytest.mark.parametrize("sample", corpus.SECRETS, ids=lambda s: s.name)
def test_every_secret_of_the_corpus_passes_the_screen(sample):
    """Each rule's secrets hold one of the screen's literals or keywords, alone, in words and as the corpus
    has them: a rule added without its literal fails here for its own samples."""
    for text in (sample.secret, f"see {sample.secret} here", sample.text):
        assert redact.may_hold(text) or redact.scan(text) == [], text
        assert redact.screened(text) == redact.redact(text)


def test_findings_say_where_and_what_but_not_the_secret():
    text = "first AKIA" + corpus.fake("f", 16, corpus.UPPER) + " then password=Zx81kq0pLm"
    out, findings = redact.redact_findings(text)
    assert [f.kind for f in findings] == ["aws-access-key", "password"]
    for f in findings:
        assert set(f) == {f.kind, f.start, f.end} and text[f.start:f.end] not in repr(findings)
    assert out == "first [REDACTED:aws-access-key] then password=[REDACTED:password]"


def test_the_connection_url_keeps_everything_but_its_password():
    url = "postgresql://chats:Hx7s9Kq2Vn@db.example.com:5432/chats?sslmode=verify-full"
    assert redact.redact(url) == "postgresql://chats:[REDACTED:url-password]@db.example.com:5432/chats?sslmode=verify-full"


def test_empty_and_non_text_inputs():
    assert redact.redact("") == "" and redact.scan("") == []
    assert redact.scan(None) == []


def test_positions_survive_characters_whose_lower_case_is_longer():
    text = "İİİ İstanbul password=Qm93xkPz21 İ"   # "İ".lower() is two characters
    out = redact.redact(text)
    assert out == "İİİ İstanbul password=[REDACTED:password] İ"


def test_import_is_cheap_and_compiles_nothing():
    code = ("import sys; import claude_chats.redact; "
            "print(sorted(m for m in ('re', 'typing', 'collections', 'json') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]"


# -- properties ---------------------------------------------------------------------

WORDS = ("the", "parser", "reads", "line", "file", "and", "then", "we", "run", "pytest", "on", "module",
         "function", "returns", "a", "list", "value", "ok", "error", "fixed", "in", "commit", "with", "config",
         "=", ":", "->", "(x)", "[1, 2]", "{}", "#", "42", "3.14", "src/app.py", "main", "./run.sh")
SEPARATORS = st.sampled_from([" ", "\n", "\t", " \n ", "\n\n"])
prose = st.lists(st.sampled_from(WORDS), max_size=30).map(" ".join)


def _check_findings(text, findings):
    last = 0
    for f in findings:
        assert last <= f.start < f.end <= len(text)
        assert f.kind in redact.kinds()
        last = f.end


@seed(7)
@SETTINGS
@given(st.text(max_size=400))
def test_any_text_is_handled_and_findings_are_ordered(text):
    out, findings = redact.redact_findings(text)
    assert isinstance(out, str)
    _check_findings(text, findings)
    assert out.count("[REDACTED:") >= len(findings)
    assert redact.redact(out) == out


@seed(8)
@SETTINGS
@given(st.sampled_from(corpus.SECRETS + corpus.NON_SECRETS), prose, prose, SEPARATORS, SEPARATORS)
def test_redaction_is_idempotent(sample, before, after, sep1, sep2):
    text = before + sep1 + sample.text + sep2 + after
    once = redact.redact(text)
    assert redact.redact(once) == once


@seed(9)
@SETTINGS
@given(st.sampled_from(corpus.SECRETS), prose, prose, SEPARATORS, SEPARATORS)
def test_secret_in_surrounding_text_is_still_caught(sample, before, after, sep1, sep2):
    out = redact.redact(before + sep1 + sample.text + sep2 + after)
    assert sample.secret not in out
    assert redact.placeholder(sample.kind) in out


@seed(10)
@SETTINGS
@given(st.sampled_from(corpus.NON_SECRETS), prose, prose, SEPARATORS, SEPARATORS)
def test_look_alike_in_surrounding_text_is_still_left_alone(sample, before, after, sep1, sep2):
    text = before + sep1 + sample.text + sep2 + after
    assert redact.redact(text) == text


@seed(11)
@SETTINGS
@given(st.lists(st.sampled_from(corpus.SECRETS), min_size=2, max_size=6), SEPARATORS)
def test_several_secrets_in_one_text_are_all_caught(samples, sep):
    out = redact.redact(sep.join(s.text for s in samples))
    for s in samples:
        assert s.secret not in out


HOSTILE = ("-----BEGIN PRIVATE KEY-----\"", "-----BEGIN RSA PRIVATE KEY-----\n", "-----END ", "eyJ", "eyJ-",
           ".eyJ", "sk-", "sk-ant-api03-", "AKIA", "AIza", "ghp_", "github_pat_", "xoxb-", "k_live_", "key=",
           "api_key=", "token: ", "password=$X ", "--password ", "://", "://a:", "@", "Authorization: Bearer ",
           "bearer ", "curl -u ", "a", "A", "0", "=", "-", "_", ".", " ", "\n", "\"", "İ")


@seed(12)
@settings(max_examples=60 if LONG else 12, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.sampled_from(HOSTILE), min_size=1, max_size=4))
def test_hostile_repetition_costs_linear_time(pieces):
    """No pattern backtracks without bound: 200 KB of repeated anchors is redacted quickly."""
    unit = "".join(pieces)
    text = unit * (200_000 // len(unit) + 1)
    started = time.perf_counter()
    _check_findings(text, redact.scan(text))
    assert time.perf_counter() - started < 10   # about 0.5 s at worst on a loaded 2-core machine


def _redacted_piece(text, findings, start, end):
    """``text[start:end]`` with the secrets that lie wholly inside it replaced by their placeholders."""
    piece, at = [], start
    for f in findings:
        if start <= f.start and f.end <= end:
            piece += [text[at:f.start], redact.placeholder(f.kind)]
            at = f.end
    return "".join(piece) + text[at:end]


@seed(13)
@SETTINGS
@given(st.lists(st.one_of(st.sampled_from(corpus.SECRETS).map(lambda s: s.text), st.text(max_size=40)), max_size=6),
       SEPARATORS, st.data())
def test_original_span_maps_redacted_offsets_onto_the_original(pieces, sep, data):
    """A span of the redacted text (a chunk embedded redacted) maps onto the original: the same text
    once its secrets are replaced, and a span edge inside a placeholder takes the whole secret."""
    text = sep.join(pieces)
    findings = redact.scan(text)
    clean = redact.redact(text)
    start = data.draw(st.integers(0, len(clean)))
    end = data.draw(st.integers(start, len(clean)))
    first, last = redact.original_span(text, start, end)
    assert 0 <= first <= last <= len(text)
    inside = [f for f in findings if first <= f.start and f.end <= last]
    assert not [f for f in findings if f.start < first < f.end or f.start < last < f.end]  # no secret cut
    piece = _redacted_piece(text, findings, first, last)
    assert clean[start:end] in piece                       # the whole span, widened only over placeholders
    assert len(piece) - (end - start) <= 2 * max((len(redact.placeholder(k)) for k in redact.kinds()), default=0)
    if not [f for f in inside] and "[REDACTED:" not in clean[start:end]:
        assert text[first:last] == clean[start:end]


@seed(14)
@SETTINGS
@given(st.lists(st.one_of(st.sampled_from(corpus.SECRETS).map(lambda s: s.text), st.text(max_size=40)), max_size=6),
       SEPARATORS, st.data())
def test_redacted_span_is_the_inverse_of_original_span(pieces, sep, data):
    """A span of the original (a chunk span the journal keeps) maps onto the redacted text Postgres
    holds: the redacted span of a piece is its redacted text; a span cut inside a secret takes its
    whole placeholder; and a redacted span mapped to the original and back is itself."""
    text = sep.join(pieces)
    clean = redact.redact(text)
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, len(text)))
    first, last = redact.redacted_span(text, start, end)
    assert 0 <= first <= last <= len(clean)
    findings = redact.scan(text)
    if not [f for f in findings if f.start < start < f.end or f.start < end < f.end]:
        assert clean[first:last] == _redacted_piece(text, findings, start, end)
    start = data.draw(st.integers(0, len(clean)))
    end = data.draw(st.integers(start, len(clean)))
    back = redact.redacted_span(text, *redact.original_span(text, start, end))
    assert back[0] <= start and end <= back[1]               # widened only over placeholders
    shift, holders = 0, []                                   # the placeholders' spans in the redacted text
    for f in findings:
        holders.append((f.start + shift, f.start + shift + len(redact.placeholder(f.kind))))
        shift += holders[-1][1] - holders[-1][0] - (f.end - f.start)
    if not [h for h in holders if h[0] < start < h[1] or h[0] < end < h[1]]:
        assert back == (start, end)

"""Issue 17: what is kept out before it is stored (claude_chats/capture.py): the excluded projects and
the markers a person types. What the journal does with them: tests/localstore/test_keep_out.py; that
no byte of it is stored anywhere: tests/test_keep_out_everywhere.py."""

import pytest

from claude_chats.capture import ProjectFilter, cwd_of, marker


@pytest.mark.parametrize("path, excluded", [
    ("/work/secret", True), ("/work/secret/", True), ("/work/secret/api/v2", True), ("/work/secret2", False),
    ("/work/secre", False), ("/work", False), ("/clients/acme/app", True), ("/clients/acme", False),
    ("/clients/x/y/z/app", True), ("/home/me/tmp-1", True), ("/home/me/tmp-12", False), ("/home/me/tmp-1/sub", True),
])
def test_a_project_is_excluded_with_everything_below_it(path, excluded):
    patterns = ProjectFilter(["/work/secret", "/clients/*/app", "/home/me/tmp-[0-9]"])
    assert patterns(path) is excluded


def test_a_filter_without_globs_needs_no_regular_expressions():
    patterns = ProjectFilter(["/work/secret/"])
    assert patterns.globs == () and patterns.folders == ("/work/secret",)
    assert not ProjectFilter([]) and ProjectFilter(["/"])("/anything")


@pytest.mark.parametrize("text, said", [
    ("fix the parser #chats-skip", "skip"), ("#chats-off from here", "off"), ("#CHATS-OFF", "off"),
    ("both #chats-skip and #chats-off", "off"), ("#chats-offline is not it", None), ("#chats-skipper", None),
    ("chats-skip without the hash", None), ("an ordinary prompt", None), ("#chats-skip.", "skip"),
])
def test_the_markers(text, said):
    assert marker(text) == said


def test_the_cwd_of_a_line_is_read_without_decoding_it():
    assert cwd_of(b'{"type":"user","cwd":"/work/proj","x":1}') == "/work/proj"
    assert cwd_of(b'{"type": "user", "cwd": "/w/\\u00fc"}') == "/w/\u00fc"
    assert cwd_of(b'{"type":"mode"}') is None


def test_a_path_is_also_compared_resolved_but_never_a_hostile_one(tmp_path, monkeypatch):
    """Issue 21: the resolved forms (realpath) count too; a NUL, a path over 4,096 characters or a
    relative one (it would resolve against the hook's own folder) is compared as given, without error."""
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    monkeypatch.chdir(real)
    patterns = ProjectFilter([str(tmp_path / "link")])
    assert patterns(str(real / "api")) and not patterns(str(tmp_path / "realm"))
    assert not patterns("api") and not patterns("/x/\x00")
    assert not patterns("/" + "x" * 5000)

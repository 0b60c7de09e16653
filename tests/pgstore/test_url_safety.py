"""Passwords in database URLs read the way libpq reads them (issue 16, item 2).

``mask`` hides every password libpq would read from a URL (the URI form, its
``?password=`` parameters, the ``key=value`` form; raw or percent-encoded),
and neither it nor ``hide_password`` ever raises.
"""

import os
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, assume, example, given, seed, settings
from hypothesis import strategies as st
from psycopg.conninfo import conninfo_to_dict

from claude_chats.pgstore import url as dburl

LONG = bool(os.environ.get("CLAUDE_CHATS_LONG_TESTS"))


def fuzz(default, long):
    return settings(max_examples=long if LONG else default, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))


def libpq_password(url):
    """The password libpq reads from ``url``, or None when it reads none (or refuses the URL)."""
    try:
        return conninfo_to_dict(url).get("password")
    except Exception:  # noqa: BLE001 - psycopg.ProgrammingError, or a NUL byte
        return None


def keyword_quoted(password):
    return "'" + password.replace("\\", "\\\\").replace("'", "\\'") + "'"


def keyword_bare(password):
    return "".join("\\" + c if c in " \t\n\v\f\r\\'" else c for c in password)


def encoded(password):
    return quote(password, safe="")


# form -> (the URL around the password, how the password is written in it); mask must print the
# URL with *** in its place
FORMS = {
    "userinfo": ("postgresql://chats:{}@db.example.com:5432/chats?sslmode=require", str),
    "userinfo encoded": ("postgresql://chats:{}@db.example.com/chats", encoded),
    "userinfo, no path": ("postgres://chats:{}@db.example.com?sslmode=require", str),
    "query": ("postgresql://db.example.com/chats?sslmode=require&password={}", str),
    "query encoded": ("postgresql://db.example.com/chats?password={}&sslmode=require", encoded),
    "query, encoded key": ("postgresql:///chats?host=/tmp&pass%77ord={}", encoded),
    "keywords quoted": ("host=db.example.com password={} dbname=chats", keyword_quoted),
    "keywords bare": ("host=db.example.com  password = {}\tdbname=chats", keyword_bare),
    "sslpassword": ("host=db.example.com sslpassword={}", keyword_quoted),
}


@seed(1601)
@fuzz(400, 20_000)
@given(password=st.text(min_size=1, max_size=40), form=st.sampled_from(sorted(FORMS)))
@example(password="Secr#etPw8", form="userinfo")
@example(password="Que?stion8", form="userinfo")
@example(password="Brack[et]Pw", form="userinfo")
@example(password="a b\\c'd", form="keywords bare")
@example(password="Sla/sh@Pw#?", form="userinfo encoded")
def test_mask_hides_every_password_libpq_reads(password, form):
    template, written = FORMS[form]
    url = template.format(written(password))
    key = "sslpassword" if form == "sslpassword" else "password"
    try:
        read = conninfo_to_dict(url).get(key)
    except Exception:  # noqa: BLE001
        read = None
    assume(read == password)             # libpq accepts the URL and reads exactly this password
    assert dburl.mask(url) == template.format(dburl.MASK)
    message = f"connection to {url} failed: password {password!r} rejected ({password})"
    if "*" not in password:              # (a password of stars would be found in the mask itself)
        assert password not in dburl.hide_password(message, url)


@pytest.mark.parametrize("url, expected", [
    ("postgresql://u:Sla/shPw88@db.example.com/chats", "postgresql://u:***@db.example.com/chats"),
    ("postgresql://u:p@ss@db.example.com/chats", "postgresql://u:***@db.example.com/chats"),
    ("postgresql://u:pw@db.example.com/x?application_name=a@b&password=Second8", None),
    ("host=db.example.com password Hunter2pw", "host=db.example.com ***"),
    ("host=db.example.com password='unterminated Hunter2pw", "host=db.example.com password=***"),
    ("dbname='postgresql://u:Hunter2pw@db.example.com/x' host=h", "dbname=*** host=h"),
])
def test_mask_hides_what_the_person_meant_as_a_password_too(url, expected):
    masked = dburl.mask(url)
    for secret in ("Sla/shPw88", "shPw88", "p@ss", "Second8", "Hunter2pw", "pw@"):
        assert secret not in masked
    if expected:
        assert masked == expected


@seed(1602)
@fuzz(500, 20_000)
@given(text=st.text(max_size=80), prefix=st.sampled_from(["", "postgresql://", "postgres://u:", "host=h password=",
                                                          "postgresql://h/d?password=", "dbname='"]))
def test_mask_and_hide_password_never_raise(text, prefix):
    url = prefix + text
    masked = dburl.mask(url)
    assert isinstance(masked, str)
    assert isinstance(dburl.hide_password(f"error about {url}", url), str)
    password = libpq_password(url)
    if password and "*" not in password and len(password) >= 4:
        others = " ".join(v for k, v in conninfo_to_dict(url).items() if k != "password")
        assume(password not in others and url.count(password) == 1)   # not also a key or a separator
        assert password not in masked

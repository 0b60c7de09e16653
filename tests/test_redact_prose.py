"""A password given in a sentence is redacted; sentences about passwords are not (issue 16, item 3).

In scope: a password word (password, passphrase, passcode), ``is`` or ``was``,
then one value that looks like a password (digits or symbols, not a plain
word, not a variable or a measure). A password in free prose without that shape
("hunter2 is what I use") is still not recognised (RELIABILITY.md).
"""

import pytest

from claude_chats.redact import redact

CAUGHT = [
    ("my password is Tr0ub4dor&3xyzzy", "Tr0ub4dor&3xyzzy"),
    ("My password is Tr0ub4dor&3xyzzy.", "Tr0ub4dor&3xyzzy"),
    ("the wifi password was n3tw0rk!Home, tell nobody", "n3tw0rk!Home"),
    ('the passphrase is "c0rrect-h0rse-b4ttery"', "c0rrect-h0rse-b4ttery"),
    ("Admin passcode is now 7Kq2-Zx9p", "7Kq2-Zx9p"),
    ("the root password is set to Sup3r$ecret", "Sup3r$ecret"),
]

LEFT = [
    "the password is required",
    "the password is stored in 1Password",
    "password is 8-characters minimum",
    "the password is 2FA-protected now",
    "the password is $DB_PASSWORD",
    "the password is <redacted>",
    "the password is ${{ secrets.DB_PASSWORD }}",
    "password is set to abc",
    "the password was correct.",
    "the password is getpass()",
    "the password is v2.3.1 compatible",
    "password is 12345678 digits long",
    "the password is os.environ['DB_PASSWORD']",
    "the password is ********",
    "a bypass is 123abcx",
    "MyPasswordField is Tr0ub4dorX",
    "the password is the same as the username",
]


@pytest.mark.parametrize("text, secret", CAUGHT)
def test_a_password_given_in_a_sentence_is_redacted(text, secret):
    clean = redact(text)
    assert secret not in clean and "[REDACTED:password]" in clean, clean
    assert redact(clean) == clean


@pytest.mark.parametrize("text", LEFT)
def test_sentences_about_passwords_are_left_alone(text):
    assert redact(text) == text

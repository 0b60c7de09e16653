"""A session as one file: the first, plain version (replaced by the wip-render branch's)."""

from markupsafe import escape


def html(info, messages):
    body = "".join(f"<pre>{escape(m['text'])}</pre>" for m in messages)
    return f"<!doctype html><meta charset=utf-8><title>{escape(info.get('name') or '')}</title>{body}"


def markdown(info, messages):
    return "\n\n".join(m["text"] for m in messages)

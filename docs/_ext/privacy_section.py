"""Render the ``Privacy`` section of sklearn_dp docstrings.

numpydoc knows a fixed set of sections (``Parameters``, ``Notes``, ...).  An
unknown section is parsed, then dropped with a ``UserWarning`` ("Unknown
section Privacy": ``NumpyDocString.__setitem__`` in numpydoc/docscrape.py), so
our ``Privacy`` sections would vanish from the rendered docs.

This extension takes the section out of the docstring *before* numpydoc sees
it (an ``autodoc-process-docstring`` handler with a priority below numpydoc's
default 500) and puts it back *after* numpydoc has rendered the rest (a
handler with a priority above 500), as a ``.. rubric:: Privacy`` block: the
same markup numpydoc uses for ``Notes``, ``References`` and ``Examples``.
It goes just before the first of those sections (our docstrings put Privacy
before Examples; for a class, before numpydoc's Methods table), or at the
end.  Only public Sphinx events and numpydoc's rendered output are used; no
numpydoc internals are patched.

numpydoc also parses the raw ``__doc__`` once more in its
``autodoc-process-signature`` handler (``mangle_signature``), only to look for
a signature line; that parse warns "Unknown section Privacy" and discards the
result.  That one warning is filtered below: the section is rendered by this
extension, so it is not lost.
"""

from __future__ import annotations

import re
import warnings

SECTION = "Privacy"
_NUMPYDOC_PRIORITY = 500
_UNDERLINE = re.compile(r"^\s*(-{3,}|={3,})\s*$")
_LATER_RUBRIC = re.compile(r"^\s*\.\. rubric:: (Methods|Notes|References|Examples)\s*$")

# Sections taken out of a docstring, waiting for numpydoc to finish with it.
# Keyed by the object's full name; handlers of one event run in sequence.
_PENDING: dict[str, list[str]] = {}


def _is_header(lines, i):
    return (
        i + 1 < len(lines)
        and lines[i].strip() != ""
        and _UNDERLINE.match(lines[i + 1]) is not None
        and len(lines[i + 1].strip()) >= len(lines[i].strip())
    )


def extract_privacy(lines):
    """Remove the ``Privacy`` section from ``lines``; return its body (or None)."""
    for start in range(len(lines) - 1):
        if lines[start].strip() == SECTION and _is_header(lines, start):
            break
    else:
        return None
    end = start + 2
    while end < len(lines) and not _is_header(lines, end):
        end += 1
    body = lines[start + 2 : end]
    del lines[start:end]
    while body and not body[0].strip():
        body.pop(0)
    while body and not body[-1].strip():
        body.pop()
    indent = min((len(line) - len(line.lstrip()) for line in body if line.strip()), default=0)
    return [line[indent:] for line in body]


def insert_privacy(lines, body):
    """Insert ``body`` as a ``Privacy`` rubric before Methods/Notes/References/Examples (or at the end)."""
    block = ["", f".. rubric:: {SECTION}", ""] + body + [""]
    for i, line in enumerate(lines):
        if _LATER_RUBRIC.match(line):
            lines[i:i] = block
            return
    lines.extend(block)


def _take_out(app, what, name, obj, options, lines):
    body = extract_privacy(lines)
    if body is not None:
        _PENDING[name] = body


def _put_back(app, what, name, obj, options, lines):
    body = _PENDING.pop(name, None)
    if body is not None:
        insert_privacy(lines, body)


def setup(app):
    warnings.filterwarnings(
        "ignore", message=rf"Unknown section {SECTION} in the docstring", category=UserWarning
    )
    app.setup_extension("numpydoc")
    app.connect("autodoc-process-docstring", _take_out, priority=_NUMPYDOC_PRIORITY - 100)
    app.connect("autodoc-process-docstring", _put_back, priority=_NUMPYDOC_PRIORITY + 100)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}

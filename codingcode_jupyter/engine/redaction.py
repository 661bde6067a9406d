"""Finding known secret values in text, in their encoded forms too, and replacing them by a marker.

A :class:`Matcher` is built from (name, value) pairs. Each value is searched for in its forms
(:func:`forms`): as is, JSON-escaped, URL-encoded, hex, and base64 at each of the three alignments a
value can have inside a longer base64 text (a `.env` file piped through `base64`), in the standard and
URL-safe alphabets. A run of :data:`RUN` characters or more of a form counts (the whole form when it
is shorter), so a key printed in two halves, wrapped across lines, or cut short is found in each
piece; a piece shorter than that is not.

The search is one pass of an Aho-Corasick automaton (the ``ahocorasick_rs`` package) over anchors:
every :data:`STRIDE` characters of each form, :data:`ANCHOR` characters long, so any run of
:data:`RUN` characters holds one whole anchor. A hit is then extended both ways against its form to
the longest run the text shares with it. What the marker says is the secret's name, never its value.
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Iterator
from urllib.parse import quote, quote_plus, unquote_plus

if TYPE_CHECKING:
    import ahocorasick_rs

__all__ = ["RUN", "Form", "Span", "Matcher", "forms", "marker", "named"]

# A run of this many characters of a value is a match (a value shorter than this must match whole);
# of an encoded form, a run standing for as many characters of the value (32 hex digits, 22 of base64),
# so the 13 characters every Anthropic key begins with are no match in any form.
RUN = 16
_RUN_OF = {"hex": 2 * RUN, "base64": -(-RUN * 4 // 3)}
# The automaton's patterns: ANCHOR characters every STRIDE characters of a form. Any run of
# STRIDE - 1 + ANCHOR characters holds one whole anchor, which RUN must not be below.
ANCHOR = STRIDE = 8
assert STRIDE - 1 + ANCHOR <= RUN

_PEM = re.compile(r"-----BEGIN [A-Z0-9 ]+-----(.+?)-----END [A-Z0-9 ]+-----", re.S)
_JWT = re.compile(r"eyJ[A-Za-z0-9_-]*\.([A-Za-z0-9_-]+\.[A-Za-z0-9_-]*)")
_PERCENT = re.compile(r"%[0-9A-F]{2}")


@dataclass(frozen=True)
class Form:
    """One way a secret's value may be written: ``encoding`` is "" for the value as it is."""

    name: str
    encoding: str
    text: str

    @property
    def need(self) -> int:
        """How long a run of it counts as a match."""
        return min(_RUN_OF.get(self.encoding, RUN), len(self.text))


@dataclass(frozen=True)
class Span:
    """Where a text holds known secrets, and which (by name and encoding)."""

    start: int
    end: int
    found: tuple[tuple[str, str], ...]


def named(found: Iterable[tuple[str, str]]) -> str:
    """Secrets found, by name and encoding (``ANTHROPIC_API_KEY (base64)``), never by value."""
    return ", ".join(f"{name} ({encoding})" if encoding else name for name, encoding in dict.fromkeys(found))


def marker(found: Iterable[tuple[str, str]]) -> str:
    """What stands in the text for a value: its secret's name (and encoding)."""
    return f"[redacted: {named(found)}]"


def _core(value: str) -> str:
    """What of ``value`` is secret: a PEM block's body (its BEGIN and END lines are in every key), a
    JWT's payload and signature (its header, `eyJhbGciOi…`, is shared by countless tokens)."""
    pem = _PEM.search(value)
    if pem is not None:
        return pem.group(1).strip()
    jwt = _JWT.fullmatch(value)
    return jwt.group(1) if jwt is not None else value


def _base64_runs(raw: bytes) -> list[str]:
    """The base64 characters that depend on ``raw`` alone, at each of the three byte alignments it may
    have in a longer stream (the characters it shares with its neighbours are left out)."""
    runs = []
    for shift in range(3):
        padded = b"\0" * shift + raw + b"\0\0\0"
        start, stop = -(-8 * shift // 6), (8 * shift + 8 * len(raw)) // 6
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            runs.append(encode(padded).decode("ascii")[start:stop])
    return runs


def forms(name: str, value: str) -> list[Form]:
    """The forms of one secret's value searched for (see the module docstring), without repeats."""
    core = _core(value)
    raw = core.encode("utf-8")
    quoted = quote(core, safe="")
    written = [
        ("", core),
        ("JSON-escaped", json.dumps(core)[1:-1]),
        ("JSON-escaped", json.dumps(core, ensure_ascii=False)[1:-1]),
        ("URL-encoded", quoted),
        ("URL-encoded", _PERCENT.sub(lambda m: m.group(0).lower(), quoted)),
        ("URL-encoded", quote_plus(core, safe="")),
        ("URL-encoded", quote(core)),
        ("hex", raw.hex()),
        ("hex", raw.hex().upper()),
        *(("base64", run) for run in _base64_runs(raw)),
    ]
    seen: dict[str, Form] = {}
    for encoding, text in written:
        if text and text not in seen:
            seen[text] = Form(name, encoding, text)
    return list(seen.values())


def _anchor_offsets(length: int) -> list[int]:
    if length <= ANCHOR:
        return [0]
    offsets = list(range(0, length - ANCHOR + 1, STRIDE))
    if offsets[-1] != length - ANCHOR:
        offsets.append(length - ANCHOR)
    return offsets


def _shared(a: str, b: str) -> int:
    """How many leading characters ``a`` and ``b`` share (slices compared in C, halving)."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    low, high = 0, n
    while high - low > 1:
        middle = (low + high) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle
    return low


class Matcher:
    """Finds the forms of known secrets in text (see the module docstring); immutable once built."""

    def __init__(self, secrets: Iterable[tuple[str, str]]) -> None:
        self.forms: list[Form] = []
        seen: set[str] = set()
        for name, value in secrets:
            for form in forms(name, value):
                if form.text not in seen:
                    seen.add(form.text)
                    self.forms.append(form)
        # Each anchor's text, and every (form, offset) it stands for.
        where: dict[str, list[tuple[int, int]]] = {}
        for index, form in enumerate(self.forms):
            for offset in _anchor_offsets(len(form.text)):
                where.setdefault(form.text[offset:offset + ANCHOR], []).append((index, offset))
        self._patterns = list(where)
        self._where = [where[pattern] for pattern in self._patterns]
        self._shortest = min((form.need for form in self.forms), default=0)
        self._ascii: tuple[ahocorasick_rs.BytesAhoCorasick, list[int]] | None = None
        self._unicode: ahocorasick_rs.AhoCorasick | None = None

    def __bool__(self) -> bool:
        return bool(self.forms)

    def prepare(self) -> None:
        """Build the automaton for ASCII text now rather than at the first search."""
        if self._ascii is None and self._patterns:
            import ahocorasick_rs

            ascii_ = [index for index, pattern in enumerate(self._patterns) if pattern.isascii()]
            automaton = ahocorasick_rs.BytesAhoCorasick([self._patterns[index].encode("ascii") for index in ascii_])
            self._ascii = (automaton, ascii_)

    def _hits(self, text: str) -> Iterator[tuple[int, int]]:
        """(anchor, position) of every anchor in ``text``, overlapping ones included."""
        import ahocorasick_rs

        if text.isascii():
            # Most output is ASCII: searched as bytes it costs half (byte and character offsets agree,
            # and only the ASCII anchors can occur in it).
            self.prepare()
            assert self._ascii is not None
            automaton, indexes = self._ascii
            for pattern, start, _end in automaton.find_matches_as_indexes(text.encode("ascii"), overlapping=True):
                yield indexes[pattern], start
            return
        if self._unicode is None:
            self._unicode = ahocorasick_rs.AhoCorasick(self._patterns)
        for pattern, start, _end in self._unicode.find_matches_as_indexes(text, overlapping=True):
            yield pattern, start

    def spans(self, text: str) -> list[Span]:
        """Where ``text`` holds a run of a form long enough to count, overlapping spans merged."""
        if not self.forms or not self._patterns or len(text) < self._shortest:
            return []
        found: list[tuple[int, int, Form]] = []
        # The runs already found for one (form, alignment): the other anchors inside them add nothing.
        known: dict[tuple[int, int], list[tuple[int, int]]] = {}
        for pattern, at in self._hits(text):
            for index, offset in self._where[pattern]:
                form = self.forms[index].text
                size = min(ANCHOR, len(form))  # a form shorter than an anchor is its own anchor
                runs = known.setdefault((index, at - offset), [])
                if any(start <= at and at + size <= end for start, end in runs):
                    continue
                left = _shared(text[max(0, at - offset):at][::-1], form[:offset][::-1])
                right = _shared(text[at + size:at + len(form) - offset], form[offset + size:])
                start, end = at - left, at + size + right
                runs.append((start, end))
                if end - start >= self.forms[index].need:
                    found.append((start, end, self.forms[index]))
        return _merged(found)

    def redact(self, text: str) -> tuple[str, list[tuple[str, str]]]:
        """``text`` with each span replaced by its marker, and what was found (name, encoding)."""
        spans = self.spans(text)
        if not spans:
            return text, []
        pieces: list[str] = []
        found: list[tuple[str, str]] = []
        last = 0
        for span in spans:
            pieces += [text[last:span.start], marker(span.found)]
            found.extend(span.found)
            last = span.end
        pieces.append(text[last:])
        return "".join(pieces), list(dict.fromkeys(found))

    def redact_value(self, value: Any) -> tuple[Any, list[tuple[str, str]]]:
        """A copy of a JSON-like value (content blocks, a tool's input) with every string redacted; base64
        sources (images, PDFs) are left as they are. The value itself when nothing was found."""
        found: list[tuple[str, str]] = []

        def walk(item: Any) -> Any:
            if isinstance(item, str):
                redacted, hits = self.redact(item)
                found.extend(hits)
                return redacted
            if isinstance(item, list):
                return [walk(part) for part in item]
            if isinstance(item, dict):
                if item.get("type") == "base64":
                    return item
                return {key: walk(part) for key, part in item.items()}
            return item

        if not self.forms:
            return value, []
        redacted = walk(value)
        return (redacted, list(dict.fromkeys(found))) if found else (value, [])

    def leaving(self, value: Any) -> list[tuple[str, str]]:
        """The secrets a value about to leave the machine carries (name, encoding): in any of its strings,
        in all of them joined, and in each URL-decoded and with separators taken out, so a key cut into
        pieces, spaced out (`73 6b 2d …`) or percent-encoded twice is still found."""
        if not self.forms:
            return []
        strings = list(_strings(value))
        found: dict[str, str] = {}  # each secret once, by the first encoding it was found in
        candidates = [(text, False) for text in strings]
        if len(strings) > 1:
            candidates.append(("".join(strings), True))
        for text, joined in candidates:
            for variant, how in _variants(text):
                for span in self.spans(variant):
                    if (joined or how) and span.end - span.start < RUN:
                        continue  # a short value counts as it is written, not pieced together by chance
                    for name, encoding in span.found:
                        found.setdefault(name, encoding or how)
        return list(found.items())


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(key)
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


def _variants(text: str) -> Iterator[tuple[str, str]]:
    """``text`` as it is, then as a receiver may decode it (what found there is named by the decoding)."""
    yield text, ""
    decoded = text
    for _ in range(3):
        once = unquote_plus(decoded)
        if once == decoded:
            break
        decoded = once
        yield decoded, "URL-encoded"
    yield re.sub(r"\s+", "", decoded), "split by spaces"
    yield re.sub(r"[^0-9A-Za-z]+", "", decoded), "split by separators"


def _merged(found: list[tuple[int, int, Form]]) -> list[Span]:
    """Overlapping or touching runs as one span naming every secret in it."""
    spans: list[Span] = []
    for start, end, form in sorted(found, key=lambda item: (item[0], -item[1])):
        what = (form.name, form.encoding)
        if spans and start <= spans[-1].end:
            last = spans[-1]
            spans[-1] = Span(last.start, max(last.end, end), tuple(dict.fromkeys([*last.found, what])))
        else:
            spans.append(Span(start, end, (what,)))
    return spans

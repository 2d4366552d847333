"""What a syntax error of a .bench file says: the place, the offending text and a hint in a
person's words (what the parser expected, named as one would name it), and the one recovery the
parser makes (a keyword read as a name where only a name fits)."""

from __future__ import annotations

import difflib
import re
import unicodedata

from lark import Lark, Token
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from bench_dsl.core.errors import OTHER_BREAKS, Diagnostic, Span, break_in_comment, span_at

UnitWords = tuple[str, ...]  # the throughputs' unit words: metric_decls.Table.throughput_units()


# How a person would name what the parser expected.
_TERMINAL_WORDS = {
    "RBRACE": "'}'", "LBRACE": "'{'", "LPAR": "'('", "RPAR": "')'", "COMMA": "','", "EQUAL": "'='", "PLUS": "'+'",
    "NAME": "a name", "STRING": 'a "string"', "NUMBER": "a number",
    "QUANTITY": "a number with a unit (10s, 250ms, 80%, 256M)",
    "VAR": "a $reference",
    "COMPARATOR": "a comparison (>, >=, <, <=)",
    "MULTIPLIER": "a multiplier such as x2",
    "PERCENTILE": "a percentile such as p99.9",
    "USERS": "'users'", "USER": "'user'",
    "$END": "the end of the file",
}  # and RATE_UNIT, the units of the throughputs declared (_describe)


def _describe(term: str, units: UnitWords, lark: Lark) -> str:
    if term in _TERMINAL_WORDS:
        return _TERMINAL_WORDS[term]
    if term == "RATE_UNIT":
        return f"a unit word ({', '.join(units)})"
    try:
        pattern = lark.get_terminal(term).pattern
    except KeyError:
        return term.lower()
    if pattern.type == "str":
        return f"'{pattern.value}'"
    return term.lower()


def _keywords(expected: set[str], units: UnitWords, lark: Lark) -> list[str]:
    words = []
    for term in expected:
        try:
            pattern = lark.get_terminal(term).pattern
        except KeyError:
            continue
        if pattern.type == "str" and re.fullmatch(r"[a-z_]+", pattern.value):
            words.append(pattern.value)
    return sorted(words)


_NUMBER_AND_WORD = re.compile(r"-?[0-9]+(?:\.[0-9]+)?([A-Za-z_][A-Za-z0-9_]*)")


# Letters of other scripts drawn as Latin ones (Unicode's confusables for the letters of names): a
# word pasted from a chat or a document may hold one, and reads as the keyword it is not
_LOOKALIKES = str.maketrans(
    "аеорсуххіјѕԁһӏԛԝАВЕКМНОРСТХІЈЅοαντικρυΑΒΕΖΗΙΚΜΝΟΡΤΥΧ",
    "aeopcyxxijsdhlqwABEKMHOPCTXIJSoavtikpuABEZHIKMNOPTYX")
_WORD_AT = re.compile(r"\w+")


def _lookalike(text: str, pos: int, lark: Lark) -> tuple[int, str, tuple[str, str]] | None:
    """(where, the word, its message and hint) for a word at `pos` that holds a letter of another
    script: `users` with a Cyrillic e (U+0435) was "unexpected 'us'", its suggestions without users."""
    start = pos
    while start > 0 and text[start - 1].isalnum() and pos - start < 100:
        start -= 1
    found = _WORD_AT.match(text, start)
    if found is None or found.group().isascii():
        return None
    word = found.group()[:200]
    foreign = next(ch for ch in word if not ch.isascii())
    latin = unicodedata.normalize("NFKC", word).translate(_LOOKALIKES)
    keywords = sorted({t.pattern.value for t in lark.terminals
                       if t.pattern.type == "str" and re.fullmatch(r"[a-z_]+", t.pattern.value)})
    what = unicodedata.name(foreign, f"U+{ord(foreign):04X}")
    if latin.isascii():
        close = [latin] if latin in keywords else difflib.get_close_matches(latin, keywords, n=1, cutoff=0.8)
        mean = f"did you mean '{close[0]}'? " if close else ""
        return start, word, (f"{quoted(word)} holds {foreign!r} ({what}), a letter drawn like a Latin one",
                             f"{mean}type the word again in the letters a to z")
    return start, word, (f"{quoted(word)} holds {foreign!r} ({what})",
                         "names are written in the letters a to z (A to Z), digits and _")


def syntax_diagnostic(err: UnexpectedInput, file: str, text: str, units: UnitWords, lark: Lark) -> Diagnostic:
    """`lark`: the parser that failed (what its terminals match names what it expected)."""
    line, col = max(err.line, 1), max(err.column, 1)
    pos = err.token.start_pos if isinstance(err, UnexpectedToken) else getattr(err, "pos_in_stream", None)
    if isinstance(pos, int) and (lookalike := _lookalike(text, pos, lark)) is not None:
        start, word, said = lookalike
        return Diagnostic(said[0], span_at(file, text, start, len(word)), said[1])
    if isinstance(err, UnexpectedToken):
        tok = err.token
        expected = set(err.expected)
        names = sorted({_describe(t, units, lark) for t in expected})
        shown = "end of file" if tok.type == "$END" else quoted(str(tok))
        span = Span(file, line, col, line, col + max(1, len(str(tok))))
        hint = None
        keywords = _keywords(expected, units, lark)
        close = difflib.get_close_matches(str(tok), keywords, n=1, cutoff=0.6) if tok.type != "$END" else []
        if close:
            hint = f"did you mean '{close[0]}'?"
        elif other := break_in_comment(text, None if tok.type == "$END" else tok.start_pos):
            hint = other
        elif tok.type == "$END" and "RBRACE" in expected:
            hint = "a block is not closed: add the missing '}'"
        elif expected == {"LBRACE"}:  # `workload sysbench oltp_point_select` and the like
            hint = "expected '{': a block goes here, written '{ }' when it holds nothing"
        elif keywords and len(keywords) <= 14:
            hint = "expected one of: " + ", ".join(keywords)
        else:
            hint = "expected " + " or ".join(names[:6]) if names else "the text here does not continue the file"
        if tok.type == "STRING" and "NAME" in expected and not close:
            hint = "names are written without quotes"
        spaced = _spaced_unit(text, tok.start_pos, str(tok)) if tok.type != "$END" else None
        if spaced:
            hint = spaced
        elif "COMPARATOR" in expected and (after := _word_after_number(text, tok.start_pos, units)):
            # `p95 > 20 parsecs }`: the word was read as the metric of a next condition, and the
            # parser stops only after it; the mistake is the word, said there
            start, number, name = after
            unit = _SPELLED_UNITS.get(name.lower(), name)
            hint = (f"a unit is written against its number, without a space: {number}{unit}"
                    if unit in _ATTACHED_UNITS else _not_a_unit(name))
            return Diagnostic(f"unexpected {quoted(name)}", span_at(file, text, start, len(name)), hint)
        return Diagnostic(f"unexpected {shown}", span, hint)
    if isinstance(err, UnexpectedCharacters):
        ch = err.char
        hint = None
        width = 1
        glued = _NUMBER_AND_WORD.match(text, at := err.pos_in_stream or 0)
        if glued:
            width = glued.end() - glued.start()
            number, word = glued.group(0)[: -len(glued.group(1))], glued.group(1)
            if _unit_word(word, units):
                hint = f"a unit word follows its number after a space: {number} {word}"
            else:
                hint = _not_a_unit(word)
            return Diagnostic(f"unexpected {quoted(glued.group(0))}", Span(file, line, col, line, col + width), hint)
        if ch == "'":
            hint = 'strings use double quotes: "..."'
        elif ch == "%" and (spaced := _spaced_unit(text, at, ch)):
            hint = spaced
        elif ch.isdigit() or ch == ".":
            hint = "a unit is written against its number, without a space: 10s, 250ms, 80%, 256M"
        elif ch == "$":
            hint = "a reference is $ followed by a name declared with let"
        elif ch in "/:":
            hint = 'a path or an address is written in double quotes: "results/run.json", "mysql://host:3306/db"'
        elif ch in OTHER_BREAKS:
            hint = f"U+{ord(ch):04X} ends no line in a .bench file: end the file's lines with ordinary line breaks"
        elif ch.isspace() or unicodedata.category(ch) in ("Cf", "Cc", "Zs"):
            # a no-break space from a word processor, a byte order mark or zero-width space pasted in
            hint = (f"an invisible character ({unicodedata.name(ch, f'U+{ord(ch):04X}')}) is here: "
                    "delete it, or type a plain space")
        elif hint is None:
            hint = "names, numbers with their units, \"strings\" and { } ( ) , are the language's characters"
        return Diagnostic(f"unexpected character {ch!r}", Span(file, line, col, line, col + width), hint)
    if isinstance(err, UnexpectedEOF):
        return Diagnostic("unexpected end of file", Span(file, line, col, line, col + 1),
                          "a block is not closed: add the missing '}'")
    return Diagnostic(str(err), Span(file, line, col, line, col + 1), "the text here does not continue the file")


SHOWN = 40  # a longer token is quoted by its start and its end


def quoted(text: str) -> str:
    """A token as a message quotes it: 60 KB of one name is shown by its ends, and by its length."""
    if len(text) <= SHOWN:
        return repr(text)
    return repr(text[:SHOWN // 2] + "..." + text[-SHOWN // 4:]) + f" ({len(text):,} characters)"


def _unit_word(word: str, units: UnitWords) -> bool:
    """A unit written after its number and a space, as it should be: `8 users`, `500 tps`."""
    return word in ("users", "user", *units)


def _not_a_unit(word: str) -> str:
    return (f"'{word}' is not a unit; units are written against the number: ms, s, m, h "
            "(durations), % (percent), K, M, G, T (sizes), x (factors)")


_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_NUMBER_CHARS = frozenset("0123456789.")


def _word_after_number(text: str, pos: int, units: UnitWords) -> tuple[int, str, str] | None:
    """(where, the number, the word) of a word right after a bare number and a space, before `pos`:
    a unit apart from its number, or a word that is no unit (a unit word, `8 users`, is none of them).
    Scanned back from `pos`, once over each character (a file of 60 KB of digits costs no more)."""
    end = pos
    while end > 0 and text[end - 1].isspace():
        end -= 1
    start = end
    while start > 0 and text[start - 1] in _WORD_CHARS:
        start -= 1
    word = text[start:end]
    gap = start
    while gap > 0 and text[gap - 1] in " \t":
        gap -= 1
    number = gap
    while number > 0 and text[number - 1] in _NUMBER_CHARS:
        number -= 1
    if (not word or word[0].isdigit() or gap == start or number == gap
            or (number > 0 and text[number - 1] in _WORD_CHARS)):  # `p95 word`: a metric, not a number
        return None
    if _unit_word(word, units):
        return None
    return start, text[number:gap], word


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ATTACHED_UNITS = ("us", "ms", "s", "m", "h", "%", "K", "M", "G", "T", "x")
_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?")


# a unit spelled out (`duration 10 seconds`), and how it is written
_SPELLED_UNITS = {"millisecond": "ms", "milliseconds": "ms", "msec": "ms", "sec": "s", "secs": "s", "second": "s",
                  "seconds": "s", "min": "m", "mins": "m", "minute": "m", "minutes": "m", "hour": "h", "hours": "h",
                  "percent": "%"}


def _spaced_unit(text: str, pos: int, word: str) -> str | None:
    """The hint for `10 s`, `80 %` or `10 seconds`: a unit that is written against its number, and
    in its short form. Scanned back from `pos`, once over each character: a search from the file's
    start tried every digit of a number of 30,000 as its start (15 s)."""
    unit = _SPELLED_UNITS.get(word.lower(), word)
    if unit not in _ATTACHED_UNITS:
        return None
    end = pos
    while end > 0 and text[end - 1] in " \t":
        end -= 1
    start = end
    while start > 0 and text[start - 1] in _NUMBER_CHARS:
        start -= 1
    start -= 1 if start > 0 and text[start - 1] == "-" else 0
    number = text[start:end]
    if end == pos or not _NUMBER.fullmatch(number):
        return None
    shown = number if len(number) <= SHOWN else f"{number[:SHOWN // 2]}...{number[-SHOWN // 4:]}"
    return f"a unit is written against its number, without a space: {shown}{unit}"


def keyword_as_name(err: UnexpectedInput) -> bool:
    """Read a keyword as a name where the parser wants a name and not that keyword.

    So `max = uniform(1, 9)` in a fill block and `max(read) > 2s` in a stop block work after any
    entry. The contextual lexer picks a token from the parser state before the reductions of what
    precedes it, and LALR shares that state among every place a value can end (a fill column, a
    ramp's `settle 1s`, ...), so `max` comes out as the ramp keyword. Once the parser has reduced
    and refused it, feeding the same text as a NAME gives what a per-context keyword would have.
    """
    if not isinstance(err, UnexpectedToken) or err.interactive_parser is None:
        return False
    tok = err.token
    if tok.type == "NAME" or not _NAME.fullmatch(str(tok)) or "NAME" not in err.expected:
        return False
    err.interactive_parser.feed_token(Token.new_borrow_pos("NAME", str(tok), tok))
    return True

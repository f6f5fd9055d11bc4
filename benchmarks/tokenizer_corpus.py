"""A tokenizer test corpus assembled from text found on any machine with Python, plus written hard cases.

Real text: the Python documentation shipped with the interpreter (`pydoc_data.topics`), standard-library
docstrings, the package descriptions (METADATA) of the installed distributions, and, where they exist,
`/usr/share/common-licenses` and CPython's `test/cjkencodings/*-utf8.txt` (Chinese, Japanese and Korean
text). Hard cases: lines written here with accents, scripts, emoji, control / zero-width / format
characters, odd spaces and punctuation, combining marks and very long words, and those characters
inserted into ordinary sentences. Used by `tokenizer_agreement.py` and `tests/tokenization`.

Run `python benchmarks/tokenizer_corpus.py [--max-real-lines N]` for a summary of the corpus this machine gives
(`--smoke`: 100 real lines: checks that it runs).
"""

import argparse
import collections
import glob
import importlib
import importlib.metadata
import inspect
import os
import random
import sys
import warnings

HARD_CASES = [
    # Accents, cased and uncased.
    "Café, naïve, résumé, façade, Übermensch, Ærøskøbing, São Paulo, Kraków, İstanbul, Łódź.",
    "ÉCOLE ÉLÉMENTAIRE — Dvořák's Ödön von Horváth: ñandú, pingüino, crème brûlée.",
    "Việt Nam: Tiếng Việt có dấu thanh, ví dụ: ả ạ ẫ ằ ổ ự.",
    "Straße, STRASSE, ẞ, ß; Maße vs. Masse.",
    "e\u0301le\u0300ve (combining acute and grave) vs élève (precomposed)",
    "a\u0308\u0304 stacked marks o\u0323\u0302 and a lone mark \u0301 here",
    "ǅemal ǈubljana ǋ dz digraphs; ﬁ ﬂ ﬀ ligatures; Ⅻ roman numeral; ½ ¼ ² ³",
    # Other scripts.
    "Ελληνικά: ΟΔΟΣ, ΣΟΦΟΣ, σοφός, Αθήνα — καλημέρα!",
    "Русский текст: Съешь же ещё этих мягких французских булок, да выпей чаю.",
    "العربية: مرحبا بالعالم، كيف حالك؟",
    "עברית: שלום עולם!",
    "हिन्दी: नमस्ते दुनिया। संस्कृतम्",
    "ไทย: สวัสดีชาวโลก",
    "中文：你好，世界！我爱北京天安门。",
    "日本語：こんにちは世界。カタカナとひらがな、漢字。",
    "한국어: 안녕하세요 세계!",
    "Mixed: BERT是一个模型 and トークナイザー test 한국 1234",
    "CJK extension B: 𠀀𠀁 compatibility: 豈更 radicals: ⺀⺁",
    # Emoji and symbols.
    "Emoji: 😀 😂 🥰 👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 🇫🇷 ❤️ ✨",
    "Symbols: © ® ™ § ¶ † ‡ • … ‰ € £ ¥ ₹ ∞ ≈ ≠ ≤ ≥ ∑ ∫ √ ∂ ∇ → ⇒ ↔",
    "Math: α+β=γ, x² + y² = z², ∀ε>0 ∃δ>0",
    # Control, zero-width and format characters.
    "tab\there, newline\nthere, carriage\rreturn",
    "vertical\x0btab and form\x0cfeed and nul\x00char and bell\x07char",
    "soft\u00adhyphen inter\u00adnation\u00adal",
    "zero\u200bwidth\u200bspace, zero\u200cwidth\u200dnon-joiner, word\u2060joiner",
    "\ufeffbyte order mark at start, and\ufeffinside",
    "left\u200eto\u200fright marks, \u202aembedding\u202c and \u2066isolate\u2069",
    "replacement \ufffd char and private use \ue000\uf8ff chars",
    "line\u2028separator and paragraph\u2029separator, next\u0085line",
    "C1 controls: \x80\x81\x9f between words",
    # Odd spaces and punctuation.
    "no\u00a0break\u2009thin\u2003em\u3000ideographic\u202fnarrow\u205fmedium spaces",
    "«Guillemets» „Anführungszeichen“ ‘single’ “double” ‹angle›",
    "Dashes: en–dash em—dash minus−sign hyphen‐char figure‒dash ⸺ two-em",
    "Punctuation: ¿Qué? ¡Hola! 『括弧』【括弧】〈括弧〉 ・ ‼ ⁇ ※",
    "ASCII: !\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~ all of it",
    "URL https://example.com/path?query=1&b=two#frag and email someone@example.org",
    "C++ code: std::vector<int> v{1,2,3}; if (a != b && c <= d) { return x->y; }",
    "Numbers: 3.14159, 1,000,000, 2024-01-31, 12:30:45, -42, +7, 1e-5, 0xFF",
    "Fullwidth: ＡＢＣ ａｂｃ １２３ ！？",
    "Apostrophes: don't won’t it's O'Neill rock'n'roll",
    # Long words.
    "word of 50: " + "a" * 50,
    "word of 99: " + "b" * 99,
    "word of 100: " + "c" * 100,
    "word of 101: " + "d" * 101,
    "word of 150: " + "e" * 150,
    "word of 200: " + "f" * 200,
    "word of 201: " + "g" * 201,
    "word of 500: " + "h" * 500,
    "long accented word of 101: " + "é" * 101,
    "long CJK run is split per character: " + "字" * 250,
    "long word with punctuation inside: " + "ab-" * 80,
    "Pneumonoultramicroscopicsilicovolcanoconiosis and supercalifragilisticexpialidocious",
    # Degenerate lines.
    "",
    " ",
    "\t\n",
    "\x00",
    "\u200b\u200b",
    "...",
    "a",
    "[CLS] [SEP] [MASK] [UNK] [PAD] special token text is not special",
    "##ing ##s leading continuation markers in text",
]

_INSERTED_CHARACTERS = [
    "\u00ad", "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u200e", "\x00", "\x07", "\x0b", "\x0c",
    "\x85", "\u2028", "\u00a0", "\u2009", "\u3000", "\u0301", "\u0308", "\ufffd", "\t", "\u00b7", "\u2019",
    "\u2014", "\u00e9", "\u00c5", "\u4e2d", "\u3042", "\uac00", "\U0001f600", "\U0001f44d\U0001f3fd",
    "\u00df", "\u0130", "\u03a3", "\ufb01", "\uff21", "\u2163", "\u00bd", "\u02bc", "\u055a", "\u0640",
]

_BASE_SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "BERT uses WordPiece tokenization with a vocabulary of thirty thousand tokens.",
    "Tokenizers must agree exactly, otherwise pretrained embeddings are looked up wrongly.",
    "In 2018, Devlin et al. introduced bidirectional transformers for language understanding.",
    "She said: \"unbelievable!\" and walked away, carrying three-dimensional objects.",
]

# Modules whose import opens windows, starts processes or prints.
_SKIPPED_MODULES = {"antigravity", "this", "idlelib", "tkinter", "turtle", "turtledemo", "ensurepip", "venv",
                    "lib2to3", "pydoc", "webbrowser", "xxsubtype", "msilib", "winreg", "winsound", "nturl2path"}


def inserted_character_cases(seed=0):
    """Ordinary sentences with one hard character inserted at a random position inside a word."""
    generator = random.Random(seed)
    lines = []
    for character in _INSERTED_CHARACTERS:
        for sentence in _BASE_SENTENCES:
            position = generator.randrange(1, len(sentence) - 1)
            lines.append(sentence[:position] + character + sentence[position:])
    return lines


def _documentation_lines():
    from pydoc_data.topics import topics

    for name in sorted(topics):
        yield from topics[name].splitlines()


def _docstring_lines():
    for module_name in sorted(sys.stdlib_module_names):
        if module_name.startswith("_") or module_name in _SKIPPED_MODULES:
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                module = importlib.import_module(module_name)
        except Exception:  # noqa: BLE001 - platform-specific modules are simply absent
            continue
        objects = [module] + [member for _, member in sorted(vars(module).items()) if inspect.isclass(member)
                              or inspect.isfunction(member)]
        for member in objects:
            doc = getattr(member, "__doc__", None)
            if isinstance(doc, str):
                yield from doc.splitlines()


def _metadata_lines():
    descriptions = {}
    for distribution in importlib.metadata.distributions():
        name = distribution.metadata.get("Name") or ""
        body = distribution.metadata.get_payload() or ""
        descriptions[name.lower()] = body
    for name in sorted(descriptions):
        yield from descriptions[name].splitlines()


def _file_lines(patterns):
    for pattern in patterns:
        for path in sorted(glob.glob(pattern)):
            try:
                with open(path, encoding="utf-8") as handle:
                    yield from handle.read().splitlines()
            except (OSError, UnicodeDecodeError):
                continue


def real_text_lines(max_lines=None):
    """Distinct non-blank lines of real text from the sources in the module docstring, in a fixed order."""
    test_directory = os.path.join(os.path.dirname(os.__file__), "test", "cjkencodings")
    sources = [
        _documentation_lines(),
        _docstring_lines(),
        _metadata_lines(),
        _file_lines(["/usr/share/common-licenses/*"]),
        _file_lines([os.path.join(test_directory, "*-utf8.txt")]),
    ]
    seen, lines = set(), []
    for source in sources:
        for line in source:
            line = line.strip()
            if line and line not in seen:
                seen.add(line)
                lines.append(line)
    if max_lines is not None and len(lines) > max_lines:
        step = len(lines) / max_lines
        lines = [lines[int(i * step)] for i in range(max_lines)]
    return lines


def corpus(max_real_lines=None):
    """(source, line) pairs: the hard cases, the inserted-character cases, then real text."""
    return (
        [("hard", line) for line in HARD_CASES]
        + [("inserted", line) for line in inserted_character_cases()]
        + [("real", line) for line in real_text_lines(max_real_lines)]
    )


def main(argv=None):
    """Print what the corpus holds on this machine: lines, characters and non-ASCII share per source."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--max-real-lines", type=int, default=None, help="subsample the real text")
    parser.add_argument("--smoke", action="store_true", help="100 real lines: checks that it runs")
    args = parser.parse_args(argv)
    if args.smoke and args.max_real_lines is None:
        args.max_real_lines = 100
    entries = corpus(args.max_real_lines)
    by_source = collections.defaultdict(list)
    for source, line in entries:
        by_source[source].append(line)
    for source, lines in by_source.items():
        characters = sum(map(len, lines))
        non_ascii = sum(not line.isascii() for line in lines)
        print(f"{source:>9}: {len(lines):7d} lines, {characters / 1e6:6.2f} M characters, "
              f"{non_ascii / max(len(lines), 1):6.1%} of lines not ASCII")
    print(f"corpus: {len(entries)} lines, {sum(len(line) for _, line in entries) / 1e6:.2f} M characters")


if __name__ == "__main__":
    main()

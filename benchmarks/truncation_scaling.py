"""Pretraining instance creation time vs the length of a single-line corpus (issue #16 item 9).

A corpus of one very long line is one sentence: `create_pretraining_data.py` takes it whole as segment A and
truncates it to the instance length. The original removes one token at a time from the front or back of a list
(`del tokens[0]` moves the whole list), so the time grew with the square of the line length: a 10 MB line hung
`pretrain` for more than 15 minutes. `truncate_pair` now counts the removals and slices once.

The line is made of 5-byte words ("word "), one token id each, so a line of N bytes is N / 5 tokens; the
instance stream is `iterate_pretraining_instances` with the original's settings (sequence length 128, seed
12345), a second short document giving the random next segments. Tokenization is not timed (see
tokenizer_throughput.py). Reports seconds per line length, MB/s, and the ratio of the longest time to the
shortest per byte (at most about 1 when linear; growing with the length when quadratic).

    python benchmarks/truncation_scaling.py           # 1 KB, 10 KB, 100 KB, 1 MB, 10 MB
    python benchmarks/truncation_scaling.py --smoke   # 1 KB .. 100 KB
"""

import argparse
import time

from keras_bert_impl.data.pretraining_instances import iterate_pretraining_instances

WORD_BYTES = 5
LENGTHS = (1_000, 10_000, 100_000, 1_000_000, 10_000_000)


def single_line_documents(line_bytes):
    """A one-line document of `line_bytes / 5` token ids and a short second document."""
    tokens = line_bytes // WORD_BYTES
    return [[[10 + index % 1000 for index in range(tokens)]], [[7, 8, 9], [11, 12]]]


def time_instances(line_bytes, sequence_length=128):
    """(seconds, number of instances) to create every instance of the single-line corpus."""
    documents = single_line_documents(line_bytes)
    started = time.perf_counter()
    instances = list(iterate_pretraining_instances(documents, sequence_length=sequence_length))
    seconds = time.perf_counter() - started
    assert all(len(instance["first"]) + len(instance["second"]) + 3 <= sequence_length for instance in instances)
    return seconds, len(instances)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="only the lengths up to 100 KB (CI)")
    args = parser.parse_args(argv)
    lengths = [length for length in LENGTHS if not args.smoke or length <= 100_000]
    print(f"{'line length':>12} {'tokens':>10} {'instances':>9} {'seconds':>9} {'MB/s':>8}")
    per_byte = []
    for line_bytes in lengths:
        seconds, count = time_instances(line_bytes)
        per_byte.append(seconds / line_bytes)
        print(f"{line_bytes / 1e6:>10.3f}MB {line_bytes // WORD_BYTES:>10} {count:>9} {seconds:>9.4f} "
              f"{line_bytes / 1e6 / max(seconds, 1e-9):>8.1f}")
    print(f"time per byte, longest / shortest line: {per_byte[-1] / per_byte[0]:.2f} (at most about 1 when linear)")


if __name__ == "__main__":
    main()

"""NSP sentence pairs from documents of token ids: the original `create_pretraining_data.py` instances.

The algorithm is the original's (Devlin et al., 2018, appendix A.2), draw for draw with one `random.Random(seed)`,
except that masking has its own stateless randomness, so the instances do not depend on the masking settings.
"""

import random

from keras_bert_impl.data.packing import truncate_pair


def check_instance_settings(sequence_length, short_seq_prob, dupe_factor):
    """Raise a one-line `ValueError` for a setting no instance can be made with."""
    if int(sequence_length) < 5:
        raise ValueError(f"sequence_length must be at least 5 ([CLS] a [SEP] b [SEP]), got {sequence_length}.")
    if not 0.0 <= short_seq_prob <= 1.0:
        raise ValueError(f"short_seq_prob must be in [0, 1], got {short_seq_prob}.")
    if int(dupe_factor) < 1:
        raise ValueError(f"dupe_factor must be >= 1, got {dupe_factor}.")


def instances_from_document(documents, document_index, sequence_length, short_seq_prob, rng):
    """The original `create_instances_from_document`: NSP pairs from one document.

    Args:
        documents: list of non-empty documents of id sentences (see `tokenize_documents`).
        document_index: int. The document to cut into pairs.
        sequence_length: int. Packed length including `[CLS]` and two `[SEP]`.
        short_seq_prob: float. Probability of a shorter random target length for this document.
        rng: random.Random. The shared random source.

    Returns:
        list of truncated `(tokens_a, tokens_b, is_random_next)`.
    """
    document = documents[document_index]
    max_num_tokens = target_seq_length = sequence_length - 3
    if rng.random() < short_seq_prob:
        target_seq_length = rng.randint(2, max_num_tokens)
    instances, current_chunk, current_length, i = [], [], 0, 0
    while i < len(document):
        segment = document[i]
        current_chunk.append(segment)
        current_length += len(segment)
        if i == len(document) - 1 or current_length >= target_seq_length:
            a_end = rng.randint(1, len(current_chunk) - 1) if len(current_chunk) >= 2 else 1
            tokens_a = [token for sentence in current_chunk[:a_end] for token in sentence]
            tokens_b = []
            if len(current_chunk) == 1 or rng.random() < 0.5:
                is_random_next = True
                target_b_length = target_seq_length - len(tokens_a)
                for _ in range(10):
                    random_document_index = rng.randint(0, len(documents) - 1)
                    if random_document_index != document_index:
                        break
                random_document = documents[random_document_index]
                random_start = rng.randint(0, len(random_document) - 1)
                for sentence in random_document[random_start:]:
                    tokens_b.extend(sentence)
                    if len(tokens_b) >= target_b_length:
                        break
                # The chunk's sentences after A were not used: put them back for the next chunk.
                i -= len(current_chunk) - a_end
            else:
                is_random_next = False
                tokens_b = [token for sentence in current_chunk[a_end:] for token in sentence]
            tokens_a, tokens_b = truncate_pair(tokens_a, tokens_b, max_num_tokens, "random_front_back", rng)
            instances.append((tokens_a, tokens_b, is_random_next))
            current_chunk, current_length = [], 0
        i += 1
    return instances


def iterate_pretraining_instances(documents, sequence_length=128, short_seq_prob=0.1, dupe_factor=1, seed=12345):
    """Yield NSP segment pairs in creation order (documents shuffled, `dupe_factor` passes), truncated to fit
    `sequence_length` once packed as `[CLS] A [SEP] B [SEP]` (by `SegmentPacker`).

    Args:
        documents: list of documents of id sentences (see `tokenize_documents`).
        sequence_length: int. Longest packed instance. Defaults to 128.
        short_seq_prob: float. Probability of a short target length per document. Defaults to 0.1.
        dupe_factor: int. Passes over the documents. Defaults to 1.
        seed: int. Seed of the `random.Random` that makes every choice. Defaults to 12345 (the original's).

    Yields:
        dicts of `"first"`, `"second"` (lists of int: segments A and B, together at most `sequence_length - 3`)
        and `"next_sentence_labels"` (int, 0 = IsNext, 1 = random next).

    Example:
    >>> list(iterate_pretraining_instances([[[5, 6]]], sequence_length=8))
    [{'first': [5, 6], 'second': [5, 6], 'next_sentence_labels': 1}]
    """
    check_instance_settings(sequence_length, short_seq_prob, dupe_factor)
    documents = [document for document in documents if document]
    rng = random.Random(seed)
    rng.shuffle(documents)
    for _ in range(dupe_factor):
        for document_index in range(len(documents)):
            for first, second, is_random_next in instances_from_document(documents, document_index, sequence_length,
                                                                          short_seq_prob, rng):
                yield {"first": first, "second": second, "next_sentence_labels": int(is_random_next)}

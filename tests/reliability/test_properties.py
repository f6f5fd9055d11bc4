"""Property tests (hypothesis) of the tokenizer, the segment packer and the masked-LM masker.

Each property runs a bounded number of generated examples (`max_examples`, no deadline: the first call of a
TensorFlow function traces it) so the file stays within a few seconds per property.

- Tokenizer: any Unicode text (controls, combining marks, CJK, emoji, surrogate-free) tokenizes without an
  error; the Python path (`tokenize(str)`) and the TensorFlow path (`tokenize_tensor`) give the same ids;
  every id is in the vocabulary; offsets are ordered spans inside the text. A lone surrogate (not encodable)
  gets a ValueError naming its position.
- Packer (NumPy `pack` and TensorFlow `call`): length <= seq_length, [CLS] first, one [SEP] closing each
  segment, segment ids 0...0 1...1 then 0 padding, the padding mask a prefix of True, and the kept tokens a
  contiguous slice of each input segment; both paths agree.
- Masker: special tokens and padding are never selected; the count follows the "original" rule
  `min(P, max(1, round(n * rate)), candidates)`; positions are strictly increasing then padded with 0 (and
  weight 0); `mask_ids` are the original ids at the positions; unselected tokens are unchanged.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.backend_independent  # the tokenizer, packer and masker are tf.data preprocessing

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
CLS, SEP, PAD, MASK = 2, 3, 0, 4
VOCABULARY_SIZE = 30

# Text from every Unicode category except surrogates (not valid in UTF-8), weighted towards the tricky parts.
unicode_text = st.one_of(
    st.text(st.characters(exclude_categories=("Cs",)), max_size=40),
    st.text(st.sampled_from(list("the cat sat.,!?  \t\n\r\x00\u00ad\u200b\ufffd\u0301é中文字🙂\u3000ＡＢ##[]")),
            max_size=40),
)


@pytest.fixture(scope="module")
def bert_tokenizer():
    from keras_bert_impl.tokenization import BertTokenizer

    words = ["the", "cat", "sat", ".", ",", "!", "?", "中", "文", "字", "e", "##s", "##at", "c", "##a", "##t"]
    return BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + words)


@SETTINGS
@given(text=unicode_text)
def test_any_unicode_tokenizes_the_same_on_both_paths(bert_tokenizer, text):
    import tensorflow as tf

    python_ids = bert_tokenizer.tokenize(text)
    tensor_ids = bert_tokenizer.tokenize_tensor(tf.constant(text)).numpy().tolist()
    assert python_ids == tensor_ids
    assert all(0 <= i < bert_tokenizer.vocabulary_size() for i in python_ids)
    ids, starts, ends = bert_tokenizer.tokenize_with_offsets(text)
    assert ids == python_ids
    assert all(0 <= s <= e <= len(text) for s, e in zip(starts, ends))
    assert starts == sorted(starts)


@SETTINGS
@given(prefix=st.text(max_size=5), suffix=st.text(max_size=5),
       surrogate=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF))
def test_lone_surrogates_get_a_clear_error(bert_tokenizer, prefix, suffix, surrogate):
    from hypothesis import assume

    assume(all(not 0xD800 <= ord(c) <= 0xDFFF for c in prefix + suffix))
    with pytest.raises(ValueError, match=f"lone surrogate .* at character {len(prefix)}"):
        bert_tokenizer.tokenize(prefix + surrogate + suffix)


segment = st.lists(st.integers(5, VOCABULARY_SIZE - 1), max_size=25)


def check_packed(row, first, second, seq_length):
    token_ids, segment_ids, mask = (np.asarray(row[key]) for key in ("token_ids", "segment_ids", "padding_mask"))
    assert token_ids.shape == segment_ids.shape == mask.shape == (seq_length,)
    length = int(mask.sum())
    assert mask[:length].all() and not mask[length:].any()  # a prefix of True
    assert length <= seq_length and token_ids[0] == CLS
    assert (token_ids[length:] == PAD).all() and (segment_ids[length:] == 0).all()
    real, segments = token_ids[:length].tolist(), segment_ids[:length].tolist()
    seps = [index for index, token in enumerate(real) if token == SEP]
    assert seps[-1] == length - 1 and len(seps) == (1 if second is None else 2)
    kept_a = real[1 : seps[0]]
    assert segments[: seps[0] + 1] == [0] * (seps[0] + 1)
    assert any(first[i : i + len(kept_a)] == kept_a for i in range(len(first) - len(kept_a) + 1))
    if second is not None:
        kept_b = real[seps[0] + 1 : seps[1]]
        assert segments[seps[0] + 1 :] == [1] * (length - seps[0] - 1)  # 0...0 1...1
        assert any(second[i : i + len(kept_b)] == kept_b for i in range(len(second) - len(kept_b) + 1))
        # Longest-first truncation only cuts when it must, and keeps both sides as long as possible.
        assert len(kept_a) + len(kept_b) == min(len(first) + len(second), seq_length - 3)
    else:
        assert len(kept_a) == min(len(first), seq_length - 2)


@SETTINGS
@given(first=segment, second=st.one_of(st.none(), segment), seq_length=st.integers(5, 24),
       truncation=st.sampled_from(["longest_first", "random_front_back"]))
def test_packer_invariants_on_both_paths(first, second, seq_length, truncation):
    import tensorflow as tf

    from keras_bert_impl.data.packing import SegmentPacker

    packer = SegmentPacker(seq_length, cls_token_id=CLS, sep_token_id=SEP, pad_token_id=PAD, truncation=truncation)
    packed = packer.pack([first], None if second is None else [second])
    check_packed({key: value[0] for key, value in packed.items()}, first, second, seq_length)
    ragged = lambda ids: tf.ragged.constant([ids], dtype=tf.int32, ragged_rank=1) if ids else (  # noqa: E731
        tf.RaggedTensor.from_row_lengths(tf.zeros([0], tf.int32), [0]))
    graph = packer(ragged(first), None if second is None else ragged(second))
    for key in packed:
        np.testing.assert_array_equal(graph[key].numpy().astype(packed[key].dtype), packed[key], err_msg=key)


@st.composite
def masking_batches(draw):
    rows = draw(st.integers(1, 4))
    seq_length = draw(st.integers(3, 20))
    token_ids = np.full((rows, seq_length), PAD, np.int32)
    for row in range(rows):
        length = draw(st.integers(2, seq_length))
        body = draw(st.lists(st.integers(5, VOCABULARY_SIZE - 1), min_size=length - 2, max_size=length - 2))
        token_ids[row, :length] = [CLS, *body, SEP]
        if length > 4 and draw(st.booleans()):  # a pair: a [SEP] inside
            token_ids[row, draw(st.integers(1, length - 2))] = SEP
    return token_ids


@SETTINGS
@given(token_ids=masking_batches(), max_predictions=st.integers(1, 6), rate=st.sampled_from([0.15, 0.3, 0.5, 1.0]),
       seed=st.integers(0, 2**31 - 1))
def test_masker_invariants(token_ids, max_predictions, rate, seed):
    from keras_bert_impl.data.masking import MaskedLMMasker

    masker = MaskedLMMasker(vocabulary_size=VOCABULARY_SIZE, mask_token_id=MASK,
                            max_predictions_per_seq=max_predictions, mask_rate=rate,
                            unselectable_token_ids=[CLS, SEP, PAD], pad_token_id=PAD)
    out = {key: value.numpy() for key, value in masker({"token_ids": token_ids}, seed=[seed, 1]).items()}
    assert out["mask_positions"].shape == out["mask_ids"].shape == out["mask_weights"].shape == (
        len(token_ids), max_predictions)
    for row in range(len(token_ids)):
        original, masked = token_ids[row], out["token_ids"][row]
        weights = out["mask_weights"][row]
        count = int(weights.sum())
        positions = out["mask_positions"][row][:count].tolist()
        n = int((original != PAD).sum())
        candidates = [i for i in range(n) if original[i] not in (CLS, SEP, PAD)]
        expected = min(max_predictions, max(1, int(round(n * rate))), len(candidates))
        assert count == expected
        assert set(weights[:count]) <= {1.0} and not weights[count:].any()
        assert positions == sorted(set(positions))  # strictly increasing
        assert set(positions) <= set(candidates)  # never [CLS], [SEP] or padding
        assert not out["mask_positions"][row][count:].any() and not out["mask_ids"][row][count:].any()
        assert out["mask_ids"][row][:count].tolist() == original[positions].tolist()
        unselected = [i for i in range(len(original)) if i not in positions]
        assert masked[unselected].tolist() == original[unselected].tolist()
        assert ((masked >= 0) & (masked < VOCABULARY_SIZE)).all()

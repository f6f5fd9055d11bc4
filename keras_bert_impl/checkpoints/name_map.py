"""The one table that maps our variable paths to Hugging Face and original google-research/bert names.

Each `WeightSpec` names one of our variables (`variable.path`) and its tensor(s) in each foreign format;
three names are our fused query/key/value projection, concatenated along the output axis. Layouts live in
`conversion.py`: Hugging Face weights are `[out, in]`, original kernels `[in, out]` unless `original_out_in`.
"""

import dataclasses


@dataclasses.dataclass(frozen=True)
class WeightSpec:
    ours: str
    kind: str  # "kernel" ([in, out] here), "vector" (bias / LayerNorm), "embedding" ([rows, H])
    huggingface: tuple
    original: tuple
    original_out_in: bool = False


def _dense(ours, huggingface, original):
    return [WeightSpec(f"{ours}/kernel", "kernel", (f"{huggingface}.weight",), (f"{original}/kernel",)),
            WeightSpec(f"{ours}/bias", "vector", (f"{huggingface}.bias",), (f"{original}/bias",))]


def _layer_norm(ours, huggingface, original):
    return [WeightSpec(f"{ours}/gamma", "vector", (f"{huggingface}.weight",), (f"{original}/gamma",)),
            WeightSpec(f"{ours}/beta", "vector", (f"{huggingface}.bias",), (f"{original}/beta",))]


def _fused_qkv(ours, huggingface, original):
    parts = ("query", "key", "value")
    return [WeightSpec(f"{ours}/{name}", kind, tuple(f"{huggingface}.{p}.{theirs}" for p in parts),
                       tuple(f"{original}/{p}/{name}" for p in parts))
            for name, kind, theirs in (("kernel", "kernel", "weight"), ("bias", "vector", "bias"))]


def backbone_weight_specs(num_layers):
    """Specs for every `BertBackbone` variable. Hugging Face names are relative to `BertModel`."""
    hf, tf = "embeddings", "bert/embeddings"
    specs = [
        WeightSpec("embeddings/token_embedding/embeddings", "embedding",
                   (f"{hf}.word_embeddings.weight",), (f"{tf}/word_embeddings",)),
        WeightSpec("embeddings/segment_embedding/embeddings", "embedding",
                   (f"{hf}.token_type_embeddings.weight",), (f"{tf}/token_type_embeddings",)),
        WeightSpec("embeddings/position_embeddings", "embedding",
                   (f"{hf}.position_embeddings.weight",), (f"{tf}/position_embeddings",)),
        *_layer_norm("embeddings/layer_norm", f"{hf}.LayerNorm", f"{tf}/LayerNorm"),
    ]
    for i in range(num_layers):
        ours, hf, tf = f"encoder_layer_{i}", f"encoder.layer.{i}", f"bert/encoder/layer_{i}"
        specs += [
            *_fused_qkv(f"{ours}/self_attention/query_key_value", f"{hf}.attention.self", f"{tf}/attention/self"),
            *_dense(f"{ours}/self_attention/attention_output", f"{hf}.attention.output.dense",
                    f"{tf}/attention/output/dense"),
            *_layer_norm(f"{ours}/attention_layer_norm",
                         f"{hf}.attention.output.LayerNorm", f"{tf}/attention/output/LayerNorm"),
            *_dense(f"{ours}/intermediate_dense", f"{hf}.intermediate.dense", f"{tf}/intermediate/dense"),
            *_dense(f"{ours}/output_dense", f"{hf}.output.dense", f"{tf}/output/dense"),
            *_layer_norm(f"{ours}/output_layer_norm", f"{hf}.output.LayerNorm", f"{tf}/output/LayerNorm"),
        ]
    specs += _dense("pooler_dense", "pooler.dense", "bert/pooler/dense")
    return specs


# Tensors some checkpoints carry that are not weights (buffers) or are tied copies of other weights (the decoder's
# of the word embeddings).
IGNORED_FOREIGN_TENSORS = ("embeddings.position_ids", "cls.predictions.decoder.weight", "global_step")


def output_layer_specs(ours, huggingface, original=None):
    """Specs for a head's output layer `ours` (`/kernel`, `/bias`): Hugging Face `{huggingface}.weight` /
    `.bias`, the original's `{original}_weights` (`[out, in]`) / `{original}_bias`, none without `original`.

    Example:
    >>> [spec.original for spec in output_layer_specs("classifier_dense", "classifier", "output")]
    [('output_weights',), ('output_bias',)]
    """
    original_kernel, original_bias = ((f"{original}_weights",), (f"{original}_bias",)) if original else ((), ())
    return [WeightSpec(f"{ours}/kernel", "kernel", (f"{huggingface}.weight",), original_kernel, original_out_in=True),
            WeightSpec(f"{ours}/bias", "vector", (f"{huggingface}.bias",), original_bias)]


def pretraining_head_specs():
    """Specs for `BertPretrainer`'s masked-LM and next-sentence heads. Hugging Face names are absolute
    (`BertForPreTraining`); the MLM output projection is tied to the word embeddings and has no spec."""
    mlm, hf, tf = "masked_lm_head", "cls.predictions", "cls/predictions"
    return [
        *_dense(f"{mlm}/transform_dense", f"{hf}.transform.dense", f"{tf}/transform/dense"),
        *_layer_norm(f"{mlm}/transform_layer_norm", f"{hf}.transform.LayerNorm", f"{tf}/transform/LayerNorm"),
        WeightSpec(f"{mlm}/output_bias", "vector", (f"{hf}.bias",), (f"{tf}/output_bias",)),
        *output_layer_specs("next_sentence_head", "cls.seq_relationship", "cls/seq_relationship/output"),
    ]

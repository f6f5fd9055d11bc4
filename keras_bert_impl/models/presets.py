"""Published BERT sizes (Devlin et al., 2018; Turc et al., 2019 for the compact models).

One line per preset; intermediate width is 4H and head size 64 throughout, as published.
"""

PRESETS = {
    "tiny": dict(num_layers=2, hidden_dim=128, num_heads=2, intermediate_dim=512),
    "mini": dict(num_layers=4, hidden_dim=256, num_heads=4, intermediate_dim=1024),
    "small": dict(num_layers=4, hidden_dim=512, num_heads=8, intermediate_dim=2048),
    "medium": dict(num_layers=8, hidden_dim=512, num_heads=8, intermediate_dim=2048),
    "base": dict(num_layers=12, hidden_dim=768, num_heads=12, intermediate_dim=3072),
    "large": dict(num_layers=24, hidden_dim=1024, num_heads=16, intermediate_dim=4096),
}

# Released BERT vocabularies (uncased English WordPiece) have this many entries.
DEFAULT_VOCABULARY_SIZE = 30522


def preset_config(name, **overrides):
    """Backbone constructor arguments for the published size `name`, with `overrides` applied.

    Example:
    >>> preset_config("mini", vocabulary_size=100)["hidden_dim"]
    256
    """
    if name not in PRESETS:
        raise ValueError(f"Unknown size {name!r}. Published sizes: {', '.join(PRESETS)}.")
    return {"vocabulary_size": DEFAULT_VOCABULARY_SIZE, **PRESETS[name], **overrides}


def refuse_size_as_preset(class_name, preset):
    """`from_preset` loads weights; refuse a published size (random weights) in one line naming `from_scratch`.

    Example:
    >>> refuse_size_as_preset("BertBackbone", "bert_base_en_uncased")  # a keras-hub handle passes
    """
    if preset in PRESETS:
        raise ValueError(f"{preset!r} is a model size without weights, not a preset: use {class_name}.from_scratch("
                         f"{preset!r}, ...) for random weights, or from_preset with a keras-hub preset (e.g. "
                         "'bert_base_en_uncased').")

"""The `BertTokenizer` of a run: from a `vocab.txt` (or its directory) or from the initial checkpoint's directory."""

import glob
import os


def load_tokenizer(vocab=None, checkpoint=None, lowercase=None):
    """The `BertTokenizer` of a fine-tuning (or data-writing) run.

    Args:
        vocab: str or None. A `vocab.txt` file or a directory holding one (and maybe `tokenizer_config.json`).
            Defaults to None: the checkpoint's directory.
        checkpoint: str or None. The initial checkpoint (directory or original-TF prefix). Defaults to None.
        lowercase: bool or None. Override the tokenizer config's casing. Defaults to None.

    Returns:
        `BertTokenizer`.
    """
    from keras_bert_impl.tokenization import BertTokenizer

    overrides = {} if lowercase is None else {"lowercase": lowercase}
    source = vocab
    if source is None and checkpoint is not None:
        if not os.path.exists(checkpoint) and not glob.glob(glob.escape(checkpoint) + ".*"):
            raise FileNotFoundError(f"{checkpoint} does not exist (no such folder, file or TF checkpoint prefix); "
                                    f"check the --init-checkpoint path.")
        source = checkpoint if os.path.isdir(checkpoint) else os.path.dirname(os.path.abspath(checkpoint))
    if source is None:
        raise ValueError("No vocabulary: pass a vocab.txt (or its directory), or a checkpoint directory holding one.")
    if os.path.isfile(source):
        return BertTokenizer(source, **({"lowercase": True} | overrides))
    if not os.path.isfile(os.path.join(source, "vocab.txt")):
        raise FileNotFoundError(f"No vocab.txt in {source!r}; pass the vocabulary explicitly (--vocab).")
    return BertTokenizer.from_pretrained(source, **overrides)

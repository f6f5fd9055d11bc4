"""Reading original google-research/bert checkpoints (`bert_config.json` + `bert_model.ckpt.*`).

This is a TensorFlow edge: the TF checkpoint reader is the only dependable way to read the V2 bundle format.
"""

import os

from keras_bert_impl.checkpoints.conversion import CheckpointError, check_finite
from keras_bert_impl.checkpoints.huggingface import backbone_config_from_bert_json
from keras_bert_impl.utils.file_patterns import read_json

CONFIG_FILE = "bert_config.json"
DEFAULT_PREFIX = "bert_model.ckpt"

# The original's "gelu" is the tanh approximation (modeling.py), unlike Hugging Face's.
ORIGINAL_ACTIVATIONS = {"gelu": "gelu_approximate", "relu": "relu", "swish": "silu"}


def checkpoint_prefix(path):
    """The checkpoint prefix for a directory or prefix path, or None when there is no original checkpoint."""
    if os.path.exists(path + ".index"):
        return path
    if os.path.isdir(path):
        candidate = os.path.join(path, DEFAULT_PREFIX)
        if os.path.exists(candidate + ".index"):
            return candidate
        indexes = sorted(name for name in os.listdir(path) if name.endswith(".ckpt.index"))
        if indexes:
            return os.path.join(path, indexes[0][: -len(".index")])
        if os.path.exists(os.path.join(path, CONFIG_FILE)):
            raise CheckpointError(f"{path} has {CONFIG_FILE} but no checkpoint (expected {DEFAULT_PREFIX}.index and "
                                  f"{DEFAULT_PREFIX}.data-*).")
    return None


def read_original_config(prefix):
    path = os.path.join(os.path.dirname(prefix), CONFIG_FILE)
    if not os.path.exists(path):
        raise CheckpointError(f"Checkpoint {prefix} has no {CONFIG_FILE} beside it ({path}).")
    return backbone_config_from_bert_json(read_json(path, CheckpointError, dict), path, ORIGINAL_ACTIVATIONS,
                                          num_segments=16, layer_norm_epsilon=1e-12)


def read_original_tensors(prefix, check_shapes=None):
    """All variables of an original TF checkpoint as `{name: np.ndarray}`.

    Args:
        prefix: str. The checkpoint prefix.
        check_shapes: callable or None. Called with `{name: shape}` (from the index) before any data is read,
            to refuse weights that do not fit. Defaults to None.
    """
    import tensorflow as tf

    try:
        reader = tf.train.load_checkpoint(prefix)
        shapes = reader.get_variable_to_shape_map()
        if check_shapes is not None:
            check_shapes(shapes)
        return check_finite({name: reader.get_tensor(name) for name in shapes}, prefix)
    except (tf.errors.OpError, ValueError, IndexError) as error:  # truncated data files raise IndexError
        raise CheckpointError(f"Cannot read TF checkpoint {prefix}: the index or data file is missing, truncated or "
                              f"corrupt ({type(error).__name__}: {str(error).splitlines()[0]}).") from error

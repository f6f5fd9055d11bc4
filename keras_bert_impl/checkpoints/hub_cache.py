"""Checkpoint names: a local path, or a Hugging Face Hub model id fetched into `huggingface_hub`'s cache.

Only the top-level config, weights and tokenizer files are downloaded (`snapshot_download`); with
`HF_HUB_OFFLINE=1` the cache alone is read. `huggingface_hub` is optional; local paths never need it.
"""

import os
import re

from keras_bert_impl.checkpoints.conversion import CheckpointError

HUB_INSTALL_HINT = "pip install 'keras-bert-impl[hub]'"
# Config, tokenizer, preprocessor and label files and safetensors weights; sub-folders hold other formats.
HUB_FILE_PATTERNS = ["*.json", "*.safetensors", "*.txt"]
HUB_SUBFOLDER_PATTERNS = ["*/*"]
# The torch pickle, fetched only for repositories without safetensors weights.
HUB_PYTORCH_FILE = "pytorch_model.bin"
# `name` or `namespace/name` of letters, digits, `-`, `_`, `.` (the Hub's rule).
HUB_MODEL_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?")


def is_hub_model_id(name):
    """Whether `name` has the form of a Hugging Face Hub model id (`bert-base-uncased`, `org/name`).

    Example:
    >>> is_hub_model_id("google-bert/bert-base-uncased"), is_hub_model_id("runs/mrpc/best")
    (True, False)
    """
    return HUB_MODEL_ID.fullmatch(name) is not None and ".." not in name and "--" not in name


def _is_local(path):
    # An original TF checkpoint is named by its prefix (`bert_model.ckpt`), which is not a file itself.
    return os.path.exists(path) or os.path.exists(path + ".index")


def resolve_checkpoint(name_or_path, revision=None):
    """The local path of a checkpoint: `name_or_path` itself when it exists on disk (or is no model id: it comes
    back unchanged, for `read_checkpoint`), else the cached snapshot of the Hugging Face Hub model of that id
    (downloaded first unless `HF_HUB_OFFLINE=1`); `CheckpointError` naming the id when it cannot be resolved.

    Args:
        name_or_path: str or path-like. A checkpoint directory or original-TF prefix, or a Hub model id.
        revision: str or None. A Hub branch, tag or commit; only for Hub ids. Defaults to None (`main`).

    Example:
    >>> resolve_checkpoint("/no/such/dir")
    '/no/such/dir'
    """
    path = os.fspath(name_or_path)
    if _is_local(path) or not is_hub_model_id(path):
        if revision is not None and _is_local(path):
            raise CheckpointError(f"revision={revision!r} applies to Hugging Face Hub model ids, but {path} is a local "
                                  f"path; drop the revision.")
        return path
    try:
        import huggingface_hub
    except ImportError as error:
        raise CheckpointError(f"{path} is not a local path; to load it as a Hugging Face Hub model id, install "
                              f"huggingface_hub ({HUB_INSTALL_HINT}).") from error
    from huggingface_hub import constants, errors

    # `HF_HUB_OFFLINE`, read now: `huggingface_hub` reads it once, at import.
    offline = os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in ("1", "ON", "YES", "TRUE")
    offline = offline or bool(constants.HF_HUB_OFFLINE)
    where = path + (f" (revision {revision})" if revision else "")
    try:
        directory = huggingface_hub.snapshot_download(path, revision=revision, allow_patterns=HUB_FILE_PATTERNS,
                                                      ignore_patterns=HUB_SUBFOLDER_PATTERNS, local_files_only=offline)
        if not offline and not any(name.endswith(".safetensors") for name in os.listdir(directory)):
            directory = huggingface_hub.snapshot_download(path, revision=revision, allow_patterns=[HUB_PYTORCH_FILE])
    except errors.GatedRepoError as error:
        raise CheckpointError(f"{where} is a gated Hugging Face Hub model: accept its terms on huggingface.co and log "
                              f"in (`hf auth login`), or pass a local directory.") from error
    except errors.RepositoryNotFoundError as error:
        raise CheckpointError(f"{path} is neither a local path nor a model on the Hugging Face Hub (or it is private: "
                              f"log in with `hf auth login`); check the path or the model id.") from error
    except errors.RevisionNotFoundError as error:
        raise CheckpointError(f"The Hugging Face Hub model {path} has no revision {revision!r}; give an existing "
                              f"branch, tag or commit.") from error
    except errors.LocalEntryNotFoundError as error:
        why = (f"HF_HUB_OFFLINE=1 forbids downloading it: load it once online (or `hf download {path}`)" if offline
               else "could not be downloaded from the Hugging Face Hub: check the network connection")
        raise CheckpointError(f"{where} is not in the Hugging Face cache ({constants.HF_HUB_CACHE}) and {why}, or pass "
                              f"a local directory.") from error
    except (errors.HfHubHTTPError, OSError) as error:
        raise CheckpointError(f"Downloading {where} from the Hugging Face Hub failed: {error}.") from error
    except errors.HFValidationError as error:
        raise CheckpointError(f"{path} is neither a local path nor a valid Hugging Face Hub model id ({error}); check "
                              f"the path.") from error
    return directory

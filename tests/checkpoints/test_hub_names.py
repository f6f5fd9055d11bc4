"""Loading by Hugging Face Hub model id, from a Hub cache built here: offline, no network in any test.

The cache reproduces `huggingface_hub`'s layout (`models--org--name/blobs`, `snapshots/<commit>/<file>` links
into the blobs, `refs/main` naming the commit) from the installed MiniLM files, in a temporary `HF_HOME`.
"""

import os
import subprocess
import sys

import numpy as np
import pytest

from keras_bert_impl.checkpoints import CheckpointError
from keras_bert_impl.checkpoints.hub_cache import resolve_checkpoint
from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.models.classifier import BertClassifier
from tests.helpers import real_checkpoint_dir, tiny_backbone

pytestmark = pytest.mark.backend_independent

hub_constants = pytest.importorskip("huggingface_hub.constants")

MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
REPOSITORY_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def write_hub_cache(hub_cache, model_id, source_directory, commit=COMMIT, tag=None):
    """Put `source_directory`'s files in `hub_cache` as `huggingface_hub` stores a download of `model_id`.

    Blobs are symbolic links to the source files (the Hub cache holds copies; reading follows the link)."""
    repository = hub_cache / ("models--" + model_id.replace("/", "--"))
    (repository / "blobs").mkdir(parents=True)
    snapshot = repository / "snapshots" / commit
    snapshot.mkdir(parents=True)
    for index, name in enumerate(sorted(os.listdir(source_directory))):
        source = os.path.join(source_directory, name)
        if not os.path.isfile(source):
            continue
        blob = repository / "blobs" / f"{index:040x}"  # the Hub names blobs by content hash; any unique name reads
        blob.symlink_to(os.path.abspath(source))
        (snapshot / name).symlink_to(os.path.relpath(blob, snapshot))
    (repository / "refs").mkdir()
    (repository / "refs" / "main").write_text(commit)
    if tag is not None:
        (repository / "refs" / tag).write_text(commit)
    return snapshot


@pytest.fixture
def offline_hub(tmp_path, monkeypatch):
    """An empty Hub cache in a temporary `HF_HOME`, offline. `huggingface_hub` reads both at import, so its
    constants are set too (this process may have imported it already)."""
    hub_cache = tmp_path / "hf_home" / "hub"
    hub_cache.mkdir(parents=True)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf_home"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(hub_constants, "HF_HUB_CACHE", str(hub_cache))
    monkeypatch.setattr(hub_constants, "HF_HUB_OFFLINE", True)
    return hub_cache


def test_backbone_loads_a_cached_hub_model_by_id_offline(offline_hub):
    from safetensors.numpy import load_file

    snapshot = write_hub_cache(offline_hub, MODEL_ID, real_checkpoint_dir())
    backbone = BertBackbone.from_pretrained(MODEL_ID)
    assert backbone.load_report.missing == [] and backbone.num_layers == 6 and backbone.hidden_dim == 384
    assert backbone.hidden_activation == "gelu"  # MiniLM's config.json, read from the snapshot
    stored = load_file(os.path.join(real_checkpoint_dir(), "model.safetensors"))
    np.testing.assert_array_equal(backbone.token_embedding.embeddings.numpy(),
                                  stored["embeddings.word_embeddings.weight"])
    assert resolve_checkpoint(MODEL_ID) == str(snapshot)


def test_task_loads_by_id_at_a_revision_with_the_cached_vocabulary(offline_hub):
    write_hub_cache(offline_hub, MODEL_ID, real_checkpoint_dir(), tag="v1.0")
    model = BertClassifier.from_pretrained(MODEL_ID, num_classes=2, revision="v1.0")
    assert model.backbone.num_layers == 6 and model.num_classes == 2
    assert model.preprocessor is not None and model.preprocessor.tokenizer.vocabulary_size() == 30522
    assert resolve_checkpoint(MODEL_ID, revision=COMMIT).endswith(COMMIT)
    # Every task finds the vocabulary of an id, also one whose from_pretrained hands the id on unresolved.
    assert BertClassifier._pretrained_preprocessor(MODEL_ID).tokenizer.vocabulary_size() == 30522


def test_id_not_in_the_cache_while_offline_is_one_clear_line(offline_hub):
    with pytest.raises(CheckpointError) as raised:
        BertBackbone.from_pretrained("someone/not-cached-bert")
    message = str(raised.value)
    assert "\n" not in message and "someone/not-cached-bert" in message
    assert "not in the Hugging Face cache" in message and "HF_HUB_OFFLINE=1" in message
    assert str(offline_hub) in message
    write_hub_cache(offline_hub, MODEL_ID, real_checkpoint_dir())
    with pytest.raises(CheckpointError, match=r"\(revision v9\) is not in the Hugging Face cache"):
        resolve_checkpoint(MODEL_ID, revision="v9")


def test_without_huggingface_hub_an_id_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # `import huggingface_hub` raises ImportError
    with pytest.raises(CheckpointError, match=r"org/bert is not a local path; .* install huggingface_hub "
                                              r"\(pip install 'keras-bert-impl\[hub\]'\)"):
        resolve_checkpoint("org/bert")


def test_local_paths_pass_through_and_take_no_revision(tmp_path):
    missing = str(tmp_path / "nowhere")
    assert resolve_checkpoint(missing) == missing  # read_checkpoint reports it ("does not exist")
    assert resolve_checkpoint("runs/mrpc/best") == "runs/mrpc/best"  # a relative path, not an id
    with pytest.raises(CheckpointError, match="revision='main' applies to Hugging Face Hub model ids"):
        resolve_checkpoint(tmp_path, revision="main")


def test_cli_checkpoint_flags_take_hub_ids(offline_hub, tmp_path, capsys):
    from keras_bert_impl.cli.command_line import main

    tiny = tmp_path / "tiny"
    tiny_backbone().save_pretrained(tiny)
    write_hub_cache(offline_hub, "org/tiny-bert", tiny)
    status = main(["convert", "--input", "org/tiny-bert", "--output", str(tmp_path / "hf"), "--format", "huggingface"])
    assert status == 0 and os.path.isfile(tmp_path / "hf" / "model.safetensors")
    status = main(["convert", "--input", "org/other-bert", "--output", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert status == 1 and "org/other-bert is not in the Hugging Face cache" in err


def test_environment_set_at_start_is_honoured(tmp_path):
    """What a user does: HF_HOME and HF_HUB_OFFLINE=1 in the environment of a fresh process."""
    hub_cache = tmp_path / "hf_home" / "hub"
    snapshot = write_hub_cache(hub_cache, MODEL_ID, real_checkpoint_dir())
    environment = {key: value for key, value in os.environ.items() if not key.startswith("HF_")}
    environment.update(HF_HOME=str(tmp_path / "hf_home"), HF_HUB_OFFLINE="1")
    code = f"from keras_bert_impl.checkpoints.hub_cache import resolve_checkpoint; print(resolve_checkpoint({MODEL_ID!r}))"
    result = subprocess.run([sys.executable, "-c", code], env=environment, cwd=REPOSITORY_ROOT,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(snapshot)

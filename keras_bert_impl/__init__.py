"""keras_bert_impl: BERT (Devlin et al., 2018) for Keras 3 on TensorFlow, JAX and torch.

Model code is backend-agnostic (`keras.ops`). Names whose modules need TensorFlow (tokenizer, tf.data
pipelines, SavedModel export) load lazily, so `import keras_bert_impl` stays cheap under JAX and torch. Importing
the package changes no global state (no import hook, no environment variable): quieting TensorFlow's start-up
lines is the `keras-bert` command's business (`cli.command_line.main`).
"""

import keras_bert_impl.data
import keras_bert_impl.models
from keras_bert_impl.utils.lazy_exports import lazy_exports

__version__ = "0.1.0"

_EXPORTS = {
    # Models (the task classes of `models.registry`, the presets, `load_task`) and layers (backend-agnostic).
    **keras_bert_impl.models.EXPORTS,
    "BertEmbeddings": "keras_bert_impl.layers.embeddings",
    "BertEncoderBlock": "keras_bert_impl.layers.encoder_block",
    "BertSelfAttention": "keras_bert_impl.layers.self_attention",
    "MaskedLMHead": "keras_bert_impl.layers.pretraining_heads",
    "NextSentenceHead": "keras_bert_impl.layers.pretraining_heads",
    # Optimization.
    "AdamWeightDecay": "keras_bert_impl.optimization",
    "Lamb": "keras_bert_impl.optimization",
    "WarmupLinearDecay": "keras_bert_impl.optimization",
    "create_optimizer": "keras_bert_impl.optimization",
    # Checkpoints.
    "CheckpointError": "keras_bert_impl.checkpoints.conversion",
    "save_huggingface": "keras_bert_impl.checkpoints",
    # Preprocessors: raw text -> model inputs, owning their settings (TensorFlow edge).
    "BertPreprocessor": "keras_bert_impl.preprocessing",
    "BertPretrainingPreprocessor": "keras_bert_impl.preprocessing",
    "BertQuestionAnsweringPreprocessor": "keras_bert_impl.preprocessing",
    "BertTokenClassificationPreprocessor": "keras_bert_impl.preprocessing",
    "BertMultipleChoicePreprocessor": "keras_bert_impl.preprocessing",
    # Tokenization and data (TensorFlow edge): every name of `keras_bert_impl.data`, loaded through it.
    "BertTokenizer": "keras_bert_impl.tokenization",
    "train_wordpiece_vocabulary": "keras_bert_impl.tokenization",
    **dict.fromkeys(keras_bert_impl.data.__all__, "keras_bert_impl.data"),
    "read_glue_examples": "keras_bert_impl.data.classification_data",
    "read_conll_sentences": "keras_bert_impl.data.token_classification_data",
    # SQuAD and metrics.
    "read_squad_examples": "keras_bert_impl.squad",
    "convert_examples_to_features": "keras_bert_impl.preprocessing",
    "decode_squad_predictions": "keras_bert_impl.squad",
    "write_squad_predictions": "keras_bert_impl.squad",
    "evaluate_v1": "keras_bert_impl.squad",
    "evaluate_v2": "keras_bert_impl.squad",
    "tune_null_threshold": "keras_bert_impl.squad",
    "glue_metrics": "keras_bert_impl.metrics",
    "evaluate_classification_files": "keras_bert_impl.training.finetuning_results",
    "entity_scores": "keras_bert_impl.metrics",
    # Training: fine-tuning with resume, checkpoints, numerical-fault guard.
    "finetune": "keras_bert_impl.training.finetuning",
    "FinetuningCheckpoint": "keras_bert_impl.training.callbacks",
    "TrainingCheckpoint": "keras_bert_impl.training.callbacks",
    "NonFiniteLossError": "keras_bert_impl.training.callbacks",
    "CorruptCheckpointError": "keras_bert_impl.training.callbacks",
    # Export (TensorFlow edge).
    "export_saved_model": "keras_bert_impl.export",
    "export_onnx": "keras_bert_impl.export",
    "ExportError": "keras_bert_impl.export",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

"""The base of every model that puts a head on a `BertBackbone`: config round trip and our checkpoint format."""

import os

import keras


class BertTask(keras.Model):
    """A functional Keras model built from `backbone` plus a head (`BertPretrainer`, `BertClassifier`,
    `BertQuestionAnswerer`).

    Subclasses build their graph in `__init__(backbone, **head_arguments)`, set `self.backbone`, and return the
    head arguments from `task_config()`. This class turns them into the Keras config (`get_config` /
    `from_config`, the backbone serialized inside) and into our checkpoint directory (`save_pretrained`:
    `config.json` holds `task_config()`, the backbone's config travels beside it).
    """

    def task_config(self):
        """The head's constructor arguments (everything but the backbone). Defaults to none."""
        return {}

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "backbone": keras.saving.serialize_keras_object(self.backbone),
            **self.task_config(),
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["backbone"] = keras.saving.deserialize_keras_object(config["backbone"])
        return cls(**config)

    def save_pretrained(self, path):
        """Write our checkpoint directory (`config.json` + `model.safetensors`), atomically; `from_pretrained`
        of the same class restores every weight."""
        from keras_bert_impl.checkpoints import native

        native.write_native(os.fspath(path), self, self.task_config(),
                            extra={"backbone_config": self.backbone.get_config()}, files=self.checkpoint_files())

    def checkpoint_files(self):
        """`{file name: writer(path)}` of files `save_pretrained` puts beside the weights, inside the same
        atomic directory write. None here; tasks with more state (a classifier's labels) add theirs."""
        return {}

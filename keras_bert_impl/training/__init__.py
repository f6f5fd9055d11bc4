"""Training recipes and utilities: `pretraining.pretrain` (the resumable two-phase pretraining recipe),
`finetuning.finetune` (the fine-tuning recipe), fit callbacks, data-parallel setups and `jit_compile.xla_jit_compile`.

There is no training step of our own: models run Keras' `Model.train_step` / `test_step` on every backend;
a model that computes its own loss and metrics overrides the public `compute_loss` hook (`BertPretrainer`).
"""

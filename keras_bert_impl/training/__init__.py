"""Training utilities: the per-backend gradient step (`backend_train_steps`) and fit callbacks."""

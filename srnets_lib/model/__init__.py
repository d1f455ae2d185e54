"""The model: backbones, masked layers and magnitude pruning, dropout."""

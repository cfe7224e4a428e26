"""The "published schedulers" study (docs/published_schedulers.md): our mechanisms beside Karma, Themis, Tiresias, DRF and Slurm."""

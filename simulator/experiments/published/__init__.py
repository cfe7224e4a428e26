"""The "published schedulers" study (issue 25): our mechanisms beside Karma, Themis, Tiresias, DRF and Slurm."""

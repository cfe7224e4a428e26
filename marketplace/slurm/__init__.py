"""The Slurm execution backend: the market's Plan decides, Slurm runs the tasks (``CLUSTER_BACKEND=slurm``)."""

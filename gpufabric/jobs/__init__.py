"""The fabric through the jobs on it: a job's footprint on the plan (`gpufabric job show`), and the parts of it
its own error output names (`gpufabric triage nccl`). A service: it reads the plan, the cabling labels and
Slurm's answers, and reaches nothing else."""

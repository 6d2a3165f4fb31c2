"""The demo of `sparrow local --demo`: its task, its workload and its report (imports nothing, so an
executor worker that imports the task stays light)."""

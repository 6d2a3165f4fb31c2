"""The demo of `sparrow local --demo`: its task, its workload, its replays on the simulator (the ideal
and the model) and its report (this file imports nothing, so an executor worker that imports the task
stays light)."""

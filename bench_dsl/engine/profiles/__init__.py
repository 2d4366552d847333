"""Load profiles: the shapes of load a scenario can ask for (k6's executors), each with its plan,
its words in `bench check --plan`, and its scheduler. Found by the scenario's ramp kind in
registry.py; nothing else of the engine names one."""

"""One run: the plan, the stage, the scheduler, the judge, and the events it says it all in."""

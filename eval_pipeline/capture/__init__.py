"""Running the agent itself on a case set: cases, runners, and the episodes their runs become."""

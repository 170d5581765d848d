"""Setup and migrations reach the head revision quietly and concurrently, or say what to run."""

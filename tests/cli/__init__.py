"""The command line does what its help says, fails in one line, and starts light."""

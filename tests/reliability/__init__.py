"""Nothing acknowledged is lost: crashes, clusters, races, transient faults, skew, load, Ctrl-C."""

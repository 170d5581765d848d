"""The project's own shape: layer rules, reference docs, the built wheel, the benchmarks' smoke."""

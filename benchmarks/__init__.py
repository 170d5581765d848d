"""Benchmark harness: our saver against the official LangGraph savers, interleaved in one
process. Run ``python -m benchmarks`` (see docs/benchmarks.md)."""

"""Real LangGraph graphs run end to end on the saver and the store; official conformance passes."""

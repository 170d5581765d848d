"""The store keeps LangGraph's BaseStore contract: get, put, search, namespaces, TTL, bounds."""

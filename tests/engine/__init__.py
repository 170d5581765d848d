"""Reaching a database: URLs, first contact, every driver, any loop or thread, shared engines."""

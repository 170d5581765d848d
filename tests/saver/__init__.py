"""The saver's methods keep their promises row by row: puts, reads, listings, history, upkeep."""

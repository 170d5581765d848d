"""Every dialect family gives the same answers: the QueryBuilder suite a new family runs too."""

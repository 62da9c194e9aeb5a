"""unified: one typed event stream over Google agent backends."""
